package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
)

// LiveStream reads a live recording's progress (the zero LiveStream for a
// stream not begun).
func (db *DB) LiveStream(ctx context.Context, tenant int64, stream string) (fleetscope.LiveStream, error) {
	var st fleetscope.LiveStream
	err := db.readTenantRow(ctx, tenant, func(r pgx.Row) error {
		return r.Scan(&st.NextSeq, &st.Segments, &st.ProfileID)
	}, `SELECT next_seq, segments::text[], coalesce(profile_id::text, '') FROM live_streams WHERE tenant_id = $1 AND stream = $2`, tenant, stream)
	if errors.Is(err, pgx.ErrNoRows) || fleetscope.ErrorCode(err) == fleetscope.ENOTFOUND {
		return fleetscope.LiveStream{}, nil
	}
	return st, translate(err, "live stream")
}

// AppendLiveSegment records batch seq of a stream as applied, stored as
// segment profile segment, if seq is the batch the stream expects (else it
// changes nothing: the batch was applied before).
func (db *DB) AppendLiveSegment(ctx context.Context, tenant int64, stream string, seq int64, segment string) error {
	u, err := parseID(segment)
	if err != nil {
		return err
	}
	err = db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		// The time is a parameter: Citus takes no now() in an upsert's update.
		_, err := tx.Exec(ctx, `INSERT INTO live_streams (tenant_id, stream, next_seq, segments, updated_at) VALUES ($1, $2, $3 + 1, ARRAY[$4::uuid], $5)
			ON CONFLICT (tenant_id, stream) DO UPDATE SET next_seq = $3 + 1, segments = live_streams.segments || $4::uuid, updated_at = $5
			WHERE live_streams.next_seq = $3 AND live_streams.profile_id IS NULL`, tenant, stream, seq, u, time.Now())
		return err
	})
	return translate(err, "live stream")
}

// AdvanceLiveStream records an empty batch seq (a final one) as applied.
func (db *DB) AdvanceLiveStream(ctx context.Context, tenant int64, stream string, seq int64) error {
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO live_streams (tenant_id, stream, next_seq, updated_at) VALUES ($1, $2, $3 + 1, $4)
			ON CONFLICT (tenant_id, stream) DO UPDATE SET next_seq = $3 + 1, updated_at = $4
			WHERE live_streams.next_seq = $3 AND live_streams.profile_id IS NULL`, tenant, stream, seq, time.Now())
		return err
	})
	return translate(err, "live stream")
}

// FinishLiveStream records the profile a stream became; with clear, its
// segments are gone (deleted) and forgotten.
func (db *DB) FinishLiveStream(ctx context.Context, tenant int64, stream, profile string, clear bool) error {
	u, err := parseID(profile)
	if err != nil {
		return err
	}
	err = db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		q := `UPDATE live_streams SET profile_id = $3, updated_at = $4 WHERE tenant_id = $1 AND stream = $2`
		if clear {
			q = `UPDATE live_streams SET profile_id = $3, segments = '{}', updated_at = $4 WHERE tenant_id = $1 AND stream = $2`
		}
		_, err := tx.Exec(ctx, q, tenant, stream, u, time.Now())
		return err
	})
	return translate(err, "live stream")
}
