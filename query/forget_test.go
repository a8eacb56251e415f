package query_test

import (
	"context"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query"
)

// TestForgetDropsEverything: after a profile's heatmaps, filtered heatmaps
// and flame graphs, of ranges and whole, the caches hold entries about it
// in many tables; forgetting another profile leaves them; forgetting it
// leaves none (the entries keyed by its dictionary included), and the
// same queries answer the same from the store again.
func TestForgetDropsEverything(t *testing.T) {
	path, _ := plant(t, "--seed", "4", "--seconds", "5", "--cpus", "2", "--hz", "99")
	st, _, id := storeFile(t, path)
	src := &countingSource{Source: st}
	q := query.New(src, query.Options{})
	ctx := context.Background()
	excl := fleetscope.Filter{ExcludeFunction: "^no_such_function$"}
	var totals []uint64
	ask := func() {
		t.Helper()
		totals = totals[:0]
		for _, f := range []fleetscope.Filter{{}, excl} {
			if _, err := q.Heatmap(ctx, 0, query.HeatmapRequest{ProfileID: id, Filter: f}); err != nil {
				t.Fatal(err)
			}
			for _, r := range []*fleetscope.Range{nil, {Start: 1_000_000_000, End: 2_500_000_000}} {
				g, err := q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: id, Range: r, Filter: f})
				if err != nil {
					t.Fatal(err)
				}
				totals = append(totals, g.Total)
			}
		}
	}
	entries := func() map[string]int {
		out := map[string]int{}
		for _, s := range q.CacheStats() {
			if s.Entries > 0 {
				out[s.Name] = s.Entries
			}
		}
		return out
	}
	ask()
	first := append([]uint64(nil), totals...)
	held := entries()
	for _, table := range []string{"profiles", "dicts", "heatmaps", "seconds", "keeps", "inverted", "cells"} {
		if held[table] == 0 {
			t.Errorf("nothing cached in %s after the queries (cached: %v)", table, held)
		}
	}
	q.Forget(0, "another")
	q.Forget(1, id)
	if after := entries(); len(after) != len(held) {
		t.Fatalf("forgetting other profiles dropped entries of this one: %v, then %v", held, after)
	}
	q.Forget(0, id)
	if after := entries(); len(after) != 0 {
		t.Fatalf("after Forget, entries left: %v", after)
	}
	reads := src.reads.Load()
	ask()
	if src.reads.Load() == reads {
		t.Fatal("the queries after Forget read no rows: answered from the cache")
	}
	for i := range totals {
		if totals[i] != first[i] {
			t.Fatalf("query %d: total %d after Forget, %d before", i, totals[i], first[i])
		}
	}
}
