package postgres

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
)

const tenantColumns = `id, name, created_at, disabled_at IS NOT NULL, coalesce(retention_days, 0),
	coalesce(max_upload_bytes, 0), coalesce(max_raw_bytes, 0), coalesce(max_stored_bytes, 0), coalesce(rate_per_second, 0)`

func scanTenant(row pgx.Row) (fleetscope.Tenant, error) {
	var t fleetscope.Tenant
	err := row.Scan(&t.ID, &t.Name, &t.CreatedAt, &t.Disabled, &t.RetentionDays, &t.MaxUploadBytes, &t.MaxRawBytes, &t.MaxStoredBytes, &t.RatePerSecond)
	return t, err
}

// Tenant returns a tenant by id.
func (db *DB) Tenant(ctx context.Context, id int64) (fleetscope.Tenant, error) {
	t, err := scanTenant(db.pool.QueryRow(ctx, `SELECT `+tenantColumns+` FROM tenants WHERE id = $1`, id))
	return t, translate(err, "tenant")
}

// Tenants lists every tenant (operators only: the bootstrap CLI).
func (db *DB) Tenants(ctx context.Context) ([]fleetscope.Tenant, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+tenantColumns+` FROM tenants ORDER BY name`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (fleetscope.Tenant, error) { return scanTenant(r) })
}

// SetTenantDisabled disables (or re-enables) a tenant: its keys stop working.
func (db *DB) SetTenantDisabled(ctx context.Context, name string, disabled bool) error {
	tag, err := db.pool.Exec(ctx, `UPDATE tenants SET disabled_at = CASE WHEN $2 THEN coalesce(disabled_at, now()) END WHERE name = $1`, name, disabled)
	if err == nil && tag.RowsAffected() == 0 {
		return fleetscope.Errorf(fleetscope.ENOTFOUND, "tenant %q not found", name)
	}
	if err == nil {
		err = db.audit(ctx, db.pool, name, "cli", map[bool]string{true: "tenant.disable", false: "tenant.enable"}[disabled], name, nil)
	}
	return translate(err, "tenant")
}

// SetTenantLimits sets a tenant's quotas and retention (zero: none).
func (db *DB) SetTenantLimits(ctx context.Context, name string, l fleetscope.Limits) error {
	null := func(v int64) any {
		if v <= 0 {
			return nil
		}
		return v
	}
	tag, err := db.pool.Exec(ctx, `UPDATE tenants SET retention_days = $2, max_upload_bytes = $3, max_raw_bytes = $4,
		max_stored_bytes = $5, rate_per_second = $6 WHERE name = $1`,
		name, null(int64(l.RetentionDays)), null(l.MaxUploadBytes), null(l.MaxRawBytes), null(l.MaxStoredBytes), null(int64(l.RatePerSecond)))
	if err == nil && tag.RowsAffected() == 0 {
		return fleetscope.Errorf(fleetscope.ENOTFOUND, "tenant %q not found", name)
	}
	if err == nil {
		b, _ := json.Marshal(l)
		err = db.audit(ctx, db.pool, name, "cli", "tenant.limits", name, map[string]string{"limits": string(b)})
	}
	return translate(err, "tenant")
}

// audit records an action for the tenant called name.
func (db *DB) audit(ctx context.Context, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}, tenantName, actor, action, target string, detail map[string]string) error {
	d, _ := json.Marshal(nonNil(detail))
	var one int
	return q.QueryRow(ctx, `INSERT INTO audit_log (tenant_id, id, actor, action, target, detail)
		SELECT id, $2, $3, $4, $5, $6 FROM tenants WHERE name = $1 RETURNING 1`, tenantName, uuid.New(), actor, action, target, d).Scan(&one)
}

// Audit records an action in a tenant's audit log.
func (db *DB) Audit(ctx context.Context, tenant int64, actor, action, target string, detail map[string]string) error {
	d, _ := json.Marshal(nonNil(detail))
	_, err := db.pool.Exec(ctx, `INSERT INTO audit_log (tenant_id, id, actor, action, target, detail) VALUES ($1, $2, $3, $4, $5, $6)`,
		tenant, uuid.New(), actor, action, target, d)
	return translate(err, "audit log")
}

