package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// writeFleet stores a profile's cells in absolute time, within the
// profile's own transaction: summed by ten unix seconds (fleet_tens), each
// row with its own seconds packed in it (index.AppendTenSeconds), and by
// the minute (fleet_minutes).
func writeFleet(ctx context.Context, tx pgx.Tx, tenant int64, id uuid.UUID, day time.Time, p *fleetscope.ProfileInfo, dict *fleetscope.Dict, ix *index.Index) error {
	secs, err := index.WallSeconds(ix, p.WallShiftNanos, dict.Idle)
	if err != nil || len(secs) == 0 {
		return err
	}
	tens, seconds, err := index.RollupTens(secs)
	if err != nil {
		return err
	}
	fixed := []any{tenant, p.App, id, p.Host, day}
	if err := insertFleetRows(ctx, tx, rollups[0], fixed, tens, seconds); err != nil {
		return err
	}
	return insertFleetRows(ctx, tx, rollups[1], fixed, index.Rollup(secs, index.Minutes), nil)
}

// rollup is a table of a profile's cells summed by unix slots of width
// seconds: at is the column of a slot's first second.
type rollup struct {
	width     int64
	table, at string
}

// rollups are the stored rollups of a profile's wall seconds, narrowest
// first (migrations 00015 and 00011); the first, fleet_tens, holds the
// seconds too (migration 22).
var rollups = []rollup{{index.Tens, "fleet_tens", "ten"}, {index.Minutes, "fleet_minutes", "minute"}}

// rollupOf is the rollup table of width seconds.
func rollupOf(width int64) (rollup, error) {
	for _, r := range rollups {
		if r.width == width {
			return r, nil
		}
	}
	return rollup{}, fmt.Errorf("no rollup of %d seconds", width)
}

// insertFleetRows inserts a profile's rows into a rollup table, with their
// packed seconds (fleet_tens) unless seconds is nil.
func insertFleetRows(ctx context.Context, tx pgx.Tx, r rollup, fixed []any, rows []index.WallSecond, seconds [][]byte) error {
	n := len(rows)
	events, times, samples, idle, cells, idleCells := make([]string, n), make([]int64, n), make([]int32, n), make([]int32, n), make([][]byte, n), make([][]byte, n)
	for i, r := range rows {
		events[i], times[i], samples[i], idle[i] = r.Event, r.Second, r.Samples, r.Idle
		cells[i], idleCells[i] = packCells(r.Cells), packCells(r.IdleCells)
	}
	cols, types, vals := []string{"event", r.at, "samples", "idle", "cells", "idle_cells"}, []string{"text", "bigint", "int", "int", "bytea", "bytea"},
		[]any{events, times, samples, idle, cells, idleCells}
	if seconds != nil {
		cols, types, vals = append(cols, "seconds"), append(types, "bytea"), append(vals, seconds)
	}
	return insertRows(ctx, tx, r.table, `tenant_id, app, profile_id, host, day`, fixed, cols, types, vals, n)
}

// fleetTables are the tables of a profile's cells in absolute time: by ten
// seconds (each with its seconds) and by the minute. Deleting a profile, changing its app or host and
// deleting a tenant treat them all alike, in one transaction.
var fleetTables = []string{"fleet_tens", "fleet_minutes"}

// FleetProfiles returns the tenant's profiles of app that overlap the
// window [from, to) (unix ns), on any of hosts (none: all) and with every
// label condition met, oldest first, at most limit of them (more:
// ETOOLARGE, the selection is too wide). Untimed profiles are included:
// the caller decides what they count for. Their Meta is not read (nil).
func (db *DB) FleetProfiles(ctx context.Context, tenant int64, app string, hosts []string, labels []fleetscope.LabelMatch, from, to int64, limit int) ([]*fleetscope.ProfileInfo, error) {
	q, args := fleetProfilesQuery(tenant, app, hosts, labels, from, to, limit)
	return db.listFleet(ctx, tenant, q, args, labels, limit, "profiles", "hosts, labels, a shorter window")
}

