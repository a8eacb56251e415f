package postgres

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// CheckConsistency reports profiles whose index is incomplete: no stack
// list, or stored samples that do not add up to the profile's count (but
// for profiles whose rows the sample tier deleted). (A
// transaction writes all of it or none, so this should never find any.)
func (db *DB) CheckConsistency(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT p.tenant_id, p.id, p.samples, coalesce(s.n, 0), ps.profile_id IS NOT NULL
		FROM profiles p
		LEFT JOIN (SELECT tenant_id, profile_id, sum(samples) AS n FROM seconds GROUP BY 1, 2) s
		  ON s.tenant_id = p.tenant_id AND s.profile_id = p.id
		LEFT JOIN profile_stacks ps ON ps.tenant_id = p.tenant_id AND ps.profile_id = p.id
		WHERE coalesce(s.n, 0) <> p.samples AND p.samples_tier <> 2 OR ps.profile_id IS NULL`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var tenant, samples, stored int64
		var id uuid.UUID
		var stacks bool
		if err := rows.Scan(&tenant, &id, &samples, &stored, &stacks); err != nil {
			return nil, err
		}
		out = append(out, fmt.Sprintf("tenant %d profile %s: %d samples, %d stored, stack list %v", tenant, id, samples, stored, stacks))
	}
	return out, rows.Err()
}

// Expired lists up to limit profiles past their tenant's retention at now.
func (db *DB) Expired(ctx context.Context, now time.Time, limit int) ([]fleetscope.ProfileRef, error) {
	rows, err := db.pool.Query(ctx, `SELECT p.tenant_id, p.id::text FROM profiles p JOIN tenants t ON t.id = p.tenant_id
		WHERE t.retention_days IS NOT NULL AND p.created_at < $1::timestamptz - t.retention_days * interval '1 day'
		ORDER BY p.created_at LIMIT $2`, now, limit)
	if err != nil {
		return nil, translate(err, "retention")
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fleetscope.ProfileRef])
	return out, translate(err, "retention")
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
	rows, err := db.pool.Query(ctx, `SELECT c.relname, p.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		JOIN pg_class p ON p.oid = i.inhparent WHERE p.relname = ANY($1) AND c.relname = p.relname || '_' || substring(c.relname from '[0-9]{8}$')`, partitioned)
	if err != nil {
		return nil, err
	}
	type partition struct{ Name, Table string }
	parts, err := pgx.CollectRows(rows, pgx.RowToStructByPos[partition])
	if err != nil {
		return nil, err
	}
	var dropped []string
	for _, p := range parts {
		n := p.Name
		day, err := time.Parse("20060102", strings.TrimPrefix(n, p.Table+"_"))
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

// SamplesDue lists up to limit profiles, oldest first, that the sample
// tier has work for at now: still in it past their tenant's sample_days
// (moved false), or moved out of it before cutoff with their rows still
// stored (moved true).
func (db *DB) SamplesDue(ctx context.Context, now, cutoff time.Time, moved bool, limit int) ([]fleetscope.ProfileRef, error) {
	q := `SELECT p.tenant_id, p.id::text FROM profiles p JOIN tenants t ON t.id = p.tenant_id
		WHERE t.sample_days IS NOT NULL AND p.samples_tier = 0 AND p.created_at < $1::timestamptz - t.sample_days * interval '1 day'
		ORDER BY p.created_at LIMIT $2`
	at := now
	if moved {
		q = `SELECT tenant_id, id::text FROM profiles WHERE samples_tier = 1 AND samples_moved_at < $1 ORDER BY samples_moved_at LIMIT $2`
		at = cutoff
	}
	rows, err := db.pool.Query(ctx, q, at, limit)
	if err != nil {
		return nil, translate(err, "sample tier")
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fleetscope.ProfileRef])
	return out, translate(err, "sample tier")
}

// MoveSamples takes a profile out of the sample tier at now: from then on
// its samples are read from its raw file, used only if its rows hash to
// digest (index.Digest); or, with a nil digest, its rows are kept for
// good. Its rows stay until DropMovedSamples. A profile already moved is
// left as it is.
func (db *DB) MoveSamples(ctx context.Context, tenant int64, id string, now time.Time, digest []byte) error {
	u, err := parseID(id)
	if err != nil {
		return err
	}
	tier := 1
	if digest == nil {
		tier = 3
	}
	err = db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `UPDATE profiles SET samples_tier = $3, samples_moved_at = $4, samples_digest = $5
			WHERE tenant_id = $1 AND id = $2 AND samples_tier = 0`, tenant, u, tier, now, digest)
		return err
	})
	return translate(err, "profile "+id)
}

// DropMovedSamples deletes the rows of a profile whose samples are read
// from its raw file (MoveSamples), in one transaction with its state.
func (db *DB) DropMovedSamples(ctx context.Context, tenant int64, id string) error {
	u, err := parseID(id)
	if err != nil {
		return err
	}
	err = db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE profiles SET samples_tier = 2 WHERE tenant_id = $1 AND id = $2 AND samples_tier = 1`, tenant, u)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM seconds WHERE tenant_id = $1 AND profile_id = $2`, tenant, u)
		return err
	})
	return translate(err, "profile "+id)
}
