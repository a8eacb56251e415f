package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"

	"github.com/fleetscope/fleetscope/store/index"
)

// What the Go migrations' downs share: they rewrite seconds rows in
// batches, each row by its primary key, and then change the table.

// sequential makes the transaction's row updates and the DDL after them
// go over one connection per worker on Citus (elsewhere it sets what
// nothing reads).
func sequential(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `SET LOCAL citus.multi_shard_modify_mode TO 'sequential'`)
	return err
}

// execAll runs each statement in turn (one a call: a statement with
// parameters, or through a pooler, cannot hold several).
func execAll(ctx context.Context, tx *sql.Tx, stmts ...string) error {
	for _, q := range stmts {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("%s: %w", q, err)
		}
	}
	return nil
}

// rewriteThenDrop is a down that rewrites seconds rows with batch until
// it finds none left (on Citus over one connection per worker), then
// drops column.
func rewriteThenDrop(batch func(ctx context.Context, tx *sql.Tx, limit int) (int, error), column string) *goose.GoFunc {
	return &goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		if err := sequential(ctx, tx); err != nil {
			return err
		}
		if err := untilDone(ctx, tx, batch); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `ALTER TABLE seconds DROP COLUMN `+column)
		return err
	}}
}

// untilDone calls batch with a limit of 1000 rows until it rewrites none.
func untilDone(ctx context.Context, tx *sql.Tx, batch func(ctx context.Context, tx *sql.Tx, limit int) (int, error)) error {
	for {
		n, err := batch(ctx, tx, 1000)
		if err != nil || n == 0 {
			return err
		}
	}
}

// secondKey is a seconds row's primary key.
type secondKey struct {
	tenant, second int64
	profile, day   string
	event          int16
}

// keyColumns selects a secondKey from seconds s, in the order of fields.
const keyColumns = `s.tenant_id, s.profile_id::text, s.event, s.second, s.day::text`

func (k *secondKey) fields() []any { return []any{&k.tenant, &k.profile, &k.event, &k.second, &k.day} }

func (k *secondKey) String() string {
	return fmt.Sprintf("seconds row of profile %s, event %d, second %d", k.profile, k.event, k.second)
}

// update sets the row's columns: set names them with placeholders from $6
// ($1 to $5 are the key), vals are their values.
func (k *secondKey) update(ctx context.Context, tx *sql.Tx, set string, vals ...any) error {
	_, err := tx.ExecContext(ctx, `UPDATE seconds SET `+set+`
		WHERE tenant_id = $1 AND profile_id = $2::uuid AND event = $3 AND second = $4 AND day = $5::date`,
		append([]any{k.tenant, k.profile, k.event, k.second, k.day}, vals...)...)
	return err
}

// keyedSecond is a seconds row read for a rewrite: its key, and the
// columns the rewrite reads.
type keyedSecond struct {
	key secondKey
	s   index.Second
}

// readSeconds reads up to limit rows of seconds s where where holds: each
// its key and cols, scanned into what fields gives of its Second.
func readSeconds(ctx context.Context, tx *sql.Tx, cols, where string, limit int, fields func(s *index.Second) []any) ([]keyedSecond, error) {
	rs, err := tx.QueryContext(ctx, `SELECT `+keyColumns+`, `+cols+` FROM seconds s WHERE `+where+` LIMIT $1`, limit)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var rows []keyedSecond
	for rs.Next() {
		var r keyedSecond
		if err := rs.Scan(append(r.key.fields(), fields(&r.s)...)...); err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, rs.Err()
}