// listFleet runs a fleetProfilesQuery and keeps the profiles whose labels
// meet every condition, refusing more than limit of them (what: the
// profiles, narrow: how to choose fewer).
func (db *DB) listFleet(ctx context.Context, tenant int64, q string, args []any, labels []fleetscope.LabelMatch, limit int, what, narrow string) ([]*fleetscope.ProfileInfo, error) {
	var out []*fleetscope.ProfileInfo
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			p, err := scanProfile(rows)
			if err != nil {
				return err
			}
			if fleetMatches(p, labels) {
				out = append(out, p)
			}
		}
		return nil
	}, q, args...)
	if err != nil {
		return nil, translate(err, "fleet")
	}
	if len(out) > limit {
		return nil, fleetscope.Errorf(fleetscope.ETOOLARGE, "more than %d %s in this selection: narrow it (%s)", limit, what, narrow)
	}
	return out, nil
}

// fleetProfilesQuery is FleetProfiles' query and its arguments: the
// profiles that overlap the window, through the time index (overlap), and
// the exact labels (the other label conditions are decided by
// fleetMatches), with any further conditions (SQL without parameters).
func fleetProfilesQuery(tenant int64, app string, hosts []string, labels []fleetscope.LabelMatch, from, to int64, limit int, also ...string) (string, []any) {
	args := []any{tenant, app}
	where := append([]string{"tenant_id = $1", "app = $2", overlap(&args, from, to)}, also...)
	if len(hosts) > 0 {
		args = append(args, hosts)
		where = append(where, fmt.Sprintf("host = ANY($%d)", len(args)))
	}
	equal := map[string]string{}
	for _, l := range labels {
		if l.Exact() {
			equal[l.Name] = l.Value
		}
	}
	if len(equal) > 0 {
		b, _ := json.Marshal(equal)
		args = append(args, b)
		where = append(where, fmt.Sprintf("labels @> $%d", len(args)))
	}
	return `SELECT ` + leanProfileColumns + ` FROM profiles WHERE ` + strings.Join(where, " AND ") +
		fmt.Sprintf(` ORDER BY start_time, id LIMIT %d`, limit+1), args
}

// The time index (migration 00010): a profile's span class is the first k
// with duration_nanos <= spanBound(k), 4^k seconds (1 s, 4 s, 16 s, ...
// 4^10 s: about 12 days), and class spanClasses-1 beyond. A profile of
// class k that overlaps [from, to) started at most spanBound(k) before
// from, so its class's candidates are one range of start_time in the index
// (tenant_id, app, span_class, start_time): those that overlap the window
// and those of the class that start up to spanBound(k) before it (a few
// per host), instead of every profile on one side of the window.
const spanClasses = 12

func spanBound(k int) int64 { return 1e9 << (2 * k) }

// spanNanos is a profile's start in unix ns, as fleetscope.WallSpan
// computes it (start_time holds microseconds, as the Go side reads it
// too); its end is spanNanos + duration_nanos.
const spanNanos = `(CASE WHEN timed THEN start_second * 1000000000 + wall_shift_nanos
	ELSE (extract(epoch FROM start_time) * 1000000000)::bigint END)`

// overlap returns the condition that keeps exactly the profiles whose span
// (fleetscope.WallSpan) overlaps [from, to) (unix ns): start < to and
// end >= from (a profile ending at from is in), adding its arguments to
// args. The time index finds them
// (see spanClasses): with a second of margin on start_time and end_time,
// stored to the microsecond, and the exact overlap in nanoseconds after.
// The index conditions are comparisons of columns with parameters: they
// are leakproof, so Postgres uses them in index scans under row-level
// security (a GiST index on tstzrange's && would not be used there).
func overlap(args *[]any, from, to int64) string {
	param := func(v any) string {
		*args = append(*args, v)
		return fmt.Sprintf("$%d", len(*args))
	}
	lo := time.Unix(0, from).Add(-time.Second)
	classes := make([]string, spanClasses)
	for k := range spanClasses - 1 {
		classes[k] = fmt.Sprintf("span_class = %d AND start_time >= %s", k, param(lo.Add(-time.Duration(spanBound(k)))))
	}
	classes[spanClasses-1] = fmt.Sprintf("span_class = %d", spanClasses-1)
	return "(" + strings.Join(classes, " OR ") + ")" +
		" AND start_time < " + param(time.Unix(0, to).Add(time.Second)) + " AND end_time >= " + param(lo) +
		" AND " + spanNanos + " < " + param(to) + " AND " + spanNanos + " + duration_nanos >= " + param(from)
}

