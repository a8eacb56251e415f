package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// FleetStackBuckets returns the stored stack buckets (fleet_stack_buckets)
// of app's event (base name) starting in the unix seconds [from, to), on
// any of hosts (none: all).
func (db *DB) FleetStackBuckets(ctx context.Context, tenant int64, app, event string, hosts []string, from, to int64) ([]index.StackBucket, error) {
	args := []any{tenant, app, event, from, to}
	q := `SELECT host, bucket, profiles, stacks FROM fleet_stack_buckets
		WHERE tenant_id = $1 AND app = $2 AND event = $3 AND bucket >= $4 AND bucket < $5`
	if len(hosts) > 0 {
		args = append(args, hosts)
		q += ` AND host = ANY($6)`
	}
	var out []index.StackBucket
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			var b index.StackBucket
			var profiles, stacks []byte
			if err := rows.Scan(&b.Host, &b.Bucket, &profiles, &stacks); err != nil {
				return err
			}
			if len(profiles) != len(b.Profiles) {
				return fmt.Errorf("stack bucket %s/%d: a profiles hash of %d bytes", b.Host, b.Bucket, len(profiles))
			}
			copy(b.Profiles[:], profiles)
			if err := index.DecodeStacks(stacks, &b); err != nil {
				return fmt.Errorf("stack bucket %s/%d: %w", b.Host, b.Bucket, err)
			}
			out = append(out, b)
		}
		return nil
	}, q, args...)
	return out, translate(err, "stack buckets")
}

// PutFleetStackBuckets stores stack buckets of app's event, each replacing
// the host and bucket's row, if any, in one statement (a kill leaves the
// old rows or the new ones).
func (db *DB) PutFleetStackBuckets(ctx context.Context, tenant int64, app, event string, bs []index.StackBucket) error {
	if len(bs) == 0 {
		return nil
	}
	hosts, buckets, profiles, samples, stacks := make([]string, len(bs)), make([]int64, len(bs)), make([][]byte, len(bs)),
		make([]int64, len(bs)), make([][]byte, len(bs))
	for i := range bs {
		b := &bs[i]
		if b.Bucket%index.BucketSeconds != 0 {
			return fleetscope.Errorf(fleetscope.EINTERNAL, "stack bucket at %d: not a multiple of %d s", b.Bucket, index.BucketSeconds)
		}
		hosts[i], buckets[i], profiles[i], stacks[i] = b.Host, b.Bucket, b.Profiles[:], index.EncodeStacks(b)
		for _, c := range b.Counts {
			samples[i] += int64(c)
		}
	}
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO fleet_stack_buckets (tenant_id, app, event, bucket, host, profiles, samples, stacks)
			SELECT $1, $2, $3, bucket, host, profiles, samples, stacks
			FROM unnest($4::bigint[], $5::text[], $6::bytea[], $7::bigint[], $8::bytea[]) AS b(bucket, host, profiles, samples, stacks)
			ON CONFLICT (tenant_id, app, event, bucket, host) DO UPDATE
			SET profiles = excluded.profiles, samples = excluded.samples, stacks = excluded.stacks`,
			tenant, app, event, buckets, hosts, profiles, samples, stacks)
		return err
	})
	return translate(err, "stack buckets")
}

// dropStackBuckets deletes, in a profile's transaction, the stack buckets
// its samples fall in (found from its minutes, which carry its app and
// host): before a deletion, and before a change of app or host. The
// buckets are counted again, without it, when next asked for.
func dropStackBuckets(ctx context.Context, tx pgx.Tx, tenant int64, id any) error {
	_, err := tx.Exec(ctx, `DELETE FROM fleet_stack_buckets b USING (
			SELECT DISTINCT app, host, minute - ((minute % 600) + 600) % 600 AS bucket
			FROM fleet_minutes WHERE tenant_id = $1 AND profile_id = $2) m
		WHERE b.tenant_id = $1 AND b.app = m.app AND b.host = m.host AND b.bucket = m.bucket`, tenant, id)
	return err
}
