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

// shared resolves a token to its link and profile.
func (h *shareHandler) shared(ctx context.Context, token string) (fleetscope.ShareLink, *fleetscope.ProfileInfo, error) {
	l, err := h.links.ResolveShareLink(ctx, token)
	if err != nil {
		return l, nil, err
	}
	info, err := h.q.Profile(ctx, l.TenantID, l.ProfileID)
	return l, info, err
}

// GetSharedProfile returns the shared profile and the link's range.
func (h *shareHandler) GetSharedProfile(ctx context.Context, req *connect.Request[fsv1.GetSharedProfileRequest]) (*connect.Response[fsv1.GetSharedProfileResponse], error) {
	l, info, err := h.shared(ctx, req.Msg.GetToken())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&fsv1.GetSharedProfileResponse{Profile: profileProto(info), Event: l.Event, StartNanos: l.Start, EndNanos: l.End}), nil
}

// GetSharedHeatmap returns the shared profile's heatmap.
func (h *shareHandler) GetSharedHeatmap(ctx context.Context, req *connect.Request[fsv1.GetSharedHeatmapRequest]) (*connect.Response[fsv1.GetSharedHeatmapResponse], error) {
	l, info, err := h.shared(ctx, req.Msg.GetToken())
	if err != nil {
		return nil, err
	}
	hm, err := h.q.Heatmap(ctx, l.TenantID, query.HeatmapRequest{ProfileID: info.ID, Event: l.Event, Rows: int(req.Msg.GetRows()), IncludeIdle: req.Msg.GetIncludeIdle()})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&fsv1.GetSharedHeatmapResponse{Heatmap: heatmapProto(hm)}), nil
}

// GetSharedFlameGraph returns the flame graph of the link's range.
func (h *shareHandler) GetSharedFlameGraph(ctx context.Context, req *connect.Request[fsv1.GetSharedFlameGraphRequest]) (*connect.Response[fsv1.GetSharedFlameGraphResponse], error) {
	l, info, err := h.shared(ctx, req.Msg.GetToken())
	if err != nil {
		return nil, err
	}
	r := query.FlameRequest{ProfileID: info.ID, Event: l.Event, Range: rangeOf(l.Start, l.End), IncludeIdle: req.Msg.GetIncludeIdle()}
	fg, err := flameGraph(ctx, h.q, l.TenantID, r, req.Msg.GetFormat())
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&fsv1.GetSharedFlameGraphResponse{FlameGraph: fg}), nil
}
