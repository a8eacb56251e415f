package query_test

import (
	"context"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/store/index"
)

// countingSource counts the reads of seconds rows it passes on.
type countingSource struct {
	query.Source
	reads atomic.Int64
}

func (c *countingSource) Seconds(ctx context.Context, tenant int64, id string, event int, from, to int64) ([]index.Second, error) {
	c.reads.Add(1)
	return c.Source.Seconds(ctx, tenant, id, event, from, to)
}

// TestRangeRowsCached: a range's flame graph asked for again reads no rows
// (the dashboard asks for one range several times) and counts the same; a
// new range, or the profile forgotten, reads them again.
func TestRangeRowsCached(t *testing.T) {
	path, _ := plant(t, "--seed", "3", "--seconds", "12", "--cpus", "4", "--hz", "99")
	st, _, id := storeFile(t, path)
	src := &countingSource{Source: st}
	q := query.New(src, query.Options{})
	ctx := context.Background()
	flame := func(q *query.Service, r *fleetscope.Range) map[fleetscope.StackID]uint64 {
		t.Helper()
		g, err := q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: id, Range: r})
		if err != nil {
			t.Fatal(err)
		}
		out := map[fleetscope.StackID]uint64{}
		g.Counts.Each(func(st fleetscope.StackID, v uint64) { out[st] = v })
		if len(out) == 0 {
			t.Fatalf("no samples in %v", r)
		}
		return out
	}
	r := &fleetscope.Range{Start: 2_500_000_000, End: 4_000_000_000}
	first := flame(q, r)
	if n := src.reads.Load(); n != 1 {
		t.Fatalf("%d reads for a first range", n)
	}
	if again := flame(q, r); !reflect.DeepEqual(again, first) || src.reads.Load() != 1 {
		t.Fatalf("the range again: %d reads (want 1), same counts %v", src.reads.Load(), reflect.DeepEqual(again, first))
	}
	if fresh := flame(query.New(st, query.Options{}), r); !reflect.DeepEqual(fresh, first) {
		t.Fatal("a cached range counts differently from a fresh service")
	}
	flame(q, &fleetscope.Range{Start: 2_500_000_000, End: 5_000_000_000})
	flame(q, nil)
	flame(q, nil)
	if n := src.reads.Load(); n != 3 {
		t.Fatalf("%d reads after another range and the whole profile twice, want 3", n)
	}
	q.Forget(0, id)
	flame(q, r)
	if n := src.reads.Load(); n != 4 {
		t.Fatalf("%d reads after Forget, want 4", n)
	}
}
