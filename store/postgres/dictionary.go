package postgres

import (
	"context"
	"fmt"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
	"github.com/jackc/pgx/v5"
)

// writeDictionary adds the profile's frames and stacks to the tenant
// dictionary (bulk: COPY into temporary tables, then INSERT ... ON
// CONFLICT DO NOTHING, since COPY cannot go through row-level security) and
// returns the tenant stack id of each of the profile's stacks, in order.
func writeDictionary(ctx context.Context, tx pgx.Tx, tenant int64, dict *fleetscope.Dict) ([]int64, error) {
	frameIDs := make([]int64, dict.NumFrames())
	frameRows := make([][]any, len(frameIDs))
	for i := range frameIDs {
		f := dict.FrameAt(fleetscope.FrameID(i))
		frameIDs[i] = index.FrameKey(f)
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
		stackIDs[i] = index.StackKey(ids)
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

// ProfileStacks returns a profile's stack list: the tenant dictionary id
// of each of its stacks, in the order its stored samples refer to them.
func (db *DB) ProfileStacks(ctx context.Context, tenant int64, id string) ([]int64, error) {
	u, err := parseID(id)
	if err != nil {
		return nil, err
	}
	var ids []int64
	err = db.readTenantRow(ctx, tenant, func(r pgx.Row) error { return r.Scan(&ids) },
		`SELECT stacks FROM profile_stacks WHERE tenant_id = $1 AND profile_id = $2`, tenant, u)
	return ids, translate(err, "profile "+id)
}

// StackDict builds a dictionary of the tenant's stacks ids: stack i of the
// result is ids[i] (ids must not repeat).
func (db *DB) StackDict(ctx context.Context, tenant int64, ids []int64) (*fleetscope.Dict, error) {
	d := fleetscope.NewDict()
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		stacks := make(map[int64][]int64, len(ids))
		rows, err := tx.Query(ctx, `SELECT id, frames FROM stacks WHERE tenant_id = $1 AND id = ANY($2)`, tenant, ids)
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
		for i, sid := range ids {
			fs, ok := stacks[sid]
			if !ok {
				return fmt.Errorf("stack %d missing from the dictionary", sid)
			}
			buf = buf[:0]
			for _, f := range fs {
				fid, ok := frames[f]
				if !ok {
					return fmt.Errorf("frame %d missing from the dictionary", f)
				}
				buf = append(buf, fid)
			}
			if got := d.Stack(buf); int(got) != i {
				return fmt.Errorf("stack list repeats stack %d", sid)
			}
		}
		return nil
	})
	if err != nil {
		return nil, translate(err, "dictionary")
	}
	return d, nil
}

// Dict rebuilds a profile's dictionary from the tenant's: stack i of the
// result is the profile's stack i, as its stored samples refer to it.
func (db *DB) Dict(ctx context.Context, tenant int64, p *fleetscope.ProfileInfo) (*fleetscope.Dict, error) {
	ids, err := db.ProfileStacks(ctx, tenant, p.ID)
	if err != nil {
		return nil, err
	}
	d, err := db.StackDict(ctx, tenant, ids)
	if err != nil {
		return nil, err
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
