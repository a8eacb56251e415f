package index_test

import (
	"math"
	"slices"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// TestTimeUnit: a profile's offsets are stored in the coarsest unit every
// time is a point of (µs, the grid of a double's seconds, else ns), and
// read back as exactly the times added, with the same cells.
func TestTimeUnit(t *testing.T) {
	const start = 1_795_000_000.037
	// Times summed in doubles from deltas, as nflxprofile's are: points
	// of the 2^-22 s grid near today's unix seconds.
	doubles := func(n int, delta float64) []int64 {
		var ts []int64
		now := start
		for range n {
			now += delta
			whole := math.Floor(now)
			ts = append(ts, int64(whole)*1e9+int64(math.Round((now-whole)*1e9)))
		}
		return ts
	}
	micros := func(n int) []int64 {
		var ts []int64
		for i := range n {
			ts = append(ts, 1_795_000_000_000_000_000+int64(i)*1_052_000)
		}
		return ts
	}
	coarse := func(n int) []int64 { // points of 2^-10 s, which are not whole µs
		var ts []int64
		for i := range n {
			ts = append(ts, 1_795_000_000_000_000_000+int64(math.Round(float64(3*i)*1e9/1024)))
		}
		return ts
	}
	offGrid := append(doubles(3000, 0.001052), 1_795_000_001_500_000_001)
	for _, tc := range []struct {
		name  string
		times []int64
		unit  int64
	}{
		{"doubles", doubles(3000, 0.001052), -22},
		{"doubles with equal times", append(doubles(500, 0.0001), doubles(500, 0.0001)...), -22},
		{"whole µs", micros(3000), 1000},
		{"a coarse grid beats µs", append(coarse(2000), 1_795_000_001_000_000_000), -10},
		{"one time off the grid", offGrid, 1},
		{"one sample", []int64{1_795_000_000_123_456_789}, -29},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := make([]fleetscope.Sample, len(tc.times))
			for i, ts := range tc.times {
				in[i] = fleetscope.Sample{TimeNanos: ts, Stack: fleetscope.StackID(i % 5), Period: 1, CPU: -1, PID: -1, TID: -1}
			}
			ix := indexOf(t, in, "cpu")
			if ix.TimeUnitNanos != tc.unit {
				t.Fatalf("unit %d, want %d", ix.TimeUnitNanos, tc.unit)
			}
			var out []fleetscope.Sample
			var err error
			for i := range ix.Seconds {
				s := &ix.Seconds[i]
				if out, err = index.Decode(out, s, ix.StartSecond, ix.TimeUnitNanos, true, 1, ix.Threads, 5); err != nil {
					t.Fatal(err)
				}
				stored := *s
				stored.Cells = nil
				if err := index.FillCells(&stored, ix.TimeUnitNanos, 1, false); err != nil || !slices.Equal(stored.Cells, s.Cells) {
					t.Fatalf("second %d: cells from the offsets %v (%v), built %v", s.Second, stored.Cells, err, s.Cells)
				}
			}
			want := slices.Clone(in)
			slices.SortStableFunc(want, func(a, b fleetscope.Sample) int { return int(a.TimeNanos - b.TimeNanos) })
			if !slices.Equal(out, want) {
				t.Fatal("the samples read back differ from those added")
			}
		})
	}
}

// TestGridUnitRoundTrip: every ns offset Units puts on a grid comes back
// from Nanos as itself, for every grid point of several grids.
func TestGridUnitRoundTrip(t *testing.T) {
	for _, m := range []int{1, 10, 19, 22, 29} {
		step := uint64(1)
		if m > 20 {
			step = 1 << (m - 20) // a million points of each
		}
		for u := uint64(0); u < 1<<m; u += step {
			off := index.Nanos(int64(-m), u)
			if off < 0 || off >= 1e9 || index.Units(int64(-m), off) != u {
				t.Fatalf("grid 2^-%d s: point %d is %d ns, which is point %d", m, u, off, index.Units(int64(-m), off))
			}
		}
	}
}

// TestReunit: an index re-encoded in a finer unit (as a profile stored
// before its unit was found is read again) decodes to the same samples,
// and one re-encoded in a unit its times are not points of is refused,
// unchanged.
func TestReunit(t *testing.T) {
	var in []fleetscope.Sample
	now := 1_795_000_000.037
	for i := range 2500 {
		now += 0.001052
		whole := math.Floor(now)
		in = append(in, fleetscope.Sample{TimeNanos: int64(whole)*1e9 + int64(math.Round((now-whole)*1e9)), Stack: fleetscope.StackID(i % 3), Period: 1, CPU: -1, PID: -1, TID: -1})
	}
	build := func() *index.Index { return indexOf(t, in, "cpu") }
	decode := func(ix *index.Index) (out []fleetscope.Sample) {
		for i := range ix.Seconds {
			var err error
			if out, err = index.Decode(out, &ix.Seconds[i], ix.StartSecond, ix.TimeUnitNanos, true, 1, ix.Threads, 3); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	ix := build()
	if ix.TimeUnitNanos != -22 {
		t.Fatalf("unit %d", ix.TimeUnitNanos)
	}
	if err := ix.Reunit(1000); err == nil {
		t.Fatal("times that are not whole µs were re-encoded in µs")
	}
	if got := decode(ix); ix.TimeUnitNanos != -22 || !slices.Equal(got, in) {
		t.Fatal("a refused Reunit changed the index")
	}
	if err := ix.Reunit(1); err != nil {
		t.Fatal(err)
	}
	if got := decode(ix); ix.TimeUnitNanos != 1 || !slices.Equal(got, in) {
		t.Fatal("re-encoded in ns, the samples differ")
	}
	if index.Digest(ix.ByEvent(1)) == index.Digest(build().ByEvent(1)) {
		t.Fatal("rows in ns and on the grid have one digest: the digest does not cover the unit's offsets")
	}
}

// TestUnitsOutOfRange: a unit no profile is stored in (a corrupt row's
// profile) converts without a panic.
func TestUnitsOutOfRange(t *testing.T) {
	for _, unit := range []int64{0, -30, -1100, math.MinInt64} {
		_ = index.Nanos(unit, 12345)
		_ = index.Units(unit, 12345)
	}
}
