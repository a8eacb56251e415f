package query

import (
	"context"
	"io"
	"strings"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/flame"
	"github.com/fleetscope/fleetscope/store/index"
)

// FlameRequest asks for the flame graph of one profile's samples.
type FlameRequest struct {
	ProfileID string
	Event     string // "": the profile's default event
	// Range, relative to the profile's start second, half-open; nil: the
	// whole profile. A missing bound is math.MinInt64 or math.MaxInt64
	// (fleetscope.All).
	Range       *fleetscope.Range
	IncludeIdle bool
	Filter      fleetscope.Filter
	ByPeriod    bool // weight samples by their period instead of counting them
	Annotate    flame.Annotate
	// Outside asks for the samples outside Range instead: the rest of the
	// profile.
	Outside bool
}

// FlameGraph is a flame graph: a value per stack of a profile's dictionary.
type FlameGraph struct {
	Event    string
	Total    uint64
	Dict     *fleetscope.Dict
	Counts   *flame.Counts
	Annotate flame.Annotate
	// Source names what the samples are of in exports' titles: the app,
	// host and profile, or the fleet.
	Source string
	layout *flame.Layout // built with the request's context, so a request that leaves stops it
	// timeline writes the graph's samples in time order in speedscope's
	// format, named name (nil: the samples have no times).
	timeline func(w io.Writer, name string) error
}

// WriteFolded writes the folded stacks, sorted bytewise (from the lines
// of the cached layout: no tree, no sort).
func (g *FlameGraph) WriteFolded(w io.Writer) error { return g.Lines().WriteFolded(w) }

// Lines returns the folded stacks as lines, each given by what it adds to
// the line before (flame.Lines).
func (g *FlameGraph) Lines() *flame.Lines { return g.layout.Lines(g.Counts) }

// Flat returns the merged tree in pre-order.
func (g *FlameGraph) Flat() *flame.Flat { return g.layout.Flat(g.Counts) }

// FlameGraph returns the flame graph of exactly the samples of a profile's
// event in the requested range, read from the stored samples of the
// seconds the range touches. Returns EINVALID for a range on a profile
// without per-sample times, or an unknown event.
func (s *Service) FlameGraph(ctx context.Context, tenant int64, r FlameRequest) (*FlameGraph, error) {
	info, ev, f, err := s.profileRequest(ctx, tenant, r.ProfileID, r.Event, r.Filter, false)
	if err != nil {
		return nil, err
	}
	rg, from, to := fleetscope.All, int64(0), int64(-1) // all seconds
	if r.Range != nil {
		if !info.Timed {
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "this profile has no per-sample timestamps: no time range (a whole-profile flame graph works)")
		}
		rg = *r.Range
		if err := checkRange(rg, info); err != nil {
			return nil, err
		}
		from = max(fleetscope.FloorSecond(rg.Start), 0)
		to = min(fleetscope.FloorSecond(rg.End-1), info.DurationNanos/1e9)
		if r.Outside { // every second but those wholly inside
			from, to = 0, -1
		}
	} else if r.Outside {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "the rest of the profile needs a range to leave out")
	}
	d, err := s.dict(ctx, tenant, info)
	if err != nil {
		return nil, err
	}
	values := make([]uint64, d.NumStacks())
	switch {
	case r.Range != nil && !r.Outside && (rg.Start >= rg.End || from > to): // no seconds
	case f.spans != nil: // which samples count depends on their times and threads: decode them
		if err := s.countInSpans(ctx, tenant, info, ev, from, to, rg, r.Outside, f, r.ByPeriod, values); err != nil {
			return nil, err
		}
	default:
		secs, err := s.rangeSeconds(ctx, tenant, info, ev, from, to)
		if err != nil {
			return nil, err
		}
		threads, err := s.keepThreads(ctx, tenant, info.ID, f)
		if err != nil {
			return nil, err
		}
		c := index.Counter{UnitNanos: info.TimeUnitNanos, Timed: info.Timed, Period: info.Events[ev].Period,
			ByPeriod: r.ByPeriod || info.Events[ev].Weighted, Range: rg, Threads: threads, Outside: r.Outside}
		for i := range secs {
			if i%secondsPerCheck == 0 && ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if err := c.Count(&secs[i], values); err != nil {
				return nil, fleetscope.Wrap(err, fleetscope.EINTERNAL, "profile "+info.ID+": corrupt index row")
			}
		}
	}
	keep, err := s.keepStacks(ctx, d, f)
	if err != nil {
		return nil, err
	}
	for id := range values {
		if !r.IncludeIdle && d.Idle(fleetscope.StackID(id)) || keep != nil && !keep[id] {
			values[id] = 0
		}
	}
	counts := flame.CountsOf(values)
	l, err := s.layout(ctx, tenant, info, d, r.Annotate)
	if err != nil {
		return nil, err
	}
	g := &FlameGraph{Event: info.Events[ev].Name, Total: counts.Total, Dict: d, Counts: counts, Annotate: r.Annotate,
		Source: profileSource(info), layout: l}
	if info.Timed {
		g.timeline = func(w io.Writer, name string) error {
			return s.profileTimeline(ctx, tenant, r, w, name) // the request's, as the export follows it
		}
	}
	return g, nil
}

// profileSource names a profile in exports' titles: its app, host and id.
func profileSource(info *fleetscope.ProfileInfo) string {
	var parts []string
	if info.App != "" {
		parts = append(parts, "app "+info.App)
	}
	if info.Host != "" {
		parts = append(parts, "host "+info.Host)
	}
	return strings.Join(append(parts, "profile "+info.ID), ", ")
}

// checkRange refuses a range that cannot hold a sample of the profile:
// empty or reversed, or wholly outside the profile's span (EINVALID, with
// the span, so that a mistyped range is not mistaken for an idle one).
func checkRange(rg fleetscope.Range, info *fleetscope.ProfileInfo) error {
	bound := func(ns int64) string {
		switch ns {
		case fleetscope.All.Start:
			return "the start"
		case fleetscope.All.End:
			return "the end"
		}
		return fleetscope.FormatSeconds(ns) + " s"
	}
	if rg.End <= rg.Start {
		return fleetscope.Errorf(fleetscope.EINVALID, "the range [%s, %s) is empty: its end must come after its start", bound(rg.Start), bound(rg.End))
	}
	if rg.Start > info.DurationNanos || rg.End <= 0 {
		return fleetscope.Errorf(fleetscope.EINVALID, "the range [%s, %s) lies outside the profile, whose samples span [0, %s] s from its start second",
			bound(rg.Start), bound(rg.End), fleetscope.FormatSeconds(info.DurationNanos))
	}
	return nil
}

// countInSpans adds to values the samples of seconds [from, to] in range
// rg that the filter, span condition included, keeps.
func (s *Service) countInSpans(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, ev int, from, to int64,
	rg fleetscope.Range, outside bool, f filter, byPeriod bool, values []uint64) error {
	sel, err := s.selector(ctx, tenant, info, f)
	if err != nil {
		return err
	}
	weighted := byPeriod || info.Events[ev].Weighted
	return s.samples(ctx, tenant, info, ev, from, to, func(_ *fleetscope.Dict, batch []fleetscope.Sample) {
		for j := range batch {
			smp := &batch[j]
			if rg != fleetscope.All && rg.Contains(smp.TimeNanos-info.StartSecond*1e9) == outside || !f.keepSample(nil, sel, smp) {
				continue
			}
			v := uint64(1)
			if weighted {
				v = smp.Period
			}
			values[smp.Stack] += v
		}
	})
}
