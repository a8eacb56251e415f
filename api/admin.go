package api

import (
	"context"
	"time"

	"connectrpc.com/connect"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/query"
)

// AdminStore is what the admin service reads and writes in the index
// (store/postgres implements it). Every method acts on one tenant.
type AdminStore interface {
	Tenant(ctx context.Context, id int64) (fleetscope.Tenant, error)
	StoredBytes(ctx context.Context, tenant int64) (bytes, profiles int64, err error)
	Keys(ctx context.Context, tenant int64) ([]fleetscope.Key, error)
	NewKey(ctx context.Context, tenant int64, o fleetscope.KeyOptions) (string, fleetscope.Key, error)
	RevokeKey(ctx context.Context, tenant int64, id, actor string) error
	AuditEvents(ctx context.Context, tenant int64, pageSize int, pageToken string) ([]fleetscope.AuditEvent, string, error)
	CreateShareLink(ctx context.Context, tenant int64, l fleetscope.ShareLink) (string, fleetscope.ShareLink, error)
	ShareLinks(ctx context.Context, tenant int64) ([]fleetscope.ShareLink, error)
	RevokeShareLink(ctx context.Context, tenant int64, id, actor string) error
	// UpdateProfile changes a profile's app, host and labels with its fleet
	// rows and audits it; ENOTFOUND if the tenant has no such profile.
	UpdateProfile(ctx context.Context, tenant int64, id string, u fleetscope.ProfileUpdate, actor string) (*fleetscope.ProfileInfo, error)
}

// DeleteProfile deletes one of a tenant's profiles: its index rows in one
// transaction, then its raw file unless another profile uses it, and what
// the query caches hold of it; ENOTFOUND for a profile the tenant does not
// have. The composition root makes it (store/lifecycle's Delete, which
// has the query service forget the profile, as retention's deletions do);
// deleting a profile through the API, or a live stream's segments, both
// go through it.
type DeleteProfile func(ctx context.Context, tenant int64, id, actor string) error

// adminHandler serves AdminService: the caller's tenant, its keys, audit
// log, share links, and profiles' deletion and metadata changes.
type adminHandler struct {
	store     AdminStore
	delete    DeleteProfile
	q         *query.Service
	auth      *Auth
	publicURL string
}

// NewAdmin returns the AdminService handler. Deletions go through del;
// metadata changes are forgotten by q's caches; key revocations empty
// auth's key cache.
func NewAdmin(store AdminStore, del DeleteProfile, q *query.Service, auth *Auth, publicURL string) fleetscopev1connect.AdminServiceHandler {
	return &adminHandler{store: store, delete: del, q: q, auth: auth, publicURL: publicURL}
}

// GetTenant describes the caller's tenant: limits and usage.
func (h *adminHandler) GetTenant(ctx context.Context, _ *connect.Request[fsv1.GetTenantRequest]) (*connect.Response[fsv1.GetTenantResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	t, err := h.store.Tenant(ctx, p.TenantID)
	if err != nil {
		return nil, err
	}
	bytes, n, err := h.store.StoredBytes(ctx, p.TenantID)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&fsv1.GetTenantResponse{
		Name: t.Name, CreatedAt: ts(t.CreatedAt), RetentionDays: int32(t.RetentionDays),
		MaxUploadBytes: t.MaxUploadBytes, MaxRawBytes: t.MaxRawBytes, MaxStoredBytes: t.MaxStoredBytes,
		RatePerSecond: int32(t.RatePerSecond), StoredBytes: bytes, Profiles: n, SampleDays: int32(t.SampleDays),
	}), nil
}

func keyProto(k fleetscope.Key) *fsv1.Key {
	return &fsv1.Key{Id: k.ID, Name: k.Name, Scopes: k.Scopes, CreatedAt: ts(k.CreatedAt), LastUsedAt: ts(k.LastUsedAt),
		ExpiresAt: ts(k.ExpiresAt), RevokedAt: ts(k.RevokedAt)}
}