// AuditEvents lists a tenant's audit log, newest first.
func (db *DB) AuditEvents(ctx context.Context, tenant int64, pageSize int, pageToken string) ([]fleetscope.AuditEvent, string, error) {
	if pageSize <= 0 || pageSize > 1000 {
		pageSize = 100
	}
	args := []any{tenant}
	where := "tenant_id = $1"
	if pageToken != "" {
		t, id, err := decodeToken(pageToken)
		if err != nil {
			return nil, "", err
		}
		args = append(args, t, id)
		where += " AND (at, id) < ($2, $3)"
	}
	var out []fleetscope.AuditEvent
	var ids []uuid.UUID
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			var e fleetscope.AuditEvent
			var id uuid.UUID
			var detail []byte
			if err := rows.Scan(&id, &e.At, &e.Actor, &e.Action, &e.Target, &detail); err != nil {
				return err
			}
			json.Unmarshal(detail, &e.Detail)
			out = append(out, e)
			ids = append(ids, id)
		}
		return nil
	}, `SELECT id, at, actor, action, target, detail FROM audit_log WHERE `+where+fmt.Sprintf(` ORDER BY at DESC, id DESC LIMIT %d`, pageSize+1), args...)
	if err != nil {
		return nil, "", translate(err, "audit log")
	}
	next := ""
	if len(out) > pageSize {
		out = out[:pageSize]
		next = encodeToken(out[pageSize-1].At, ids[pageSize-1].String())
	}
	return out, next, nil
}

// KeyOptions describe a new key.
type KeyOptions struct {
	Name      string
	Scopes    []string
	ExpiresAt time.Time // zero: never
	Actor     string    // for the audit log
}

// CreateKey creates an API key for a tenant (by name; bootstrap) with the
// given scopes and returns its secret, which is shown only now: the index
// keeps only its SHA-256 and a visible prefix.
func (db *DB) CreateKey(ctx context.Context, tenant string, scopes []string) (string, error) {
	id, err := db.TenantID(ctx, tenant)
	if err != nil {
		return "", err
	}
	secret, _, err := db.NewKey(ctx, id, KeyOptions{Scopes: scopes, Actor: "cli"})
	return secret, err
}

// NewKey creates an API key for tenant id.
func (db *DB) NewKey(ctx context.Context, tenant int64, o KeyOptions) (string, fleetscope.Key, error) {
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
	err := db.pool.QueryRow(ctx, `INSERT INTO api_keys (tenant_id, id, secret_hash, scopes, name, expires_at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING created_at`,
		tenant, k.ID, h[:], o.Scopes, o.Name, exp).Scan(&k.CreatedAt)
	if err != nil {
		return "", k, translate(err, "key")
	}
	if err := db.Audit(ctx, tenant, o.Actor, "key.create", k.ID, map[string]string{"scopes": strings.Join(o.Scopes, ","), "name": o.Name}); err != nil {
		return "", k, err
	}
	return secret, k, nil
}

// Keys lists a tenant's keys.
func (db *DB) Keys(ctx context.Context, tenant int64) ([]fleetscope.Key, error) {
	rows, err := db.pool.Query(ctx, `SELECT id, name, scopes, created_at, coalesce(last_used_at, 'epoch'), coalesce(expires_at, 'epoch'), coalesce(revoked_at, 'epoch')
		FROM api_keys WHERE tenant_id = $1 ORDER BY created_at, id`, tenant)
	if err != nil {
		return nil, translate(err, "keys")
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (fleetscope.Key, error) {
		var k fleetscope.Key
		err := r.Scan(&k.ID, &k.Name, &k.Scopes, &k.CreatedAt, &k.LastUsedAt, &k.ExpiresAt, &k.RevokedAt)
		for _, t := range []*time.Time{&k.LastUsedAt, &k.ExpiresAt, &k.RevokedAt} {
			if t.Unix() == 0 {
				*t = time.Time{}
			}
		}
		return k, err
	})
	return keys, translate(err, "keys")
}

// RevokeKey revokes one of the tenant's keys. Returns ENOTFOUND for a key
// the tenant does not have.
func (db *DB) RevokeKey(ctx context.Context, tenant int64, id, actor string) error {
	tag, err := db.pool.Exec(ctx, `UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE tenant_id = $1 AND id = $2`, tenant, id)
	if err != nil {
		return translate(err, "key")
	}
	if tag.RowsAffected() == 0 {
		return fleetscope.Errorf(fleetscope.ENOTFOUND, "key %q not found", id)
	}
	return db.Audit(ctx, tenant, actor, "key.revoke", id, nil)
}

