package query

import (
	"context"
	"maps"
	"sync"

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
	// from the rollups where the reader allowed (see storedRows); served
	// says what was read.
	totals []index.FleetRow
	served Served
	// counts, when set, stands for timed and untimed: the profiles were
	// counted in the store, not listed (countProfiles), for an answer
	// from every stored row of the window.
	counts *fleetscope.FleetCounts
	// raw are the profiles whose samples were read from their raw files.
	raw rawFiles
}

// rawFiles is a set of profiles read from their raw files, safe for
// concurrent use.
type rawFiles struct {
	mu  sync.Mutex
	ids map[string]bool
}

// read notes that p's samples are read, from its raw file if it is cold.
func (r *rawFiles) read(p *fleetscope.ProfileInfo) {
	if !p.Cold {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[string]bool{}
	}
	r.ids[p.ID] = true
}

// merge adds o's profiles.
func (r *rawFiles) merge(o *rawFiles) {
	o.mu.Lock()
	ids := maps.Clone(o.ids)
	o.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ids == nil {
		r.ids = map[string]bool{}
	}
	maps.Copy(r.ids, ids)
}

func (r *rawFiles) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids)
}

// resolve finds a selection's profiles and its event.
func (s *Service) resolve(ctx context.Context, tenant int64, sel fleetscope.FleetSelection) (*fleet, error) {
	f, err := s.selectProfiles(ctx, tenant, sel)
	if err != nil {
		return nil, err
	}
	if f.event == "" {
		if err := s.chooseEvent(ctx, tenant, f, index.Minutes, f.first, f.end, false); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// onlyEvent returns the event (base name) every profile of the selection
// has and no other, if there is one.
func (f *fleet) onlyEvent() (string, bool) {
	var names []string
	if f.counts != nil {
		names = f.counts.Events
	} else {
		for _, ps := range [][]*fleetscope.ProfileInfo{f.timed, f.untimed} {
			for _, p := range ps {
				for _, e := range p.Events {
					names = append(names, e.Name)
				}
			}
		}
	}
	only := ""
	for _, e := range names {
		switch b := fleetscope.EventBase(e); {
		case only == "":
			only = b
		case b != only:
			return "", false
		}
	}
	return only, only != ""
}

// chooseEvent sets the default event of a selection that names none: the
// one its profiles all have, if so, else the busiest in its stored totals,
// read a row at a time (for columns of spc seconds, the rollup slots
// wholly inside [wholeFrom, wholeTo) from the rollups: see storedRows; any
// whole minutes will do for an answer without columns). With keep, the
// rows are kept in f.totals: a listed selection's host strip and timeline
// sum them next.
func (s *Service) chooseEvent(ctx context.Context, tenant int64, f *fleet, spc int64, wholeFrom, wholeTo int64, keep bool) error {
	if e, ok := f.onlyEvent(); ok {
		f.event = e // what its stored totals would choose: no need to read them
		return nil
	}
	sums := map[string]int64{}
	if f.numTimed() > 0 {
		counted := f.rowFilter()
		var err error
		f.served, err = s.storedRows(ctx, tenant, f, "", f.first, f.end, wholeFrom, wholeTo, spc, false, func(r *index.FleetRow) error {
			if keep {
				f.totals = append(f.totals, *r)
			}
			if counted(r) {
				sums[r.Event] += int64(r.Samples)
				if f.sel.IncludeIdle {
					sums[r.Event] += int64(r.Idle)
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	f.event = f.busiestEvent(sums)
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
	f := newFleet(sel)
	f.filter = flt
	for _, p := range ps {
		if p.Timed {
			f.timed = append(f.timed, p)
		} else {
			f.untimed = append(f.untimed, p)
		}
	}
	return f, nil
}

// countProfiles is selectProfiles for an answer from stored totals of a
// selection without label conditions or a filter, through a store that
// counts (ColumnTotals): every stored row of the window is then the
// selection's, so its profiles are counted, not listed, and no bound on
// their number applies.
func (s *Service) countProfiles(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, ct ColumnTotals) (*fleet, error) {
	if err := sel.Check(); err != nil {
		return nil, err
	}
	c, err := ct.FleetCounts(ctx, tenant, sel.App, sel.Hosts, sel.From, sel.To)
	if err != nil {
		return nil, err
	}
	f := newFleet(sel)
	f.counts = &c
	return f, nil
}

// newFleet is a selection's fleet before its profiles are found: the unix
// seconds its window touches, [first, end), and the event it names.
func newFleet(sel fleetscope.FleetSelection) *fleet {
	return &fleet{sel: sel, first: fleetscope.FloorSecond(sel.From), end: fleetscope.FloorSecond(sel.To-1) + 1, event: fleetscope.EventBase(sel.Event)}
}

// numTimed is the number of the fleet's timed profiles.
func (f *fleet) numTimed() int {
	if f.counts != nil {
		return f.counts.Timed
	}
	return len(f.timed)
}

// rowFilter returns whether a stored row of the window is one of the
// fleet's: of one of its timed profiles, or for a counted fleet, whose
// profiles are every profile of its hosts, of one of its hosts.
func (f *fleet) rowFilter() func(*index.FleetRow) bool {
	if f.counts == nil {
		ids := f.ids()
		return func(r *index.FleetRow) bool { return ids[r.ProfileID] }
	}
	if len(f.sel.Hosts) == 0 {
		return func(*index.FleetRow) bool { return true }
	}
	hosts := map[string]bool{}
	for _, h := range f.sel.Hosts {
		hosts[h] = true
	}
	return func(r *index.FleetRow) bool { return hosts[r.Host] }
}

// ids returns the set of the fleet's timed profiles (none for a counted
// fleet: see rowFilter).
func (f *fleet) ids() map[string]bool {
	out := make(map[string]bool, len(f.timed))
	for _, p := range f.timed {
		out[p.ID] = true
	}
	return out
}

// busiestEvent is the default event (base name): the one with the most
// samples in totals (the selection's timed profiles' stored samples in
// the window, by event); with none, the untimed profiles' most common
// one; the first by name on a tie.
func (f *fleet) busiestEvent(totals map[string]int64) string {
	if len(totals) == 0 && f.counts != nil {
		for _, e := range f.counts.Events { // the first by name: untimed ones are not counted by event
			totals[fleetscope.EventBase(e)] += 0
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
	acc.Served.RawFiles = f.raw.len()
	if c := f.counts; c != nil { // answers from stored totals, or from rollups (fleet_long.go)
		acc.Profiles, acc.LiveSegments, acc.LiveStreams = c.Timed, c.LiveSegments, c.LiveStreams
		if !withUntimedSpans {
			if c.Untimed > 0 {
				acc.LeftOut[LeftUntimed] = c.Untimed
			}
			return acc
		}
		for _, p := range f.untimed { // listed
			if f.spanInside(p) {
				acc.Profiles++
			} else {
				acc.LeftOut[LeftUntimedSpan]++
			}
		}
		return acc
	}
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
