package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
	"github.com/google/uuid"
	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// partitioned are the tables partitioned by ingest day.
var partitioned = []string{"seconds", "fleet_tens", "fleet_minutes"}

// EnsurePartitions creates the daily partitions of the per-second rows from
// the day before from through days days after it. Rows of days without a
// partition land in the default partition.
func (db *DB) EnsurePartitions(ctx context.Context, from time.Time, days int) error {
	day := from.UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	for i := 0; i <= days+1; i++ {
		for _, table := range partitioned {
			if err := db.ensurePartition(ctx, table, day.AddDate(0, 0, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// ensurePartition creates table's partition for day d unless it exists.
func (db *DB) ensurePartition(ctx context.Context, table string, d time.Time) error {
	name := table + "_" + d.Format("20060102")
	var exists bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_class WHERE relname = $1)`, name).Scan(&exists); err != nil {
		return fmt.Errorf("partition %s: %w", name, err)
	}
	if exists {
		return nil
	}
	_, err := db.pool.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s PARTITION OF %s FOR VALUES FROM ('%s') TO ('%s')`,
		name, table, d.Format(time.DateOnly), d.AddDate(0, 0, 1).Format(time.DateOnly)))
	var pe *pgconn.PgError
	if err != nil && !(errors.As(err, &pe) && (pe.Code == pgerrcode.DuplicateTable || pe.Code == pgerrcode.UniqueViolation)) { // created meanwhile
		return fmt.Errorf("partition %s: %w", name, err)
	}
	return nil
}

// writeSeconds stores a profile's per-second rows, as index.Builder builds
// them: with packed offsets (varint_offsets NULL), without their busy
// cells, which the offsets less the idle cells give (index.FillCells), and
// with their offsets and stacks compressed where that saves bytes
// (index.Zstd; zstd true).
func writeSeconds(ctx context.Context, tx pgx.Tx, tenant int64, id uuid.UUID, day time.Time, ix *index.Index) error {
	n := len(ix.Seconds)
	events, seconds, samples := make([]int16, n), make([]int64, n), make([]int32, n)
	idle, offsets, stacks, periods, threads := make([][]byte, n), make([][]byte, n), make([][]byte, n), make([][]byte, n), make([][]byte, n)
	zstd := make([]*bool, n)
	yes := true
	for i, s := range ix.Seconds {
		if s.VarintOffsets {
			return fmt.Errorf("second %d: rows are stored with packed offsets, not uvarint steps", s.Second)
		}
		events[i], seconds[i], samples[i] = int16(s.Event), s.Second, s.Samples
		idle[i], offsets[i], stacks[i] = packCells(s.IdleCells), s.Offsets, s.Stacks
		if o, st, ok := index.Zstd(&ix.Seconds[i]); ok {
			offsets[i], stacks[i], zstd[i] = o, st, &yes
		}
		periods[i], threads[i] = s.Periods, s.Threads // nil: NULL
	}
	cols := []string{"event", "second", "samples", "idle_cells", "offsets", "stacks", "periods", "threads", "zstd"}
	return insertRows(ctx, tx, "seconds", `tenant_id, profile_id, day`, []any{tenant, id, day}, cols,
		[]string{"smallint", "bigint", "int", "bytea", "bytea", "bytea", "bytea", "bytea", "boolean"},
		[]any{events, seconds, samples, idle, offsets, stacks, periods, threads, zstd}, n)
}

// unnestRows is the number of rows up to which insertRows sends a
// profile's rows as arrays, in one INSERT ... SELECT FROM unnest: one
// round trip and no temporary table (whose creation writes the catalog in
// every upload's transaction), which a profile of a host-minute (60 rows)
// needs. Beyond it, COPY into a temporary table streams them.
const unnestRows = 4096

// insertRows inserts n rows into table: the columns fixed (their values
// bound as $1, $2, ...) and then cols, of the Postgres types types, whose
// values are the slices in columns (element i of each is row i). Every
// row must be new: ON CONFLICT DO NOTHING with the count checked instead,
// because on Citus an INSERT ... SELECT from a local table without it is
// executed as a COPY into the shards, which row-level security refuses
// (with it, Citus inserts with INSERT ... SELECT on each shard).
func insertRows(ctx context.Context, tx pgx.Tx, table, fixed string, fixedArgs []any, cols, types []string, columns []any, n int) error {
	if n == 0 {
		return nil
	}
	params := make([]string, len(fixedArgs))
	for i := range params {
		params[i] = fmt.Sprintf("$%d", i+1)
	}
	list := strings.Join(cols, ", ")
	insert := `INSERT INTO ` + table + ` (` + fixed + `, ` + list + `) SELECT ` + strings.Join(params, ", ") + `, ` + list
	var tag pgconn.CommandTag
	var err error
	if n <= unnestRows {
		arrays := make([]string, len(cols))
		for i, t := range types {
			arrays[i] = fmt.Sprintf("$%d::%s[]", len(fixedArgs)+i+1, t)
		}
		tag, err = tx.Exec(ctx, insert+` FROM unnest(`+strings.Join(arrays, ", ")+`) AS r(`+list+`) ON CONFLICT DO NOTHING`,
			append(slices.Clone(fixedArgs), columns...)...)
	} else {
		tag, err = copyRows(ctx, tx, table, insert, fixedArgs, cols, types, columns, n)
	}
	if err == nil && tag.RowsAffected() != int64(n) {
		err = fmt.Errorf("%s: %d rows written of %d (a row repeated)", table, tag.RowsAffected(), n)
	}
	return err
}

// copyRows is insertRows by COPY into a temporary table, then insert.
func copyRows(ctx context.Context, tx pgx.Tx, table, insert string, fixedArgs []any, cols, types []string, columns []any, n int) (pgconn.CommandTag, error) {
	tmp := "new_" + table
	defs := make([]string, len(cols))
	for i, c := range cols {
		defs[i] = c + " " + types[i]
	}
	if _, err := tx.Exec(ctx, `CREATE TEMPORARY TABLE `+tmp+` (`+strings.Join(defs, ", ")+`) ON COMMIT DROP`); err != nil {
		return pgconn.CommandTag{}, err
	}
	row := make([]any, len(cols))
	k := 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		if k == n {
			return nil, nil
		}
		for i, c := range columns {
			row[i] = element(c, k)
		}
		k++
		return row, nil
	})
	if _, err := tx.CopyFrom(ctx, pgx.Identifier{tmp}, cols, src); err != nil {
		return pgconn.CommandTag{}, err
	}
	return tx.Exec(ctx, insert+` FROM `+tmp+` ON CONFLICT DO NOTHING`, fixedArgs...)
}

