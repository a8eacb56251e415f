package index_test

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// TestCountManyStacks: with stack ids of one, two and three bytes, a
// counter's counts equal those of the decoded samples, whole rows and cut
// ones, as samples and by period, with and without a thread filter.
func TestCountManyStacks(t *testing.T) {
	const stacks = 40_000
	const base = int64(1_700_000_000) * 1e9
	rng := rand.New(rand.NewPCG(1, 2))
	var in []fleetscope.Sample
	for range 30_000 {
		pid := int32(1 + rng.IntN(2))
		in = append(in, fleetscope.Sample{TimeNanos: base + rng.Int64N(3e9), Stack: fleetscope.StackID(rng.IntN(stacks)),
			Period: 1 + uint64(rng.IntN(5)), PID: pid, TID: pid, CPU: -1})
	}
	ix := indexOf(t, in, "cpu")
	ranges := []fleetscope.Range{fleetscope.All, {Start: 0, End: 3e9}, {Start: 4e8, End: 2_300_000_001}, {Start: 1e9, End: 2e9}}
	for _, rg := range ranges {
		for _, byPeriod := range []bool{false, true} {
			for _, threads := range [][]bool{nil, {true, false}, {false, true}} {
				c := index.Counter{UnitNanos: ix.TimeUnitNanos, Timed: true, Period: 1, ByPeriod: byPeriod, Range: rg, Threads: threads}
				got, want := make([]uint64, stacks), make([]uint64, stacks)
				for i := range ix.Seconds {
					s := &ix.Seconds[i]
					if err := c.Count(s, got); err != nil {
						t.Fatal(err)
					}
					out, err := index.Decode(nil, s, ix.StartSecond, ix.TimeUnitNanos, ix.Timed, 1, ix.Threads, stacks)
					if err != nil {
						t.Fatal(err)
					}
					for _, smp := range out {
						th := slices.IndexFunc(ix.Threads, func(x fleetscope.Thread) bool { return x.PID == smp.PID && x.TID == smp.TID })
						if !rg.Contains(smp.TimeNanos-ix.StartSecond*1e9) || threads != nil && !threads[th] {
							continue
						}
						v := uint64(1)
						if byPeriod {
							v = smp.Period
						}
						want[smp.Stack] += v
					}
				}
				if !slices.Equal(got, want) {
					t.Fatalf("range %v, by period %v, threads %v: counts differ from the decoded samples'", rg, byPeriod, threads)
				}
			}
		}
	}
}

// TestStackTotalsAreTheCountersWhole: a profile's stack totals add, for
// each event, what a counter adds over all its rows: as samples, by
// period, with weights; for events whose samples store periods or not,
// with stack ids of one to three bytes. A truncated value is an error.
func TestStackTotalsAreTheCountersWhole(t *testing.T) {
	const stacks = 20_000
	const base = int64(1_700_000_000) * 1e9
	rng := rand.New(rand.NewPCG(3, 4))
	var in []fleetscope.Sample
	for range 20_000 {
		ev := fleetscope.EventID(rng.IntN(3))
		period := uint64(7) // the event's own: no periods stored
		if ev == 1 {
			period = 1 + uint64(rng.IntN(9))
		}
		pid := int32(1 + rng.IntN(2))
		in = append(in, fleetscope.Sample{TimeNanos: base + rng.Int64N(4e9), Stack: fleetscope.StackID(rng.IntN(stacks) >> (2 * int(ev))),
			Event: ev, Period: period, PID: pid, TID: pid, CPU: -1})
	}
	ix := indexOf(t, in, "a", "b", "c")
	totals, err := index.EncodeStackTotals(ix)
	if err != nil {
		t.Fatal(err)
	}
	for ev := range ix.Events {
		period := ix.Events[ev].Period
		for _, byPeriod := range []bool{false, true} {
			for _, withWeights := range []bool{false, true} {
				c := index.Counter{UnitNanos: ix.TimeUnitNanos, Timed: true, Period: period, ByPeriod: byPeriod, Range: fleetscope.All}
				want, got := make([]uint64, stacks), make([]uint64, stacks)
				var wantW, gotW []uint64
				if withWeights {
					wantW, gotW = make([]uint64, stacks), make([]uint64, stacks)
				}
				for i := range ix.Seconds {
					if s := &ix.Seconds[i]; int(s.Event) == ev {
						if err := c.CountWeights(s, want, wantW); err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := index.AddStackTotals(totals, ev, period, byPeriod, got, gotW); err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) || !slices.Equal(gotW, wantW) {
					t.Fatalf("event %d, by period %v, weights %v: the totals differ from the rows' counts", ev, byPeriod, withWeights)
				}
			}
		}
	}
	if err := index.AddStackTotals(totals, 3, 1, false, make([]uint64, stacks), nil); err == nil {
		t.Error("event 3 of 3 added no error")
	}
	for _, cut := range []int{1, len(totals) / 2, len(totals) - 1} {
		if err := index.AddStackTotals(totals[:cut], 2, 1, false, make([]uint64, stacks), nil); err == nil {
			t.Errorf("totals cut to %d of %d bytes added no error", cut, len(totals))
		}
	}
	if err := index.AddStackTotals(totals, 0, 1, false, make([]uint64, 10), nil); err == nil {
		t.Error("totals of 20,000 stacks added into 10 without an error")
	}
}

// indexOf indexes samples of the events named, no stack idle.
func indexOf(t *testing.T, in []fleetscope.Sample, events ...string) *index.Index {
	t.Helper()
	b := index.NewBuilder()
	if err := b.Add(in); err != nil {
		t.Fatal(err)
	}
	ix, err := b.Build(func(fleetscope.StackID) bool { return false }, events, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ix
}
