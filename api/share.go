package api

import (
	"context"

	"connectrpc.com/connect"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
)

var _ fleetscopev1connect.ShareServiceHandler = (*Handlers)(nil)

// shared resolves a share link's token to its link and profile. The link
// is checked on every request (no cache): revocation holds at once.
func (h *Handlers) shared(ctx context.Context, token string) (fleetscope.ShareLink, *fleetscope.ProfileInfo, error) {
	l, err := h.DB.ResolveShareLink(ctx, token)
	if err != nil {
		return l, nil, err
	}
	info, err := h.profile(ctx, l.TenantID, l.ProfileID)
	return l, info, err
}

// GetSharedProfile returns the shared profile and the link's range.
func (h *Handlers) GetSharedProfile(ctx context.Context, req *connect.Request[fsv1.GetSharedProfileRequest]) (*connect.Response[fsv1.GetSharedProfileResponse], error) {
	l, info, err := h.shared(ctx, req.Msg.GetToken())
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fsv1.GetSharedProfileResponse{Profile: toProto(info), Event: l.Event, StartNanos: l.Start, EndNanos: l.End}), nil
}

// GetSharedHeatmap returns the shared profile's heatmap.
func (h *Handlers) GetSharedHeatmap(ctx context.Context, req *connect.Request[fsv1.GetSharedHeatmapRequest]) (*connect.Response[fsv1.GetSharedHeatmapResponse], error) {
	l, info, err := h.shared(ctx, req.Msg.GetToken())
	if err != nil {
		return nil, toConnect(err)
	}
	hm, err := h.heatmapResponse(ctx, l.TenantID, info, &fsv1.GetHeatmapRequest{ProfileId: info.ID, Event: l.Event, Rows: req.Msg.GetRows(), IncludeIdle: req.Msg.GetIncludeIdle()})
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fsv1.GetSharedHeatmapResponse{Heatmap: hm}), nil
}

// GetSharedFlameGraph returns the flame graph of the link's range.
func (h *Handlers) GetSharedFlameGraph(ctx context.Context, req *connect.Request[fsv1.GetSharedFlameGraphRequest]) (*connect.Response[fsv1.GetSharedFlameGraphResponse], error) {
	l, info, err := h.shared(ctx, req.Msg.GetToken())
	if err != nil {
		return nil, toConnect(err)
	}
	fg, err := h.flameGraph(ctx, l.TenantID, info, &fsv1.GetFlameGraphRequest{ProfileId: info.ID, Event: l.Event,
		StartNanos: l.Start, EndNanos: l.End, IncludeIdle: req.Msg.GetIncludeIdle(), Format: req.Msg.GetFormat()})
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fsv1.GetSharedFlameGraphResponse{FlameGraph: fg}), nil
}