// element is element k of a column insertRows takes.
func element(column any, k int) any {
	switch c := column.(type) {
	case []*bool:
		return c[k]
	case []int16:
		return c[k]
	case []int32:
		return c[k]
	case []int64:
		return c[k]
	case []string:
		return c[k]
	case [][]byte:
		return c[k]
	}
	panic(fmt.Sprintf("insertRows: a column of %T", column))
}

// Cells returns an event's rows for their heatmap cells (50 rows), by
// relative second: the idle cells, and the offsets and periods that give
// the busy ones (index.FillCells), without the stacks and threads.
func (db *DB) Cells(ctx context.Context, tenant int64, id string, event int) ([]index.Second, error) {
	return db.seconds(ctx, tenant, id, event, 0, 0, false)
}

// Seconds returns an event's rows for relative seconds [from, to] (both
// included; from > to means all) with their samples.
func (db *DB) Seconds(ctx context.Context, tenant int64, id string, event int, from, to int64) ([]index.Second, error) {
	return db.seconds(ctx, tenant, id, event, from, to, true)
}

// secondsQuery reads an event's rows: the heatmap's (no stacks), or with
// the samples of all seconds or of seconds $4 to $5 (a flame graph's).
// $1 is the tenant, $2 the profile, $3 the event.
func secondsQuery(samples, ranged bool) string {
	cols := `second, samples, idle_cells, offsets, varint_offsets IS TRUE, NULL::bytea, periods, NULL::bytea, zstd IS TRUE`
	if samples {
		cols = `second, samples, idle_cells, offsets, varint_offsets IS TRUE, stacks, periods, threads, zstd IS TRUE`
	}
	q := `SELECT ` + cols + ` FROM seconds WHERE tenant_id = $1 AND profile_id = $2 AND event = $3`
	if ranged {
		q += ` AND second BETWEEN $4 AND $5`
	}
	return q + ` ORDER BY second`
}

