package postgres

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
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

// Authenticate resolves a secret to its tenant, scopes and limits. The key
// is found by its visible prefix and its SHA-256 compared in constant time.
// Returns EUNAUTHENTICATED for any key that is not valid (unknown, revoked,
// expired, or of a disabled tenant) without saying which.
func (db *DB) Authenticate(ctx context.Context, secret string) (fleetscope.Principal, error) {
	var p fleetscope.Principal
	bad := fleetscope.Errorf(fleetscope.EUNAUTHENTICATED, "invalid API key")
	if !strings.HasPrefix(secret, keyPrefix) || len(secret) < len(keyPrefix)+8 || len(secret) > 128 {
		return p, bad
	}
	h := sha256.Sum256([]byte(secret))
	rows, err := db.pool.Query(ctx, `
		SELECT k.secret_hash, k.tenant_id, t.name, k.id, k.scopes,
		       k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute',
		       coalesce(t.retention_days, 0), coalesce(t.max_upload_bytes, 0), coalesce(t.max_raw_bytes, 0),
		       coalesce(t.max_stored_bytes, 0), coalesce(t.rate_per_second, 0)
		FROM api_keys k JOIN tenants t ON t.id = k.tenant_id
		WHERE k.id = $1 AND k.revoked_at IS NULL AND (k.expires_at IS NULL OR k.expires_at > now())
		  AND t.disabled_at IS NULL`, secret[:len(keyPrefix)+8])
	if err != nil {
		return p, translate(err, "key")
	}
	defer rows.Close()
	found, stale := false, false
	for rows.Next() {
		var hash []byte
		var cand fleetscope.Principal
		var st bool
		l := &cand.Limits
		if err := rows.Scan(&hash, &cand.TenantID, &cand.Tenant, &cand.KeyID, &cand.Scopes, &st,
			&l.RetentionDays, &l.MaxUploadBytes, &l.MaxRawBytes, &l.MaxStoredBytes, &l.RatePerSecond); err != nil {
			return p, err
		}
		if subtle.ConstantTimeCompare(hash, h[:]) == 1 {
			p, found, stale = cand, true, st
		}
	}
	if err := rows.Err(); err != nil {
		return p, translate(err, "key")
	}
	if !found {
		return fleetscope.Principal{}, bad
	}
	if stale { // record use at most once a minute: no write on every request
		if _, err := db.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = now() WHERE tenant_id = $1 AND id = $2`, p.TenantID, p.KeyID); err != nil {
			return p, translate(err, "key")
		}
	}
	return p, nil
}
