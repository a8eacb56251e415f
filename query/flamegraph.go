package query

import (
	"context"
	"io"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/flame"
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
	ByPeriod    bool // weight samples by their period instead of counting them
	Annotate    flame.Annotate
}

// FlameGraph is a flame graph: a value per stack of a profile's dictionary.
type FlameGraph struct {
	Event    string
	Total    uint64
	Dict     *fleetscope.Dict
	Counts   *flame.Counts
	Annotate flame.Annotate
	layout   func() *flame.Layout
}

// WriteFolded writes the folded stacks, sorted bytewise.
func (g *FlameGraph) WriteFolded(w io.Writer) error {
	return flame.WriteFolded(w, g.Dict, g.Counts, g.Annotate)
}

// Flat returns the merged tree in pre-order.
func (g *FlameGraph) Flat() *flame.Flat { return g.layout().Flat(g.Dict, g.Counts) }

// FlameGraph returns the flame graph of exactly the samples of a profile's
// event in the requested range, read from the stored samples of the
// seconds the range touches. Returns EINVALID for a range on a profile
// without per-sample times, or an unknown event.
func (s *Service) FlameGraph(ctx context.Context, tenant int64, r FlameRequest) (*FlameGraph, error) {
	info, err := s.Profile(ctx, tenant, r.ProfileID)
	if err != nil {
		return nil, err
	}
	ev, err := event(info, r.Event)
	if err != nil {
		return nil, err
	}
	sel := fleetscope.Selection{Event: fleetscope.EventID(ev), IncludeIdle: r.IncludeIdle, Range: fleetscope.All, StartSecond: info.StartSecond * 1e9}
	from, to := int64(0), int64(-1) // all seconds
	if r.Range != nil {
		if !info.Timed {
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "this profile has no per-sample timestamps: no time range (a whole-profile flame graph works)")
		}
		sel.Range = *r.Range
		from = max(fleetscope.FloorSecond(sel.Range.Start), 0)
		to = min(fleetscope.FloorSecond(sel.Range.End-1), info.DurationNanos/1e9)
	}
	counts := &flame.Counts{}
	if r.Range == nil || sel.Range.Start < sel.Range.End && from <= to {
		err = s.samples(ctx, tenant, info, ev, from, to, func(d *fleetscope.Dict, batch []fleetscope.Sample) {
			counts.Add(d, &sel, batch, r.ByPeriod)
		})
		if err != nil {
			return nil, err
		}
	}
	d, err := s.dict(ctx, tenant, info)
	if err != nil {
		return nil, err
	}
	return &FlameGraph{Event: info.Events[ev].Name, Total: counts.Total, Dict: d, Counts: counts, Annotate: r.Annotate,
		layout: func() *flame.Layout { return s.layout(tenant, info, d, r.Annotate) }}, nil
}
