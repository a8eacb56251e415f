package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// FrameKey is a frame's id in the tenant dictionary: a hash of its kind and
// name. StackKey hashes a stack's frame ids. Collisions are detected when
// written (ECONFLICT), never silently merged.
func FrameKey(f fleetscope.Frame) int64 {
	h := sha256.New()
	h.Write([]byte{byte(f.Kind)})
	h.Write([]byte(f.Name))
	return int64(binary.LittleEndian.Uint64(h.Sum(nil)))
}

func stackKey(frames []int64) int64 {
	h := sha256.New()
	var b [8]byte
	for _, f := range frames {
		binary.LittleEndian.PutUint64(b[:], uint64(f))
		h.Write(b[:])
	}
	return int64(binary.LittleEndian.Uint64(h.Sum(nil)))
}

const profileColumns = `id, app, host, labels, format, filename, events, default_event, samples, timed,
	start_second, duration_nanos, time_unit_nanos, start_time, end_time, time_source, size_bytes,
	encode(sha256, 'hex'), blob_key, meta, created_at`

func scanProfile(row pgx.Row) (*fleetscope.ProfileInfo, error) {
	var p fleetscope.ProfileInfo
	var id uuid.UUID
	var labels, events, meta []byte
	err := row.Scan(&id, &p.App, &p.Host, &labels, &p.Format, &p.Filename, &events, &p.DefaultEvent, &p.Samples, &p.Timed,
		&p.StartSecond, &p.DurationNanos, &p.TimeUnitNanos, &p.StartTime, &p.EndTime, &p.TimeSource, &p.SizeBytes,
		&p.SHA256, &p.BlobKey, &meta, &p.CreatedAt)
	if err != nil {
		return nil, err
	}
	p.ID = id.String()
	if err := json.Unmarshal(labels, &p.Labels); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(events, &p.Events); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(meta, &p.Meta); err != nil {
		return nil, err
	}
	return &p, nil
}

// parseID checks a profile id; a malformed one is simply not found.
func parseID(id string) (uuid.UUID, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return u, fleetscope.Errorf(fleetscope.ENOTFOUND, "profile %q not found", id)
	}
	return u, nil
}

// Profile returns one of the tenant's profiles. Returns ENOTFOUND if there
// is none with that id (or it belongs to another tenant).
func (db *DB) Profile(ctx context.Context, tenant int64, id string) (*fleetscope.ProfileInfo, error) {
	u, err := parseID(id)
	if err != nil {
		return nil, err
	}
	var p *fleetscope.ProfileInfo
	err = db.readTenantRow(ctx, tenant, func(row pgx.Row) (err error) {
		p, err = scanProfile(row)
		return err
	}, `SELECT `+profileColumns+` FROM profiles WHERE tenant_id = $1 AND id = $2`, tenant, u)
	return p, translate(err, "profile "+id)
}

// ProfileBySHA256 returns the tenant's profile with these bytes, or
// ENOTFOUND.
func (db *DB) ProfileBySHA256(ctx context.Context, tenant int64, sum []byte) (*fleetscope.ProfileInfo, error) {
	var p *fleetscope.ProfileInfo
	err := db.readTenantRow(ctx, tenant, func(row pgx.Row) (err error) {
		p, err = scanProfile(row)
		return err
	}, `SELECT `+profileColumns+` FROM profiles WHERE tenant_id = $1 AND sha256 = $2`, tenant, sum)
	return p, translate(err, "profile")
}