// DeleteProfile removes a profile's index rows in one transaction and
// returns its blob key; the caller deletes the blob unless another profile
// uses it (BlobInUse). Returns ENOTFOUND if the tenant has no such profile.
func (db *DB) DeleteProfile(ctx context.Context, tenant int64, id, actor string) (string, error) {
	u, err := parseID(id)
	if err != nil {
		return "", err
	}
	var key string
	err = db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `DELETE FROM profiles WHERE tenant_id = $1 AND id = $2 RETURNING blob_key`, tenant, u).Scan(&key); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM seconds WHERE tenant_id = $1 AND profile_id = $2`, tenant, u); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO audit_log (tenant_id, id, actor, action, target) VALUES ($1, $2, $3, 'profile.delete', $4)`,
			tenant, uuid.New(), actor, id)
		return err
	})
	return key, translate(err, "profile "+id)
}

// Expired lists up to limit profiles past their tenant's retention at now.
func (db *DB) Expired(ctx context.Context, now time.Time, limit int) ([]ProfileRef, error) {
	rows, err := db.pool.Query(ctx, `SELECT p.tenant_id, p.id::text FROM profiles p JOIN tenants t ON t.id = p.tenant_id
		WHERE t.retention_days IS NOT NULL AND p.created_at < $1::timestamptz - t.retention_days * interval '1 day'
		ORDER BY p.created_at LIMIT $2`, now, limit)
	if err != nil {
		return nil, translate(err, "retention")
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[ProfileRef])
	return out, translate(err, "retention")
}

// ProfileRef names one profile of one tenant.
type ProfileRef struct {
	Tenant int64
	ID     string
}

// StoredBytes is the total raw size of a tenant's profiles.
func (db *DB) StoredBytes(ctx context.Context, tenant int64) (bytes, profiles int64, err error) {
	err = db.readTenantRow(ctx, tenant, func(r pgx.Row) error { return r.Scan(&bytes, &profiles) },
		`SELECT coalesce(sum(size_bytes), 0)::bigint, count(*) FROM profiles WHERE tenant_id = $1`, tenant)
	return bytes, profiles, translate(err, "usage")
}

// DeleteTenant removes a tenant and everything it owns from the index and
// returns the blob keys its profiles used, for the caller to delete.
func (db *DB) DeleteTenant(ctx context.Context, name string) ([]string, error) {
	var keys []string
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, `SELECT id FROM tenants WHERE name = $1 FOR UPDATE`, name).Scan(&id); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT blob_key FROM profiles WHERE tenant_id = $1`, id)
		if err != nil {
			return err
		}
		if keys, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		for _, q := range []string{
			`DELETE FROM seconds WHERE tenant_id = $1`, `DELETE FROM share_links WHERE tenant_id = $1`,
			`DELETE FROM profiles WHERE tenant_id = $1`, `DELETE FROM stacks WHERE tenant_id = $1`,
			`DELETE FROM frames WHERE tenant_id = $1`, `DELETE FROM tenants WHERE id = $1`,
		} {
			if _, err := tx.Exec(ctx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
	return keys, translate(err, "tenant "+name)
}

// BlobKeys lists every blob key the index refers to (consistency checks).
func (db *DB) BlobKeys(ctx context.Context) (map[string]bool, error) {
	rows, err := db.pool.Query(ctx, `SELECT blob_key FROM profiles`)
	if err != nil {
		return nil, err
	}
	keys, err := pgx.CollectRows(rows, pgx.RowTo[string])
	out := make(map[string]bool, len(keys))
	for _, k := range keys {
		out[k] = true
	}
	return out, err
}

// DropPartitionsBefore drops whole daily partitions of per-second rows that
// end before cutoff: retention without row deletes, once every tenant's
// retention has passed them. Returns the partitions dropped.
func (db *DB) DropPartitionsBefore(ctx context.Context, cutoff time.Time) ([]string, error) {
	rows, err := db.pool.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = 'seconds' AND c.relname ~ '^seconds_[0-9]{8}$'`)
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, n := range names {
		day, err := time.Parse("20060102", strings.TrimPrefix(n, "seconds_"))
		if err != nil || !day.AddDate(0, 0, 1).Before(cutoff) {
			continue
		}
		if _, err := db.pool.Exec(ctx, `DROP TABLE `+pgx.Identifier{n}.Sanitize()); err != nil {
			return dropped, err
		}
		dropped = append(dropped, n)
	}
	return dropped, nil
}

// LongestRetention returns the longest retention of all tenants, and false
// if any tenant keeps its profiles forever.
func (db *DB) LongestRetention(ctx context.Context) (time.Duration, bool, error) {
	var forever bool
	var days int
	err := db.pool.QueryRow(ctx, `SELECT coalesce(bool_or(retention_days IS NULL), true), coalesce(max(retention_days), 0) FROM tenants`).Scan(&forever, &days)
	return time.Duration(days) * 24 * time.Hour, !forever, err
}
