package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// SecondsQuery is the query of Cells (samples false) and Seconds, for the
// tests that EXPLAIN it.
var SecondsQuery = secondsQuery

// ReadTenant is readTenant, for tests.
func (db *DB) ReadTenant(ctx context.Context, tenant int64, scan func(pgx.Rows) error, q string, args ...any) error {
	return db.readTenant(ctx, tenant, scan, q, args...)
}
