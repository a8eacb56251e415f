package query

import (
	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// part is one profile's share of a fleet count: its range relative to its
// start second, its stacks as dense ids and its counts by stack.
type part struct {
	p       *fleetscope.ProfileInfo
	trans   []int32  // profile stack -> dense id
	counts  []uint64 // by profile stack
	rg      fleetscope.Range
	threads []bool // the threads the selection's filter keeps (nil: all)
}

// parts returns the fleet's profiles that may hold samples of its event in
// the absolute window [from, to) (unix ns): with timed, the timed profiles
// whose seconds touch it, each with its range; with untimed, the untimed
// profiles whose span lies inside the selection's window, whole. reqs are
// the second ranges of their rows, owner[i] the part reqs[i] belongs to.
func (f *fleet) parts(from, to int64, timed, untimed bool) (parts []*part, reqs []index.SecondsRange, owner []int) {
	if timed {
		for _, p := range f.timed {
			start := p.StartSecond*1e9 + p.WallShiftNanos
			rg := fleetscope.Range{Start: from - start, End: to - start}
			lo, hi := max(fleetscope.FloorSecond(rg.Start), 0), min(fleetscope.FloorSecond(rg.End-1), p.DurationNanos/1e9)
			if lo > hi {
				continue
			}
			for _, ev := range f.events(p) {
				reqs, owner = append(reqs, index.SecondsRange{ProfileID: p.ID, Event: ev, From: lo, To: hi}), append(owner, len(parts))
			}
			parts = append(parts, &part{p: p, rg: rg})
		}
	}
	if untimed {
		for _, p := range f.untimed {
			if f.spanInside(p) {
				for _, ev := range f.events(p) {
					reqs, owner = append(reqs, index.SecondsRange{ProfileID: p.ID, Event: ev, From: 0, To: -1}), append(owner, len(parts))
				}
				parts = append(parts, &part{p: p, rg: fleetscope.All})
			}
		}
	}
	return parts, reqs, owner
}
