package query_test

import (
	"context"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query"
)

// dictSource counts dictionary loads, each taking a while (as a read from
// Postgres does), so that requests meet one in flight.
type dictSource struct {
	query.Source
	loads atomic.Int64
}

func (c *dictSource) Dict(ctx context.Context, tenant int64, p *fleetscope.ProfileInfo) (*fleetscope.Dict, error) {
	c.loads.Add(1)
	select {
	case <-time.After(50 * time.Millisecond):
	case <-ctx.Done(): // as a database read is cut short
		return nil, ctx.Err()
	}
	return c.Source.Dict(ctx, tenant, p)
}

// TestDictLoadedOnce: requests that need a profile's dictionary while it
// is being loaded wait for that load rather than start their own, and one
// whose context ends does not fail the others; the graphs are the same as
// a fresh service's.
func TestDictLoadedOnce(t *testing.T) {
	path, _ := plant(t, "--seed", "5", "--seconds", "6", "--cpus", "2", "--hz", "99")
	st, _, id := storeFile(t, path)
	src := &dictSource{Source: st}
	q := query.New(src, query.Options{})
	want, err := query.New(st, query.Options{}).FlameGraph(context.Background(), 0, query.FlameRequest{ProfileID: id})
	if err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	errs := make([]error, 8)
	ask := func(i int, ctx context.Context) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: id})
			if err == nil && !reflect.DeepEqual(g.Flat(), want.Flat()) {
				t.Errorf("request %d: a different flame graph from a fresh service's", i)
			}
			errs[i] = err
		}()
	}
	ask(0, gone) // begins the load...
	for src.loads.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	for i := 1; i < len(errs); i++ {
		ask(i, context.Background())
	}
	time.Sleep(10 * time.Millisecond)
	cancel() // ...and goes away while it is in flight
	wg.Wait()
	for i, err := range errs[1:] {
		if err != nil {
			t.Errorf("request %d: %v", i+1, err)
		}
	}
	if n := src.loads.Load(); n != 1 {
		t.Fatalf("%d dictionary loads for 8 requests at once, want 1", n)
	}
}

// TestWarmFlame: with Options.Warm, a profile's heatmap starts loading
// what its flame graphs need; the flame graph asked for next reads no
// dictionary of its own. Without it, a heatmap loads none.
func TestWarmFlame(t *testing.T) {
	path, _ := plant(t, "--seed", "6", "--seconds", "6", "--cpus", "2", "--hz", "99")
	st, _, id := storeFile(t, path)
	for _, warm := range []bool{true, false} {
		src := &dictSource{Source: st}
		q := query.New(src, query.Options{Warm: warm})
		if _, err := q.Heatmap(context.Background(), 0, query.HeatmapRequest{ProfileID: id}); err != nil {
			t.Fatal(err)
		}
		if !warm {
			time.Sleep(100 * time.Millisecond) // time enough for a load to begin, if one would
			if n := src.loads.Load(); n != 0 {
				t.Fatalf("without Warm: %d dictionary loads after a heatmap, want 0", n)
			}
			continue
		}
		for deadline := time.Now().Add(10 * time.Second); src.loads.Load() == 0; {
			if time.Now().After(deadline) {
				t.Fatal("with Warm: no dictionary load began after the heatmap")
			}
			time.Sleep(time.Millisecond)
		}
		g, err := q.FlameGraph(context.Background(), 0, query.FlameRequest{ProfileID: id})
		if err != nil {
			t.Fatal(err)
		}
		if g.Total == 0 || len(g.Flat().Name) < 2 {
			t.Fatalf("an empty flame graph: total %d", g.Total)
		}
		if n := src.loads.Load(); n != 1 {
			t.Fatalf("with Warm: %d dictionary loads for a heatmap and a flame graph, want 1", n)
		}
	}
}