// fleetMatches applies the label conditions SQL cannot say (k!=v and
// regular expressions among them); the overlap is decided in SQL
// (overlap).
func fleetMatches(p *fleetscope.ProfileInfo, labels []fleetscope.LabelMatch) bool {
	for _, l := range labels {
		if !l.Matches(p.Labels) {
			return false
		}
	}
	return true
}

// FleetRows hands fn the stored rows in absolute time of the tenant's
// profiles of app and event (base name; "" for every event) of width
// seconds (1: a second's, read from the fleet_tens rows that hold them;
// index.Tens: fleet_tens; index.Minutes: fleet_minutes, each row's Second
// its slot's first) starting in the unix seconds [from, to), as they are
// read: with their cells (decoded into one buffer, reused for every row)
// or only their totals.
func (db *DB) FleetRows(ctx context.Context, tenant int64, app, event string, width, from, to int64, withCells bool, fn func(*index.FleetRow) error) error {
	if width == 1 {
		return db.fleetSeconds(ctx, tenant, app, event, nil, from, to, func(r *index.FleetRow) error {
			if !withCells {
				c := *r
				c.Cells, c.IdleCells = nil, nil
				return fn(&c)
			}
			return fn(r)
		})
	}
	r, err := rollupOf(width)
	if err != nil {
		return err
	}
	cols := "profile_id, host, event, " + r.at + ", samples, idle"
	if withCells {
		cols += ", cells, idle_cells"
	}
	q, args := fleetRowsQuery(cols, r, tenant, app, event, nil, from, to)
	return db.eachFleetRow(ctx, tenant, q, args, withCells, false, func(row *index.FleetRow, _ []byte) error { return fn(row) })
}

// fleetRowsQuery selects cols of the rows of table r starting in the unix
// seconds [from, to) of app's event ("": every event) on any of hosts
// (none: all).
func fleetRowsQuery(cols string, r rollup, tenant int64, app, event string, hosts []string, from, to int64) (string, []any) {
	q := `SELECT ` + cols + ` FROM ` + r.table + ` WHERE tenant_id = $1 AND app = $2 AND ` + r.at + ` >= $3 AND ` + r.at + ` < $4`
	args := []any{tenant, app, from, to}
	if event != "" {
		args = append(args, event)
		q += fmt.Sprintf(` AND event = $%d`, len(args))
	}
	if len(hosts) > 0 {
		args = append(args, hosts)
		q += fmt.Sprintf(` AND host = ANY($%d)`, len(args))
	}
	return q, args
}

// eachFleetRow runs q, whose columns are profile_id, host, event, the
// slot, samples and idle, then (withCells) cells and idle_cells, then
// (withSeconds) a ten's packed seconds, and hands fn each row and its
// seconds (nil without), the cells decoded into one buffer reused for
// every row.
func (db *DB) eachFleetRow(ctx context.Context, tenant int64, q string, args []any, withCells, withSeconds bool, fn func(*index.FleetRow, []byte) error) error {
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		var cells, idle, extra pgtype.DriverBytes
		var r index.FleetRow
		var id [16]byte // pgx's binary path; a uuid.UUID is scanned as text (sql.Scanner)
		if withCells {
			r.Cells, r.IdleCells = make([]int32, index.Rows), make([]int32, index.Rows)
		}
		dst := []any{&id, &r.Host, &r.Event, &r.Second, &r.Samples, &r.Idle}
		if withCells {
			dst = append(dst, &cells, &idle)
		}
		if withSeconds {
			dst = append(dst, &extra)
		}
		for rows.Next() {
			if err := rows.Scan(dst...); err != nil {
				return err
			}
			if withCells {
				if err := index.ReadCells(r.Cells, cells); err != nil {
					return err
				}
				if err := index.ReadCells(r.IdleCells, idle); err != nil {
					return err
				}
			}
			r.ProfileID = uuid.UUID(id).String()
			if err := fn(&r, extra); err != nil {
				return err
			}
		}
		return nil
	}, q, args...)
	return translate(err, "fleet")
}

