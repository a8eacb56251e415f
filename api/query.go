package api

import (
	"bytes"
	"context"
	"strings"

	"connectrpc.com/connect"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/export"
	"github.com/fleetscope/fleetscope/query/flame"
)

// queryHandler serves QueryService from the query service.
type queryHandler struct {
	q *query.Service
}

// NewQuery returns the QueryService handler: searches, heatmaps and exact
// range flame graphs of the caller's tenant, answered by q.
func NewQuery(q *query.Service) fleetscopev1connect.QueryServiceHandler {
	return &queryHandler{q: q}
}

// SearchProfiles lists the tenant's profiles.
func (h *queryHandler) SearchProfiles(ctx context.Context, req *connect.Request[fsv1.SearchProfilesRequest]) (*connect.Response[fsv1.SearchProfilesResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	f := fleetscope.ProfileFilter{App: m.GetApp(), Host: m.GetHost(), Labels: m.GetLabels(), PageSize: int(m.GetPageSize()), PageToken: m.GetPageToken()}
	if m.GetSince() != nil {
		f.Since = m.GetSince().AsTime()
	}
	if m.GetUntil() != nil {
		f.Until = m.GetUntil().AsTime()
	}
	profiles, next, err := h.q.Search(ctx, p.TenantID, f)
	if err != nil {
		return nil, err
	}
	out := &fsv1.SearchProfilesResponse{NextPageToken: next}
	for _, pr := range profiles {
		out.Profiles = append(out.Profiles, profileProto(pr))
	}
	return connect.NewResponse(out), nil
}

// GetProfile returns one profile's metadata.
func (h *queryHandler) GetProfile(ctx context.Context, req *connect.Request[fsv1.GetProfileRequest]) (*connect.Response[fsv1.GetProfileResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	info, err := h.q.Profile(ctx, p.TenantID, req.Msg.GetId())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&fsv1.GetProfileResponse{Profile: profileProto(info)}), nil
}

// GetHeatmap returns a profile's heatmap.
func (h *queryHandler) GetHeatmap(ctx context.Context, req *connect.Request[fsv1.GetHeatmapRequest]) (*connect.Response[fsv1.GetHeatmapResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	hm, err := h.q.Heatmap(ctx, p.TenantID, query.HeatmapRequest{ProfileID: m.GetProfileId(), Event: m.GetEvent(), Rows: int(m.GetRows()),
		IncludeIdle: m.GetIncludeIdle(), Filter: filterOf(m.GetFilter())})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(heatmapProto(hm)), nil
}

// GetFlameGraph answers any range exactly from the stored samples.
func (h *queryHandler) GetFlameGraph(ctx context.Context, req *connect.Request[fsv1.GetFlameGraphRequest]) (*connect.Response[fsv1.GetFlameGraphResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	r := flameRequest(req.Msg)
	out, err := flameGraph(ctx, h.q, p.TenantID, r, req.Msg.GetFormat(), query.RangeTitle(r.Range))
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(out), nil
}

// GetHeatmapSeries returns a profile's samples per CPU, thread or process
// and column.
func (h *queryHandler) GetHeatmapSeries(ctx context.Context, req *connect.Request[fsv1.GetHeatmapSeriesRequest]) (*connect.Response[fsv1.GetHeatmapSeriesResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	by := map[fsv1.SeriesKey]string{fsv1.SeriesKey_SERIES_KEY_CPU: query.ByCPU, fsv1.SeriesKey_SERIES_KEY_THREAD: query.ByThread,
		fsv1.SeriesKey_SERIES_KEY_PROCESS: query.ByProcess}[m.GetBy()]
	if by == "" {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "by: SERIES_KEY_CPU, SERIES_KEY_THREAD or SERIES_KEY_PROCESS")
	}
	set, err := h.q.HeatmapSeries(ctx, p.TenantID, query.SeriesRequest{ProfileID: m.GetProfileId(), Event: m.GetEvent(),
		IncludeIdle: m.GetIncludeIdle(), Filter: filterOf(m.GetFilter()), By: by, Top: int(m.GetTop())})
	if err != nil {
		return nil, err
	}
	out := &fsv1.GetHeatmapSeriesResponse{Event: set.Event, StartSecond: set.StartSecond, SecondsPerColumn: set.SecondsPerColumn}
	for _, sr := range set.Series {
		out.Series = append(out.Series, &fsv1.Series{Key: sr.Key, Name: sr.Name, Total: sr.Total, Columns: sr.Columns})
	}
	return connect.NewResponse(out), nil
}

// FilterProto is a sample filter on the wire (nil for none).
func FilterProto(f fleetscope.Filter) *fsv1.SampleFilter {
	if f.IsZero() {
		return nil
	}
	return &fsv1.SampleFilter{Function: f.Function, ExcludeFunction: f.ExcludeFunction, Pids: f.PIDs, Tids: f.TIDs, Cpus: f.CPUs,
		InSpans: f.InSpans, SpanEntry: f.SpanEntry, SpanReturn: f.SpanReturn}
}

// filterOf reads a SampleFilter (nil: keep every sample).
func filterOf(m *fsv1.SampleFilter) fleetscope.Filter {
	return fleetscope.Filter{Function: m.GetFunction(), ExcludeFunction: m.GetExcludeFunction(),
		PIDs: m.GetPids(), TIDs: m.GetTids(), CPUs: m.GetCpus(),
		InSpans: m.GetInSpans(), SpanEntry: m.GetSpanEntry(), SpanReturn: m.GetSpanReturn()}
}

// GetSpans pairs a profile's probe events into spans and sums up their
// latency.
func (h *queryHandler) GetSpans(ctx context.Context, req *connect.Request[fsv1.GetSpansRequest]) (*connect.Response[fsv1.GetSpansResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	set, err := h.q.Spans(ctx, p.TenantID, req.Msg.GetProfileId(), req.Msg.GetEntry(), req.Msg.GetReturn())
	if err != nil {
		return nil, err
	}
	l := set.Latency()
	out := &fsv1.GetSpansResponse{Entry: set.Pair.EntryName, Return: set.Pair.ReturnName, Spans: int64(len(set.Spans)),
		UnmatchedEntries: int64(set.UnmatchedEntries), UnmatchedReturns: int64(set.UnmatchedReturns), Threads: int64(set.Threads()),
		P50Nanos: l.P50, P90Nanos: l.P90, P95Nanos: l.P95, P99Nanos: l.P99, MaxNanos: set.MaxNanos()}
	for _, b := range set.Histogram() {
		out.Histogram = append(out.Histogram, &fsv1.SpanBucket{LoNanos: b.LoNanos, HiNanos: b.HiNanos, Count: int64(b.Count)})
	}
	return connect.NewResponse(out), nil
}

// flameRequest reads a GetFlameGraphRequest.
func flameRequest(m *fsv1.GetFlameGraphRequest) query.FlameRequest {
	r := query.FlameRequest{ProfileID: m.GetProfileId(), Event: m.GetEvent(), IncludeIdle: m.GetIncludeIdle(), Filter: filterOf(m.GetFilter()),
		ByPeriod: m.GetWeightByPeriod(), Annotate: flame.Annotate{Kernel: m.GetAnnotateKernel(), JIT: m.GetAnnotateJit()}, Outside: m.GetOutside()}
	r.Range = rangeOf(m.StartNanos, m.EndNanos)
	return r
}

// rangeOf is the range of two optional bounds; nil when neither is given.
func rangeOf(start, end *int64) *fleetscope.Range {
	if start == nil && end == nil {
		return nil
	}
	rg := fleetscope.All
	if start != nil {
		rg.Start = *start
	}
	if end != nil {
		rg.End = *end
	}
	return &rg
}

// flameGraph computes a flame graph and renders it in the format asked.
func flameGraph(ctx context.Context, q *query.Service, tenant int64, r query.FlameRequest, format fsv1.FlameGraphFormat, where string) (*fsv1.GetFlameGraphResponse, error) {
	g, err := q.FlameGraph(ctx, tenant, r)
	if err != nil {
		return nil, err
	}
	return renderFlame(ctx, g, format, where, r.ByPeriod)
}

// exportFormats are the formats whose file goes in the answer's export.
var exportFormats = map[fsv1.FlameGraphFormat]string{
	fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_SVG:        export.FormatSVG,
	fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_PPROF:      export.FormatPprof,
	fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_SPEEDSCOPE: export.FormatSpeedscope,
}

// renderFlame renders a flame graph in the format asked (folded, tree, or
// both when unspecified; folded lines; an export format's file); where
// names the selection in exports. Exports and folded text over
// query.MaxExportNodes are refused (ETOOLARGE).
func renderFlame(ctx context.Context, g *query.FlameGraph, format fsv1.FlameGraphFormat, where string, byPeriod bool) (*fsv1.GetFlameGraphResponse, error) {
	if _, ok := fsv1.FlameGraphFormat_name[int32(format)]; !ok {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "unknown flame graph format %d", format)
	}
	out := &fsv1.GetFlameGraphResponse{Event: g.Event, Total: g.Total}
	if name, ok := exportFormats[format]; ok {
		var b bytes.Buffer
		if err := g.Export(ctx, &b, name, where, byPeriod); err != nil {
			return nil, err
		}
		out.Export = b.Bytes()
		return out, nil
	}
	all := format == fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_UNSPECIFIED
	if all || format == fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED || format == fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED_LINES {
		if format != fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED_LINES {
			if err := g.CheckSize("folded text"); err != nil {
				return nil, err
			}
		}
		ls := g.Lines()
		if format == fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED_LINES {
			out.Lines = LinesProto(ls)
			return out, nil
		}
		var b strings.Builder
		b.Grow(ls.FoldedSize()) // once: grown by doubling, 15 MB was copied over and over
		if err := ls.WriteFolded(&b); err != nil {
			return nil, err
		}
		out.Folded = b.String()
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
	if all || format == fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_TREE {
		f := g.Flat()
		out.Tree = &fsv1.FlameTree{Names: f.Names, Name: f.Name, Value: f.Value, Depth: f.Depth}
	}
	return out, nil
}
