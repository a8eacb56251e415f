package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// reclaimLock is the session advisory lock a reclaim of a tenant holds
// throughout ("fsrc", then the tenant's low 32 bits): one reclaim of a
// tenant at a time, across replicas; a crashed one's ends with its session.
func reclaimLock(tenant int64) int64 { return 0x66737263<<32 | tenant&0xffffffff }

// Reclaim tuning: candidates are found (marked) up to markLimit at a time
// and deleted reclaimBatch at a time, each batch in a short transaction that
// holds the tenant's dictionary lock (uploads of the tenant wait for it).
const (
	markLimit    = 500_000
	reclaimBatch = 10_000
)

// ReclaimDictionaries reclaims the dictionary of every tenant one is due
// for (a profile deleted since its last finished reclaim, or a reclaim that
// did not finish).
func (db *DB) ReclaimDictionaries(ctx context.Context) (fleetscope.Reclaimed, error) {
	var total fleetscope.Reclaimed
	rows, err := db.pool.Query(ctx, `SELECT tenant_id FROM dictionaries WHERE deletions > reclaimed OR reclaiming ORDER BY tenant_id`)
	if err != nil {
		return total, translate(err, "dictionaries")
	}
	tenants, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return total, translate(err, "dictionaries")
	}
	for _, t := range tenants {
		r, err := db.ReclaimDictionary(ctx, t)
		total.Add(r)
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// ReclaimDictionary deletes the rows of a tenant's dictionary that no
// profile uses: stacks in no profile's stack list, then frames in no
// stack. It is safe with uploads of the tenant in flight, on this replica
// or others, and with a crash at any point (see "The dictionary's
// lifetime" in docs/architecture.md):
//
//  1. Under the dictionary lock, exclusive (so after every upload in
//     flight has committed), the generation is raised and reclaiming set:
//     from then on, uploads pin every key they use, and replicas forget
//     the keys they remember.
//  2. Candidates are marked without the lock: rows no committed profile
//     (for frames: no stack) uses.
//  3. Each batch of candidates is deleted under the lock, exclusive, less
//     the pinned keys: a key an upload used after step 1 is pinned; one
//     used before it is in a profile the mark saw.
//  4. reclaiming is cleared and the pins deleted.
//
// Each step commits alone, with the bytes it reclaimed taken off the
// tenant's usage; after a crash the next reclaim starts again at step 1.
// Returns nothing reclaimed if another reclaim of the tenant is under way
// (a session advisory lock); steps 3 and 4 also check, under the lock,
// that no other reclaim began since step 1 (it would have cleared the pins):
// if one did, this one stops.
func (db *DB) ReclaimDictionary(ctx context.Context, tenant int64) (fleetscope.Reclaimed, error) {
	r := fleetscope.Reclaimed{Tenants: 1}
	if db.pool.Config().MaxConns >= 2 { // else no second connection to reclaim with while one holds the lock
		c, err := db.pool.Acquire(ctx)
		if err != nil {
			return r, err
		}
		defer c.Release()
		var mine bool
		if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, reclaimLock(tenant)).Scan(&mine); err != nil || !mine {
			return fleetscope.Reclaimed{}, translate(err, "reclaim")
		}
		defer func() {
			if _, err := c.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, reclaimLock(tenant)); err != nil {
				c.Conn().Close(context.Background()) // the lock ends with the session
			}
		}()
	}

	var gen, deletions int64
	err := db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, dictLock(tenant)); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `INSERT INTO dictionaries AS d (tenant_id, generation, reclaiming) VALUES ($1, 1, true)
			ON CONFLICT (tenant_id) DO UPDATE SET generation = d.generation + 1, reclaiming = true
			RETURNING generation, deletions`, tenant).Scan(&gen, &deletions); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM dictionary_pins WHERE tenant_id = $1`, tenant)
		return err
	})
	if err != nil {
		return r, translate(err, "reclaim")
	}
	db.known.sync(tenant, gen)
	db.hook("reclaim begun")

	// Stacks first, then frames: each a table of rows, how its candidates
	// are found, the column of dictionary_pins that holds the keys pinned,
	// and a row's bytes. Frames are marked in SQL, over the stacks' frame
	// arrays; stacks in Go, over the profiles' stack lists of numbers
	// (index.ReadStackList), which SQL cannot read.
	steps := []struct {
		table  string
		mark   func() ([]int64, error)
		column string
		bytes  string
		n      *int64
	}{
		{"stacks", func() ([]int64, error) { return db.unusedStacks(ctx, tenant) }, "stacks", stackBytes, &r.Stacks},
		{"frames", func() ([]int64, error) { return db.unusedFrames(ctx, tenant) }, "frames", frameBytes, &r.Frames},
	}
	for _, s := range steps {
		sweep := `DELETE FROM ` + s.table + ` WHERE tenant_id = $1 AND id = ANY($2)
			AND id NOT IN (SELECT unnest(` + s.column + `) FROM dictionary_pins WHERE tenant_id = $1)
			RETURNING ` + s.bytes
		for {
			ids, err := s.mark()
			if err != nil {
				return r, translate(err, "reclaim: marking "+s.table)
			}
			db.hook(s.table + " marked")
			marked, deleted := len(ids), int64(0)
			for len(ids) > 0 {
				batch := ids[:min(len(ids), reclaimBatch)]
				ids = ids[len(batch):]
				n, bytes, err := db.sweepBatch(ctx, tenant, gen, sweep, batch)
				if errors.Is(err, errSuperseded) {
					return r, nil
				}
				if err != nil {
					return r, translate(err, "reclaim: deleting "+s.table)
				}
				deleted += n
				*s.n += n
				r.Bytes += bytes
			}
			if deleted == 0 || marked < markLimit {
				break
			}
		}
	}

	err = db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		if err := lockOwn(ctx, tx, tenant, gen); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE dictionaries SET reclaiming = false, reclaimed = greatest(reclaimed, $2) WHERE tenant_id = $1`, tenant, deletions); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `DELETE FROM dictionary_pins WHERE tenant_id = $1`, tenant)
		return err
	})
	if errors.Is(err, errSuperseded) {
		return r, nil
	}
	return r, translate(err, "reclaim")
}

