package spans_test

import (
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/spans"
)

func TestSelect(t *testing.T) {
	f := newFixture()
	// Thread 1: a fast call [0, 100), a slow call [200, 1200) with a fast
	// call nested in it [300, 400). Thread 2: a slow call [150, 1150).
	f.entry(1, 0, 3)
	f.ret(1, 100, 2)
	f.entry(1, 200, 3)
	f.entry(2, 150, 3)
	f.entry(1, 300, 5)
	f.ret(1, 400, 4)
	f.ret(2, 1150, 2)
	f.ret(1, 1200, 2)
	set := spans.Match(f.samples, f.pair, f.d)
	if len(set.Spans) != 4 || set.Unmatched() != 0 {
		t.Fatalf("spans %v, %d unmatched", set.Spans, set.Unmatched())
	}
	sample := func(tid int32, us int64) *fleetscope.Sample {
		return &fleetscope.Sample{TimeNanos: us * 1000, TID: tid, Event: f.cpu}
	}
	slow := set.Select(mustCondition(t, "slower:500us"))
	fast := set.Select(mustCondition(t, "faster:500us"))
	for _, tc := range []struct {
		name       string
		s          *fleetscope.Sample
		slow, fast bool
	}{
		{"at a fast call's entry", sample(1, 0), false, true},
		{"inside a fast call", sample(1, 50), false, true},
		{"1 ns before a return", &fleetscope.Sample{TimeNanos: 100_000 - 1, TID: 1, Event: f.cpu}, false, true},
		{"at a fast call's return", sample(1, 100), false, false},
		{"between calls", sample(1, 150), false, false},
		{"at a slow call's entry", sample(1, 200), true, false},
		{"in a fast call nested in a slow one", sample(1, 350), true, false},
		{"at the nested call's return", sample(1, 400), true, false},
		{"at a slow call's return", sample(1, 1200), false, false},
		{"before any call", sample(1, -5), false, false},
		{"after every call", sample(1, 5000), false, false},
		{"another thread's slow call", sample(2, 160), true, false},
		{"another thread, outside its call", sample(2, 100), false, false},
		{"a thread without calls", sample(3, 350), false, false},
		{"no time", &fleetscope.Sample{TimeNanos: fleetscope.NoTime, TID: 1, Event: f.cpu}, false, false},
		{"the entry probe itself", &fleetscope.Sample{TimeNanos: 300_000, TID: 1, Event: f.pair.Entry}, false, false},
		{"the return probe itself", &fleetscope.Sample{TimeNanos: 350_000, TID: 1, Event: f.pair.Return}, false, false},
	} {
		if got := slow.Keep(tc.s); got != tc.slow {
			t.Errorf("%s: slower kept %v, want %v", tc.name, got, tc.slow)
		}
		if got := fast.Keep(tc.s); got != tc.fast {
			t.Errorf("%s: faster kept %v, want %v", tc.name, got, tc.fast)
		}
	}
	if slow.Spans() != 2 || fast.Spans() != 1 {
		t.Errorf("selected outermost spans: slower %d, faster %d; want 2, 1", slow.Spans(), fast.Spans())
	}
}

func mustCondition(t testing.TB, s string) spans.Condition {
	t.Helper()
	c, err := spans.ParseCondition(s)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