// fleetSeconds hands fn the stored seconds of app's event ("": every
// event) on any of hosts (none: all) in the unix seconds [from, to), with
// their cells (one buffer, reused): each unpacked from the fleet_tens row
// that holds it.
func (db *DB) fleetSeconds(ctx context.Context, tenant int64, app, event string, hosts []string, from, to int64, fn func(*index.FleetRow) error) error {
	tens := rollups[0]
	q, args := fleetRowsQuery("profile_id, host, event, ten, samples, idle, seconds", tens, tenant, app, event, hosts, index.FloorTo(from, index.Tens), to)
	var sec index.FleetRow
	sec.Cells, sec.IdleCells = make([]int32, index.Rows), make([]int32, index.Rows)
	return db.eachFleetRow(ctx, tenant, q, args, false, true, func(ten *index.FleetRow, packed []byte) error {
		sec.ProfileID, sec.Host, sec.Event = ten.ProfileID, ten.Host, ten.Event
		err := index.EachTenSecond(packed, ten.Second, &sec.WallSecond, func() error {
			if sec.Second < from || sec.Second >= to {
				return nil
			}
			return fn(&sec)
		})
		if err != nil {
			return fmt.Errorf("profile %s, %s at %d: %w", ten.ProfileID, ten.Event, ten.Second, err)
		}
		return nil
	})
}

// FleetCells collects FleetRows of seconds, each row with cells of its
// own.
func (db *DB) FleetCells(ctx context.Context, tenant int64, app, event string, from, to int64) ([]index.FleetRow, error) {
	return db.FleetRollup(ctx, tenant, app, event, 1, from, to, true)
}

// FleetRollup collects FleetRows of width seconds, each row with cells of
// its own (withCells).
func (db *DB) FleetRollup(ctx context.Context, tenant int64, app, event string, width, from, to int64, withCells bool) ([]index.FleetRow, error) {
	var out []index.FleetRow
	err := db.FleetRows(ctx, tenant, app, event, width, from, to, withCells, func(r *index.FleetRow) error {
		c := *r
		if withCells {
			c.Cells, c.IdleCells = slices.Clone(r.Cells), slices.Clone(r.IdleCells)
		}
		out = append(out, c)
		return nil
	})
	return out, err
}

// FleetLabelSets returns the distinct (app, host, labels) of the tenant's
// profiles that overlap the window [from, to) (unix ns, exactly as
// FleetProfiles decides it), of app ("": every app), each with the base
// names of its profiles' events; at most limit of them (more: ETOOLARGE).
func (db *DB) FleetLabelSets(ctx context.Context, tenant int64, app string, from, to int64, limit int) ([]fleetscope.LabelSet, error) {
	q, args := fleetLabelSetsQuery(tenant, app, from, to, limit)
	var out []fleetscope.LabelSet
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			var ls fleetscope.LabelSet
			var labels, events []byte
			if err := rows.Scan(&ls.App, &ls.Host, &labels, &events); err != nil {
				return err
			}
			var names []string
			if err := json.Unmarshal(labels, &ls.Labels); err != nil {
				return err
			}
			if err := json.Unmarshal(events, &names); err != nil {
				return err
			}
			for _, n := range names {
				ls.Events = append(ls.Events, fleetscope.EventBase(n))
			}
			slices.Sort(ls.Events)
			ls.Events = slices.Compact(ls.Events)
			out = append(out, ls)
		}
		return nil
	}, q, args...)
	if err != nil {
		return nil, translate(err, "fleet")
	}
	if len(out) > limit {
		return nil, fleetscope.Errorf(fleetscope.ETOOLARGE, "more than %d distinct label sets in this window: narrow it (service_name, a shorter window)", limit)
	}
	return out, nil
}

// fleetLabelSetsQuery is FleetLabelSets' query and its arguments.
func fleetLabelSetsQuery(tenant int64, app string, from, to int64, limit int) (string, []any) {
	args := []any{tenant}
	where := []string{"tenant_id = $1"}
	if app != "" {
		args = append(args, app)
		where = append(where, "app = $2")
	}
	where = append(where, overlap(&args, from, to))
	return `SELECT app, host, labels, jsonb_agg(DISTINCT e.name ORDER BY e.name)
		FROM (SELECT app, host, labels, events FROM profiles WHERE ` + strings.Join(where, " AND ") + `) p,
			jsonb_to_recordset(p.events) AS e(name text)
		GROUP BY app, host, labels ORDER BY app, host, labels::text` + fmt.Sprintf(` LIMIT %d`, limit+1), args
}

// packCells is a row's cells as the index stores them (index.AppendCells),
// never nil: a column without samples is empty bytes, not NULL.
func packCells(cells []int32) []byte { return index.AppendCells([]byte{}, cells) }
