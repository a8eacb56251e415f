package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope/store/index"
)

// FleetColumnTotals returns the stored totals of app's event (base name)
// on any of hosts (none: all), summed in the database by host and column
// of spc seconds from start: of the unix seconds [from, to) from
// fleet_seconds, or with byMinute of the minutes starting in [from, to)
// from fleet_minutes; and how many stored rows the sums hold. A day of
// ten hosts' one-minute profiles is 28,800 minute rows summed into at
// most 7,200.
func (db *DB) FleetColumnTotals(ctx context.Context, tenant int64, app, event string, hosts []string, byMinute bool, from, to, start, spc int64) ([]index.ColumnTotal, int, error) {
	table, at := "fleet_seconds", "second"
	if byMinute {
		table, at = "fleet_minutes", "minute"
	}
	args := []any{tenant, app, event, from, to, start, spc}
	q := `SELECT host, (` + at + ` - $6) / $7, sum(samples)::bigint, sum(idle)::bigint, count(*) FROM ` + table + `
		WHERE tenant_id = $1 AND app = $2 AND event = $3 AND ` + at + ` >= $4 AND ` + at + ` < $5`
	if len(hosts) > 0 {
		args = append(args, hosts)
		q += ` AND host = ANY($8)`
	}
	q += ` GROUP BY 1, 2`
	var out []index.ColumnTotal
	read := 0
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			var c index.ColumnTotal
			var n int
			if err := rows.Scan(&c.Host, &c.Column, &c.Samples, &c.Idle, &n); err != nil {
				return err
			}
			out, read = append(out, c), read+n
		}
		return nil
	}, q, args...)
	return out, read, translate(err, "fleet")
}
