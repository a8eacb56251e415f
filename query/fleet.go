package query

// The fleet queries answer for a selection of an app's profiles (hosts,
// labels, a window of wall-clock time) rather than for one profile. Each
// runs some of these stages, a file each:
//
//   - resolve (fleet_resolve.go): the selection's profiles, timed and
//     untimed, and its event;
//   - totals (fleet_totals.go): heatmap, host strip and timeline from the
//     stored cells and totals, per unix second, or per ten seconds and
//     per minute where the columns are whole tens of seconds or minutes
//     (fleet_rollup.go: the grid, and which rows serve it);
//   - samples (fleet_samples.go): the stored samples decoded, where stored
//     sums cannot answer (filters, row counts the cells do not divide);
//   - parts (fleet_parts.go): each profile's share of a window, and the
//     second ranges of rows to read for it;
//   - translate (fleet_translate.go): each profile's stacks numbered in its
//     tenant's dense numbering;
//   - count (fleet_count.go): the rows of every part read in one round trip
//     and counted by stack;
//   - merge (fleet_merge.go): the parts' counts added up over the
//     dictionary of the selection's stacks.
//
// FleetFlameGraph (below) runs resolve, parts, translate, count and merge;
// FleetSeries (fleetseries.go) adds up stored totals for the seconds the
// window holds whole and runs the same stages for the rest.
//
// Stages that work on several profiles at once share one concurrency
// scheme (fleet_parallel.go): their goroutines are the tasks of an
// errgroup with a bound, and the first error is the answer's.

import (
	"context"
	"io"
	"strings"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/flame"
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
	// Of Profiles, the segments of live streams (profiles labelled
	// live=STREAM and live_seq=N: one a batch) and the distinct streams
	// they belong to, so that a stream can be counted as one.
	LiveSegments, LiveStreams int
}

// countLive sets a's LiveSegments and LiveStreams from the profiles it counts.
func (a *Accounting) countLive(ps ...[]*fleetscope.ProfileInfo) {
	streams := map[string]bool{}
	a.LiveSegments = 0
	for _, l := range ps {
		for _, p := range l {
			if s, ok := fleetscope.LiveSegment(p.Labels); ok {
				a.LiveSegments++
				streams[s] = true
			}
		}
	}
	a.LiveStreams = len(streams)
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
	d := s.denseIDs(tenant)
	parts, f, err := s.fleetParts(ctx, tenant, sel, d, o.ByPeriod)
	if err != nil {
		return nil, err
	}
	m, at, err := s.partsDict(ctx, tenant, parts, d)
	if err != nil {
		return nil, err
	}
	counts, err := s.mergeParts(ctx, parts, at, m.dict, f.filter, sel.IncludeIdle)
	if err != nil {
		return nil, err
	}
	l, err := m.layout(ctx, o.Annotate)
	if err != nil {
		return nil, err
	}
	g := &FlameGraph{Event: f.event, Total: counts.Total, Dict: m.dict, Counts: counts, Annotate: o.Annotate,
		Source: fleetSource(sel), layout: l,
		timeline: func(w io.Writer, name string) error { return s.fleetTimeline(ctx, tenant, sel, o, w, name) }}
	return &FleetFlameGraph{FlameGraph: g, Accounting: f.accounting(true)}, nil
}

// fleetParts counts a selection's window as parts: from hour and day
// rollups and its edges when it holds whole sealed hours (fleet_long.go),
// else from its listed profiles.
func (s *Service) fleetParts(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, d *denseIDs, byPeriod bool) ([]*part, *fleet, error) {
	now := time.Now()
	if parts, f, ok, err := s.longParts(ctx, tenant, sel, d, byPeriod, now); err != nil || ok {
		return parts, f, err
	}
	f, err := s.resolve(ctx, tenant, sel)
	if err != nil {
		return nil, nil, err
	}
	parts, err := s.fineParts(ctx, tenant, f, d, byPeriod, now)
	return parts, f, err
}

// fineParts counts a listed fleet's window as parts: its whole ten-minute
// buckets, where they serve, and the rest from the per-second rows.
func (s *Service) fineParts(ctx context.Context, tenant int64, f *fleet, d *denseIDs, byPeriod bool, now time.Time) ([]*part, error) {
	b, err := s.planBuckets(ctx, tenant, f)
	if err != nil {
		return nil, err
	}
	var ps partSet
	if b == nil {
		ps.parts, ps.reqs, ps.owner = f.parts(f.sel.From, f.sel.To, true, true)
	} else {
		ps = f.edgeParts(b)
	}
	parts := ps.parts
	if b != nil {
		f.served.Buckets, f.served.BucketsCounted = f.served.Buckets+len(b.hits), f.served.BucketsCounted+len(b.misses)
		if err := s.countMisses(ctx, tenant, f, b, d, now); err != nil {
			return nil, err
		}
	}
	if err := s.translateParts(ctx, tenant, f, parts, d, true); err != nil {
		return nil, err
	}
	if err := s.countParts(ctx, tenant, f, parts, ps.reqs, ps.owner, byPeriod); err != nil {
		return nil, err
	}
	if b != nil {
		parts = append(parts, s.hitParts(tenant, b, d, byPeriod)...)
	}
	return parts, nil
}

// fleetSource names a fleet selection in exports' titles (the window
// says its app): "fleet", and its hosts when it names some.
func fleetSource(sel fleetscope.FleetSelection) string {
	if len(sel.Hosts) == 0 {
		return "fleet"
	}
	return "fleet, hosts " + strings.Join(sel.Hosts, " ")
}
