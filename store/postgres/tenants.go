package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/fleetscope/fleetscope"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// CreateTenant creates a tenant and returns its id. With ifNotExists an
// existing tenant's id is returned instead of ECONFLICT.
func (db *DB) CreateTenant(ctx context.Context, name string, ifNotExists bool) (int64, error) {
	var id int64
	err := db.pool.QueryRow(ctx, `INSERT INTO tenants (name) VALUES ($1) ON CONFLICT (name) DO NOTHING RETURNING id`, name).Scan(&id)
	if err == nil {
		return id, nil
	}
	// The insert sets only the name, so a check violation is the name's
	// (the error's constraint name is not relied on: Citus, relaying the
	// error from the node that refused the row, does not pass it on).
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == pgerrcode.CheckViolation {
		return 0, fleetscope.Wrap(err, fleetscope.EINVALID, fmt.Sprintf("tenant name %q: use lowercase letters, digits, '.', '_' or '-' (at most 63)", name))
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return 0, translate(err, "tenant")
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

const tenantColumns = `id, name, created_at, disabled_at IS NOT NULL, coalesce(retention_days, 0),
	coalesce(max_upload_bytes, 0), coalesce(max_raw_bytes, 0), coalesce(max_stored_bytes, 0), coalesce(rate_per_second, 0),
	coalesce(max_stacks, 0), coalesce(max_depth, 0), coalesce(sample_days, 0)`

func scanTenant(row pgx.Row) (fleetscope.Tenant, error) {
	var t fleetscope.Tenant
	err := row.Scan(&t.ID, &t.Name, &t.CreatedAt, &t.Disabled, &t.RetentionDays, &t.MaxUploadBytes, &t.MaxRawBytes, &t.MaxStoredBytes, &t.RatePerSecond, &t.MaxStacks, &t.MaxDepth, &t.SampleDays)
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
	q := `UPDATE tenants SET disabled_at = NULL WHERE name = $1`
	if disabled { // least() keeps an earlier time and skips NULL (see RevokeKey)
		q = `UPDATE tenants SET disabled_at = least(disabled_at, now()) WHERE name = $1`
	}
	tag, err := db.pool.Exec(ctx, q, name)
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
		max_stored_bytes = $5, rate_per_second = $6, max_stacks = $7, max_depth = $8, sample_days = $9 WHERE name = $1`,
		name, null(int64(l.RetentionDays)), null(l.MaxUploadBytes), null(l.MaxRawBytes), null(l.MaxStoredBytes), null(int64(l.RatePerSecond)),
		null(int64(l.MaxStacks)), null(int64(l.MaxDepth)), null(int64(l.SampleDays)))
	if err == nil && tag.RowsAffected() == 0 {
		return fleetscope.Errorf(fleetscope.ENOTFOUND, "tenant %q not found", name)
	}
	if err == nil {
		b, _ := json.Marshal(l)
		err = db.audit(ctx, db.pool, name, "cli", "tenant.limits", name, map[string]string{"limits": string(b)})
	}
	return translate(err, "tenant")
}

// StoredBytes is what a tenant's storage quota counts: the raw size of its
// profiles and the bytes of its dictionary rows (the bytes each profile's
// upload added, and those of rows that outlived the profile that added
// them; see frameBytes), counted as they are written and reclaimed, not
// summed over the dictionary.
func (db *DB) StoredBytes(ctx context.Context, tenant int64) (bytes, profiles int64, err error) {
	err = db.readTenantRow(ctx, tenant, func(r pgx.Row) error { return r.Scan(&bytes, &profiles) },
		`SELECT coalesce(sum(size_bytes), 0)::bigint
			+ coalesce((SELECT sum(dict_bytes) FROM profile_stacks WHERE tenant_id = $1), 0)::bigint
			+ coalesce((SELECT bytes FROM dictionaries WHERE tenant_id = $1), 0)::bigint, count(*)
		FROM profiles WHERE tenant_id = $1`, tenant)
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
		db.known.forget()
		for _, q := range []string{
			`DELETE FROM seconds WHERE tenant_id = $1`,
			`DELETE FROM fleet_tens WHERE tenant_id = $1`, `DELETE FROM fleet_minutes WHERE tenant_id = $1`,
			`DELETE FROM fleet_stack_buckets WHERE tenant_id = $1`,
			`DELETE FROM fleet_stack_rollups WHERE tenant_id = $1`, `DELETE FROM fleet_versions WHERE tenant_id = $1`,
			`DELETE FROM share_links WHERE tenant_id = $1`,
			`DELETE FROM profiles WHERE tenant_id = $1`, `DELETE FROM stacks WHERE tenant_id = $1`,
			`DELETE FROM frames WHERE tenant_id = $1`, `DELETE FROM dictionary_pins WHERE tenant_id = $1`,
			`DELETE FROM dictionaries WHERE tenant_id = $1`, `DELETE FROM tenants WHERE id = $1`,
		} {
			if _, err := tx.Exec(ctx, q, id); err != nil {
				return err
			}
		}
		return nil
	})
	return keys, translate(err, "tenant "+name)
}