// unusedStacks marks the tenant's stacks in no profile's stack list: up
// to markLimit of their keys.
func (db *DB) unusedStacks(ctx context.Context, tenant int64) ([]int64, error) {
	used := map[int64]struct{}{}
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		var b []byte
		_, err := pgx.ForEachRow(rows, []any{&b}, func() error {
			seqs, err := index.ReadStackList(b)
			if err != nil {
				return fleetscope.Errorf(fleetscope.EINTERNAL, "a stack list: %v", err)
			}
			for _, s := range seqs {
				used[s] = struct{}{}
			}
			return nil
		})
		return err
	}, `SELECT seqs FROM profile_stacks WHERE tenant_id = $1`, tenant)
	if err != nil {
		return nil, err
	}
	var ids []int64
	err = db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		var id, seq int64
		_, err := pgx.ForEachRow(rows, []any{&id, &seq}, func() error {
			if _, ok := used[seq]; !ok && len(ids) < markLimit {
				ids = append(ids, id)
			}
			return nil
		})
		return err
	}, `SELECT id, seq FROM stacks WHERE tenant_id = $1`, tenant)
	return ids, err
}

// unusedFrames marks the tenant's frames in no stack: up to markLimit of
// their keys.
func (db *DB) unusedFrames(ctx context.Context, tenant int64) (ids []int64, err error) {
	err = db.readTenant(ctx, tenant, func(rows pgx.Rows) (err error) {
		ids, err = pgx.CollectRows(rows, pgx.RowTo[int64])
		return err
	}, `SELECT t.id FROM frames t WHERE t.tenant_id = $1 AND NOT EXISTS (
		SELECT FROM stacks x CROSS JOIN LATERAL unnest(x.frames) AS u(id) WHERE x.tenant_id = $1 AND u.id = t.id)
		LIMIT $2`, tenant, markLimit)
	return ids, err
}

// errSuperseded: another reclaim of the tenant began after this one (its
// session lock lost, a killed connection), and cleared the pins this one
// relies on; or the tenant is gone. This one stops, deleting nothing more.
// (A fleetscope error, so the connection it is returned on is kept.)
var errSuperseded = fleetscope.Errorf(fleetscope.ECONFLICT, "reclaim superseded by another")

// lockOwn takes the tenant's dictionary lock, exclusive, and checks that
// the generation is still the one this reclaim raised it to.
func lockOwn(ctx context.Context, tx pgx.Tx, tenant, gen int64) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, dictLock(tenant)); err != nil {
		return err
	}
	var now int64
	err := tx.QueryRow(ctx, `SELECT generation FROM dictionaries WHERE tenant_id = $1`, tenant).Scan(&now)
	if errors.Is(err, pgx.ErrNoRows) || err == nil && now != gen {
		return errSuperseded
	}
	return err
}

// sweepBatch deletes a batch of candidates (sweep: a DELETE of ids $2
// returning each row's bytes) under the tenant's dictionary lock, and
// takes their bytes off the tenant's usage, in one transaction.
func (db *DB) sweepBatch(ctx context.Context, tenant, gen int64, sweep string, ids []int64) (n, bytes int64, err error) {
	err = db.inTenant(ctx, tenant, func(tx pgx.Tx) error {
		n, bytes = 0, 0
		if err := lockOwn(ctx, tx, tenant, gen); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `WITH d AS (`+sweep+` AS bytes) SELECT count(*), coalesce(sum(bytes), 0)::bigint FROM d`, tenant, ids).Scan(&n, &bytes); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		tag, err := tx.Exec(ctx, `UPDATE dictionaries SET bytes = bytes - $2 WHERE tenant_id = $1`, tenant, bytes)
		if err == nil && tag.RowsAffected() != 1 {
			err = fmt.Errorf("tenant %d has no dictionaries row", tenant)
		}
		return err
	})
	return n, bytes, err
}

// hook runs the test hook, if any, at a named point of a reclaim.
func (db *DB) hook(point string) {
	if h := db.reclaimHook; h != nil {
		h(point)
	}
}
