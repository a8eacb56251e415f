package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/fleetscope/fleetscope"
	"github.com/jackc/pgx/v5"
)

// CreateKey creates an API key for a tenant (by name; bootstrap) with the
// given scopes and returns its secret, which is shown only now: the index
// keeps only its SHA-256 and a visible prefix.
func (db *DB) CreateKey(ctx context.Context, tenant string, scopes []string) (string, error) {
	id, err := db.TenantID(ctx, tenant)
	if err != nil {
		return "", err
	}
	secret, _, err := db.NewKey(ctx, id, fleetscope.KeyOptions{Scopes: scopes, Actor: "cli"})
	return secret, err
}

// MaxKeysPerTenant bounds a tenant's live keys (neither revoked nor
// expired): keys are not a way to multiply a tenant's share of anything.
const MaxKeysPerTenant = 1000

// keyLock is the advisory lock class of key creation (with the tenant).
const keyLock = 0x6b657973 // "keys"

// NewKey creates an API key for tenant id; ETOOLARGE when the tenant has
// MaxKeysPerTenant live keys already.
func (db *DB) NewKey(ctx context.Context, tenant int64, o fleetscope.KeyOptions) (string, fleetscope.Key, error) {
	var k fleetscope.Key
	if len(o.Scopes) == 0 {
		return "", k, fleetscope.Errorf(fleetscope.EINVALID, "a key needs at least one scope (%s)", strings.Join(validScopes, ", "))
	}
	for _, s := range o.Scopes {
		if !slices.Contains(validScopes, s) {
			return "", k, fleetscope.Errorf(fleetscope.EINVALID, "unknown scope %q (%s)", s, strings.Join(validScopes, ", "))
		}
	}
	if !o.ExpiresAt.IsZero() && o.ExpiresAt.Before(time.Now()) {
		return "", k, fleetscope.Errorf(fleetscope.EINVALID, "expiry %s is in the past", o.ExpiresAt.Format(time.RFC3339))
	}
	if len(o.Name) > 100 {
		return "", k, fleetscope.Errorf(fleetscope.EINVALID, "key name too long")
	}
	var raw [25]byte // 200 bits
	if _, err := rand.Read(raw[:]); err != nil {
		return "", k, err
	}
	body := strings.ToLower(b32.EncodeToString(raw[:]))
	secret := keyPrefix + body
	h := sha256.Sum256([]byte(secret))
	var exp any
	if !o.ExpiresAt.IsZero() {
		exp = o.ExpiresAt
	}
	k = fleetscope.Key{ID: keyPrefix + body[:8], Name: o.Name, Scopes: slices.Clone(o.Scopes), ExpiresAt: o.ExpiresAt}
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		// One creation at a time per tenant, so the count below holds.
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1, $2)`, keyLock, int32(tenant)); err != nil {
			return err
		}
		var live int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE tenant_id = $1 AND revoked_at IS NULL
			AND (expires_at IS NULL OR expires_at > now())`, tenant).Scan(&live); err != nil {
			return err
		}
		if live >= MaxKeysPerTenant {
			return fleetscope.Errorf(fleetscope.ETOOLARGE, "the tenant has %d live keys, the most it may have: revoke one first", live)
		}
		err := tx.QueryRow(ctx, `INSERT INTO api_keys (tenant_id, id, secret_hash, scopes, name, expires_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING created_at`,
			tenant, k.ID, h[:], o.Scopes, o.Name, exp).Scan(&k.CreatedAt)
		if err != nil {
			return err
		}
		return auditTx(ctx, tx, tenant, o.Actor, "key.create", k.ID, map[string]string{"scopes": strings.Join(o.Scopes, ","), "name": o.Name})
	})
	if err != nil {
		return "", k, translate(err, "key")
	}
	return secret, k, nil
}

// Keys lists a tenant's keys.
func (db *DB) Keys(ctx context.Context, tenant int64) ([]fleetscope.Key, error) {
	var keys []fleetscope.Key
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) (err error) {
		keys, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (fleetscope.Key, error) {
			var k fleetscope.Key
			err := r.Scan(&k.ID, &k.Name, &k.Scopes, &k.CreatedAt, &k.LastUsedAt, &k.ExpiresAt, &k.RevokedAt)
			for _, t := range []*time.Time{&k.LastUsedAt, &k.ExpiresAt, &k.RevokedAt} {
				if t.Unix() == 0 {
					*t = time.Time{}
				}
			}
			return k, err
		})
		return err
	}, `SELECT id, name, scopes, created_at, coalesce(last_used_at, 'epoch'), coalesce(expires_at, 'epoch'), coalesce(revoked_at, 'epoch')
		FROM api_keys WHERE tenant_id = $1 ORDER BY created_at, id`, tenant)
	return keys, translate(err, "keys")
}