func (db *DB) seconds(ctx context.Context, tenant int64, id string, event int, from, to int64, samples bool) ([]index.Second, error) {
	u, err := parseID(id)
	if err != nil {
		return nil, err
	}
	ranged := from <= to && samples
	args := []any{tenant, u, int16(event)}
	if ranged {
		args = append(args, from, to)
	}
	q := secondsQuery(samples, ranged)
	var out []index.Second
	var idle pgtype.DriverBytes // valid until the next row: decoded at once
	err = db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			s := index.Second{Event: fleetscope.EventID(event)}
			var zstd bool
			if err := rows.Scan(&s.Second, &s.Samples, &idle, &s.Offsets, &s.VarintOffsets, &s.Stacks, &s.Periods, &s.Threads, &zstd); err != nil {
				return err
			}
			if err := unzstd(&s, zstd); err != nil {
				return err
			}
			s.IdleCells = make([]int32, index.Rows)
			if err := index.ReadCells(s.IdleCells, idle); err != nil {
				return err
			}
			out = append(out, s)
		}
		return nil
	}, q, args...)
	return out, translate(err, "profile "+id)
}

// unzstd decompresses a row read compressed (zstd true); a row that does
// not decompress is corrupt.
func unzstd(s *index.Second, zstd bool) error {
	if !zstd {
		return nil
	}
	if err := s.Unzstd(); err != nil {
		return fleetscope.Errorf(fleetscope.EINTERNAL, "second %d: corrupt compressed row: %v", s.Second, err)
	}
	return nil
}

// FleetStackTotals streams the stack totals (index.EncodeStackTotals) of
// the tenant's profiles ids in one round trip: fn gets the index in ids of
// each profile that has them, in no particular order (profiles stored
// before totals were kept have none, and are left out).
func (db *DB) FleetStackTotals(ctx context.Context, tenant int64, ids []string, fn func(i int, totals []byte) error) error {
	us := make([][16]byte, len(ids)) // pgx's binary path: a uuid.UUID is sent as text (driver.Valuer)
	for i, id := range ids {
		u, err := parseID(id)
		if err != nil {
			return err
		}
		us[i] = u
	}
	var totals pgtype.DriverBytes // valid until the next row: fn uses it at once
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			var i int
			if err := rows.Scan(&i, &totals); err != nil {
				return err
			}
			if err := fn(i-1, totals); err != nil {
				return err
			}
		}
		return nil
	}, `SELECT r.i, p.totals FROM unnest($2::uuid[]) WITH ORDINALITY AS r(profile_id, i)
		JOIN profile_stacks p ON p.tenant_id = $1 AND p.profile_id = r.profile_id AND p.totals IS NOT NULL`, tenant, us)
	return translate(err, "fleet")
}

// FleetSeconds streams the rows, with their samples, of many profiles'
// second ranges in one round trip; fn gets the index in reqs of the range a
// row belongs to, in no particular order. Inner rows come without their
// offsets (index.SecondsRange.Inner): Postgres neither reads nor sends
// them.
func (db *DB) FleetSeconds(ctx context.Context, tenant int64, reqs []index.SecondsRange, fn func(i int, s *index.Second) error) error {
	ids := make([][16]byte, len(reqs)) // binary, as in FleetStackTotals
	events := make([]int16, len(reqs))
	lo := make([]int64, len(reqs))
	hi := make([]int64, len(reqs))
	for i, r := range reqs {
		u, err := parseID(r.ProfileID)
		if err != nil {
			return err
		}
		ids[i], events[i], lo[i], hi[i] = u, int16(r.Event), r.From, r.To
		if r.From > r.To {
			lo[i], hi[i] = math.MinInt64, math.MaxInt64
		}
	}
	err := db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		for rows.Next() {
			var i int
			var s index.Second
			var ev int16
			var zstd bool
			if err := rows.Scan(&i, &ev, &s.Second, &s.Samples, &s.Offsets, &s.VarintOffsets, &s.Stacks, &s.Periods, &s.Threads, &zstd); err != nil {
				return err
			}
			if err := unzstd(&s, zstd); err != nil {
				return err
			}
			s.Event = fleetscope.EventID(ev)
			if err := fn(i-1, &s); err != nil {
				return err
			}
		}
		return nil
	}, `SELECT r.i, s.event, s.second, s.samples, CASE WHEN r.lo < s.second AND s.second < r.hi THEN NULL ELSE s.offsets END, s.varint_offsets IS TRUE, s.stacks, s.periods, s.threads, s.zstd IS TRUE
		FROM unnest($2::uuid[], $3::smallint[], $4::bigint[], $5::bigint[]) WITH ORDINALITY AS r(profile_id, event, lo, hi, i)
		JOIN seconds s ON s.tenant_id = $1 AND s.profile_id = r.profile_id AND s.event = r.event AND s.second BETWEEN r.lo AND r.hi`,
		tenant, ids, events, lo, hi)
	return translate(err, "fleet")
}
