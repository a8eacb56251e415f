package spans_test

import (
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/spans"
)

func TestParseCondition(t *testing.T) {
	// Durations 1..100 µs: the percentile pN is at index floor(99·N/100).
	set := sequential(func() []int64 {
		var ds []int64
		for i := int64(1); i <= 100; i++ {
			ds = append(ds, i*1000)
		}
		return ds
	}()...)
	for _, tc := range []struct {
		in        string
		slower    bool
		threshold int64 // ns, against set
	}{
		{"slower:p95", true, 95_000}, // index floor(94.05) = 94: 95 µs
		{"faster:p95", false, 95_000},
		{"slower:p50", true, 50_000}, // floor(49.5) = 49
		{"slower:p99.9", true, 99_000},
		{"slower:p0", true, 1_000},
		{"slower:p100", true, 100_000},
		{"slower:2ms", true, 2_000_000},
		{"faster:750us", false, 750_000},
		{"slower:750µs", true, 750_000},
		{"slower:750μs", true, 750_000}, // Greek mu
		{"slower:1.5s", true, 1_500_000_000},
		{"slower:0.000000001s", true, 1},
		{"slower:2.5ms", true, 2_500_000},
		{"slower:120ns", true, 120},
		{"slower:1.500us", true, 1500},
	} {
		c, err := spans.ParseCondition(tc.in)
		if err != nil {
			t.Errorf("%s: %v", tc.in, err)
			continue
		}
		if spans.Slower(c) != tc.slower || c.ThresholdNanos(set) != tc.threshold || c.String() != tc.in {
			t.Errorf("%s: slower %v, threshold %d, %q; want %v, %d", tc.in, spans.Slower(c), c.ThresholdNanos(set), c.String(), tc.slower, tc.threshold)
		}
	}
	for _, in := range []string{
		"", "slower", "slower:", "p95", "quicker:p95", "slower:p", "slower:p101", "slower:p-1",
		"slower:2", "slower:2m", "slower:2 ms", "slower:ms", "slower:.5ms", "slower:5.ms",
		"slower:1.5ns", "slower:0.0000000001s", "slower:p99.9999999", "slower:99999999999999s",
	} {
		if _, err := spans.ParseCondition(in); err == nil || fleetscope.ErrorCode(err) != fleetscope.EINVALID || !strings.Contains(err.Error(), in) {
			t.Errorf("ParseCondition(%q) = %v, want EINVALID naming the input", in, err)
		}
	}
}

// TestComplement: for any threshold, slower and faster split the spans.
func TestComplement(t *testing.T) {
	set := sequential(5000, 1000, 3000, 3000, 9000, 3000, 2000)
	for _, th := range []string{"p0", "p50", "p90", "p95", "p100", "3us", "1ns", "1s"} {
		slow, _ := spans.ParseCondition("slower:" + th)
		fast, _ := spans.ParseCondition("faster:" + th)
		s, f := set.Filter(slow), set.Filter(fast)
		if len(s)+len(f) != len(set.Spans) {
			t.Errorf("%s: %d slower + %d faster != %d spans", th, len(s), len(f), len(set.Spans))
		}
		limit := slow.ThresholdNanos(set)
		for _, sp := range s {
			if sp.DurationNanos() <= limit {
				t.Errorf("%s: slower holds a span of %d ns <= %d", th, sp.DurationNanos(), limit)
			}
		}
		for _, sp := range f {
			if sp.DurationNanos() > limit {
				t.Errorf("%s: faster holds a span of %d ns > %d", th, sp.DurationNanos(), limit)
			}
		}
	}
	// 3 µs is the median: "faster:p50" holds the three spans at it.
	fast, _ := spans.ParseCondition("faster:p50")
	if n := len(set.Filter(fast)); n != 5 {
		t.Errorf("faster:p50 holds %d spans, want 5 (1, 2 and three at 3 µs)", n)
	}
}

// TestBand: slower:A,faster:B keeps A < duration <= B, in either order;
// a band needs one bound of each kind.
func TestBand(t *testing.T) {
	set := sequential(5000, 1000, 3000, 3000, 9000, 3000, 2000) // durations 1, 2, 3, 3, 3, 5, 9 µs
	for in, want := range map[string]int{"slower:2us,faster:5us": 4, "faster:5us,slower:2us": 4, "slower:1us,faster:3us": 4, "slower:p50,faster:p100": 2, "slower:9us,faster:10us": 0} {
		c, err := spans.ParseCondition(in)
		if err != nil {
			t.Fatal(err)
		}
		if got := set.Filter(c); len(got) != want {
			t.Errorf("%s: %d spans, want %d", in, len(got), want)
		}
		if c.String() != in {
			t.Errorf("String() = %q, want %q", c.String(), in)
		}
	}
	for _, in := range []string{"slower:1us,slower:2us", "faster:1us,faster:p9", "slower:1us,", "slower:1us,faster:1us,faster:2us"} {
		if _, err := spans.ParseCondition(in); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
			t.Errorf("ParseCondition(%q) = %v, want EINVALID", in, err)
		}
	}
}