// ListKeys lists the tenant's keys (never their secrets).
func (h *adminHandler) ListKeys(ctx context.Context, _ *connect.Request[fsv1.ListKeysRequest]) (*connect.Response[fsv1.ListKeysResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	keys, err := h.store.Keys(ctx, p.TenantID)
	if err != nil {
		return nil, err
	}
	out := &fsv1.ListKeysResponse{}
	for _, k := range keys {
		out.Keys = append(out.Keys, keyProto(k))
	}
	return connect.NewResponse(out), nil
}

// CreateKey creates a key for the caller's tenant.
func (h *adminHandler) CreateKey(ctx context.Context, req *connect.Request[fsv1.CreateKeyRequest]) (*connect.Response[fsv1.CreateKeyResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	o := fleetscope.KeyOptions{Name: req.Msg.GetName(), Scopes: req.Msg.GetScopes(), Actor: p.KeyID}
	if e := req.Msg.GetExpiresAt(); e != nil {
		o.ExpiresAt = e.AsTime()
	}
	secret, k, err := h.store.NewKey(ctx, p.TenantID, o)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&fsv1.CreateKeyResponse{Key: keyProto(k), Secret: secret}), nil
}

// RevokeKey revokes one of the tenant's keys; it stops working on every
// replica within AuthTTL, at once on this one.
func (h *adminHandler) RevokeKey(ctx context.Context, req *connect.Request[fsv1.RevokeKeyRequest]) (*connect.Response[fsv1.RevokeKeyResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.store.RevokeKey(ctx, p.TenantID, req.Msg.GetId(), p.KeyID); err != nil {
		return nil, err
	}
	h.auth.ForgetKeys()
	return connect.NewResponse(&fsv1.RevokeKeyResponse{}), nil
}

// DeleteProfile deletes a profile's index rows, then its raw file.
func (h *adminHandler) DeleteProfile(ctx context.Context, req *connect.Request[fsv1.DeleteProfileRequest]) (*connect.Response[fsv1.DeleteProfileResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.delete(ctx, p.TenantID, req.Msg.GetId(), p.KeyID); err != nil {
		return nil, err
	}
	return connect.NewResponse(&fsv1.DeleteProfileResponse{}), nil
}

// UpdateProfile changes a profile's app, host or labels. This replica
// forgets what it cached of the profile at once; others within their
// profile cache's 5 s.
func (h *adminHandler) UpdateProfile(ctx context.Context, req *connect.Request[fsv1.UpdateProfileRequest]) (*connect.Response[fsv1.UpdateProfileResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	u := fleetscope.ProfileUpdate{App: m.App, Host: m.Host, SetLabels: m.GetSetLabels(), RemoveLabels: m.GetRemoveLabels(), ReplaceLabels: m.GetReplaceLabels()}
	info, err := h.store.UpdateProfile(ctx, p.TenantID, m.GetId(), u, p.KeyID)
	if err != nil {
		return nil, err
	}
	h.q.Forget(p.TenantID, m.GetId())
	return connect.NewResponse(&fsv1.UpdateProfileResponse{Profile: profileProto(info)}), nil
}

// ListAuditEvents pages through the tenant's audit log, newest first.
func (h *adminHandler) ListAuditEvents(ctx context.Context, req *connect.Request[fsv1.ListAuditEventsRequest]) (*connect.Response[fsv1.ListAuditEventsResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	evs, next, err := h.store.AuditEvents(ctx, p.TenantID, int(req.Msg.GetPageSize()), req.Msg.GetPageToken())
	if err != nil {
		return nil, err
	}
	out := &fsv1.ListAuditEventsResponse{NextPageToken: next}
	for _, e := range evs {
		out.Events = append(out.Events, &fsv1.AuditEvent{At: ts(e.At), Actor: e.Actor, Action: e.Action, Target: e.Target, Detail: e.Detail})
	}
	return connect.NewResponse(out), nil
}

func shareProto(l fleetscope.ShareLink) *fsv1.ShareLink {
	out := &fsv1.ShareLink{Id: l.ID, ProfileId: l.ProfileID, Event: l.Event, StartNanos: l.Start, EndNanos: l.End,
		CreatedAt: ts(l.CreatedAt), ExpiresAt: ts(l.ExpiresAt), RevokedAt: ts(l.RevokedAt), CreatedBy: l.CreatedBy}
	if l.Fleet != nil {
		out.Fleet = selectionProto(l.Fleet)
	}
	return out
}

// MaxShareTTL bounds a share link's life.
const MaxShareTTL = 30 * 24 * time.Hour

// CreateShareLink makes a link to one of the tenant's profile ranges.
func (h *adminHandler) CreateShareLink(ctx context.Context, req *connect.Request[fsv1.CreateShareLinkRequest]) (*connect.Response[fsv1.CreateShareLinkResponse], error) {
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
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "a share link lives between 1 s and 30 days")
	}
	if m.StartNanos != nil && m.EndNanos != nil && m.GetStartNanos() >= m.GetEndNanos() {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "empty range")
	}
	l := fleetscope.ShareLink{ProfileID: m.GetProfileId(), Event: m.GetEvent(), Start: m.StartNanos, End: m.EndNanos,
		CreatedBy: p.KeyID, ExpiresAt: time.Now().Add(ttl)}
	if m.GetFleet() != nil {
		if m.GetProfileId() != "" || m.GetEvent() != "" || m.StartNanos != nil || m.EndNanos != nil {
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "a share link is to a profile or to a fleet selection, not both")
		}
		sel, err := selection(m.GetFleet())
		if err != nil {
			return nil, err
		}
		if sel.Filter.ByThread() || sel.Filter.InSpans != "" {
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "a fleet link keeps a function filter only")
		}
		l.Fleet = &sel
	}
	token, l, err := h.store.CreateShareLink(ctx, p.TenantID, l)
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&fsv1.CreateShareLinkResponse{Link: shareProto(l), Token: token, Url: h.publicURL + "/s/" + token}), nil
}

// ListShareLinks lists the tenant's share links.
func (h *adminHandler) ListShareLinks(ctx context.Context, _ *connect.Request[fsv1.ListShareLinksRequest]) (*connect.Response[fsv1.ListShareLinksResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	links, err := h.store.ShareLinks(ctx, p.TenantID)
	if err != nil {
		return nil, err
	}
	out := &fsv1.ListShareLinksResponse{}
	for _, l := range links {
		out.Links = append(out.Links, shareProto(l))
	}
	return connect.NewResponse(out), nil
}

// RevokeShareLink revokes a link; the next request through it fails.
func (h *adminHandler) RevokeShareLink(ctx context.Context, req *connect.Request[fsv1.RevokeShareLinkRequest]) (*connect.Response[fsv1.RevokeShareLinkResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if err := h.store.RevokeShareLink(ctx, p.TenantID, req.Msg.GetId(), p.KeyID); err != nil {
		return nil, err
	}
	return connect.NewResponse(&fsv1.RevokeShareLinkResponse{}), nil
}
