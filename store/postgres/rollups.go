package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// Stack rollups (migration 00019): a host's stack counts per hour and per
// day, each named by the version of the host's samples it counted
// (fleet_versions), read by query/fleet_long.go.

// hourOf is the SQL of the hour (unix second, a multiple of 3600) of a
// fleet_minutes row, below 0 too.
const hourOf = `minute - ((minute % 3600) + 3600) % 3600`

// touchVersions increments, in a profile's transaction, the versions of
// the hours its minute rows touch (under their app and host): after its
// upload, before its deletion and before and after a change of its app or
// host. Rows are locked in one order (app, host, hour) so that two
// transactions never wait for each other's.
func touchVersions(ctx context.Context, tx pgx.Tx, tenant int64, id any) error {
	_, err := tx.Exec(ctx, `INSERT INTO fleet_versions AS v (tenant_id, app, host, hour, version)
		SELECT $1, app, host, hour, 1 FROM (
			SELECT DISTINCT app, host, `+hourOf+` AS hour FROM fleet_minutes WHERE tenant_id = $1 AND profile_id = $2) m
		ORDER BY app, host, hour
		ON CONFLICT (tenant_id, app, hour, host) DO UPDATE SET version = v.version + 1`, tenant, id)
	return err
}

// dropRollups deletes, in a profile's transaction, the hour and day rows
// its minute rows fall in (before a deletion or a change of app or host:
// no count of its samples is kept where they no longer are) and
// increments the versions of its hours.
func dropRollups(ctx context.Context, tx pgx.Tx, tenant int64, id any) error {
	if _, err := tx.Exec(ctx, `DELETE FROM fleet_stack_rollups r USING (
			SELECT DISTINCT app, host, `+hourOf+` AS hour FROM fleet_minutes WHERE tenant_id = $1 AND profile_id = $2) m
		WHERE r.tenant_id = $1 AND r.app = m.app AND r.host = m.host
			AND (r.width = 3600 AND r.bucket = m.hour OR r.width = 86400 AND r.bucket = m.hour - ((m.hour % 86400) + 86400) % 86400)`,
		tenant, id); err != nil {
		return err
	}
	return touchVersions(ctx, tx, tenant, id)
}

// FleetVersions returns the versions of app's hosts' samples (on any of
// hosts; none: all) by host and span of width seconds (3600 or 86400):
// the sum of the hour versions in each, over the hours [from, to) (unix
// seconds, multiples of width). A host without a version in a span has
// never had samples there.
func (db *DB) FleetVersions(ctx context.Context, tenant int64, app string, hosts []string, width, from, to int64) ([]index.Version, error) {
	if err := checkWidth(width, from, to); err != nil {
		return nil, err
	}
	args := []any{tenant, app, from, to, width}
	q := `SELECT host, hour - ((hour % $5) + $5) % $5, sum(version)::bigint FROM fleet_versions
		WHERE tenant_id = $1 AND app = $2 AND hour >= $3 AND hour < $4`
	if len(hosts) > 0 {
		args = append(args, hosts)
		q += ` AND host = ANY($6)`
	}
	q += ` GROUP BY 1, 2`
	var out []index.Version
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			var v index.Version
			if err := rows.Scan(&v.Host, &v.Bucket, &v.Version); err != nil {
				return err
			}
			out = append(out, v)
		}
		return nil
	}, q, args...)
	return out, translate(err, "fleet versions")
}

// FleetStackRollups returns the stored rollups of width seconds (3600 or
// 86400) of app's event (base name) starting at the unix seconds buckets,
// on any of hosts (none: all), each with the version it counted.
func (db *DB) FleetStackRollups(ctx context.Context, tenant int64, app, event string, hosts []string, width int64, buckets []int64) ([]index.StackBucket, error) {
	if err := checkWidth(width, buckets...); err != nil {
		return nil, err
	}
	if len(buckets) == 0 {
		return nil, nil
	}
	args := []any{tenant, app, event, width, buckets}
	q := `SELECT host, bucket, version, stacks FROM fleet_stack_rollups
		WHERE tenant_id = $1 AND app = $2 AND event = $3 AND width = $4 AND bucket = ANY($5)`
	if len(hosts) > 0 {
		args = append(args, hosts)
		q += ` AND host = ANY($6)`
	}
	var out []index.StackBucket
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			var b index.StackBucket
			var stacks []byte
			if err := rows.Scan(&b.Host, &b.Bucket, &b.Version, &stacks); err != nil {
				return err
			}
			if err := index.DecodeStacks(stacks, &b); err != nil {
				return fmt.Errorf("stack rollup %s/%d: %w", b.Host, b.Bucket, err)
			}
			out = append(out, b)
		}
		return nil
	}, q, args...)
	return out, translate(err, "stack rollups")
}

// PutFleetStackRollups stores rollups of width seconds of app's event,
// each replacing its host and bucket's row, if any, in one statement.
func (db *DB) PutFleetStackRollups(ctx context.Context, tenant int64, app, event string, width int64, bs []index.StackBucket) error {
	if len(bs) == 0 {
		return nil
	}
	n := len(bs)
	hosts, buckets, versions, samples, stacks := make([]string, n), make([]int64, n), make([]int64, n), make([]int64, n), make([][]byte, n)
	for i := range bs {
		b := &bs[i]
		if err := checkWidth(width, b.Bucket); err != nil {
			return err
		}
		hosts[i], buckets[i], versions[i], stacks[i] = b.Host, b.Bucket, b.Version, index.EncodeStacks(b)
		for _, c := range b.Counts {
			samples[i] += int64(c)
		}
	}
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO fleet_stack_rollups (tenant_id, app, event, width, bucket, host, version, samples, stacks)
			SELECT $1, $2, $3, $4, bucket, host, version, samples, stacks
			FROM unnest($5::bigint[], $6::text[], $7::bigint[], $8::bigint[], $9::bytea[]) AS b(bucket, host, version, samples, stacks)
			ON CONFLICT (tenant_id, app, event, width, bucket, host) DO UPDATE
			SET version = excluded.version, samples = excluded.samples, stacks = excluded.stacks`,
			tenant, app, event, width, buckets, hosts, versions, samples, stacks)
		return err
	})
	return translate(err, "stack rollups")
}

// FleetUntimed returns the tenant's untimed profiles of app that overlap
// the window [from, to) (unix ns), as FleetProfiles selects them, at most
// limit of them (more: ETOOLARGE). A window answered from rollups counts
// its timed profiles without listing them.
func (db *DB) FleetUntimed(ctx context.Context, tenant int64, app string, hosts []string, from, to int64, limit int) ([]*fleetscope.ProfileInfo, error) {
	q, args := fleetProfilesQuery(tenant, app, hosts, nil, from, to, limit, "NOT timed")
	return db.listFleet(ctx, tenant, q, args, nil, limit, "profiles without per-sample times", "hosts, a shorter window")
}

// checkWidth checks a rollup width and that the unix seconds at are
// multiples of it.
func checkWidth(width int64, at ...int64) error {
	if width != index.HourSeconds && width != index.DaySeconds {
		return fleetscope.Errorf(fleetscope.EINTERNAL, "no stack rollup of %d s", width)
	}
	for _, t := range at {
		if t%width != 0 {
			return fleetscope.Errorf(fleetscope.EINTERNAL, "stack rollup at %d: not a multiple of %d s", t, width)
		}
	}
	return nil
}
