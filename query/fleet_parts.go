package query

import (
	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// part is one profile's share of a fleet count: its range relative to its
// start second, its stacks as dense ids and its counts by stack.
type part struct {
	id      string                  // the profile's id, or a stack bucket's name (fleet_buckets.go)
	p       *fleetscope.ProfileInfo // nil for a stack bucket
	trans   []int32                 // profile stack -> dense id
	counts  []uint64                // by profile stack
	weights []uint64                // by profile stack, each sample's period: for a stack bucket to be (else nil)
	rg      fleetscope.Range
	threads []bool // the threads the selection's filter keeps (nil: all)
}

// whole says whether every sample of the part's profile lies in its range,
// so that every row of it is counted whole: an untimed profile's (counted
// whole when its span lies inside the window), or a timed profile's whose
// seconds, 0 to its duration's, all lie in its range.
func (pt *part) whole() bool {
	if pt.p == nil {
		return false
	}
	return !pt.p.Timed || pt.rg.Start <= 0 && (pt.p.DurationNanos/1e9+1)*1e9 <= pt.rg.End
}

// parts returns the fleet's profiles that may hold samples of its event in
// the absolute window [from, to) (unix ns): with timed, the timed profiles
// whose seconds touch it, each with its range; with untimed, the untimed
// profiles whose span lies inside the selection's window, whole. reqs are
// the second ranges of their rows, owner[i] the part reqs[i] belongs to.
func (f *fleet) parts(from, to int64, timed, untimed bool) (parts []*part, reqs []index.SecondsRange, owner []int) {
	var ps partSet
	if timed {
		ps.timed(f, f.timed, from, to)
	}
	if untimed {
		ps.untimed(f)
	}
	return ps.parts, ps.reqs, ps.owner
}

// partSet is parts and the row ranges to read for them.
type partSet struct {
	parts []*part
	reqs  []index.SecondsRange
	owner []int // the part of each of reqs
}

// timed adds the parts of the timed profiles of ps that have seconds in
// the absolute window [from, to) (unix ns), each with its range.
func (s *partSet) timed(f *fleet, ps []*fleetscope.ProfileInfo, from, to int64) {
	for _, p := range ps {
		start := p.StartSecond*1e9 + p.WallShiftNanos
		rg := fleetscope.Range{Start: from - start, End: to - start}
		lo, hi := max(fleetscope.FloorSecond(rg.Start), 0), min(fleetscope.FloorSecond(rg.End-1), p.DurationNanos/1e9)
		if lo > hi {
			continue
		}
		for _, ev := range f.events(p) {
			s.reqs, s.owner = append(s.reqs, index.SecondsRange{ProfileID: p.ID, Event: ev, From: lo, To: hi}), append(s.owner, len(s.parts))
		}
		s.parts = append(s.parts, &part{id: p.ID, p: p, rg: rg})
	}
}

// untimed adds the untimed profiles whose span lies inside the selection's
// window, whole.
func (s *partSet) untimed(f *fleet) {
	for _, p := range f.untimed {
		if f.spanInside(p) {
			for _, ev := range f.events(p) {
				s.reqs, s.owner = append(s.reqs, index.SecondsRange{ProfileID: p.ID, Event: ev, From: 0, To: -1}), append(s.owner, len(s.parts))
			}
			s.parts = append(s.parts, &part{id: p.ID, p: p, rg: fleetscope.All})
		}
	}
}
