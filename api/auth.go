package api

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"golang.org/x/time/rate"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/cache"
)

// Authenticator resolves API keys (store/postgres implements it).
type Authenticator interface {
	// Authenticate returns the principal of a key's secret, or
	// EUNAUTHENTICATED for any key that is not valid, without saying why.
	Authenticate(ctx context.Context, secret string) (fleetscope.Principal, error)
}

// AuthTTL bounds how long a resolved key is trusted without the database.
const AuthTTL = 5 * time.Second

// UnaryTimeout bounds every unary call.
const UnaryTimeout = time.Minute

// Auth authenticates requests: Connect calls through its interceptor,
// plain HTTP endpoints through Principal. Resolved keys are cached for
// AuthTTL (keyed by the secret's hash), so a revoked key stops working
// within that time on every replica and at once on the one that revoked it.
// Tenants' request rates are limited here, per replica.
type Auth struct {
	auth  Authenticator
	cache *cache.Table[[32]byte, fleetscope.Principal]

	mu       sync.Mutex
	limiters map[int64]*rate.Limiter // per tenant with a rate limit
}

// NewAuth returns the authentication of a server.
func NewAuth(a Authenticator) *Auth {
	return &Auth{
		auth:     a,
		cache:    cache.NewTable(cache.New(16<<20), "keys", func([32]byte, fleetscope.Principal) int64 { return 512 }).WithTTL(AuthTTL),
		limiters: map[int64]*rate.Limiter{},
	}
}

// ForgetKeys empties this replica's key cache, so a revocation holds here
// at once. (Revocations are rare; the cache is keyed by secret hash, which
// the revoking request does not know.)
func (a *Auth) ForgetKeys() { a.cache.Drop(func([32]byte) bool { return true }) }

// allow applies the tenant's request rate limit (per replica).
func (a *Auth) allow(p fleetscope.Principal) error {
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
		return fleetscope.Errorf(fleetscope.ERATELIMITED, "rate limit of %d requests per second exceeded; retry later", p.Limits.RatePerSecond)
	}
	return nil
}

func (a *Auth) authenticate(ctx context.Context, secret string) (fleetscope.Principal, error) {
	k := sha256.Sum256([]byte(secret))
	if p, ok := a.cache.Get(k); ok {
		return p, nil
	}
	p, err := a.auth.Authenticate(ctx, secret)
	if err == nil {
		a.cache.PutUntil(k, p, p.ExpiresAt) // never trusted past the key's expiry
	}
	return p, err
}

// principalFor authenticates the key a request's headers carry and checks
// that the key holds scope, that X-Scope-OrgID names no other tenant
// (checkOrgID) and that its tenant is within its rate. Every request with
// a key, Connect or plain HTTP, is checked here.
func (a *Auth) principalFor(ctx context.Context, h http.Header, scope string) (fleetscope.Principal, error) {
	secret := strings.TrimSpace(secretOf(h))
	if secret == "" {
		return fleetscope.Principal{}, fleetscope.Errorf(fleetscope.EUNAUTHENTICATED, "missing API key: send Authorization: Bearer <key>")
	}
	p, err := a.authenticate(ctx, secret)
	if err != nil {
		return p, err
	}
	if err := checkOrgID(p, h); err != nil {
		return p, err
	}
	if !p.Can(scope) {
		return p, fleetscope.Errorf(fleetscope.EFORBIDDEN, "this key lacks the %s scope", scope)
	}
	return p, a.allow(p)
}

// secretOf returns the API key a request carries in its Authorization
// header: a Bearer token, or else the password of HTTP Basic auth (any
// user name: Grafana Alloy and pyroscope-go can send Basic auth). Every
// request, Connect or plain HTTP, is read here.
func secretOf(h http.Header) string {
	if secret, ok := strings.CutPrefix(h.Get("Authorization"), "Bearer "); ok {
		return secret
	}
	_, secret, _ := (&http.Request{Header: h}).BasicAuth()
	return secret
}

// OrgIDHeader names a tenant in Pyroscope (and the rest of Grafana's
// stack); Grafana Alloy's pyroscope.write sends its tenant_id in it.
const OrgIDHeader = "X-Scope-OrgID"

// checkOrgID is the one rule for X-Scope-OrgID, on every endpoint: the key
// alone selects the tenant, and the header never does. It may be absent or
// name the key's own tenant; a header naming another tenant is EFORBIDDEN,
// so that a client configured for another tenant is told so rather than
// silently served (or stored) as the key's.
func checkOrgID(p fleetscope.Principal, h http.Header) error {
	org := strings.TrimSpace(h.Get(OrgIDHeader))
	if org == "" || org == p.Tenant {
		return nil
	}
	return fleetscope.Errorf(fleetscope.EFORBIDDEN, "%s %q is not this key's tenant: the key chooses the tenant (omit the header or send %q)", OrgIDHeader, org, p.Tenant)
}

// Principal authenticates a plain HTTP request with the key as a Bearer
// token or as the password of Basic auth, and checks scope (principalFor).
func (a *Auth) Principal(r *http.Request, scope string) (fleetscope.Principal, error) {
	return a.principalFor(r.Context(), r.Header, scope)
}

// Interceptor is the Connect interceptor that authenticates every call
// before its handler runs (the key as a Bearer token or the password of
// Basic auth) and refuses procedures missing from Scopes.
func (a *Auth) Interceptor() connect.Interceptor { return authInterceptor{a} }

type authInterceptor struct{ a *Auth }

func (i authInterceptor) check(ctx context.Context, procedure string, h http.Header) (context.Context, error) {
	scope, ok := Scopes[procedure]
	if !ok {
		return nil, connect.NewError(connect.CodeUnimplemented, nil)
	}
	if scope == Public {
		return ctx, nil
	}
	if p, ok := PrincipalFrom(ctx); ok && p.Can(scope) {
		return ctx, nil // authenticated by the gate, for this procedure
	}
	p, err := i.a.principalFor(ctx, h, scope)
	if err != nil {
		return nil, err
	}
	return context.WithValue(ctx, principalKey{}, p), nil
}

func (i authInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		if req.Spec().IsClient {
			return next(ctx, req)
		}
		ctx, cancel := context.WithTimeout(ctx, UnaryTimeout)
		defer cancel()
		ctx, err := i.check(ctx, req.Spec().Procedure, req.Header())
		if err != nil {
			return nil, err
		}
		return next(ctx, req)
	}
}

func (i authInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (i authInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		ctx, err := i.check(ctx, conn.Spec().Procedure, conn.RequestHeader())
		if err != nil {
			return err
		}
		return next(ctx, conn)
	}
}
