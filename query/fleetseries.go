package query

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"math"
	"slices"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// MaxLabelSets bounds the distinct label sets one listing returns.
const MaxLabelSets = 100_000

// LabelSets returns the distinct (app, host, labels) of the tenant's
// profiles of app ("": every app) that overlap the window [from, to) (unix
// ns), each with the base names of its profiles' events, sorted by app,
// host and labels: what a profile in the window can be selected by, the
// same profiles a fleet selection of that window considers. Returns
// EINVALID for an empty window or one longer than fleetscope.MaxFleetWindow,
// ETOOLARGE past MaxLabelSets.
func (s *Service) LabelSets(ctx context.Context, tenant int64, app string, from, to int64) ([]fleetscope.LabelSet, error) {
	check := fleetscope.FleetSelection{App: cmp.Or(app, "any"), From: from, To: to}
	if err := check.Check(); err != nil {
		return nil, err
	}
	sets, err := s.src.FleetLabelSets(ctx, tenant, app, from, to, MaxLabelSets)
	if err != nil {
		return nil, err
	}
	key := func(ls fleetscope.LabelSet) string {
		b, _ := json.Marshal(ls.Labels) // keys sorted
		return string(b)
	}
	slices.SortFunc(sets, func(a, b fleetscope.LabelSet) int {
		return cmp.Or(cmp.Compare(a.App, b.App), cmp.Compare(a.Host, b.Host), cmp.Compare(key(a), key(b)))
	})
	return sets, nil
}

// SeriesGroup is one group's samples per column.
type SeriesGroup struct {
	Key     string
	Total   int64
	Columns []int64
}

// FleetSeries is a selection's samples per column, in groups of its
// profiles (ordered by key).
type FleetSeries struct {
	StartSecond      int64
	SecondsPerColumn int64
	Groups           []SeriesGroup
	Accounting
}

// FleetSeries counts over time exactly the samples the selection's merged
// flame graph counts (FleetFlameGraph, by sample count), so that its
// columns sum to that flame graph's total: every sample of the selection's
// event in [From, To) of its timed profiles, in the column of its unix
// second (FleetTimeline's columns: the seconds the window touches, at least
// minSPC a column), and every untimed profile whose span lies inside the
// window, whole, in the column of its span's start. Idle samples only with
// IncludeIdle. group names each profile's group (nil: one group, "");
// groups without samples are left out. group is called once a profile.
//
// Seconds wholly inside the window are read from the stored totals, as
// FleetTimeline reads them: for a window of whole seconds and timed
// profiles only, the columns are FleetTimeline's. The samples of a window's
// partial first and last second, and of untimed profiles, are counted from
// their stored rows against the dictionary the selection's merged flame
// graph uses (cached, so a flame graph and a series of one selection build
// it once).
func (s *Service) FleetSeries(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, minSPC int64, group func(*fleetscope.ProfileInfo) string) (*FleetSeries, error) {
	f, start, spc, columns, rows, err := s.fleetTotals(ctx, tenant, sel, minSPC, true)
	if err != nil {
		return nil, err
	}
	out := &FleetSeries{StartSecond: start, SecondsPerColumn: spc, Accounting: f.accounting(true)}
	groups := map[string]*SeriesGroup{}
	keys := map[string]string{} // by profile id: its group
	add := func(p *fleetscope.ProfileInfo, second, n int64) {
		if n == 0 {
			return
		}
		k, ok := keys[p.ID]
		if !ok && group != nil {
			k = group(p)
			keys[p.ID] = k
		}
		g, ok := groups[k]
		if !ok {
			g = &SeriesGroup{Key: k, Columns: make([]int64, columns)}
			groups[k] = g
		}
		g.Columns[(second-start)/spc] += n
		g.Total += n
	}
	byID := map[string]*fleetscope.ProfileInfo{}
	for _, p := range f.timed {
		byID[p.ID] = p
	}
	// Seconds wholly inside the window: [first, last).
	first, last := -fleetscope.FloorSecond(-sel.From), fleetscope.FloorSecond(sel.To)
	for _, r := range rows {
		if r.Second >= first && r.Second < last {
			n := int64(r.Samples)
			if sel.IncludeIdle {
				n += int64(r.Idle)
			}
			add(byID[r.ProfileID], r.Second, n)
		}
	}
	// The partial seconds at the window's ends, and untimed profiles.
	type edge struct{ from, to int64 }
	var edges []edge
	if sel.From < first*1e9 {
		edges = append(edges, edge{sel.From, min(first*1e9, sel.To)})
	}
	if last >= first && last*1e9 < sel.To {
		edges = append(edges, edge{last * 1e9, sel.To})
	}
	var parts []*part
	var reqs []index.SecondsRange
	var owner []int
	var seconds []int64 // by part: the column's second (timed), -1: its span's start (untimed)
	join := func(ps []*part, rs []index.SecondsRange, os []int, second int64) {
		for _, o := range os {
			owner = append(owner, o+len(parts))
		}
		reqs = append(reqs, rs...)
		parts = append(parts, ps...)
		for range ps {
			seconds = append(seconds, second)
		}
	}
	for _, e := range edges {
		ps, rs, os := f.parts(e.from, e.to, true, false)
		join(ps, rs, os, fleetscope.FloorSecond(e.from))
	}
	ps, rs, os := f.parts(sel.From, sel.To, false, true)
	join(ps, rs, os, -1)
	if len(parts) > 0 {
		d := s.denseIDs(tenant)
		// The dictionary of the selection's merged flame graph: the same
		// profiles, so the same cached dictionary.
		all, _, _ := f.parts(sel.From, sel.To, true, true)
		if err := s.translateParts(ctx, tenant, f, all, d, false); err != nil {
			return nil, err
		}
		if err := s.translateParts(ctx, tenant, f, parts, d, true); err != nil {
			return nil, err
		}
		if err := s.countParts(ctx, tenant, f, parts, reqs, owner, false); err != nil {
			return nil, err
		}
		m, at, err := s.partsDict(ctx, tenant, all, d)
		if err != nil {
			return nil, err
		}
		keep, err := s.keepStacks(ctx, m.dict, f.filter)
		if err != nil {
			return nil, err
		}
		for i, pt := range parts {
			var n uint64
			at := at[pt.id]
			if len(at) != len(pt.counts) { // every part's profile is one of all's
				return nil, fleetscope.Errorf(fleetscope.EINTERNAL, "fleet series: profile %s is not in the selection's dictionary", pt.p.ID)
			}
			for j, c := range pt.counts {
				if id := at[j]; c != 0 && (sel.IncludeIdle || !m.dict.Idle(fleetscope.StackID(id))) && (keep == nil || keep[id]) {
					n += c
				}
			}
			second := seconds[i]
			if second < 0 {
				start, _ := fleetscope.WallSpan(pt.p)
				second = fleetscope.FloorSecond(start)
			}
			add(pt.p, second, int64(min(n, math.MaxInt64)))
		}
	}
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		out.Groups = append(out.Groups, *groups[k])
	}
	return out, nil
}
