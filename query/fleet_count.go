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
	reqs, owner, err := s.countWhole(ctx, tenant, f, parts, reqs, owner, byPeriod)
	if err != nil || len(reqs) == 0 {
		return err
	}
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
	err = parallel(len(coldPs), fleetWorkers, func(k int) error {
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

// countWhole counts the parts whose every sample lies inside their range,
// and whose threads are not filtered, from their profiles' stack totals
// (one round trip), as countParts would count their rows, and returns the
// ranges of the others. A profile without totals (stored before they were
// kept) is left to its rows.
func (s *Service) countWhole(ctx context.Context, tenant int64, f *fleet, parts []*part, reqs []index.SecondsRange, owner []int, byPeriod bool) ([]index.SecondsRange, []int, error) {
	var ids []string
	var whole []int       // the parts of ids
	of := map[int][]int{} // a whole part's ranges
	for i, o := range owner {
		if pt := parts[o]; pt.threads == nil && pt.whole() {
			if _, ok := of[o]; !ok {
				ids, whole = append(ids, pt.p.ID), append(whole, o)
			}
			of[o] = append(of[o], i)
		}
	}
	if len(ids) == 0 {
		return reqs, owner, nil
	}
	done := make([]bool, len(parts))
	err := s.src.FleetStackTotals(ctx, tenant, ids, func(i int, totals []byte) error {
		o := whole[i]
		pt := parts[o]
		for _, r := range of[o] {
			ev := reqs[r].Event
			info := pt.p.Events[ev]
			weighted := pt.weights != nil
			if err := index.AddStackTotals(totals, ev, info.Period, byPeriod && !weighted || info.Weighted, pt.counts, pt.weights); err != nil {
				return fleetscope.Wrap(err, fleetscope.EINTERNAL, "profile "+pt.p.ID+": corrupt stack totals")
			}
		}
		done[o] = true
		f.served.WholeProfiles++
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	var rest []index.SecondsRange
	var restOwner []int
	for i, o := range owner {
		if !done[o] {
			rest, restOwner = append(rest, reqs[i]), append(restOwner, o)
		}
	}
	return rest, restOwner, nil
}

// rowOf is a stored row and the index of the range it belongs to.
type rowOf struct {
	i int
	s *index.Second
}