// RevokeKey revokes one of the tenant's keys. Returns ENOTFOUND for a key
// the tenant does not have. A second revocation keeps the first time:
// least() skips NULL (coalesce(revoked_at, now()) would say the same, but
// Citus refuses a STABLE function inside COALESCE or CASE in a write).
func (db *DB) RevokeKey(ctx context.Context, tenant int64, id, actor string) error {
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE api_keys SET revoked_at = least(revoked_at, now()) WHERE tenant_id = $1 AND id = $2`, tenant, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return fleetscope.Errorf(fleetscope.ENOTFOUND, "key %q not found", id)
		}
		return auditTx(ctx, tx, tenant, actor, "key.revoke", id, nil)
	})
	return translate(err, "key")
}

var validScopes = []string{fleetscope.ScopeIngest, fleetscope.ScopeRead, fleetscope.ScopeAdmin}

// keyPrefix starts every secret, so leaked keys are easy to find.
const keyPrefix = "fsk_"

var b32 = base32.StdEncoding.WithPadding(base32.NoPadding)

// Authenticate resolves a secret to its tenant, scopes and limits. The key
// is found by its visible prefix and its SHA-256 compared in constant time.
// Returns EUNAUTHENTICATED for any key that is not valid (unknown, revoked,
// expired, or of a disabled tenant) without saying which, and in the same
// time: the query returns one row whether or not the prefix is known, and
// a hash is compared either way. The one exception: a caller who holds the
// whole secret of an expired key is told that it expired, and when (only
// its holder can learn that, and a dead key is worth nothing to a thief). It reads api_keys as the table's owner,
// the one path that looks keys up across tenants.
func (db *DB) Authenticate(ctx context.Context, secret string) (fleetscope.Principal, error) {
	var p fleetscope.Principal
	bad := fleetscope.Errorf(fleetscope.EUNAUTHENTICATED, "invalid API key")
	if !strings.HasPrefix(secret, keyPrefix) || len(secret) < len(keyPrefix)+8 || len(secret) > 128 || !utf8.ValidString(secret) {
		return p, bad
	}
	h := sha256.Sum256([]byte(secret))
	rows, err := db.pool.Query(ctx, `
		SELECT coalesce(k.secret_hash, '\x'::bytea), coalesce(k.tenant_id, 0), coalesce(t.name, ''), coalesce(k.id, ''),
		       coalesce(k.scopes, '{}'), coalesce(k.last_used_at IS NULL OR k.last_used_at < now() - interval '1 minute', false),
		       coalesce(k.expires_at, 'epoch'), coalesce(k.expires_at <= now(), false),
		       coalesce(t.retention_days, 0), coalesce(t.max_upload_bytes, 0), coalesce(t.max_raw_bytes, 0),
		       coalesce(t.max_stored_bytes, 0), coalesce(t.rate_per_second, 0), coalesce(t.max_stacks, 0), coalesce(t.max_depth, 0)
		FROM (SELECT 1) AS one
		LEFT JOIN (api_keys k JOIN tenants t ON t.id = k.tenant_id AND t.disabled_at IS NULL)
		  ON k.id = $1 AND k.revoked_at IS NULL`, secret[:len(keyPrefix)+8])
	if err != nil {
		return p, translate(err, "key")
	}
	defer rows.Close()
	found, stale, expired := false, false, false
	for rows.Next() {
		var hash []byte
		var cand fleetscope.Principal
		var st, exp bool
		l := &cand.Limits
		if err := rows.Scan(&hash, &cand.TenantID, &cand.Tenant, &cand.KeyID, &cand.Scopes, &st, &cand.ExpiresAt, &exp,
			&l.RetentionDays, &l.MaxUploadBytes, &l.MaxRawBytes, &l.MaxStoredBytes, &l.RatePerSecond, &l.MaxStacks, &l.MaxDepth); err != nil {
			return p, err
		}
		if len(hash) != len(h) {
			hash = make([]byte, len(h)) // no such key: compare all the same
		}
		if cand.ExpiresAt.Unix() == 0 {
			cand.ExpiresAt = time.Time{} // never
		}
		if subtle.ConstantTimeCompare(hash, h[:]) == 1 && cand.TenantID != 0 {
			p, found, stale, expired = cand, true, st, exp
		}
	}
	if err := rows.Err(); err != nil {
		return p, translate(err, "key")
	}
	if !found {
		return fleetscope.Principal{}, bad
	}
	if expired {
		return fleetscope.Principal{}, fleetscope.Errorf(fleetscope.EUNAUTHENTICATED, "API key %s expired at %s", p.KeyID, p.ExpiresAt.UTC().Format(time.RFC3339))
	}
	if stale { // record use at most once a minute: no write on every request
		if _, err := db.pool.Exec(ctx, `UPDATE api_keys SET last_used_at = now() WHERE tenant_id = $1 AND id = $2`, p.TenantID, p.KeyID); err != nil {
			return p, translate(err, "key")
		}
	}
	return p, nil
}
