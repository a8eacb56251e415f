package query_test

import (
	"context"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query"
)

// dictSource counts dictionary loads; each waits until the test releases
// it (as a read from Postgres takes a while), so that requests meet one in
// flight however fast the machine is.
type dictSource struct {
	query.Source
	loads   atomic.Int64
	release chan struct{} // closed by the test: loads go on
}

func newDictSource(s query.Source) *dictSource {
	return &dictSource{Source: s, release: make(chan struct{})}
}

func (c *dictSource) Dict(ctx context.Context, tenant int64, p *fleetscope.ProfileInfo) (*fleetscope.Dict, error) {
	c.loads.Add(1)
	select {
	case <-c.release:
	case <-ctx.Done(): // as a database read is cut short
		return nil, ctx.Err()
	}
	return c.Source.Dict(ctx, tenant, p)
}

// goroutines counts this process's goroutines whose stack (frames and
// creator) holds every one of parts.
func goroutines(parts ...string) int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(g, p)
		}
		if all {
			n++
		}
	}
	return n
}

// waitFor polls cond until it holds, for 30 s at most.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", what)
		}
	}
}

// TestDictLoadedOnce: requests that need a profile's dictionary while it
// is being loaded wait for that load rather than start their own, and one
// whose context ends does not fail the others; the graphs are the same as
// a fresh service's.
func TestDictLoadedOnce(t *testing.T) {
	path, _ := plant(t, "--seed", "5", "--seconds", "6", "--cpus", "2", "--hz", "99")
	st, _, id := storeFile(t, path)
	src := newDictSource(st)
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
	waitFor(t, "the first request's load to begin", func() bool { return src.loads.Load() == 1 })
	for i := 1; i < len(errs); i++ {
		ask(i, context.Background())
	}
	// Every request, the first included, waits for the one load in flight
	// (held until released; it runs in a goroutine of its own): each is a
	// caller of the cache's Load selecting on its result.
	waitFor(t, "8 requests to wait for the load in flight", func() bool {
		return goroutines("[select]", "query/cache.(*Table[...]).Load", "query_test.TestDictLoadedOnce") == len(errs)
	})
	cancel() // ...and goes away while it is in flight
	close(src.release)
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
	// A warm-up runs on a goroutine the heatmap's call starts (a go
	// statement, done before the call returns); held by the source until
	// released, it is still there when the call has returned.
	const byQuery = "created by github.com/fleetscope/fleetscope/query."
	for _, warm := range []bool{true, false} {
		src := newDictSource(st)
		q := query.New(src, query.Options{Warm: warm})
		before := goroutines(byQuery)
		if _, err := q.Heatmap(context.Background(), 0, query.HeatmapRequest{ProfileID: id}); err != nil {
			t.Fatal(err)
		}
		started := goroutines(byQuery) - before
		if !warm {
			if n := src.loads.Load(); started != 0 || n != 0 {
				t.Fatalf("without Warm: the heatmap left %d goroutines and began %d dictionary loads, want none", started, n)
			}
			close(src.release)
			continue
		}
		if started < 1 {
			t.Fatal("with Warm: the heatmap started no goroutine to load the dictionary")
		}
		waitFor(t, "with Warm: a dictionary load to begin after the heatmap", func() bool { return src.loads.Load() == 1 })
		close(src.release)
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
		// The warm-up goes on to the layout, which the flame graph may have
		// built first: it ends before the next round counts goroutines.
		waitFor(t, "with Warm: the warm-up to end", func() bool { return goroutines(byQuery) == before })
	}
}
