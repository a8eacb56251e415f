package spans_test

import (
	"reflect"
	"testing"

	"github.com/fleetscope/fleetscope/query/spans"
)

// sequential returns a set of one-thread, back-to-back spans with the given
// durations in ns.
func sequential(durations ...int64) *spans.Set {
	f := newFixture()
	var t int64
	for _, d := range durations {
		f.add(f.pair.Entry, 1, 0, f.stack(3))
		f.samples[len(f.samples)-1].TimeNanos = t
		f.add(f.pair.Return, 1, 0, f.stack(2))
		f.samples[len(f.samples)-1].TimeNanos = t + d
		t += d + 1000
	}
	return spans.Match(f.samples, f.pair, f.d)
}

func TestPercentile(t *testing.T) {
	// The definition: d[floor((n-1)·p/100)] of the sorted durations. The
	// expectations are worked out by hand from it.
	oneToTen := sequential(7, 3, 10, 1, 5, 9, 2, 8, 4, 6) // in any order
	for _, tc := range []struct {
		set  *spans.Set
		p    float64
		want int64
	}{
		{oneToTen, 0, 1},
		{oneToTen, 50, 5},   // index floor(4.5) = 4
		{oneToTen, 90, 9},   // floor(8.1) = 8
		{oneToTen, 95, 9},   // floor(8.55) = 8
		{oneToTen, 99, 9},   // floor(8.91) = 8
		{oneToTen, 100, 10}, // the maximum
		// Nearest rank would give 50 here (rank ceil(4.5) = 5): this
		// definition takes index floor(4·0.9) = 3.
		{sequential(10, 20, 30, 40, 50), 90, 40},
		{sequential(42), 99, 42},
		{sequential(), 50, 0},
	} {
		if got := tc.set.PercentileNanos(tc.p); got != tc.want {
			t.Errorf("p%v of %d spans = %d, want %d", tc.p, len(tc.set.Spans), got, tc.want)
		}
	}
	// p99.9 of 0..1000 µs is index floor(1000·0.999) = 999, exactly.
	var ds []int64
	for i := range int64(1001) {
		ds = append(ds, i*1000)
	}
	if got := sequential(ds...).PercentileNanos(99.9); got != 999_000 {
		t.Errorf("p99.9 of 0..1000 µs = %d ns, want 999000", got)
	}
	if l := oneToTen.Latency(); l != (spans.Latency{P50: 5, P90: 9, P95: 9, P99: 9}) {
		t.Errorf("Latency() = %+v", l)
	}
}

func TestHistogram(t *testing.T) {
	set := sequential(500, 1000, 3000, 3999, 9000)
	want := []spans.Bucket{
		{LoNanos: 0, HiNanos: 1000, Count: 1},
		{LoNanos: 1000, HiNanos: 2000, Count: 1},
		{LoNanos: 2000, HiNanos: 4000, Count: 2},
		{LoNanos: 4000, HiNanos: 8000, Count: 0},
		{LoNanos: 8000, HiNanos: 16000, Count: 1},
	}
	if got := set.Histogram(); !reflect.DeepEqual(got, want) {
		t.Errorf("histogram\n got %v\nwant %v", got, want)
	}
	if got := sequential(5000, 6000).Histogram(); !reflect.DeepEqual(got, []spans.Bucket{{LoNanos: 4000, HiNanos: 8000, Count: 2}}) {
		t.Errorf("one bucket: %v", got)
	}
	if got := sequential().Histogram(); got != nil {
		t.Errorf("no spans: %v", got)
	}
}
