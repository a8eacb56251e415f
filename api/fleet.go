package api

import (
	"context"
	"math"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/flame"
)

// fleetHandler serves FleetService from the query service.
type fleetHandler struct {
	q *query.Service
}

// NewFleet returns the FleetService handler: heatmaps, host strips,
// timelines and merged flame graphs across an app's profiles, of the
// caller's tenant.
func NewFleet(q *query.Service) fleetscopev1connect.FleetServiceHandler {
	return &fleetHandler{q: q}
}

// selection reads a FleetSelection; a missing bound is EINVALID.
func selection(m *fsv1.FleetSelection) (fleetscope.FleetSelection, error) {
	sel := fleetscope.FleetSelection{App: m.GetApp(), Hosts: m.GetHosts(), Event: m.GetEvent(), IncludeIdle: m.GetIncludeIdle(),
		Filter: filterOf(m.GetFilter())}
	if m.GetFrom() == nil || m.GetTo() == nil {
		return sel, fleetscope.Errorf(fleetscope.EINVALID, "a fleet selection needs a window: from and to")
	}
	if err := m.GetFrom().CheckValid(); err != nil {
		return sel, fleetscope.Errorf(fleetscope.EINVALID, "from: %v", err)
	}
	if err := m.GetTo().CheckValid(); err != nil {
		return sel, fleetscope.Errorf(fleetscope.EINVALID, "to: %v", err)
	}
	from, to := m.GetFrom().AsTime(), m.GetTo().AsTime()
	if err := fleetscope.CheckWallTime(from, "from"); err != nil {
		return sel, err
	}
	if err := fleetscope.CheckWallTime(to, "to"); err != nil {
		return sel, err
	}
	sel.From, sel.To = from.UnixNano(), to.UnixNano()
	for _, l := range m.GetLabels() {
		sel.Labels = append(sel.Labels, fleetscope.LabelMatch{Name: l.GetName(), Value: l.GetValue(), Not: l.GetNotEqual()})
	}
	return sel, sel.Check()
}

// selectionProto is a selection on the wire.
func selectionProto(s *fleetscope.FleetSelection) *fsv1.FleetSelection {
	out := &fsv1.FleetSelection{App: s.App, Hosts: s.Hosts, From: timestamppb.New(time.Unix(0, s.From)), To: timestamppb.New(time.Unix(0, s.To)),
		Event: s.Event, IncludeIdle: s.IncludeIdle, Filter: FilterProto(s.Filter)}
	for _, l := range s.Labels {
		out.Labels = append(out.Labels, &fsv1.LabelMatcher{Name: l.Name, Value: l.Value, NotEqual: l.Not})
	}
	return out
}

func accountingProto(a query.Accounting) *fsv1.Accounting {
	out := &fsv1.Accounting{Event: a.Event, Profiles: int32(a.Profiles), LeftOut: map[string]int32{},
		ServedSeconds: int32(min(a.Served.Seconds, math.MaxInt32)), ServedMinutes: int32(min(a.Served.Minutes, math.MaxInt32)),
		ServedTens:    int32(min(a.Served.Tens, math.MaxInt32)),
		ServedBuckets: int32(min(a.Served.Buckets, math.MaxInt32)), CountedBuckets: int32(min(a.Served.BucketsCounted, math.MaxInt32)),
		RawFiles: int32(min(a.Served.RawFiles, math.MaxInt32)), WholeProfiles: int32(min(a.Served.WholeProfiles, math.MaxInt32)),
		ServedHours: int32(min(a.Served.Hours, math.MaxInt32)), ServedDays: int32(min(a.Served.Days, math.MaxInt32)),
		CountedRollups: int32(min(a.Served.RollupsCounted, math.MaxInt32)),
		LiveSegments:   int32(a.LiveSegments), LiveStreams: int32(a.LiveStreams)}
	for k, v := range a.LeftOut {
		out.LeftOut[k] = int32(v)
	}
	return out
}

