package query

import (
	"context"
	"slices"
	"sync"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// fleetSamples hands fn the stored samples of the fleet's event that may
// lie in the absolute window [from, to) (unix ns), profile by profile
// (several read at once, fn called for one at a time), with the profile's
// stack keys (and its dictionary, if withDict); keep tells whether a
// sample lies in the window (idle samples are for the caller to judge).
// Untimed profiles count when their span lies wholly inside the
// selection's window.
func (s *Service) fleetSamples(ctx context.Context, tenant int64, f *fleet, from, to int64, withDict bool,
	fn func(p *fleetscope.ProfileInfo, d *fleetscope.Dict, keys []int64, batch []fleetscope.Sample, keep func(*fleetscope.Sample) bool)) error {
	profiles := slices.Clone(f.timed)
	for _, p := range f.untimed {
		if f.spanInside(p) {
			profiles = append(profiles, p)
		}
	}
	var mu sync.Mutex // fn sees one profile at a time
	return parallel(len(profiles), fleetWorkers, func(i int) error {
		if err := ctx.Err(); err != nil { // start no more
			return err
		}
		p := profiles[i]
		evs := f.events(p)
		if len(evs) == 0 {
			return nil
		}
		keys, err := s.profileStacks(ctx, tenant, p.ID)
		if err != nil {
			return err
		}
		var d *fleetscope.Dict
		if withDict || f.filter.m != nil {
			if d, err = s.dict(ctx, tenant, p); err != nil {
				return err
			}
		}
		threads, err := s.profileThreads(ctx, tenant, p.ID)
		if err != nil {
			return err
		}
		start := p.StartSecond*1e9 + p.WallShiftNanos // absolute ns of the profile's start second
		rg := fleetscope.Range{Start: from - start, End: to - start}
		lo, hi := int64(0), int64(-1)
		if p.Timed {
			lo, hi = max(fleetscope.FloorSecond(rg.Start), 0), min(fleetscope.FloorSecond(rg.End-1), p.DurationNanos/1e9)
			if lo > hi {
				return nil
			}
		}
		for _, ev := range evs {
			f.raw.read(p)
			secs, err := s.storedSeconds(ctx, tenant, p, ev, lo, hi)
			if err != nil {
				return err
			}
			var batch []fleetscope.Sample
			stacks, err := s.keepStacks(ctx, d, f.filter)
			if err != nil {
				return err
			}
			keep := func(smp *fleetscope.Sample) bool {
				return (!p.Timed || rg.Contains(smp.TimeNanos-p.StartSecond*1e9)) && f.filter.keepSample(stacks, nil, smp)
			}
			for i := range secs {
				if i%secondsPerCheck == 0 && ctx.Err() != nil {
					return ctx.Err()
				}
				batch, err = index.Decode(batch[:0], &secs[i], p.StartSecond, p.TimeUnitNanos, p.Timed, p.Events[ev].Period, threads, len(keys))
				if err != nil {
					return fleetscope.Wrap(err, fleetscope.EINTERNAL, "profile "+p.ID+": corrupt index row")
				}
				mu.Lock()
				fn(p, d, keys, batch, keep)
				mu.Unlock()
			}
		}
		return nil
	})
}