// BlobInUse reports whether any profile of any tenant still refers to key.
func (db *DB) BlobInUse(ctx context.Context, key string) (bool, error) {
	var used bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM profiles WHERE blob_key = $1)`, key).Scan(&used)
	return used, err
}

// InsertProfile writes a parsed profile's index in one transaction: the
// profile row, new frames and stacks of the tenant dictionary, the
// profile's stack list and its per-second rows. If the tenant already has a
// profile with the same bytes, nothing is written and that profile is
// returned with created = false. p.ID is assigned. beforeCommit, if set, runs
// last inside the transaction: its error rolls everything back (ingest waits
// there for the raw file to be durable).
func (db *DB) InsertProfile(ctx context.Context, tenant int64, p *fleetscope.ProfileInfo, sum []byte, dict *fleetscope.Dict, ix *index.Index, beforeCommit func() error) (*fleetscope.ProfileInfo, bool, error) {
	id := uuid.New()
	labels, _ := json.Marshal(nonNil(p.Labels))
	events, _ := json.Marshal(p.Events)
	meta, _ := json.Marshal(nonNil(p.Meta))
	day := time.Now().UTC().Truncate(24 * time.Hour)
	created := false
	err := db.retry(ctx, func() error {
		return db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
			created = false
			tag, err := tx.Exec(ctx, `
			INSERT INTO profiles (tenant_id, id, sha256, app, host, labels, format, filename, events, default_event,
				samples, timed, start_second, duration_nanos, time_unit_nanos, start_time, end_time, time_source,
				size_bytes, blob_key, meta, day)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
			ON CONFLICT (tenant_id, sha256) DO NOTHING`,
				tenant, id, sum, p.App, p.Host, labels, p.Format, p.Filename, events, p.DefaultEvent,
				p.Samples, p.Timed, p.StartSecond, p.DurationNanos, p.TimeUnitNanos, p.StartTime, p.EndTime, p.TimeSource,
				p.SizeBytes, p.BlobKey, meta, day)
			if err != nil {
				return err
			}
			if tag.RowsAffected() == 0 {
				return nil // the same bytes are already stored
			}
			created = true
			stackIDs, err := writeDictionary(ctx, tx, tenant, dict)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO profile_stacks (tenant_id, profile_id, stacks) VALUES ($1, $2, $3)`, tenant, id, stackIDs); err != nil {
				return err
			}
			if err := writeSeconds(ctx, tx, tenant, id, day, ix); err != nil {
				return err
			}
			if beforeCommit != nil {
				return beforeCommit()
			}
			return nil
		})
	})
	if err != nil {
		return nil, false, translate(err, "profile")
	}
	if !created {
		existing, err := db.ProfileBySHA256(ctx, tenant, sum)
		return existing, false, err
	}
	out, err := db.Profile(ctx, tenant, id.String())
	return out, true, err
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

// writeDictionary adds the profile's frames and stacks to the tenant
// dictionary (bulk: COPY into temporary tables, then INSERT ... ON
// CONFLICT DO NOTHING, since COPY cannot go through row-level security) and
// returns the tenant stack id of each of the profile's stacks, in order.
func writeDictionary(ctx context.Context, tx pgx.Tx, tenant int64, dict *fleetscope.Dict) ([]int64, error) {
	frameIDs := make([]int64, dict.NumFrames())
	frameRows := make([][]any, len(frameIDs))
	for i := range frameIDs {
		f := dict.FrameAt(fleetscope.FrameID(i))
		frameIDs[i] = FrameKey(f)
		frameRows[i] = []any{frameIDs[i], f.Name, int16(f.Kind)}
	}
	stackIDs := make([]int64, dict.NumStacks())
	stackRows := make([][]any, len(stackIDs))
	for i := range stackIDs {
		fs := dict.StackFrames(fleetscope.StackID(i))
		ids := make([]int64, len(fs))
		for j, f := range fs {
			ids[j] = frameIDs[f]
		}
		stackIDs[i] = stackKey(ids)
		stackRows[i] = []any{stackIDs[i], ids, dict.Idle(fleetscope.StackID(i))}
	}
	if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE new_frames (id bigint, name text, kind smallint) ON COMMIT DROP;
		CREATE TEMPORARY TABLE new_stacks (id bigint, frames bigint[], idle boolean) ON COMMIT DROP`); err != nil {
		return nil, err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"new_frames"}, []string{"id", "name", "kind"}, pgx.CopyFromRows(frameRows)); err != nil {
		return nil, err
	}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"new_stacks"}, []string{"id", "frames", "idle"}, pgx.CopyFromRows(stackRows)); err != nil {
		return nil, err
	}
	var collisions int
	err := tx.QueryRow(ctx, `
		WITH f AS (INSERT INTO frames (tenant_id, id, name, kind) SELECT DISTINCT $1::bigint, id, name, kind FROM new_frames ON CONFLICT DO NOTHING),
		     s AS (INSERT INTO stacks (tenant_id, id, frames, idle) SELECT DISTINCT ON (id) $1::bigint, id, frames, idle FROM new_stacks ON CONFLICT DO NOTHING)
		SELECT (SELECT count(*) FROM new_frames n JOIN frames f ON f.tenant_id = $1 AND f.id = n.id WHERE f.name <> n.name OR f.kind <> n.kind)
		     + (SELECT count(*) FROM new_stacks n JOIN stacks s ON s.tenant_id = $1 AND s.id = n.id WHERE s.frames <> n.frames)`,
		tenant).Scan(&collisions)
	if err != nil {
		return nil, err
	}
	if collisions > 0 {
		return nil, fleetscope.Errorf(fleetscope.ECONFLICT, "%d dictionary hash collisions: profile not stored", collisions)
	}
	return stackIDs, nil
}

func writeSeconds(ctx context.Context, tx pgx.Tx, tenant int64, id uuid.UUID, day time.Time, ix *index.Index) error {
	rows := make([][]any, len(ix.Seconds))
	for i, s := range ix.Seconds {
		var periods any
		if s.Periods != nil {
			periods = s.Periods
		}
		rows[i] = []any{int16(s.Event), s.Second, s.Samples, s.Cells, s.IdleCells, s.Offsets, s.Stacks, periods}
	}
	if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE new_seconds (event smallint, second bigint, samples int, cells int[],
		idle_cells int[], offsets bytea, stacks bytea, periods bytea) ON COMMIT DROP`); err != nil {
		return err
	}
	cols := []string{"event", "second", "samples", "cells", "idle_cells", "offsets", "stacks", "periods"}
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{"new_seconds"}, cols, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `INSERT INTO seconds (tenant_id, profile_id, day, `+strings.Join(cols, ", ")+`)
		SELECT $1, $2, $3, `+strings.Join(cols, ", ")+` FROM new_seconds`, tenant, id, day)
	return err
}

