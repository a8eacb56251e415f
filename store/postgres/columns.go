package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// FleetColumnTotals returns the stored totals of app's event (base name)
// on any of hosts (none: all), summed in the database by host and column
// of spc seconds from start: of the unix seconds [from, to) from
// fleet_seconds (width 1), or of the slots of width seconds starting in
// [from, to) from their rollup (fleet_tens, fleet_minutes); and how many
// stored rows the sums hold. A day of ten hosts' one-minute profiles is
// 28,800 minute rows summed into at most 7,200.
func (db *DB) FleetColumnTotals(ctx context.Context, tenant int64, app, event string, hosts []string, width, from, to, start, spc int64) ([]index.ColumnTotal, int, error) {
	table, at := "fleet_seconds", "second"
	if width != 1 {
		r, err := rollupOf(width)
		if err != nil {
			return nil, 0, err
		}
		table, at = r.table, r.at
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

// FleetCounts summarizes the tenant's profiles of app on any of hosts
// (none: all) that overlap the window [from, to) (unix ns), as
// FleetProfiles selects them, counted in the database: however many there
// are, one row comes back.
func (db *DB) FleetCounts(ctx context.Context, tenant int64, app string, hosts []string, from, to int64) (fleetscope.FleetCounts, error) {
	args := []any{tenant, app}
	where := []string{"tenant_id = $1", "app = $2", overlap(&args, from, to)}
	if len(hosts) > 0 {
		args = append(args, hosts)
		where = append(where, fmt.Sprintf("host = ANY($%d)", len(args)))
	}
	live := `timed AND labels ? '` + fleetscope.LiveLabel + `' AND labels ? '` + fleetscope.LiveSeqLabel + `' AND labels->>'` + fleetscope.LiveLabel + `' <> ''`
	// One pass over the profiles (a day of ten hosts is 14,400): the
	// counts, and each distinct list of event names, flattened after.
	q := `SELECT c.timed, c.untimed, c.live, c.streams,
			coalesce((SELECT array_agg(DISTINCT n ORDER BY n) FROM unnest(c.names) AS l(a), jsonb_array_elements_text(l.a) AS n), '{}')
		FROM (SELECT count(*) FILTER (WHERE timed) AS timed, count(*) FILTER (WHERE NOT timed) AS untimed,
			count(*) FILTER (WHERE ` + live + `) AS live,
			count(DISTINCT labels->>'` + fleetscope.LiveLabel + `') FILTER (WHERE ` + live + `) AS streams,
			array_agg(DISTINCT jsonb_path_query_array(events, '$[*].name')) AS names
			FROM profiles WHERE ` + strings.Join(where, " AND ") + `) c`
	var c fleetscope.FleetCounts
	err := db.readTenantRow(ctx, tenant, func(row pgx.Row) error {
		return row.Scan(&c.Timed, &c.Untimed, &c.LiveSegments, &c.LiveStreams, &c.Events)
	}, q, args...)
	return c, translate(err, "fleet")
}