// GetFleetHeatmap returns the fleet heatmap of a selection.
func (h *fleetHandler) GetFleetHeatmap(ctx context.Context, req *connect.Request[fsv1.GetFleetHeatmapRequest]) (*connect.Response[fsv1.GetFleetHeatmapResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	sel, err := selection(req.Msg.GetSelection())
	if err != nil {
		return nil, err
	}
	hm, err := h.q.FleetHeatmap(ctx, p.TenantID, sel, int(req.Msg.GetRows()), req.Msg.GetMinSecondsPerColumn())
	if err != nil {
		return nil, err
	}
	out := &fsv1.GetFleetHeatmapResponse{StartSecond: hm.StartSecond, SecondsPerColumn: hm.SecondsPerColumn, Rows: int32(hm.Rows),
		MaxCount: hm.MaxCount, Total: hm.Total, Accounting: accountingProto(hm.Accounting), Columns: make([]*fsv1.Column, len(hm.Columns))}
	for i, col := range hm.Columns {
		out.Columns[i] = &fsv1.Column{Counts: col}
	}
	return connect.NewResponse(out), nil
}

// GetFleetHosts returns the host strip of a selection.
func (h *fleetHandler) GetFleetHosts(ctx context.Context, req *connect.Request[fsv1.GetFleetHostsRequest]) (*connect.Response[fsv1.GetFleetHostsResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	sel, err := selection(req.Msg.GetSelection())
	if err != nil {
		return nil, err
	}
	hs, err := h.q.FleetHosts(ctx, p.TenantID, sel, req.Msg.GetMinSecondsPerColumn())
	if err != nil {
		return nil, err
	}
	out := &fsv1.GetFleetHostsResponse{StartSecond: hs.StartSecond, SecondsPerColumn: hs.SecondsPerColumn, Accounting: accountingProto(hs.Accounting)}
	for _, s := range hs.Hosts {
		out.Hosts = append(out.Hosts, &fsv1.HostSeries{Host: s.Host, Total: s.Total, Columns: s.Columns})
	}
	return connect.NewResponse(out), nil
}

// GetFleetTimeline returns samples per column of a selection.
func (h *fleetHandler) GetFleetTimeline(ctx context.Context, req *connect.Request[fsv1.GetFleetTimelineRequest]) (*connect.Response[fsv1.GetFleetTimelineResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	sel, err := selection(req.Msg.GetSelection())
	if err != nil {
		return nil, err
	}
	tl, err := h.q.FleetTimeline(ctx, p.TenantID, sel, req.Msg.GetMinSecondsPerColumn())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&fsv1.GetFleetTimelineResponse{StartSecond: tl.StartSecond, SecondsPerColumn: tl.SecondsPerColumn,
		Totals: tl.Totals, Accounting: accountingProto(tl.Accounting)}), nil
}

// GetFleetFlameGraph returns the exact merged flame graph of a selection.
func (h *fleetHandler) GetFleetFlameGraph(ctx context.Context, req *connect.Request[fsv1.GetFleetFlameGraphRequest]) (*connect.Response[fsv1.GetFleetFlameGraphResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	sel, err := selection(m.GetSelection())
	if err != nil {
		return nil, err
	}
	g, err := h.q.FleetFlameGraph(ctx, p.TenantID, sel, query.FleetFlameOptions{ByPeriod: m.GetWeightByPeriod(),
		Annotate: flame.Annotate{Kernel: m.GetAnnotateKernel(), JIT: m.GetAnnotateJit()}})
	if err != nil {
		return nil, err
	}
	fg, err := renderFlame(ctx, g.FlameGraph, m.GetFormat(), query.WindowTitle(sel), m.GetWeightByPeriod())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&fsv1.GetFleetFlameGraphResponse{FlameGraph: fg, Accounting: accountingProto(g.Accounting)}), nil
}
