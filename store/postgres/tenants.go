package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"slices"
	"strings"

	"github.com/fleetscope/fleetscope"
)

// CreateTenant creates a tenant and returns its id. With ifNotExists an
// existing tenant's id is returned instead of ECONFLICT.
func (db *DB) CreateTenant(ctx context.Context, name string, ifNotExists bool) (int64, error) {
	var id int64
	err := db.pool.QueryRow(ctx, `INSERT INTO tenants (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id`, name).Scan(&id)
	if err == nil {
		return id, nil
	}
	if err := translate(err, "tenant"); fleetscope.ErrorCode(err) != fleetscope.ENOTFOUND {
		if strings.Contains(err.Error(), "tenants_name_check") {
			return 0, fleetscope.Errorf(fleetscope.EINVALID, "tenant name %q: use lowercase letters, digits, '.', '_' or '-' (at most 63)", name)
		}
		return 0, err
	}
	if !ifNotExists {
		return 0, fleetscope.Errorf(fleetscope.ECONFLICT, "tenant %q already exists", name)
	}
	return db.TenantID(ctx, name)
}

// TenantID returns a tenant's id by name.
func (db *DB) TenantID(ctx context.Context, name string) (int64, error) {
	var id int64
	err := db.pool.QueryRow(ctx, `SELECT id FROM tenants WHERE name = $1`, name).Scan(&id)
	if err != nil {
		return 0, translate(err, "tenant "+name)
	}
	return id, nil
}

var validScopes = []string{fleetscope.ScopeIngest, fleetscope.ScopeRead, fleetscope.ScopeAdmin}

// keyPrefix starts every secret, so leaked keys are easy to find.
const keyPrefix = "fsk_"

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// CreateKey creates an API key for a tenant with the given scopes and
// returns its secret, which is shown only now: the index keeps only its
// SHA-256 and a visible prefix.
func (db *DB) CreateKey(ctx context.Context, tenant string, scopes []string) (string, error) {
	if len(scopes) == 0 {
		return "", fleetscope.Errorf(fleetscope.EINVALID, "a key needs at least one scope (%s)", strings.Join(validScopes, ", "))
	}
	for _, s := range scopes {
		if !slices.Contains(validScopes, s) {
			return "", fleetscope.Errorf(fleetscope.EINVALID, "unknown scope %q (%s)", s, strings.Join(validScopes, ", "))
		}
	}
	id, err := db.TenantID(ctx, tenant)
	if err != nil {
		return "", err
	}
	var raw [25]byte // 200 bits
	if _, err := rand.Read(raw[:]); err != nil {
		return "", err
	}
	body := strings.ToLower(b32.EncodeToString(raw[:]))
	secret := keyPrefix + body
	h := sha256.Sum256([]byte(secret))
	_, err = db.pool.Exec(ctx, `INSERT INTO api_keys (tenant_id, id, secret_hash, scopes) VALUES ($1, $2, $3, $4)`,
		id, keyPrefix+body[:8], h[:], scopes)
	if err != nil {
		return "", translate(err, "key")
	}
	return secret, nil
}

// Authenticate resolves a secret to its tenant and scopes. Returns
// EUNAUTHENTICATED for any key that is not valid, without saying why.
func (db *DB) Authenticate(ctx context.Context, secret string) (fleetscope.Principal, error) {
	var p fleetscope.Principal
	if !strings.HasPrefix(secret, keyPrefix) || len(secret) > 128 {
		return p, fleetscope.Errorf(fleetscope.EUNAUTHENTICATED, "invalid API key")
	}
	h := sha256.Sum256([]byte(secret))
	var stale bool
	err := db.pool.QueryRow(ctx, `
		SELECT k.tenant_id, t.name, k.id, k.scopes,
		       k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute'
		FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
		WHERE k.secret_hash = $1`, h[:]).Scan(&p.TenantID, &p.Tenant, &p.KeyID, &p.Scopes, &stale)
	if err != nil {
		if fleetscope.ErrorCode(translate(err, "key")) == fleetscope.ENOTFOUND {
			return p, fleetscope.Errorf(fleetscope.EUNAUTHENTICATED, "invalid API key")
		}
		return p, err
	}
	if stale { // record use at most once a minute: no write on every request
		if _, err := db.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = now() WHERE secret_hash = $1`, h[:]); err != nil {
			return p, err
		}
	}
	return p, nil
}
