package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5/pgtype"
	"github.com/pressly/goose/v3"

	"github.com/fleetscope/fleetscope/store/index"
)

// stackSeqs is migration 23: a profile's stack list names its stacks by
// their sequence number in the dictionary (stacks.seq, from the sequence
// stack_seq as each stack is first stored) instead of by their 64-bit
// key, in profile_stacks.seqs (index.AppendStackList: about two bytes a
// stack instead of eight). Up numbers every tenant's stacks, in key order,
// and writes each list again; down writes the keys back.
var stackSeqs = goose.NewGoMigration(23,
	&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		if err := sequential(ctx, tx); err != nil {
			return err
		}
		if err := execAll(ctx, tx, `CREATE SEQUENCE stack_seq`, `GRANT USAGE ON SEQUENCE stack_seq TO fleetscope_tenant`,
			`ALTER TABLE stacks ADD COLUMN seq bigint`, `ALTER TABLE profile_stacks ADD COLUMN seqs bytea`); err != nil {
			return err
		}
		tenants, err := int64s(ctx, tx, `SELECT tenant_id FROM stacks UNION SELECT tenant_id FROM profile_stacks`)
		if err != nil {
			return err
		}
		for _, t := range tenants {
			if err := numberStacks(ctx, tx, t); err != nil {
				return err
			}
			bySeq, err := stackMap(ctx, tx, t)
			if err != nil {
				return err
			}
			byKey := make(map[int64]int64, len(bySeq))
			for seq, key := range bySeq {
				byKey[key] = seq
			}
			scan := func(keys *[]int64) any { return pgtype.NewMap().SQLScanner(keys) }
			if err := rewriteLists(ctx, tx, t, "stacks", "seqs", scan, func(keys []int64) (any, error) {
				seqs := make([]int64, len(keys))
				for i, k := range keys {
					seq, ok := byKey[k]
					if !ok {
						return nil, fmt.Errorf("stack %d missing from the dictionary", k)
					}
					seqs[i] = seq
				}
				return index.AppendStackList([]byte{}, seqs), nil
			}); err != nil {
				return err
			}
		}
		return execAll(ctx, tx, `ALTER TABLE stacks ALTER COLUMN seq SET NOT NULL`, `CREATE UNIQUE INDEX stacks_seq ON stacks (tenant_id, seq)`,
			`ALTER TABLE profile_stacks ALTER COLUMN seqs SET NOT NULL`, `ALTER TABLE profile_stacks DROP COLUMN stacks`)
	}},
	&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		if err := sequential(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `ALTER TABLE profile_stacks ADD COLUMN stacks bigint[]`); err != nil {
			return err
		}
		tenants, err := int64s(ctx, tx, `SELECT DISTINCT tenant_id FROM profile_stacks`)
		if err != nil {
			return err
		}
		for _, t := range tenants {
			bySeq, err := stackMap(ctx, tx, t)
			if err != nil {
				return err
			}
			scan := func(b *[]byte) any { return b }
			if err := rewriteLists(ctx, tx, t, "seqs", "stacks", scan, func(b []byte) (any, error) {
				seqs, err := index.ReadStackList(b)
				if err != nil {
					return nil, err
				}
				keys := make([]int64, len(seqs))
				for i, s := range seqs {
					k, ok := bySeq[s]
					if !ok {
						return nil, fmt.Errorf("stack number %d missing from the dictionary", s)
					}
					keys[i] = k
				}
				return keys, nil
			}); err != nil {
				return err
			}
		}
		return execAll(ctx, tx, `ALTER TABLE profile_stacks ALTER COLUMN stacks SET NOT NULL`, `ALTER TABLE profile_stacks DROP COLUMN seqs`,
			`DROP INDEX stacks_seq`, `ALTER TABLE stacks DROP COLUMN seq`, `DROP SEQUENCE stack_seq`)
	}},
)

// int64s runs q, which selects one bigint column.
func int64s(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]int64, error) {
	rs, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []int64
	for rs.Next() {
		var v int64
		if err := rs.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rs.Err()
}

// numberStacks gives each of the tenant's stacks a number from stack_seq,
// in key order.
func numberStacks(ctx context.Context, tx *sql.Tx, tenant int64) error {
	ids, err := int64s(ctx, tx, `SELECT id FROM stacks WHERE tenant_id = $1 ORDER BY id`, tenant)
	if err != nil {
		return err
	}
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 10_000)]
		ids = ids[len(batch):]
		seqs, err := int64s(ctx, tx, `SELECT nextval('stack_seq') FROM generate_series(1, $1)`, len(batch))
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE stacks SET seq = u.seq FROM unnest($2::bigint[], $3::bigint[]) AS u(id, seq)
			WHERE stacks.tenant_id = $1 AND stacks.id = u.id`, tenant, batch, seqs); err != nil {
			return err
		}
	}
	return nil
}

// stackMap is the tenant's stacks by number: number → key.
func stackMap(ctx context.Context, tx *sql.Tx, tenant int64) (map[int64]int64, error) {
	rs, err := tx.QueryContext(ctx, `SELECT seq, id FROM stacks WHERE tenant_id = $1`, tenant)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	m := map[int64]int64{}
	for rs.Next() {
		var seq, id int64
		if err := rs.Scan(&seq, &id); err != nil {
			return nil, err
		}
		m[seq] = id
	}
	return m, rs.Err()
}

// rewriteLists sets column to to convert(column from) in every one of the
// tenant's profile_stacks rows where it is NULL, a thousand at a time,
// each row by its key; scan gives the destination a value of from is
// scanned into.
func rewriteLists[T any](ctx context.Context, tx *sql.Tx, tenant int64, from, to string, scan func(*T) any, convert func(T) (any, error)) error {
	for {
		rs, err := tx.QueryContext(ctx, `SELECT profile_id::text, `+from+` FROM profile_stacks WHERE tenant_id = $1 AND `+to+` IS NULL LIMIT 1000`, tenant)
		if err != nil {
			return err
		}
		type row struct {
			id  string
			val T
		}
		var rows []row
		for rs.Next() {
			var r row
			if err := rs.Scan(&r.id, scan(&r.val)); err != nil {
				rs.Close()
				return err
			}
			rows = append(rows, r)
		}
		if err := rs.Err(); err != nil {
			return err
		}
		if len(rows) == 0 {
			return nil
		}
		for _, r := range rows {
			v, err := convert(r.val)
			if err != nil {
				return fmt.Errorf("profile %s's stack list: %w", r.id, err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE profile_stacks SET `+to+` = $3 WHERE tenant_id = $1 AND profile_id = $2::uuid`, tenant, r.id, v); err != nil {
				return err
			}
		}
	}
}
