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
// on any of hosts (none: all), summed by host and column of spc seconds
// from start: of the unix seconds [from, to) (width 1), unpacked from the
// fleet_tens rows that hold them and summed here, or of the slots of width
// seconds starting in [from, to) from their rollup (fleet_tens,
// fleet_minutes), summed in the database; and how many stored seconds or
// slots the sums hold. A day of ten hosts' one-minute profiles is 28,800
// minute rows summed into at most 7,200.
func (db *DB) FleetColumnTotals(ctx context.Context, tenant int64, app, event string, hosts []string, width, from, to, start, spc int64) ([]index.ColumnTotal, int, error) {
	if width == 1 {
		return db.secondColumnTotals(ctx, tenant, app, event, hosts, from, to, start, spc)
	}
	r, err := rollupOf(width)
	if err != nil {
		return nil, 0, err
	}
	args := []any{tenant, app, event, from, to, start, spc}
	q := `SELECT host, (` + r.at + ` - $6) / $7, sum(samples)::bigint, sum(idle)::bigint, count(*) FROM ` + r.table + `
		WHERE tenant_id = $1 AND app = $2 AND event = $3 AND ` + r.at + ` >= $4 AND ` + r.at + ` < $5`
	if len(hosts) > 0 {
		args = append(args, hosts)
		q += ` AND host = ANY($8)`
	}
	q += ` GROUP BY 1, 2`
	var out []index.ColumnTotal
	read := 0
	err = db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
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

// secondColumnTotals is FleetColumnTotals of the seconds.
func (db *DB) secondColumnTotals(ctx context.Context, tenant int64, app, event string, hosts []string, from, to, start, spc int64) ([]index.ColumnTotal, int, error) {
	type key struct {
		host   string
		column int64
	}
	sums := map[key]*index.ColumnTotal{}
	var out []*index.ColumnTotal
	read := 0
	err := db.fleetSeconds(ctx, tenant, app, event, hosts, from, to, func(r *index.FleetRow) error {
		k := key{r.Host, (r.Second - start) / spc}
		c, ok := sums[k]
		if !ok {
			c = &index.ColumnTotal{Host: k.host, Column: k.column}
			sums[k] = c
			out = append(out, c)
		}
		c.Samples, c.Idle, read = c.Samples+int64(r.Samples), c.Idle+int64(r.Idle), read+1
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	totals := make([]index.ColumnTotal, len(out))
	for i, c := range out {
		totals[i] = *c
	}
	return totals, read, nil
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
