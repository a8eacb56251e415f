package query

import "golang.org/x/sync/errgroup"

// fleetWorkers bounds the goroutines of one stage of a fleet query (reading
// profiles' stacks, dictionaries and rows at once).
const fleetWorkers = 4

// parallel runs fn(0), ..., fn(n-1) on at most limit goroutines and returns
// the first error; every call runs, whatever the others return. It is the
// fleet stages' one concurrency scheme: a stage's goroutines are tasks of
// an errgroup with a bound.
func parallel(n, limit int, fn func(i int) error) error {
	var g errgroup.Group
	g.SetLimit(limit)
	for i := range n {
		g.Go(func() error { return fn(i) })
	}
	return g.Wait()
}
