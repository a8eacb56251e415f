package api

import (
	"context"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/store/postgres"
)

var _ fleetscopev1connect.AdminServiceHandler = (*Handlers)(nil)

func ts(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// GetTenant describes the caller's tenant: limits and usage.
func (h *Handlers) GetTenant(ctx context.Context, _ *connect.Request[fsv1.GetTenantRequest]) (*connect.Response[fsv1.GetTenantResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	t, err := h.DB.Tenant(ctx, p.TenantID)
	if err != nil {
		return nil, toConnect(err)
	}
	bytes, n, err := h.DB.StoredBytes(ctx, p.TenantID)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fsv1.GetTenantResponse{
		Name: t.Name, CreatedAt: ts(t.CreatedAt), RetentionDays: int32(t.RetentionDays),
		MaxUploadBytes: t.MaxUploadBytes, MaxRawBytes: t.MaxRawBytes, MaxStoredBytes: t.MaxStoredBytes,
		RatePerSecond: int32(t.RatePerSecond), StoredBytes: bytes, Profiles: n,
	}), nil
}

func keyProto(k fleetscope.Key) *fsv1.Key {
	return &fsv1.Key{Id: k.ID, Name: k.Name, Scopes: k.Scopes, CreatedAt: ts(k.CreatedAt), LastUsedAt: ts(k.LastUsedAt),
		ExpiresAt: ts(k.ExpiresAt), RevokedAt: ts(k.RevokedAt)}
}

// ListKeys lists the tenant's keys (never their secrets).
func (h *Handlers) ListKeys(ctx context.Context, _ *connect.Request[fsv1.ListKeysRequest]) (*connect.Response[fsv1.ListKeysResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := h.DB.Keys(ctx, p.TenantID)
	if err != nil {
		return nil, toConnect(err)
	}
	out := &fsv1.ListKeysResponse{}
	for _, k := range keys {
		out.Keys = append(out.Keys, keyProto(k))
	}
	return connect.NewResponse(out), nil
}

// CreateKey creates a key for the caller's tenant.
func (h *Handlers) CreateKey(ctx context.Context, req *connect.Request[fsv1.CreateKeyRequest]) (*connect.Response[fsv1.CreateKeyResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	o := postgres.KeyOptions{Name: req.Msg.GetName(), Scopes: req.Msg.GetScopes(), Actor: p.KeyID}
	if e := req.Msg.GetExpiresAt(); e != nil {
		o.ExpiresAt = e.AsTime()
	}
	secret, k, err := h.DB.NewKey(ctx, p.TenantID, o)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fsv1.CreateKeyResponse{Key: keyProto(k), Secret: secret}), nil
}

// RevokeKey revokes one of the tenant's keys; it stops working on every
// replica within AuthTTL, at once on this one.
func (h *Handlers) RevokeKey(ctx context.Context, req *connect.Request[fsv1.RevokeKeyRequest]) (*connect.Response[fsv1.RevokeKeyResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.DB.RevokeKey(ctx, p.TenantID, req.Msg.GetId(), p.KeyID); err != nil {
		return nil, toConnect(err)
	}
	h.auth.forgetKeys()
	return connect.NewResponse(&fsv1.RevokeKeyResponse{}), nil
}

// DeleteProfile deletes a profile's index rows, then its raw file.
func (h *Handlers) DeleteProfile(ctx context.Context, req *connect.Request[fsv1.DeleteProfileRequest]) (*connect.Response[fsv1.DeleteProfileResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.Ingest.Delete(ctx, p.TenantID, req.Msg.GetId(), p.KeyID); err != nil {
		return nil, toConnect(err)
	}
	h.forget(p.TenantID, req.Msg.GetId())
	return connect.NewResponse(&fsv1.DeleteProfileResponse{}), nil
}

// ListAuditEvents pages through the tenant's audit log, newest first.
func (h *Handlers) ListAuditEvents(ctx context.Context, req *connect.Request[fsv1.ListAuditEventsRequest]) (*connect.Response[fsv1.ListAuditEventsResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	evs, next, err := h.DB.AuditEvents(ctx, p.TenantID, int(req.Msg.GetPageSize()), req.Msg.GetPageToken())
	if err != nil {
		return nil, toConnect(err)
	}
	out := &fsv1.ListAuditEventsResponse{NextPageToken: next}
	for _, e := range evs {
		out.Events = append(out.Events, &fsv1.AuditEvent{At: ts(e.At), Actor: e.Actor, Action: e.Action, Target: e.Target, Detail: e.Detail})
	}
	return connect.NewResponse(out), nil
}

func shareProto(l fleetscope.ShareLink) *fsv1.ShareLink {
	return &fsv1.ShareLink{Id: l.ID, ProfileId: l.ProfileID, Event: l.Event, StartNanos: l.Start, EndNanos: l.End,
		CreatedAt: ts(l.CreatedAt), ExpiresAt: ts(l.ExpiresAt), RevokedAt: ts(l.RevokedAt), CreatedBy: l.CreatedBy}
}

// MaxShareTTL bounds a share link's life.
const MaxShareTTL = 30 * 24 * time.Hour

// CreateShareLink makes a link to one of the tenant's profile ranges.
func (h *Handlers) CreateShareLink(ctx context.Context, req *connect.Request[fsv1.CreateShareLinkRequest]) (*connect.Response[fsv1.CreateShareLinkResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	ttl := time.Duration(m.GetTtlSeconds()) * time.Second
	if ttl == 0 {
		ttl = 7 * 24 * time.Hour
	}
	if ttl < 0 || ttl > MaxShareTTL {
		return nil, toConnect(fleetscope.Errorf(fleetscope.EINVALID, "a share link lives between 1 s and 30 days"))
	}
	if m.StartNanos != nil && m.EndNanos != nil && m.GetStartNanos() >= m.GetEndNanos() {
		return nil, toConnect(fleetscope.Errorf(fleetscope.EINVALID, "empty range"))
	}
	l := fleetscope.ShareLink{ProfileID: m.GetProfileId(), Event: m.GetEvent(), Start: m.StartNanos, End: m.EndNanos,
		CreatedBy: p.KeyID, ExpiresAt: time.Now().Add(ttl)}
	token, l, err := h.DB.CreateShareLink(ctx, p.TenantID, l)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fsv1.CreateShareLinkResponse{Link: shareProto(l), Token: token,
		Url: h.PublicURL + "/s/" + token}), nil
}

// ListShareLinks lists the tenant's share links.
func (h *Handlers) ListShareLinks(ctx context.Context, _ *connect.Request[fsv1.ListShareLinksRequest]) (*connect.Response[fsv1.ListShareLinksResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	links, err := h.DB.ShareLinks(ctx, p.TenantID)
	if err != nil {
		return nil, toConnect(err)
	}
	out := &fsv1.ListShareLinksResponse{}
	for _, l := range links {
		out.Links = append(out.Links, shareProto(l))
	}
	return connect.NewResponse(out), nil
}

// RevokeShareLink revokes a link; the next request through it fails.
func (h *Handlers) RevokeShareLink(ctx context.Context, req *connect.Request[fsv1.RevokeShareLinkRequest]) (*connect.Response[fsv1.RevokeShareLinkResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.DB.RevokeShareLink(ctx, p.TenantID, req.Msg.GetId(), p.KeyID); err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fsv1.RevokeShareLinkResponse{}), nil
}
