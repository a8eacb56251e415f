package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AnalyzeStale does autovacuum's ANALYZE where autovacuum is off: it
// analyzes each table of the schema that changed more since its last
// analysis than autovacuum's default threshold (50 rows and a tenth of
// the table) and was last analyzed more than every ago (autovacuum looks
// at a table at most once per autovacuum_naptime, a minute by default),
// and returns them. Without statistics Postgres takes a table that grew
// since for nearly empty, and plans a fleet's profile selection as a scan
// of the app's whole history instead of the time index: a 20-ms window of
// a day of ten hosts took three times as long (docs/operations.md).
// With autovacuum on it does nothing: Postgres analyzes by itself. On
// Citus the rows are in the workers' shards, analyzed by the workers: the
// coordinator's tables do not change.
//
// The interval matters while a table grows from nothing: each tenth more
// rows is past the threshold again, and a day partition of the per-second
// rows takes about half a second of Postgres' CPU to analyze. With the
// sweep running every second (as the benchmarks run it), ingest otherwise
// analyzed the day's partitions a dozen times in 18 s of uploads.
func (db *DB) AnalyzeStale(ctx context.Context, every time.Duration) ([]string, error) {
	var tables []string
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT quote_ident(s.relname) FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
			WHERE current_setting('autovacuum') = 'off' AND s.schemaname = current_schema()
			  AND s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)
			  AND coalesce(greatest(s.last_analyze, s.last_autoanalyze), '-infinity') <= now() - $1::float8 * interval '1 second'
			ORDER BY s.n_mod_since_analyze DESC`, every.Seconds())
		if err != nil {
			return err
		}
		tables, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("analyze: %w", err)
	}
	for i, t := range tables {
		if _, err := db.pool.Exec(ctx, `ANALYZE `+t); err != nil {
			return tables[:i], fmt.Errorf("analyze %s: %w", t, err)
		}
	}
	return tables, nil
}
