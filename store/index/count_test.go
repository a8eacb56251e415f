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
	b := index.NewBuilder()
	if err := b.Add(in); err != nil {
		t.Fatal(err)
	}
	ix, err := b.Build(func(fleetscope.StackID) bool { return false }, []string{"cpu"}, nil)
	if err != nil {
		t.Fatal(err)
	}
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
