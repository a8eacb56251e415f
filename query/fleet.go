package query

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/flame"
	"github.com/fleetscope/fleetscope/query/heatmap"
	"github.com/fleetscope/fleetscope/store/index"
)

// MaxFleetProfiles bounds the profiles one fleet query reads.
const MaxFleetProfiles = 20_000

// Reasons a profile of a selection is left out of an answer.
const (
	LeftUntimed     = "no per-sample times: no heatmap"
	LeftUntimedSpan = "no per-sample times, and its span is not wholly inside the window"
	LeftOtherEvent  = "none of its samples is of the event"
)

// Accounting says which profiles an answer counts and which it left out,
// and which stored rows served it.
type Accounting struct {
	Event    string         // the event counted (base name)
	Profiles int            // profiles whose samples the answer counts
	LeftOut  map[string]int // profiles left out, by reason
	Served   Served
}

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

// chooseEvent sets the default event of a selection that names none, from
// its stored totals (kept: the host strip and the timeline read them next;
// with minutes, the minutes wholly inside [wholeFrom, wholeTo) as minute
// rows: see storedRows).
func (s *Service) chooseEvent(ctx context.Context, tenant int64, f *fleet, minutes bool, wholeFrom, wholeTo int64) error {
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

// FleetHeatmap is a fleet's heatmap and what it counts.
type FleetHeatmap struct {
	*heatmap.Heatmap
	Accounting
}

// FleetHeatmap returns the sub-second offset heatmap of a fleet selection
// in absolute time: column i covers the SecondsPerColumn unix seconds from
// StartSecond + i·SecondsPerColumn, over the whole seconds the window
// touches; row r counts the samples whose offset within their second lies
// in [r/rows, (r+1)/rows), summed over every timed profile of the
// selection. It sums the cells stored at ingest when rows divides 50, and
// decodes the samples otherwise.
func (s *Service) FleetHeatmap(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, rows int, minSPC int64) (*FleetHeatmap, error) {
	if rows == 0 {
		rows = fleetscope.DefaultRows
	}
	if err := fleetscope.CheckRows(rows); err != nil {
		return nil, err
	}
	f, err := s.selectProfiles(ctx, tenant, sel)
	if err != nil {
		return nil, err
	}
	start, spc, columns := f.grid(minSPC)
	minutes := spc%60 == 0
	stored := index.Rows%rows == 0 && f.filter.m == nil // the stored cells add up to the answer
	var cells []index.FleetRow
	if stored {
		// With no event named, every event's cells, and the default event
		// chosen from them: one read, not two.
		if cells, f.served, err = s.storedRows(ctx, tenant, f, f.event, f.first, f.end, f.first, f.end, minutes, true); err != nil {
			return nil, err
		}
		if f.event == "" {
			f.event = f.busiestEvent(cells)
		}
	} else if f.event == "" {
		if err := s.chooseEvent(ctx, tenant, f, minutes, f.first, f.end); err != nil {
			return nil, err
		}
	}
	h := heatmap.New(f.event, start, spc, columns, rows)
	acc := Accounting{Event: f.event, Profiles: len(f.timed), LeftOut: map[string]int{}, Served: f.served}
	if n := len(f.untimed); n > 0 {
		acc.LeftOut[LeftUntimed] = n
	}
	if stored {
		ids := f.ids()
		per := index.Rows / rows
		buf := make([]int32, rows)
		for _, c := range cells {
			if !ids[c.ProfileID] || c.Event != f.event {
				continue
			}
			clear(buf)
			for r := range index.Rows {
				buf[r/per] += c.Cells[r]
				if sel.IncludeIdle {
					buf[r/per] += c.IdleCells[r]
				}
			}
			h.AddCells(c.Second, buf)
		}
	} else {
		err := s.fleetSamples(ctx, tenant, f, f.first*1e9, f.end*1e9, true, func(p *fleetscope.ProfileInfo, d *fleetscope.Dict, _ []int64, batch []fleetscope.Sample, keep func(*fleetscope.Sample) bool) {
			for i := range batch {
				if smp := &batch[i]; keep(smp) && p.Timed && (sel.IncludeIdle || !d.Idle(smp.Stack)) {
					h.AddN(smp.TimeNanos+p.WallShiftNanos, weight(p, smp))
				}
			}
		})
		if err != nil {
			return nil, err
		}
	}
	h.Finish()
	return &FleetHeatmap{Heatmap: h, Accounting: acc}, nil
}

// HostSeries is one host's samples per column.
type HostSeries struct {
	Host    string
	Total   int64
	Columns []int64
}

// FleetHosts is the host strip: samples per (host, column), hosts by total
// (largest first, then by name).
type FleetHosts struct {
	StartSecond      int64
	SecondsPerColumn int64
	Hosts            []HostSeries
	Accounting
}

// FleetTimeline is samples per column, for windows of hours to days.
type FleetTimeline struct {
	StartSecond      int64
	SecondsPerColumn int64
	Totals           []int64
	Accounting
}

// FleetHosts returns the selection's samples per host and column (the same
// columns as its heatmap), from the stored totals.
func (s *Service) FleetHosts(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, minSPC int64) (*FleetHosts, error) {
	f, start, spc, columns, rows, err := s.fleetTotals(ctx, tenant, sel, minSPC, false)
	if err != nil {
		return nil, err
	}
	byHost := map[string]*HostSeries{}
	for _, r := range rows {
		hs := byHost[r.Host]
		if hs == nil {
			hs = &HostSeries{Host: r.Host, Columns: make([]int64, columns)}
			byHost[r.Host] = hs
		}
		n := int64(r.Samples)
		if sel.IncludeIdle {
			n += int64(r.Idle)
		}
		hs.Columns[(r.Second-start)/spc] += n
		hs.Total += n
	}
	out := &FleetHosts{StartSecond: start, SecondsPerColumn: spc, Accounting: f.accounting(false)}
	for _, hs := range byHost {
		out.Hosts = append(out.Hosts, *hs)
	}
	slices.SortFunc(out.Hosts, func(a, b HostSeries) int {
		if c := cmp.Compare(b.Total, a.Total); c != 0 {
			return c
		}
		return cmp.Compare(a.Host, b.Host)
	})
	return out, nil
}

// FleetTimeline returns the selection's samples per column (the heatmap's
// columns), from the stored totals.
func (s *Service) FleetTimeline(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, minSPC int64) (*FleetTimeline, error) {
	f, start, spc, columns, rows, err := s.fleetTotals(ctx, tenant, sel, minSPC, false)
	if err != nil {
		return nil, err
	}
	out := &FleetTimeline{StartSecond: start, SecondsPerColumn: spc, Totals: make([]int64, columns), Accounting: f.accounting(false)}
	for _, r := range rows {
		n := int64(r.Samples)
		if sel.IncludeIdle {
			n += int64(r.Idle)
		}
		out.Totals[(r.Second-start)/spc] += n
	}
	return out, nil
}

// fleetTotals resolves a selection, lays out its columns and reads its
// event's stored totals: by the minute where the columns are whole
// minutes, except, with exactEdges, a minute holding the window's partial
// first or last second (the caller counts those from the samples).
func (s *Service) fleetTotals(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, minSPC int64, exactEdges bool) (f *fleet, start, spc int64, columns int, rows []index.FleetRow, err error) {
	if f, err = s.selectProfiles(ctx, tenant, sel); err != nil {
		return nil, 0, 0, 0, nil, err
	}
	start, spc, columns = f.grid(minSPC)
	minutes := spc%60 == 0
	wholeFrom, wholeTo := f.first, f.end
	if exactEdges {
		wholeFrom, wholeTo = -fleetscope.FloorSecond(-sel.From), fleetscope.FloorSecond(sel.To)
	}
	if f.filter.m != nil {
		if f.event == "" {
			if err := s.chooseEvent(ctx, tenant, f, minutes, wholeFrom, wholeTo); err != nil {
				return nil, 0, 0, 0, nil, err
			}
		}
		rows, err := s.filteredTotals(ctx, tenant, f)
		return f, start, spc, columns, rows, err
	}
	if f.event == "" {
		if err := s.chooseEvent(ctx, tenant, f, minutes, wholeFrom, wholeTo); err != nil {
			return nil, 0, 0, 0, nil, err
		}
	}
	all := f.totals
	if all == nil {
		if all, f.served, err = s.storedRows(ctx, tenant, f, "", f.first, f.end, wholeFrom, wholeTo, minutes, false); err != nil {
			return nil, 0, 0, 0, nil, err
		}
	}
	ids := f.ids()
	rows = all[:0]
	for _, r := range all {
		if ids[r.ProfileID] && r.Event == f.event {
			rows = append(rows, r)
		}
	}
	return f, start, spc, columns, rows, nil
}

// filteredTotals counts, from the stored samples, what a filtered
// selection has per profile and unix second (the stored totals count
// every sample).
func (s *Service) filteredTotals(ctx context.Context, tenant int64, f *fleet) ([]index.FleetRow, error) {
	type key struct {
		id     string
		second int64
	}
	rows := map[key]*index.FleetRow{}
	err := s.fleetSamples(ctx, tenant, f, f.first*1e9, f.end*1e9, true, func(p *fleetscope.ProfileInfo, d *fleetscope.Dict, _ []int64, batch []fleetscope.Sample, keep func(*fleetscope.Sample) bool) {
		for i := range batch {
			smp := &batch[i]
			if !p.Timed || !keep(smp) {
				continue
			}
			sec := fleetscope.FloorSecond(smp.TimeNanos + p.WallShiftNanos)
			r := rows[key{p.ID, sec}]
			if r == nil {
				r = &index.FleetRow{ProfileID: p.ID, Host: p.Host, WallSecond: index.WallSecond{Event: f.event, Second: sec}}
				rows[key{p.ID, sec}] = r
			}
			n := int32(min(weight(p, smp), math.MaxInt32))
			if d.Idle(smp.Stack) {
				r.Idle += n
			} else {
				r.Samples += n
			}
		}
	})
	if err != nil {
		return nil, err
	}
	out := make([]index.FleetRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	return out, nil
}

// accounting counts a fleet's profiles; withUntimedSpans counts untimed
// profiles wholly inside the window as used (flame graphs).
func (f *fleet) accounting(withUntimedSpans bool) Accounting {
	acc := Accounting{Event: f.event, Profiles: len(f.timed), LeftOut: map[string]int{}, Served: f.served}
	for _, p := range f.untimed {
		switch {
		case !withUntimedSpans:
			acc.LeftOut[LeftUntimed]++
		case f.spanInside(p):
			acc.Profiles++
		default:
			acc.LeftOut[LeftUntimedSpan]++
		}
	}
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
	sem := make(chan struct{}, 4)
	errc := make(chan error, len(profiles))
	var wg sync.WaitGroup
	for _, p := range profiles {
		evs := f.events(p)
		if len(evs) == 0 {
			continue
		}
		if ctx.Err() != nil { // start no more
			errc <- ctx.Err()
			break
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			keys, err := s.profileStacks(ctx, tenant, p.ID)
			if err != nil {
				errc <- err
				return
			}
			var d *fleetscope.Dict
			if withDict || f.filter.m != nil {
				if d, err = s.dict(ctx, tenant, p); err != nil {
					errc <- err
					return
				}
			}
			threads, err := s.profileThreads(ctx, tenant, p.ID)
			if err != nil {
				errc <- err
				return
			}
			start := p.StartSecond*1e9 + p.WallShiftNanos // absolute ns of the profile's start second
			rg := fleetscope.Range{Start: from - start, End: to - start}
			lo, hi := int64(0), int64(-1)
			if p.Timed {
				lo, hi = max(fleetscope.FloorSecond(rg.Start), 0), min(fleetscope.FloorSecond(rg.End-1), p.DurationNanos/1e9)
				if lo > hi {
					return
				}
			}
			for _, ev := range evs {
				secs, err := s.src.Seconds(ctx, tenant, p.ID, ev, lo, hi)
				if err != nil {
					errc <- err
					return
				}
				var batch []fleetscope.Sample
				stacks, err := s.keepStacks(ctx, d, f.filter)
				if err != nil {
					errc <- err
					return
				}
				keep := func(smp *fleetscope.Sample) bool {
					return (!p.Timed || rg.Contains(smp.TimeNanos-p.StartSecond*1e9)) && f.filter.keepSample(stacks, nil, smp)
				}
				for i := range secs {
					if i%secondsPerCheck == 0 && ctx.Err() != nil {
						errc <- ctx.Err()
						return
					}
					batch, err = index.Decode(batch[:0], &secs[i], p.StartSecond, p.TimeUnitNanos, p.Timed, p.Events[ev].Period, threads, len(keys))
					if err != nil {
						errc <- fleetscope.Wrap(err, fleetscope.EINTERNAL, "profile "+p.ID+": corrupt index row")
						return
					}
					mu.Lock()
					fn(p, d, keys, batch, keep)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	return <-errc
}

// profileStacks returns a profile's stack keys, cached.
func (s *Service) profileStacks(ctx context.Context, tenant int64, id string) ([]int64, error) {
	k := profileKey{tenant, id}
	if ids, ok := s.stacks.Get(k); ok {
		return ids, nil
	}
	ids, err := s.src.ProfileStacks(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	s.stacks.Put(k, ids)
	return ids, nil
}

// FleetFlameOptions choose how a fleet flame graph counts.
type FleetFlameOptions struct {
	ByPeriod bool
	Annotate flame.Annotate
}

// FleetFlameGraph is a merged flame graph and what it counts.
type FleetFlameGraph struct {
	*FlameGraph
	Accounting
}

// FleetFlameGraph merges, exactly, every sample of the selection's event
// taken in its window [From, To), across all its profiles: timed profiles
// by the absolute time of each sample, untimed ones whole when their span
// lies inside the window. Stacks merge by their tenant dictionary key, so
// the same stack on two hosts is one stack. The rows of every profile come
// in one round trip; whole seconds inside the window are counted from their
// stacks alone; profiles' counts add up as arrays over a dense numbering of
// the tenant's stacks.
func (s *Service) FleetFlameGraph(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, o FleetFlameOptions) (*FleetFlameGraph, error) {
	f, err := s.resolve(ctx, tenant, sel)
	if err != nil {
		return nil, err
	}
	parts, reqs, owner := f.parts(sel.From, sel.To, true, true)
	d := s.denseIDs(tenant)
	if err := s.translateParts(ctx, tenant, f, parts, d, true); err != nil {
		return nil, err
	}
	if err := s.countParts(ctx, tenant, parts, reqs, owner, o.ByPeriod); err != nil {
		return nil, err
	}
	m, at, err := s.partsDict(ctx, tenant, parts, d)
	if err != nil {
		return nil, err
	}
	total := make([]uint64, m.dict.NumStacks())
	for _, pt := range parts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		at := at[pt.p.ID]
		for i, c := range pt.counts {
			if c != 0 {
				total[at[i]] += c
			}
		}
	}
	counts := &flame.Counts{}
	keep, err := s.keepStacks(ctx, m.dict, f.filter)
	if err != nil {
		return nil, err
	}
	for i, c := range total {
		if c != 0 && (sel.IncludeIdle || !m.dict.Idle(fleetscope.StackID(i))) && (keep == nil || keep[i]) {
			counts.AddStack(fleetscope.StackID(i), c)
		}
	}
	g := &FlameGraph{Event: f.event, Total: counts.Total, Dict: m.dict, Counts: counts, Annotate: o.Annotate,
		Source: fleetSource(sel), layout: func() *flame.Layout { return m.layout(o.Annotate) },
		timeline: func(w io.Writer, name string) error { return s.fleetTimeline(ctx, tenant, sel, o, w, name) }}
	return &FleetFlameGraph{FlameGraph: g, Accounting: f.accounting(true)}, nil
}

// fleetSource names a fleet selection in exports' titles (the window
// says its app): "fleet", and its hosts when it names some.
func fleetSource(sel fleetscope.FleetSelection) string {
	if len(sel.Hosts) == 0 {
		return "fleet"
	}
	return "fleet, hosts " + strings.Join(sel.Hosts, " ")
}

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

// translateParts numbers the parts' stacks in d and, withCounts, gives
// each zeroed counts and the threads the fleet's filter keeps.
func (s *Service) translateParts(ctx context.Context, tenant int64, f *fleet, parts []*part, d *denseIDs, withCounts bool) error {
	return s.eachParallel(len(parts), func(i int) error {
		pt := parts[i]
		trans, err := s.translation(ctx, tenant, pt.p.ID, d)
		if err != nil {
			return err
		}
		pt.trans = trans
		if withCounts {
			pt.counts = make([]uint64, len(trans))
			pt.threads, err = s.keepThreads(ctx, tenant, pt.p.ID, f.filter)
		}
		return err
	})
}

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
	n := 0
	err := s.src.FleetSeconds(ctx, tenant, reqs, func(i int, sec *index.Second) error {
		if n++; n%secondsPerCheck == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
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

// partsDict returns the dictionary of every stack the parts' profiles have,
// whatever the range, and where each profile's stacks sit in it (by
// profile id, then the profile's stack): one cached dictionary (and
// layout) serves every range of a selection, as a user drags across it.
func (s *Service) partsDict(ctx context.Context, tenant int64, parts []*part, d *denseIDs) (*mergedDict, map[string][]int32, error) {
	set := s.stackSet(tenant, parts, d)
	m, err := s.mergedDict(ctx, set)
	if err != nil {
		return nil, nil, err
	}
	return m, set.at, nil
}

// stackSet is the distinct stacks of a set of profiles, sorted by key: the
// stacks of their merged dictionary, in its order.
type stackSet struct {
	byKey []keyID
	// at is where each profile's stacks sit in the dictionary, by profile
	// id (the queries' own map from the tenant's dense ids was as large as
	// the tenant's numbering, up to 4M entries, each query).
	at   map[string][]int32
	dict mergedKey // names the dictionary
}

// sizeBytes estimates the memory it holds.
func (v *stackSet) sizeBytes() int64 {
	n := 64 + 16*int64(len(v.byKey))
	for id, at := range v.at {
		n += 64 + int64(len(id)) + 4*int64(len(at))
	}
	return n
}

// setKey names the stacks of a set of a tenant's profiles in one numbering.
type setKey struct {
	tenant   int64
	gen      uint64
	profiles [32]byte // SHA-256 of the profile ids, in order
}

// stackSet returns the stacks of the parts' profiles, cached by the
// profiles: every range of a selection has the same ones, and sorting them
// (50,000 for the fleet benchmark's 20 hosts) was a third of a 1-s merged
// flame graph.
func (s *Service) stackSet(tenant int64, parts []*part, d *denseIDs) *stackSet {
	h := sha256.New()
	for _, pt := range parts {
		h.Write([]byte(pt.p.ID))
		h.Write([]byte{0})
	}
	k := setKey{tenant: tenant, gen: d.gen}
	h.Sum(k.profiles[:0])
	if set, ok := s.stackSets.Get(k); ok {
		return set
	}
	pos := make([]int32, d.len()) // dense id -> its stack in the dictionary (-1: seen, not yet placed)
	var ids []int32
	for _, pt := range parts {
		for _, id := range pt.trans {
			if pos[id] == 0 {
				pos[id] = -1
				ids = append(ids, id)
			}
		}
	}
	set := &stackSet{byKey: d.keysOf(ids), at: map[string][]int32{}, dict: mergedKey{tenant: tenant}}
	slices.SortFunc(set.byKey, func(a, b keyID) int { return cmp.Compare(a.key, b.key) })
	for i, k := range set.byKey {
		pos[k.id] = int32(i)
	}
	for _, pt := range parts {
		if _, ok := set.at[pt.p.ID]; !ok {
			at := make([]int32, len(pt.trans))
			for i, id := range pt.trans {
				at[i] = pos[id]
			}
			set.at[pt.p.ID] = at
		}
	}
	h.Reset()
	var b [8]byte
	for _, k := range set.byKey {
		binary.LittleEndian.PutUint64(b[:], uint64(k.key))
		h.Write(b[:])
	}
	h.Sum(set.dict.keys[:0])
	s.stackSets.Put(k, set)
	return set
}

// rowOf is a stored row and the index of the range it belongs to.
type rowOf struct {
	i int
	s *index.Second
}

// eachParallel runs fn for 0..n-1, four at a time; the first error wins.
func (s *Service) eachParallel(n int, fn func(i int) error) error {
	sem := make(chan struct{}, 4)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			errs <- fn(i)
		}()
	}
	wg.Wait()
	close(errs)
	var err error
	for e := range errs {
		err = cmp.Or(err, e)
	}
	return err
}

// denseIDs numbers a tenant's stack keys densely (0, 1, 2, ... in the order
// first seen), so that merging profiles' counts is adding arrays. A
// numbering only grows; past maxDense keys the tenant gets a new one (with
// a new generation), while queries holding the old one finish with it.
type denseIDs struct {
	gen   uint64 // unique among numberings
	mu    sync.Mutex
	byKey map[int64]int32
	keys  []int64
}

const maxDense = 4 << 20

func (d *denseIDs) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.keys)
}

// keyID is a stack key and its number.
type keyID struct {
	key int64
	id  int32
}

// keysOf returns ids with their keys.
func (d *denseIDs) keysOf(ids []int32) []keyID {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]keyID, len(ids))
	for i, id := range ids {
		out[i] = keyID{d.keys[id], id}
	}
	return out
}

// translate numbers keys.
func (d *denseIDs) translate(keys []int64) []int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]int32, len(keys))
	for i, k := range keys {
		id, ok := d.byKey[k]
		if !ok {
			id = int32(len(d.keys))
			d.byKey[k] = id
			d.keys = append(d.keys, k)
		}
		out[i] = id
	}
	return out
}

