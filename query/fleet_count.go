package query

import (
	"cmp"
	"context"
	"sync"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// countParts reads the rows of reqs in one round trip and counts, into
// each part's counts, the samples of its range: as samples, or weighted by
// period with byPeriod or for a weighted event. Rows go to two workers by
// profile, so each profile's counts have one writer.
func (s *Service) countParts(ctx context.Context, tenant int64, parts []*part, reqs []index.SecondsRange, owner []int, byPeriod bool) error {
	const workers = 2
	rows := make([]chan rowOf, workers)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range rows {
		rows[w] = make(chan rowOf, 64)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var first error
			for r := range rows[w] {
				pt := parts[owner[r.i]]
				ev := reqs[r.i].Event
				c := index.Counter{UnitNanos: pt.p.TimeUnitNanos, Timed: pt.p.Timed, Period: pt.p.Events[ev].Period,
					ByPeriod: byPeriod || pt.p.Events[ev].Weighted, Range: pt.rg, Threads: pt.threads}
				if err := c.Count(r.s, pt.counts); err != nil && first == nil {
					first = fleetscope.Wrap(err, fleetscope.EINTERNAL, "profile "+pt.p.ID+": corrupt index row")
				}
			}
			errs <- first
		}()
	}
	err := s.src.FleetSeconds(ctx, tenant, reqs, func(i int, sec *index.Second) error {
		rows[owner[i]%workers] <- rowOf{i, sec}
		return nil
	})
	for _, c := range rows {
		close(c)
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		err = cmp.Or(err, e)
	}
	return err
}

// rowOf is a stored row and the index of the range it belongs to.
type rowOf struct {
	i int
	s *index.Second
}