// Cells returns an event's stored heatmap cells (50 rows), by relative
// second, without the samples.
func (db *DB) Cells(ctx context.Context, tenant int64, id string, event int) ([]index.Second, error) {
	return db.seconds(ctx, tenant, id, event, 0, 0, false)
}

// Seconds returns an event's rows for relative seconds [from, to] (both
// included; from > to means all) with their samples.
func (db *DB) Seconds(ctx context.Context, tenant int64, id string, event int, from, to int64) ([]index.Second, error) {
	return db.seconds(ctx, tenant, id, event, from, to, true)
}

func (db *DB) seconds(ctx context.Context, tenant int64, id string, event int, from, to int64, samples bool) ([]index.Second, error) {
	u, err := parseID(id)
	if err != nil {
		return nil, err
	}
	cols := `second, samples, cells, idle_cells, NULL::bytea, NULL::bytea, NULL::bytea`
	if samples {
		cols = `second, samples, cells, idle_cells, offsets, stacks, periods`
	}
	q := `SELECT ` + cols + ` FROM seconds WHERE tenant_id = $1 AND profile_id = $2 AND event = $3`
	args := []any{tenant, u, int16(event)}
	if from <= to && samples {
		q += ` AND second BETWEEN $4 AND $5`
		args = append(args, from, to)
	}
	q += ` ORDER BY second`
	var out []index.Second
	err = db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			s := index.Second{Event: fleetscope.EventID(event)}
			if err := rows.Scan(&s.Second, &s.Samples, &s.Cells, &s.IdleCells, &s.Offsets, &s.Stacks, &s.Periods); err != nil {
				return err
			}
			out = append(out, s)
		}
		return nil
	}, q, args...)
	return out, translate(err, "profile "+id)
}

// Dict rebuilds a profile's dictionary from the tenant's: stack i of the
// result is the profile's stack i, as its stored samples refer to it.
func (db *DB) Dict(ctx context.Context, tenant int64, p *fleetscope.ProfileInfo) (*fleetscope.Dict, error) {
	u, err := parseID(p.ID)
	if err != nil {
		return nil, err
	}
	d := fleetscope.NewDict()
	err = db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		var stackIDs []int64
		if err := tx.QueryRow(ctx, `SELECT stacks FROM profile_stacks WHERE tenant_id = $1 AND profile_id = $2`, tenant, u).Scan(&stackIDs); err != nil {
			return err
		}
		stacks := make(map[int64][]int64, len(stackIDs))
		rows, err := tx.Query(ctx, `SELECT id, frames FROM stacks WHERE tenant_id = $1 AND id = ANY($2)`, tenant, stackIDs)
		if err != nil {
			return err
		}
		var frameIDs []int64
		for rows.Next() {
			var id int64
			var fs []int64
			if err := rows.Scan(&id, &fs); err != nil {
				return err
			}
			stacks[id] = fs
			frameIDs = append(frameIDs, fs...)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		frames := make(map[int64]fleetscope.FrameID)
		rows, err = tx.Query(ctx, `SELECT id, name, kind FROM frames WHERE tenant_id = $1 AND id = ANY($2)`, tenant, dedup(frameIDs))
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			var f fleetscope.Frame
			var kind int16
			if err := rows.Scan(&id, &f.Name, &kind); err != nil {
				return err
			}
			f.Kind = fleetscope.FrameKind(kind)
			frames[id] = d.Frame(f)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		buf := make([]fleetscope.FrameID, 0, 64)
		for i, sid := range stackIDs {
			fs, ok := stacks[sid]
			if !ok {
				return fmt.Errorf("stack %d of profile %s missing from the dictionary", sid, p.ID)
			}
			buf = buf[:0]
			for _, f := range fs {
				fid, ok := frames[f]
				if !ok {
					return fmt.Errorf("frame %d of profile %s missing from the dictionary", f, p.ID)
				}
				buf = append(buf, fid)
			}
			if got := d.Stack(buf); int(got) != i {
				return fmt.Errorf("profile %s: stack list repeats a stack", p.ID)
			}
		}
		return nil
	})
	if err != nil {
		return nil, translate(err, "profile "+p.ID)
	}
	for _, e := range p.Events {
		d.Event(e.Name)
	}
	return d, nil
}