// denseGen numbers numberings.
var denseGen atomic.Uint64

// denseIDs returns a tenant's numbering (a new one once it is full).
func (s *Service) denseIDs(tenant int64) *denseIDs {
	s.denseMu.Lock()
	defer s.denseMu.Unlock()
	d, ok := s.dense[tenant]
	if !ok || d.len() > maxDense {
		d = &denseIDs{gen: denseGen.Add(1), byKey: map[int64]int32{}}
		s.dense[tenant] = d
	}
	return d
}

// translated is a profile's stacks as ids of one numbering.
type translated struct {
	gen uint64
	ids []int32
}

// translation returns a profile's stacks as ids of numbering d, cached.
func (s *Service) translation(ctx context.Context, tenant int64, id string, d *denseIDs) ([]int32, error) {
	k := profileKey{tenant, id}
	if t, ok := s.trans.Get(k); ok && t.gen == d.gen {
		return t.ids, nil
	}
	keys, err := s.profileStacks(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	ids := d.translate(keys)
	s.trans.Put(k, translated{d.gen, ids})
	return ids, nil
}

// mergedKey names a fleet dictionary: a tenant and its sorted stack keys.
type mergedKey struct {
	tenant int64
	keys   [32]byte // SHA-256 of the keys
}

// mergedDict is a dictionary of a set of a tenant's stacks, with its flame
// graph layouts.
type mergedDict struct {
	dict    *fleetscope.Dict
	mu      sync.Mutex
	layouts map[flame.Annotate]*flame.Layout
}

func (m *mergedDict) layout(a flame.Annotate) *flame.Layout {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.layouts[a]; ok {
		return l
	}
	l := flame.NewLayout(m.dict, a)
	m.layouts[a] = l
	return l
}

// sizeBytes estimates the memory it holds, with a layout or two to come.
func (m *mergedDict) sizeBytes() int64 { return 2 * m.dict.SizeBytes() }

// mergedDict returns the dictionary of a set of stacks, cached: the same
// selection asked for other ranges reuses it.
func (s *Service) mergedDict(ctx context.Context, set *stackSet) (*mergedDict, error) {
	if m, ok := s.merged.Get(set.dict); ok {
		return m, nil
	}
	keys := make([]int64, len(set.byKey))
	for i, k := range set.byKey {
		keys[i] = k.key
	}
	d, err := s.src.StackDict(ctx, set.dict.tenant, keys)
	if err != nil {
		return nil, err
	}
	m := &mergedDict{dict: d, layouts: map[flame.Annotate]*flame.Layout{}}
	s.merged.Put(set.dict, m)
	return m, nil
}
