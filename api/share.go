package api

import (
	"context"

	"connectrpc.com/connect"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/query"
)

// ShareLinks resolves share-link tokens (store/postgres implements it).
type ShareLinks interface {
	// ResolveShareLink returns the live link of a token; ENOTFOUND for an
	// unknown, expired or revoked one.
	ResolveShareLink(ctx context.Context, token string) (fleetscope.ShareLink, error)
}

// shareHandler serves ShareService: a shared profile range, read without
// a key through the link's token.
type shareHandler struct {
	links ShareLinks
	q     *query.Service
}

// NewShare returns the ShareService handler. Links are checked on every
// request (no cache): revocation holds at once.
func NewShare(links ShareLinks, q *query.Service) fleetscopev1connect.ShareServiceHandler {
	return &shareHandler{links: links, q: q}
}

// shared resolves a token to its link and, for a profile's link, its
// profile (nil for a fleet's).
func (h *shareHandler) shared(ctx context.Context, token string) (fleetscope.ShareLink, *fleetscope.ProfileInfo, error) {
	l, err := h.links.ResolveShareLink(ctx, token)
	if err != nil || l.Fleet != nil {
		return l, nil, err
	}
	info, err := h.q.Profile(ctx, l.TenantID, l.ProfileID)
	return l, info, err
}

// What a fleet's link reveals: its app, window and event, the fleet
// heatmap and merged flame graph of its selection over the window; not the
// hosts, labels or filter that chose the profiles.
func sharedFleet(s *fleetscope.FleetSelection) *fsv1.FleetSelection {
	return selectionProto(&fleetscope.FleetSelection{App: s.App, From: s.From, To: s.To, Event: s.Event})
}

// What a link reveals: the profile's app, format, events, time span and
// sample count, the heatmap of the seconds its range touches (the whole
// heatmap for a link without a range) and the flame graph of its range.
// Not the host, labels, file name, header facts or hash: a link shared to
// show a moment of one app must not map the fleet behind it.
func sharedProfile(info *fleetscope.ProfileInfo) *fsv1.Profile {
	p := profileProto(info)
	p.Host, p.Labels, p.Meta, p.Sha256 = "", nil, nil, ""
	return p
}

// GetSharedProfile returns the shared profile (see sharedProfile) and the
// link's range.
func (h *shareHandler) GetSharedProfile(ctx context.Context, req *connect.Request[fsv1.GetSharedProfileRequest]) (*connect.Response[fsv1.GetSharedProfileResponse], error) {
	l, info, err := h.shared(ctx, req.Msg.GetToken())
	if err != nil {
		return nil, err
	}
	if l.Fleet != nil {
		return connect.NewResponse(&fsv1.GetSharedProfileResponse{Fleet: sharedFleet(l.Fleet), Event: l.Fleet.Event}), nil
	}
	return connect.NewResponse(&fsv1.GetSharedProfileResponse{Profile: sharedProfile(info), Event: l.Event, StartNanos: l.Start, EndNanos: l.End}), nil
}

// GetSharedHeatmap returns the heatmap of the seconds the link's range
// touches (all of them for a link without a range).
func (h *shareHandler) GetSharedHeatmap(ctx context.Context, req *connect.Request[fsv1.GetSharedHeatmapRequest]) (*connect.Response[fsv1.GetSharedHeatmapResponse], error) {
	l, info, err := h.shared(ctx, req.Msg.GetToken())
	if err != nil {
		return nil, err
	}
	if l.Fleet != nil {
		sel := *l.Fleet
		sel.IncludeIdle = sel.IncludeIdle || req.Msg.GetIncludeIdle()
		fh, err := h.q.FleetHeatmap(ctx, l.TenantID, sel, int(req.Msg.GetRows()), 0)
		if err != nil {
			return nil, err
		}
		return connect.NewResponse(&fsv1.GetSharedHeatmapResponse{Heatmap: heatmapProto(fh.Heatmap)}), nil
	}
	hm, err := h.q.Heatmap(ctx, l.TenantID, query.HeatmapRequest{ProfileID: info.ID, Event: l.Event, Rows: int(req.Msg.GetRows()), IncludeIdle: req.Msg.GetIncludeIdle()})
	if err != nil {
		return nil, err
	}
	if rg := rangeOf(l.Start, l.End); rg != nil {
		width := hm.SecondsPerColumn * 1e9
		from := fleetscope.FloorSecond(max(rg.Start, 0)) / hm.SecondsPerColumn
		to := (min(rg.End, info.DurationNanos+1e9) + width - 1) / width
		hm = hm.Slice(int(from), int(to))
	}
	return connect.NewResponse(&fsv1.GetSharedHeatmapResponse{Heatmap: heatmapProto(hm)}), nil
}

// GetSharedFlameGraph returns the flame graph of the link's range.
func (h *shareHandler) GetSharedFlameGraph(ctx context.Context, req *connect.Request[fsv1.GetSharedFlameGraphRequest]) (*connect.Response[fsv1.GetSharedFlameGraphResponse], error) {
	l, info, err := h.shared(ctx, req.Msg.GetToken())
	if err != nil {
		return nil, err
	}
	if l.Fleet != nil {
		sel := *l.Fleet
		sel.IncludeIdle = sel.IncludeIdle || req.Msg.GetIncludeIdle()
		g, err := h.q.FleetFlameGraph(ctx, l.TenantID, sel, query.FleetFlameOptions{})
		if err != nil {
			return nil, err
		}
		fg, err := renderFlame(ctx, g.FlameGraph, req.Msg.GetFormat(), query.WindowTitle(sel), false)
		if err != nil {
			return nil, err
		}
		return connect.NewResponse(&fsv1.GetSharedFlameGraphResponse{FlameGraph: fg}), nil
	}
	r := query.FlameRequest{ProfileID: info.ID, Event: l.Event, Range: rangeOf(l.Start, l.End), IncludeIdle: req.Msg.GetIncludeIdle()}
	fg, err := flameGraph(ctx, h.q, l.TenantID, r, req.Msg.GetFormat(), query.RangeTitle(r.Range))
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&fsv1.GetSharedFlameGraphResponse{FlameGraph: fg}), nil
}