func dedup(ids []int64) []int64 {
	seen := make(map[int64]bool, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// Filter selects profiles in Search.
type Filter struct {
	App, Host    string
	Labels       map[string]string
	Since, Until time.Time // profiles overlapping [Since, Until); zero means open
	PageSize     int
	PageToken    string
}

// Search returns the tenant's profiles matching f, newest first, and the
// token of the next page ("" on the last).
func (db *DB) Search(ctx context.Context, tenant int64, f Filter) ([]*fleetscope.ProfileInfo, string, error) {
	if f.PageSize <= 0 {
		f.PageSize = 50
	}
	if f.PageSize > 1000 {
		return nil, "", fleetscope.Errorf(fleetscope.EINVALID, "page size %d: at most 1000", f.PageSize)
	}
	where := []string{"tenant_id = $1"}
	args := []any{tenant}
	add := func(cond string, v any) {
		args = append(args, v)
		where = append(where, fmt.Sprintf(cond, len(args)))
	}
	if f.App != "" {
		add("app = $%d", f.App)
	}
	if f.Host != "" {
		add("host = $%d", f.Host)
	}
	if len(f.Labels) > 0 {
		b, _ := json.Marshal(f.Labels)
		add("labels @> $%d", b)
	}
	if !f.Since.IsZero() {
		add("end_time >= $%d", f.Since)
	}
	if !f.Until.IsZero() {
		add("start_time < $%d", f.Until)
	}
	if f.PageToken != "" {
		t, id, err := decodeToken(f.PageToken)
		if err != nil {
			return nil, "", err
		}
		args = append(args, t, id)
		where = append(where, fmt.Sprintf("(start_time, id) < ($%d, $%d)", len(args)-1, len(args)))
	}
	q := `SELECT ` + profileColumns + ` FROM profiles WHERE ` + strings.Join(where, " AND ") +
		fmt.Sprintf(` ORDER BY start_time DESC, id DESC LIMIT %d`, f.PageSize+1)
	var out []*fleetscope.ProfileInfo
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			p, err := scanProfile(rows)
			if err != nil {
				return err
			}
			out = append(out, p)
		}
		return nil
	}, q, args...)
	if err != nil {
		return nil, "", translate(err, "search")
	}
	next := ""
	if len(out) > f.PageSize {
		out = out[:f.PageSize]
		last := out[len(out)-1]
		next = encodeToken(last.StartTime, last.ID)
	}
	return out, next, nil
}

func encodeToken(t time.Time, id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(t.UTC().Format(time.RFC3339Nano) + "|" + id))
}

func decodeToken(tok string) (time.Time, uuid.UUID, error) {
	bad := fleetscope.Errorf(fleetscope.EINVALID, "invalid page token")
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return time.Time{}, uuid.UUID{}, bad
	}
	ts, id, ok := strings.Cut(string(b), "|")
	if !ok {
		return time.Time{}, uuid.UUID{}, bad
	}
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return time.Time{}, uuid.UUID{}, bad
	}
	u, err := uuid.Parse(id)
	if err != nil {
		return time.Time{}, uuid.UUID{}, bad
	}
	return t, u, nil
}

// HexSHA256 formats a digest as stored.
func HexSHA256(sum []byte) string { return hex.EncodeToString(sum) }

// CheckConsistency reports profiles whose index is incomplete: no stack
// list, or stored samples that do not add up to the profile's count. (A
// transaction writes all of it or none, so this should never find any.)
func (db *DB) CheckConsistency(ctx context.Context) ([]string, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT p.tenant_id, p.id, p.samples, coalesce(s.n, 0), ps.profile_id IS NOT NULL
		FROM profiles p
		LEFT JOIN (SELECT tenant_id, profile_id, sum(samples) AS n FROM seconds GROUP BY 1, 2) s
		  ON s.tenant_id = p.tenant_id AND s.profile_id = p.id
		LEFT JOIN profile_stacks ps ON ps.tenant_id = p.tenant_id AND ps.profile_id = p.id
		WHERE coalesce(s.n, 0) <> p.samples OR ps.profile_id IS NULL`)
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
