package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
)

const liveColumns = `next_seq, segments::text[], coalesce(profile_id::text, ''), app, host, labels, input_format, format, ended`

func scanLive(r pgx.Row, st *fleetscope.LiveStream) error {
	return r.Scan(&st.NextSeq, &st.Segments, &st.ProfileID, &st.App, &st.Host, &st.Labels, &st.InputFormat, &st.Format, &st.Ended)
}

// LiveStream reads a live recording's progress (the zero LiveStream for a
// stream not begun).
func (db *DB) LiveStream(ctx context.Context, tenant int64, stream string) (fleetscope.LiveStream, error) {
	var st fleetscope.LiveStream
	err := db.readTenantRow(ctx, tenant, func(r pgx.Row) error { return scanLive(r, &st) },
		`SELECT `+liveColumns+` FROM live_streams WHERE tenant_id = $1 AND stream = $2`, tenant, stream)
	if errors.Is(err, pgx.ErrNoRows) || fleetscope.ErrorCode(err) == fleetscope.ENOTFOUND {
		return fleetscope.LiveStream{}, nil
	}
	return st, translate(err, "live stream")
}

// AppendLiveSegment records batch seq of a stream as applied, stored as
// segment profile segment (none: an empty final batch), if seq is the
// batch the stream expects and the stream has not ended; it reports
// whether it did (else it changed nothing: the batch was applied before,
// or the stream ended). A stream begins with first's metadata and format.
func (db *DB) AppendLiveSegment(ctx context.Context, tenant int64, stream string, seq int64, segment string, first fleetscope.LiveStream) (bool, error) {
	var seg any // NULL: no segment to add
	if segment != "" {
		u, err := parseID(segment)
		if err != nil {
			return false, err
		}
		seg = u
	}
	labels := first.Labels
	if labels == nil {
		labels = map[string]string{}
	}
	applied := false
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		// The time is a parameter: Citus takes no now() in an upsert's update.
		tag, err := tx.Exec(ctx, `INSERT INTO live_streams (tenant_id, stream, next_seq, segments, updated_at, app, host, labels, input_format, format)
			VALUES ($1, $2, $3 + 1, array_remove(ARRAY[$4::uuid], NULL), $5, $6, $7, $8, $9, $10)
			ON CONFLICT (tenant_id, stream) DO UPDATE SET next_seq = $3 + 1, segments = array_remove(live_streams.segments || $4::uuid, NULL), updated_at = $5
			WHERE live_streams.next_seq = $3 AND NOT live_streams.ended`,
			tenant, stream, seq, seg, time.Now(), first.App, first.Host, labels, first.InputFormat, first.Format)
		applied = err == nil && tag.RowsAffected() == 1
		return err
	})
	return applied, translate(err, "live stream")
}

// OpenLiveStreams counts a tenant's live streams that have not ended.
func (db *DB) OpenLiveStreams(ctx context.Context, tenant int64) (int, error) {
	var n int
	err := db.readTenantRow(ctx, tenant, func(r pgx.Row) error { return r.Scan(&n) },
		`SELECT count(*) FROM live_streams WHERE tenant_id = $1 AND NOT ended`, tenant)
	return n, translate(err, "live stream")
}

// FinishLiveStream records the profile a stream became; with clear, its
// segments are gone (deleted) and forgotten.
func (db *DB) FinishLiveStream(ctx context.Context, tenant int64, stream, profile string, clear bool) error {
	u, err := parseID(profile)
	if err != nil {
		return err
	}
	err = db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		q := `UPDATE live_streams SET profile_id = $3, ended = true, updated_at = $4 WHERE tenant_id = $1 AND stream = $2`
		if clear {
			q = `UPDATE live_streams SET profile_id = $3, ended = true, segments = '{}', updated_at = $4 WHERE tenant_id = $1 AND stream = $2`
		}
		_, err := tx.Exec(ctx, q, tenant, stream, u, time.Now())
		return err
	})
	return translate(err, "live stream")
}

// EndLiveStream closes a stream to further batches if none came since
// cutoff; false if one did (or the stream is gone).
func (db *DB) EndLiveStream(ctx context.Context, tenant int64, stream string, cutoff time.Time) (bool, error) {
	var ended bool
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE live_streams SET ended = true WHERE tenant_id = $1 AND stream = $2 AND updated_at < $3`, tenant, stream, cutoff)
		ended = err == nil && tag.RowsAffected() == 1
		return err
	})
	return ended, translate(err, "live stream")
}

// DeleteLiveStream forgets a stream that holds no segments and became no
// profile (an empty final batch was all it had).
func (db *DB) DeleteLiveStream(ctx context.Context, tenant int64, stream string) error {
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM live_streams WHERE tenant_id = $1 AND stream = $2 AND segments = '{}' AND profile_id IS NULL`, tenant, stream)
		return err
	})
	return translate(err, "live stream")
}

// IdleLiveStreams lists up to limit streams of every tenant, oldest first,
// last changed before cutoff that have not ended, or ended but still list
// segments (their end was cut short).
func (db *DB) IdleLiveStreams(ctx context.Context, cutoff time.Time, limit int) ([]fleetscope.LiveStreamRef, error) {
	rows, err := db.pool.Query(ctx, `SELECT tenant_id, stream FROM live_streams
		WHERE (profile_id IS NULL OR segments <> '{}') AND updated_at < $1 ORDER BY updated_at LIMIT $2`, cutoff, limit)
	if err != nil {
		return nil, translate(err, "live stream")
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fleetscope.LiveStreamRef])
	return out, translate(err, "live stream")
}
