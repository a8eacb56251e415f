package query

import (
	"context"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// fleet is a resolved selection: its profiles sorted by start.
type fleet struct {
	sel     fleetscope.FleetSelection
	timed   []*fleetscope.ProfileInfo
	untimed []*fleetscope.ProfileInfo
	event   string // base name
	filter  filter
	// first and end are the unix seconds the window touches, [first, end).
	first, end int64
	// totals are the stored totals of the app's profiles in [first, end),
	// every event's, when choosing the event read them (nil otherwise),
	// by the minute where the reader allowed (see storedRows); served
	// says what was read.
	totals []index.FleetRow
	served Served
}

// resolve finds a selection's profiles and its event.
func (s *Service) resolve(ctx context.Context, tenant int64, sel fleetscope.FleetSelection) (*fleet, error) {
	f, err := s.selectProfiles(ctx, tenant, sel)
	if err != nil {
		return nil, err
	}
	if f.event == "" {
		if err := s.chooseEvent(ctx, tenant, f, true, f.first, f.end); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// onlyEvent returns the event (base name) every profile of the selection
// has and no other, if there is one.
func (f *fleet) onlyEvent() (string, bool) {
	only := ""
	for _, ps := range [][]*fleetscope.ProfileInfo{f.timed, f.untimed} {
		for _, p := range ps {
			for _, e := range p.Events {
				switch b := fleetscope.EventBase(e.Name); {
				case only == "":
					only = b
				case b != only:
					return "", false
				}
			}
		}
	}
	return only, only != ""
}

// chooseEvent sets the default event of a selection that names none: the
// one its profiles all have, if so, else from its stored totals (kept: the
// host strip and the timeline read them next;
// with minutes, the minutes wholly inside [wholeFrom, wholeTo) as minute
// rows: see storedRows).
func (s *Service) chooseEvent(ctx context.Context, tenant int64, f *fleet, minutes bool, wholeFrom, wholeTo int64) error {
	if e, ok := f.onlyEvent(); ok {
		f.event = e // what its stored totals would choose: no need to read them
		return nil
	}
	if len(f.timed) > 0 {
		var err error
		if f.totals, f.served, err = s.storedRows(ctx, tenant, f, "", f.first, f.end, wholeFrom, wholeTo, minutes, false); err != nil {
			return err
		}
	}
	f.event = f.busiestEvent(f.totals)
	return nil
}

// selectProfiles finds a selection's profiles; its event only if it names
// one (resolve, or busiestEvent of stored rows, chooses one otherwise).
func (s *Service) selectProfiles(ctx context.Context, tenant int64, sel fleetscope.FleetSelection) (*fleet, error) {
	if err := sel.Check(); err != nil {
		return nil, err
	}
	flt, err := compileFilter(sel.Filter)
	if err != nil {
		return nil, err
	}
	if flt.spans != nil {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "span conditions choose samples of one profile (its own probes): not of a fleet")
	}
	ps, err := s.src.FleetProfiles(ctx, tenant, sel.App, sel.Hosts, sel.Labels, sel.From, sel.To, MaxFleetProfiles)
	if err != nil {
		return nil, err
	}
	f := &fleet{sel: sel, filter: flt, first: fleetscope.FloorSecond(sel.From), end: fleetscope.FloorSecond(sel.To-1) + 1,
		event: fleetscope.EventBase(sel.Event)}
	for _, p := range ps {
		if p.Timed {
			f.timed = append(f.timed, p)
		} else {
			f.untimed = append(f.untimed, p)
		}
	}
	return f, nil
}

// ids returns the set of the fleet's timed profiles.
func (f *fleet) ids() map[string]bool {
	out := make(map[string]bool, len(f.timed))
	for _, p := range f.timed {
		out[p.ID] = true
	}
	return out
}

// busiestEvent is the default event (base name): the one most samples of
// the selection's timed profiles have in rows (their stored seconds in the
// window, every event's); with none, the untimed profiles' most common
// one; the first by name on a tie.
func (f *fleet) busiestEvent(rows []index.FleetRow) string {
	totals := map[string]int64{}
	ids := f.ids()
	for _, r := range rows {
		if ids[r.ProfileID] {
			totals[r.Event] += int64(r.Samples)
			if f.sel.IncludeIdle {
				totals[r.Event] += int64(r.Idle)
			}
		}
	}
	if len(totals) == 0 {
		for _, p := range f.untimed {
			for _, e := range p.Events {
				totals[fleetscope.EventBase(e.Name)] += e.Samples
			}
		}
	}
	best, n := "", int64(-1)
	for e, c := range totals {
		if c > n || c == n && e < best {
			best, n = e, c
		}
	}
	return best
}

// accounting counts a fleet's profiles; withUntimedSpans counts untimed
// profiles wholly inside the window as used (flame graphs).
func (f *fleet) accounting(withUntimedSpans bool) Accounting {
	acc := Accounting{Event: f.event, Profiles: len(f.timed), LeftOut: map[string]int{}, Served: f.served}
	var inside []*fleetscope.ProfileInfo
	for _, p := range f.untimed {
		switch {
		case !withUntimedSpans:
			acc.LeftOut[LeftUntimed]++
		case f.spanInside(p):
			acc.Profiles++
			inside = append(inside, p)
		default:
			acc.LeftOut[LeftUntimedSpan]++
		}
	}
	acc.countLive(f.timed, inside)
	return acc
}

// spanInside reports whether an untimed profile's span lies wholly inside
// the window.
func (f *fleet) spanInside(p *fleetscope.ProfileInfo) bool {
	start, end := fleetscope.WallSpan(p)
	return start >= f.sel.From && end <= f.sel.To
}

// events returns the ids of p's events whose base name is the fleet's.
func (f *fleet) events(p *fleetscope.ProfileInfo) []int {
	var out []int
	for i, e := range p.Events {
		if fleetscope.EventBase(e.Name) == f.event {
			out = append(out, i)
		}
	}
	return out
}
