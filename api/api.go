// Package api is fleetscope's Connect API: the ingest and query handlers,
// the authentication interceptor that resolves an API key to a tenant and
// scope before any handler runs, and the one mapping from fleetscope error
// codes to Connect codes. Handlers hold no state another replica needs;
// the dictionary cache is an optimisation only.
package api

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/time/rate"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/store/postgres"
)

// Public marks procedures that take no API key: share links, whose token
// is the credential.
const Public = ""

// Scopes says which scope each procedure needs. Every registered procedure
// must be listed: the interceptor refuses any other.
var Scopes = map[string]string{
	fleetscopev1connect.AdminServiceGetTenantProcedure:           fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceListKeysProcedure:            fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceCreateKeyProcedure:           fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceRevokeKeyProcedure:           fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceDeleteProfileProcedure:       fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceListAuditEventsProcedure:     fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceCreateShareLinkProcedure:     fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceListShareLinksProcedure:      fleetscope.ScopeAdmin,
	fleetscopev1connect.AdminServiceRevokeShareLinkProcedure:     fleetscope.ScopeAdmin,
	fleetscopev1connect.ShareServiceGetSharedProfileProcedure:    Public,
	fleetscopev1connect.ShareServiceGetSharedHeatmapProcedure:    Public,
	fleetscopev1connect.ShareServiceGetSharedFlameGraphProcedure: Public,
	fleetscopev1connect.IngestServiceUploadProcedure:             fleetscope.ScopeIngest,
	fleetscopev1connect.IngestServiceUploadFileProcedure:         fleetscope.ScopeIngest,
	fleetscopev1connect.QueryServiceSearchProfilesProcedure:      fleetscope.ScopeRead,
	fleetscopev1connect.QueryServiceGetProfileProcedure:          fleetscope.ScopeRead,
	fleetscopev1connect.QueryServiceGetHeatmapProcedure:          fleetscope.ScopeRead,
	fleetscopev1connect.QueryServiceGetFlameGraphProcedure:       fleetscope.ScopeRead,
}

type principalKey struct{}

// PrincipalFrom returns the authenticated principal of a request.
func PrincipalFrom(ctx context.Context) (fleetscope.Principal, bool) {
	p, ok := ctx.Value(principalKey{}).(fleetscope.Principal)
	return p, ok
}

// Authenticator resolves API keys.
type Authenticator interface {
	Authenticate(ctx context.Context, secret string) (fleetscope.Principal, error)
}

var _ Authenticator = (*postgres.DB)(nil)

// authInterceptor authenticates every call from its "Authorization: Bearer"
// header and checks the procedure's scope. Successful lookups are cached
// for AuthTTL (keyed by the secret's hash), so a revoked key stops working
// within that time on every replica.
type authInterceptor struct {
	auth  Authenticator
	cache *cache[[32]byte, fleetscope.Principal]

	mu       sync.Mutex
	limiters map[int64]*rate.Limiter // per tenant with a rate limit
}

// AuthTTL bounds how long a resolved key is trusted without the database.
const AuthTTL = 5 * time.Second

// UnaryTimeout bounds every unary call.
const UnaryTimeout = time.Minute

func newAuthInterceptor(a Authenticator) *authInterceptor {
	return &authInterceptor{auth: a, cache: newCache[[32]byte, fleetscope.Principal](10000, AuthTTL), limiters: map[int64]*rate.Limiter{}}
}

// forgetKeys empties this replica's key cache, so a revocation holds here
// at once. (Revocations are rare; the cache is keyed by secret hash, which
// the revoking request does not know.)
func (a *authInterceptor) forgetKeys() {
	a.cache.drop(func([32]byte) bool { return true })
}

// allow applies the tenant's request rate limit (per replica).
func (a *authInterceptor) allow(p fleetscope.Principal) error {
	if p.Limits.RatePerSecond <= 0 {
		return nil
	}
	a.mu.Lock()
	l, ok := a.limiters[p.TenantID]
	if !ok || int(l.Limit()) != p.Limits.RatePerSecond {
		l = rate.NewLimiter(rate.Limit(p.Limits.RatePerSecond), 2*p.Limits.RatePerSecond)
		a.limiters[p.TenantID] = l
	}
	a.mu.Unlock()
	if !l.Allow() {
		return connect.NewError(connect.CodeResourceExhausted, fmt.Errorf("rate limit of %d requests per second exceeded; retry later", p.Limits.RatePerSecond))
	}
	return nil
}

