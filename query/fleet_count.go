package query

import (
	"cmp"
	"context"
	"slices"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
	"golang.org/x/sync/errgroup"
)

// countParts reads the rows of reqs in one round trip and counts, into
// each part's counts, the samples of its range: as samples, or weighted by
// period with byPeriod or for a weighted event; a part with weights (a
// stack bucket to be) counts as samples (or weights, for a weighted event)
// whatever byPeriod says, and adds each sample's period to its weights. Rows go to two workers by
// profile, so each profile's counts have one writer.
func (s *Service) countParts(ctx context.Context, tenant int64, f *fleet, parts []*part, reqs []index.SecondsRange, owner []int, byPeriod bool) error {
	const workers = 2
	rows := make([]chan rowOf, workers)
	var g errgroup.Group // the counting workers (fleet_parallel.go's scheme, fed here by the one read)
	for w := range rows {
		rows[w] = make(chan rowOf, 64)
		g.Go(func() error {
			var first error // the worker drains its rows whatever happens
			for r := range rows[w] {
				pt := parts[owner[r.i]]
				ev := reqs[r.i].Event
				c := index.Counter{UnitNanos: pt.p.TimeUnitNanos, Timed: pt.p.Timed, Period: pt.p.Events[ev].Period,
					ByPeriod: byPeriod && pt.weights == nil || pt.p.Events[ev].Weighted, Range: pt.rg, Threads: pt.threads}
				var err error
				if pt.weights != nil {
					err = c.CountWeights(r.s, pt.counts, pt.weights)
				} else {
					err = c.Count(r.s, pt.counts)
				}
				if err != nil && first == nil {
					first = fleetscope.Wrap(err, fleetscope.EINTERNAL, "profile "+pt.p.ID+": corrupt index row")
				}
			}
			return first
		})
	}
	n := 0
	send := func(i int, sec *index.Second) error {
		if n++; n%secondsPerCheck == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		rows[owner[i]%workers] <- rowOf{i, sec}
		return nil
	}
	// The ranges of profiles in the index are read in one go; those of
	// cold profiles (cold.go) from their raw files, each parsed once, on
	// all workers, before any is counted.
	warm, warmOf := reqs, []int(nil) // warmOf: reqs' index of warm's ranges, when some are cold
	var cold []int
	var coldPs []*fleetscope.ProfileInfo
	if slices.ContainsFunc(owner, func(o int) bool { return parts[o].p.Cold }) {
		warm = nil
		seen := map[*fleetscope.ProfileInfo]bool{}
		for i, r := range reqs {
			p := parts[owner[i]].p
			if !p.Cold {
				warm, warmOf = append(warm, r), append(warmOf, i)
				continue
			}
			if !seen[p] {
				seen[p] = true
				coldPs = append(coldPs, p)
			}
			cold = append(cold, i)
		}
	}
	err := parallel(len(coldPs), fleetWorkers, func(k int) error {
		_, err := s.coldRows(ctx, tenant, coldPs[k])
		return err
	})
	if len(warm) > 0 && err == nil {
		err = s.src.FleetSeconds(ctx, tenant, warm, func(j int, sec *index.Second) error {
			if warmOf != nil {
				j = warmOf[j]
			}
			return send(j, sec)
		})
	}
	for _, i := range cold {
		if err != nil {
			break
		}
		var secs []index.Second
		f.raw.read(parts[owner[i]].p)
		secs, err = s.storedSeconds(ctx, tenant, parts[owner[i]].p, reqs[i].Event, reqs[i].From, reqs[i].To)
		for j := 0; j < len(secs) && err == nil; j++ {
			err = send(i, &secs[j])
		}
	}
	for _, c := range rows {
		close(c)
	}
	return cmp.Or(err, g.Wait())
}

// rowOf is a stored row and the index of the range it belongs to.
type rowOf struct {
	i int
	s *index.Second
}