func (a *authInterceptor) authenticate(ctx context.Context, secret string) (fleetscope.Principal, error) {
	k := sha256.Sum256([]byte(secret))
	if p, ok := a.cache.get(k); ok {
		return p, nil
	}
	p, err := a.auth.Authenticate(ctx, secret)
	if err == nil {
		a.cache.put(k, p)
	}
	return p, err
}

func (a *authInterceptor) check(ctx context.Context, procedure string, h http.Header) (context.Context, error) {
	scope, ok := Scopes[procedure]
	if !ok {
		return nil, connect.NewError(connect.CodeUnimplemented, errors.New("no such procedure"))
	}
	if scope == Public {
		return ctx, nil
	}
	secret, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer ")
	if !ok || secret == "" {
		return nil, connect.NewError(connect.CodeUnauthenticated, errors.New("missing API key: send Authorization: Bearer <key>"))
	}
	p, err := a.authenticate(ctx, strings.TrimSpace(secret))
	if err != nil {
		return nil, toConnect(err)
	}
	if !p.Can(scope) {
		return nil, connect.NewError(connect.CodePermissionDenied, errors.New("this key lacks the "+scope+" scope"))
	}
	if err := a.allow(p); err != nil {
		return nil, err
	}
	return context.WithValue(ctx, principalKey{}, p), nil
}

func (a *authInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		ctx, cancel := context.WithTimeout(ctx, UnaryTimeout)
		defer cancel()
		ctx, err := a.check(ctx, req.Spec().Procedure, req.Header())
		if err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

func (a *authInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (a *authInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		ctx, err := a.check(ctx, conn.Spec().Procedure, conn.RequestHeader())
		if err != nil {
			return err
		}
		return next(ctx, conn)
	}
}

// toConnect maps fleetscope errors to Connect errors: the one place where
// that happens. Unknown errors become Internal without their text.
func toConnect(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return err
	}
	if errors.Is(err, context.Canceled) {
		return connect.NewError(connect.CodeCanceled, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return connect.NewError(connect.CodeDeadlineExceeded, err)
	}
	var fe *fleetscope.Error
	if !errors.As(err, &fe) {
		return connect.NewError(connect.CodeInternal, errors.New("internal error"))
	}
	code := map[string]connect.Code{
		fleetscope.EINVALID:         connect.CodeInvalidArgument,
		fleetscope.ENOTFOUND:        connect.CodeNotFound,
		fleetscope.ECONFLICT:        connect.CodeAlreadyExists,
		fleetscope.EUNAUTHENTICATED: connect.CodeUnauthenticated,
		fleetscope.EFORBIDDEN:       connect.CodePermissionDenied,
		fleetscope.ETOOLARGE:        connect.CodeResourceExhausted,
		fleetscope.EUNAVAILABLE:     connect.CodeUnavailable,
	}[fe.Code]
	if code == 0 {
		code = connect.CodeInternal
	}
	return connect.NewError(code, errors.New(fe.Message))
}

// FromConnect maps a Connect error back to a fleetscope error (for clients).
func FromConnect(err error) error {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return err
	}
	code := map[connect.Code]string{
		connect.CodeInvalidArgument:   fleetscope.EINVALID,
		connect.CodeNotFound:          fleetscope.ENOTFOUND,
		connect.CodeAlreadyExists:     fleetscope.ECONFLICT,
		connect.CodeUnauthenticated:   fleetscope.EUNAUTHENTICATED,
		connect.CodePermissionDenied:  fleetscope.EFORBIDDEN,
		connect.CodeResourceExhausted: fleetscope.ETOOLARGE,
		connect.CodeUnavailable:       fleetscope.EUNAVAILABLE,
	}[ce.Code()]
	if code == "" {
		code = fleetscope.EINTERNAL
	}
	return &fleetscope.Error{Code: code, Message: ce.Message()}
}
