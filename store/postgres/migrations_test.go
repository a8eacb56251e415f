package postgres_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/fleetscope/fleetscope/migrations"
	"github.com/fleetscope/fleetscope/store/index"
	"github.com/fleetscope/fleetscope/store/postgres"
	"github.com/fleetscope/fleetscope/store/postgres/pgtest"
)

// TestFleetCellsMigration: fleet cells stored as int[] before migration
// 8 read back the same after it (as bytes), and migrating down restores
// the arrays. The conversion works on array_send's hex text: counts here
// look like its length words. On Citus (make test-citus) the tables are
// distributed first, as a deployment's were before this migration.
func TestFleetCellsMigration(t *testing.T) {
	ctx := context.Background()
	pool, sqldb, p, _ := migratedTo(t, 7, "fleet_seconds")
	cells, idle := arrayCells()
	exec(t, sqldb, `INSERT INTO tenants (name) VALUES ('acme')`)
	exec(t, sqldb, `INSERT INTO fleet_seconds (tenant_id, app, event, second, profile_id, host, day, samples, idle, cells, idle_cells)
		SELECT id, 'shop', 'cpu', 1795000000, '6f1f4bbe-3bb4-4b0c-9a44-6c8d3c1e2a10', 'h1', '2026-11-28', 3, 1, $1, $2 FROM tenants`, cells, idle)
	if _, err := p.UpTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	var tenant int64
	if err := sqldb.QueryRowContext(ctx, `SELECT id FROM tenants`).Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	var c, ic []byte
	if err := sqldb.QueryRowContext(ctx, `SELECT cells, idle_cells FROM fleet_seconds WHERE tenant_id = $1`, tenant).Scan(&c, &ic); err != nil {
		t.Fatal(err)
	}
	gotCells, gotIdle := make([]int32, index.Rows), make([]int32, index.Rows)
	if err := errors.Join(index.ReadCells(gotCells, c), index.ReadCells(gotIdle, ic)); err != nil || !slices.Equal(gotCells, cells) || !slices.Equal(gotIdle, idle) {
		t.Fatalf("after migrating up: cells %v and idle cells %v (%v), want %v and %v", gotCells, gotIdle, err, cells, idle)
	}
	if _, err := p.DownTo(ctx, 7); err != nil {
		t.Fatal(err)
	}
	back, idleBack := arraysOf(t, pool, `SELECT cells, idle_cells FROM fleet_seconds`)
	if !slices.Equal(back, cells) || !slices.Equal(idleBack, idle) {
		t.Fatalf("after migrating down: %v and %v, want %v and %v", back, idleBack, cells, idle)
	}
}

// arrayCells are a row's cells and idle cells as the migration tests
// store them in int[] columns: counts with every byte set, one that reads
// as an element's length word and one that has it inside.
func arrayCells() (cells, idle []int32) {
	cells, idle = make([]int32, index.Rows), make([]int32, index.Rows)
	for i := range cells {
		cells[i] = int32(i * 1000)
		idle[i] = int32(i % 3)
	}
	cells[index.Rows-1] = 1<<31 - 1    // the largest count: every byte of it set
	cells[2], cells[3] = 4, 0x00000400 // a count that reads as an element's length word, and one that has it inside
	return cells, idle
}

// arraysOf reads the two int[] columns of the one row query selects.
func arraysOf(t *testing.T, pool *pgxpool.Pool, query string, args ...any) (cells, idle []int32) {
	t.Helper()
	if err := pool.QueryRow(context.Background(), query, args...).Scan(&cells, &idle); err != nil {
		t.Fatal(err)
	}
	return cells, idle
}

// migratedTo makes a database migrated up to version, with its tables
// distributed on Citus (make test-citus) as a deployment's were then
// (table, which must be, is checked), and returns a pool, a database/sql
// handle and a goose provider on it, and the store; all closed when the
// test ends.
func migratedTo(t *testing.T, version int64, table string) (*pgxpool.Pool, *sql.DB, *goose.Provider, *postgres.DB) {
	t.Helper()
	ctx := context.Background()
	url := pgtest.NewURL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	p, sqldb := migrator(t, pool)
	if _, err := p.UpTo(ctx, version); err != nil {
		t.Fatal(err)
	}
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Distribute(ctx); err != nil {
		t.Fatal(err)
	}
	if citus, _ := db.Citus(ctx); citus {
		var n int
		if err := sqldb.QueryRowContext(ctx, `SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = $1::regclass`, table).Scan(&n); err != nil || n != 1 {
			t.Fatalf("%s not distributed before migrating: %d, %v", table, n, err)
		}
	}
	return pool, sqldb, p, db
}

func exec(t *testing.T, db *sql.DB, q string, args ...any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

// TestFleetMinutesMigration: migration 11 builds the minutes of profiles
// stored before it from their seconds, equal to what ingest now writes
// (counts with every byte set, negative ones never occur). On Citus the
// other tables are distributed when it runs, as a deployment's are.
func TestFleetMinutesMigration(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	acme, _ := db.CreateTenant(ctx, "acme", false)
	var b strings.Builder
	for i := range 500 {
		fmt.Fprintf(&b, "app 1 [000] %d.%06d: 1 cpu-clock:\n\t1 f%d (/bin/app)\n\n", 1795000000+i/3, (i*7919)%1000000, i%5)
	}
	store(t, db, acme, "shop", b.String())
	store(t, db, acme, "shop", epochPerf("cs", "1795000059.999999", "1795000060.000000"))
	written, err := db.FleetRollup(ctx, acme, "shop", "", index.Minutes, 1794999960, 1795000200, true)
	if err != nil || len(written) == 0 {
		t.Fatalf("%v %v", written, err)
	}
	p, _ := migrator(t, poolOf(t, db))
	if _, err := p.DownTo(ctx, 10); err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 11); err != nil {
		t.Fatal(err)
	}
	if err := db.Distribute(ctx); err != nil {
		t.Fatal(err)
	}
	built, err := db.FleetRollup(ctx, acme, "shop", "", index.Minutes, 1794999960, 1795000200, true)
	if err != nil {
		t.Fatal(err)
	}
	if rowsText(sortRows(built)) != rowsText(sortRows(written)) {
		t.Fatalf("the migration built:\n%s\nwant what ingest wrote:\n%s", rowsText(built), rowsText(written))
	}
}

// TestFleetTensMigration: migration 15 builds the tens of seconds of
// profiles stored before it from their seconds, byte for byte what ingest
// now writes; from seconds in the compact encoding and in the fixed one
// of rows converted by migration 8, with sums that wrap as int32 (counts
// with every byte set). On Citus the other tables are distributed when it
// runs, as a deployment's are.
func TestFleetTensMigration(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	acme, _ := db.CreateTenant(ctx, "acme", false)
	var b strings.Builder
	for i := range 500 {
		fmt.Fprintf(&b, "app 1 [000] %d.%06d: 1 cpu-clock:\n\t1 f%d (/bin/app)\n\n", 1795000000+i/7, (i*7919)%1000000, i%5)
	}
	store(t, db, acme, "shop", b.String())
	store(t, db, acme, "shop", epochPerf("cs", "1795000009.999999", "1795000010.000000", "1795000059.999999", "1795000060.000000"))
	written, err := db.FleetRollup(ctx, acme, "shop", "", index.Tens, 1794999960, 1795000200, true)
	if err != nil || len(written) < 10 {
		t.Fatalf("%v %v", written, err)
	}
	pool := poolOf(t, db)
	bytesOf := func() string {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT profile_id::text, event, ten, host, day::text, samples, idle, encode(cells, 'hex'), encode(idle_cells, 'hex')
			FROM fleet_tens ORDER BY 1, 2, 3`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out strings.Builder
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&out, vals...)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	writtenBytes := bytesOf()

	p, sqldb := migrator(t, pool)
	if _, err := p.DownTo(ctx, 14); err != nil {
		t.Fatal(err)
	}
	// A profile whose seconds 21 (fixed encoding) and 27 (compact) of the
	// same ten seconds sum past the int32 range.
	cells, idle := arrayCells()
	const id = "6f1f4bbe-3bb4-4b0c-9a44-6c8d3c1e2a10"
	insert := `INSERT INTO fleet_seconds (tenant_id, app, event, second, profile_id, host, day, samples, idle, cells, idle_cells)
		VALUES ($1, 'shop', 'cpu', $2, '` + id + `', 'h9', '2026-11-28', 2147483000, 7, $3, $4)`
	exec(t, sqldb, insert, acme, 1795000021, fixedCells(cells), fixedCells(idle))
	exec(t, sqldb, insert, acme, 1795000027, index.AppendCells(nil, cells), index.AppendCells(nil, idle))
	if _, err := p.UpTo(ctx, 15); err != nil {
		t.Fatal(err)
	}
	if err := db.Distribute(ctx); err != nil {
		t.Fatal(err)
	}
	built, err := db.FleetRollup(ctx, acme, "shop", "", index.Tens, 1794999960, 1795000200, true)
	if err != nil {
		t.Fatal(err)
	}
	sec := index.WallSecond{Event: "cpu", Samples: 2147483000, Idle: 7, Cells: cells, IdleCells: idle}
	other := sec
	sec.Second, other.Second = 1795000021, 1795000027
	w := index.FleetRow{ProfileID: id, Host: "h9", WallSecond: index.Rollup([]index.WallSecond{sec, other}, index.Tens)[0]}
	want := append(slices.Clone(written), w)
	if rowsText(sortRows(built)) != rowsText(sortRows(want)) {
		t.Fatalf("the migration built:\n%s\nwant what ingest wrote:\n%s", rowsText(built), rowsText(want))
	}
	var samples int32
	var c, ic []byte
	if err := pool.QueryRow(ctx, `SELECT samples, cells, idle_cells FROM fleet_tens WHERE profile_id = $1`, id).Scan(&samples, &c, &ic); err != nil {
		t.Fatal(err)
	}
	if samples != w.Samples || !bytes.Equal(c, index.AppendCells(nil, w.Cells)) || !bytes.Equal(ic, index.AppendCells(nil, w.IdleCells)) {
		t.Fatalf("the wrapped sums: %d samples, cells %x, idle %x; want %d, %x, %x", samples, c, ic, w.Samples, index.AppendCells(nil, w.Cells), index.AppendCells(nil, w.IdleCells))
	}
	exec(t, sqldb, `DELETE FROM fleet_tens WHERE profile_id = $1`, id)
	if got := bytesOf(); got != writtenBytes {
		t.Fatalf("the migration wrote:\n%s\nwant the bytes ingest wrote:\n%s", got, writtenBytes)
	}
}

// migrator is goose's provider of the migrations over pool, and the
// database/sql handle it runs them on (closed when the test ends).
func migrator(t *testing.T, pool *pgxpool.Pool) (*goose.Provider, *sql.DB) {
	t.Helper()
	sqldb := stdlib.OpenDBFromPool(pool)
	t.Cleanup(func() { sqldb.Close() })
	p, err := goose.NewProvider(goose.DialectPostgres, sqldb, migrations.FS, migrations.Options()...)
	if err != nil {
		t.Fatal(err)
	}
	return p, sqldb
}

// fixedCells is cells in the fixed encoding: a big-endian int32 each.
func fixedCells(cells []int32) []byte {
	var b []byte
	for _, c := range cells {
		b = binary.BigEndian.AppendUint32(b, uint32(c))
	}
	return b
}

// poolOf is a pool on db's database.
func poolOf(t *testing.T, db *postgres.DB) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), dbURL(t, db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// TestSecondsCellsMigration: a profile's cells stored as int[] before
// migration 14 read back the same after it (as bytes in the fixed
// encoding), and migrating down restores the arrays; a row written by the
// current code (compact idle cells, its busy cells counted from its
// offsets again by migration 21's down) comes back as arrays too.
func TestSecondsCellsMigration(t *testing.T) {
	ctx := context.Background()
	pool, sqldb, p, db := migratedTo(t, 13, "seconds")
	cells, idle := arrayCells()
	const id = "6f1f4bbe-3bb4-4b0c-9a44-6c8d3c1e2a10"
	exec(t, sqldb, `INSERT INTO tenants (name) VALUES ('acme')`)
	exec(t, sqldb, `INSERT INTO seconds (tenant_id, profile_id, event, second, day, samples, cells, idle_cells, offsets, stacks)
		SELECT id, '`+id+`', 0, 7, '2026-11-28', 3, $1, $2, '', '' FROM tenants`, cells, idle)
	if _, err := p.UpTo(ctx, 14); err != nil {
		t.Fatal(err)
	}
	var tenant int64
	if err := sqldb.QueryRowContext(ctx, `SELECT id FROM tenants`).Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	var c, ic []byte
	if err := sqldb.QueryRowContext(ctx, `SELECT cells AS c, idle_cells AS ic FROM seconds WHERE profile_id = $1`, id).Scan(&c, &ic); err != nil {
		t.Fatal(err)
	}
	got, gotIdle := make([]int32, index.Rows), make([]int32, index.Rows)
	if err := index.ReadCells(got, c); err != nil {
		t.Fatal(err)
	}
	if err := index.ReadCells(gotIdle, ic); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, cells) || !slices.Equal(gotIdle, idle) {
		t.Fatalf("after migrating up: cells %v and idle cells %v, want %v and %v", got, gotIdle, cells, idle)
	}
	if _, err := p.DownTo(ctx, 13); err != nil {
		t.Fatal(err)
	}
	back, idleBack := arraysOf(t, pool, `SELECT cells, idle_cells FROM seconds WHERE profile_id = $1`, id)
	if !slices.Equal(back, cells) || !slices.Equal(idleBack, idle) {
		t.Fatalf("after migrating down: %v and %v, want %v and %v", back, idleBack, cells, idle)
	}
	// (The row's offsets are not its samples', which later migrations'
	// downs count its busy cells from: it goes before they run.)
	exec(t, sqldb, `DELETE FROM seconds WHERE profile_id = $1`, id)

	// The tables of later migrations, which ingest writes too.
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Distribute(ctx); err != nil {
		t.Fatal(err)
	}
	stored, _ := store(t, db, tenant, "shop", "app 1 [000] 1795000000.100000: 1 cpu-clock:\n\t1 f (/bin/app)\n\n")
	newID := stored.ID
	var n int
	if err := sqldb.QueryRowContext(ctx, `SELECT length(idle_cells) FROM seconds WHERE profile_id = $1`, newID).Scan(&n); err != nil || n != 0 {
		t.Fatalf("a one-sample second: %d bytes of idle cells (%v), want none", n, err)
	}
	want := make([]int32, index.Rows)
	want[index.Rows/10] = 1 // 0.1 s into its second
	if _, err := p.DownTo(ctx, 13); err != nil {
		t.Fatal(err)
	}
	back, idleBack = arraysOf(t, pool, `SELECT cells, idle_cells FROM seconds WHERE profile_id = $1`, newID)
	if !slices.Equal(back, want) || !slices.Equal(idleBack, make([]int32, index.Rows)) {
		t.Fatalf("a compact row after migrating down: %v and %v, want %v and zeros", back, idleBack, want)
	}
}

// TestBusyCellsMigration: a second's busy cells, no longer stored from
// migration 21, are its offsets' less its idle cells (index.FillCells);
// migrating down stores them again, counted exactly so, for idle and busy
// samples in several cells; migrating up again drops them.
func TestBusyCellsMigration(t *testing.T) {
	ctx := context.Background()
	_, sqldb, p, db := migratedTo(t, 24, "seconds")
	tenant, err := db.CreateTenant(ctx, "acme", false)
	if err != nil {
		t.Fatal(err)
	}
	// Busy samples at 0.1 s (twice) and 0.55 s, idle ones at 0.1 s and
	// 0.99 s: the swapper in cpu_idle.
	var text strings.Builder
	for _, smp := range []struct {
		at, process, frame string
	}{{"100000", "app", "f"}, {"100500", "app", "f"}, {"100700", "swapper", "cpu_idle"}, {"550000", "app", "g"}, {"990000", "swapper", "cpu_idle"}} {
		fmt.Fprintf(&text, "%s 1 [000] 1795000000.%s: 1 cpu-clock:\n\t1 %s ([kernel.kallsyms])\n\t2 main (/bin/app)\n\n", smp.process, smp.at, smp.frame)
	}
	stored, _ := store(t, db, tenant, "shop", text.String())
	busy, idle := make([]int32, index.Rows), make([]int32, index.Rows)
	busy[5], busy[27] = 2, 1 // rows of 20 ms
	idle[5], idle[49] = 1, 1
	rows, err := db.Cells(ctx, tenant, stored.ID, 0)
	if err != nil || len(rows) != 1 {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if !slices.Equal(rows[0].IdleCells, idle) || rows[0].Cells != nil {
		t.Fatalf("stored: idle cells %v and busy cells %v, want %v and none", rows[0].IdleCells, rows[0].Cells, idle)
	}
	if err := index.FillCells(&rows[0], stored.TimeUnitNanos, stored.Events[0].Period, false); err != nil || !slices.Equal(rows[0].Cells, busy) {
		t.Fatalf("busy cells from the offsets: %v (%v), want %v", rows[0].Cells, err, busy)
	}
	if _, err := p.DownTo(ctx, 20); err != nil {
		t.Fatal(err)
	}
	var c []byte
	if err := sqldb.QueryRowContext(ctx, `SELECT cells FROM seconds WHERE profile_id = $1`, stored.ID).Scan(&c); err != nil {
		t.Fatal(err)
	}
	got := make([]int32, index.Rows)
	if err := index.ReadCells(got, c); err != nil || !slices.Equal(got, busy) {
		t.Fatalf("after migrating down: busy cells %v (%v), want %v", got, err, busy)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := sqldb.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'seconds' AND column_name = 'cells'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("cells after migrating up again: %d columns (%v)", n, err)
	}
}

// TestPackedOffsetsMigration: a row stored with uvarint steps before
// migration 20 reads back the same offsets after it; rows written after
// are packed; migrating down writes those as uvarint steps again, which
// the code before reads.
func TestPackedOffsetsMigration(t *testing.T) {
	ctx := context.Background()
	_, sqldb, p, db := migratedTo(t, 19, "seconds")
	steps := func(us ...uint64) []byte { // offsets as uvarint steps
		var b []byte
		prev := uint64(0)
		for _, u := range us {
			b = binary.AppendUvarint(b, u-prev)
			prev = u
		}
		return b
	}
	offsetsOf := func(tenant int64, id string) (us []uint64, varint bool) {
		t.Helper()
		rows, err := db.Seconds(ctx, tenant, id, 0, 0, -1)
		if err != nil || len(rows) != 1 {
			t.Fatalf("profile %s: %d rows, %v", id, len(rows), err)
		}
		if err := rows[0].Walk(1, func(o, _, _, _ uint64) { us = append(us, o) }); err != nil {
			t.Fatal(err)
		}
		return us, rows[0].VarintOffsets
	}
	const id = "2b7e1f0c-7d3a-4c55-9f0e-5a1d2c3b4e60"
	exec(t, sqldb, `INSERT INTO tenants (name) VALUES ('acme')`)
	exec(t, sqldb, `INSERT INTO seconds (tenant_id, profile_id, event, second, day, samples, cells, idle_cells, offsets, stacks)
		SELECT id, '`+id+`', 0, 0, '2026-11-28', 3, '', '', $1, '\x000000'::bytea FROM tenants`, steps(100, 20100, 40150))
	if _, err := p.Up(ctx); err != nil { // (the store reads the latest schema)
		t.Fatal(err)
	}
	var tenant int64
	if err := sqldb.QueryRowContext(ctx, `SELECT id FROM tenants`).Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	if us, varint := offsetsOf(tenant, id); !slices.Equal(us, []uint64{100, 20100, 40150}) || !varint {
		t.Fatalf("a row stored before: offsets %v (uvarint steps %v), want [100 20100 40150] as uvarint steps", us, varint)
	}

	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Distribute(ctx); err != nil {
		t.Fatal(err)
	}
	// 99 Hz, give or take a few microseconds
	var text strings.Builder
	var want []uint64
	for i := range uint64(10) {
		want = append(want, 100+i*10101+i%3)
		fmt.Fprintf(&text, "app 1 [000] 1795000000.%06d: 1 cpu-clock:\n\t1 f (/bin/app)\n\n", want[i])
	}
	stored, _ := store(t, db, tenant, "shop", text.String())
	if us, varint := offsetsOf(tenant, stored.ID); !slices.Equal(us, want) || varint {
		t.Fatalf("a row stored after: offsets %v (uvarint steps %v), want %v packed", us, varint, want)
	}
	var packed []byte
	if err := sqldb.QueryRowContext(ctx, `SELECT offsets FROM seconds WHERE profile_id = $1 AND varint_offsets IS NULL`, stored.ID).Scan(&packed); err != nil {
		t.Fatal(err)
	}
	if len(packed) >= len(steps(want...)) {
		t.Fatalf("packed offsets %x: %d bytes, as uvarint steps %d", packed, len(packed), len(steps(want...)))
	}

	// (The row stored before has no profile, which migration 21's down
	// needs for the busy cells it counts: it goes first.)
	exec(t, sqldb, `DELETE FROM seconds WHERE profile_id = $1`, id)
	if _, err := p.DownTo(ctx, 19); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id   string
		want []byte
	}{{stored.ID, steps(want...)}} {
		var got []byte
		if err := sqldb.QueryRowContext(ctx, `SELECT offsets FROM seconds WHERE profile_id = $1`, c.id).Scan(&got); err != nil || !bytes.Equal(got, c.want) {
			t.Fatalf("profile %s after migrating down: offsets %x (%v), want the uvarint steps %x", c.id, got, err, c.want)
		}
	}
	var n int
	if err := sqldb.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'seconds' AND column_name = 'varint_offsets'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("varint_offsets after migrating down: %d columns (%v)", n, err)
	}
}

// TestTenSecondsMigration: migration 22 packs the seconds stored in
// fleet_seconds into their fleet_tens rows, byte for byte what ingest now
// writes, and the seconds read back from them are those; going down makes
// fleet_seconds again with exactly those rows, in the partitions of their
// days. The profiles cross tens and minutes and carry two events and idle
// samples, of two tenants. On Citus the tables are distributed, as a
// deployment's are.
func TestTenSecondsMigration(t *testing.T) {
	ctx := context.Background()
	pool, sqldb, p, db := migratedTo(t, 24, "fleet_tens")
	acme, _ := db.CreateTenant(ctx, "acme", false)
	other, _ := db.CreateTenant(ctx, "other", false)
	if err := db.EnsurePartitions(ctx, time.Now(), 1); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for i := range 400 {
		process, frame := "app", fmt.Sprint("f", i%5)
		if i%7 == 0 {
			process, frame = "swapper", "cpu_idle"
		}
		fmt.Fprintf(&b, "%s 1 [000] %d.%06d: 1 cpu-clock:\n\t1 %s ([kernel.kallsyms])\n\n", process, 1795000000+i/5, (i*7919)%1000000, frame)
	}
	store(t, db, acme, "shop", b.String())
	store(t, db, acme, "shop", epochPerf("cs", "1795000009.999999", "1795000010.000000", "1795000059.999999", "1795000060.000000"))
	store(t, db, other, "shop", epochPerf("cpu-clock", "1795000001.5", "1795000003.25"))
	state := func() string { // every tenant's seconds and tens, as the store reads them, and the tens' bytes
		t.Helper()
		var out strings.Builder
		for _, tenant := range []int64{acme, other} {
			secs, err := db.FleetCells(ctx, tenant, "shop", "", 1794999900, 1795000200)
			if err != nil {
				t.Fatal(err)
			}
			tens, err := db.FleetRollup(ctx, tenant, "shop", "", index.Tens, 1794999900, 1795000200, true)
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&out, "tenant %d seconds:\n%stens:\n%s", tenant, rowsText(sortRows(secs)), rowsText(sortRows(tens)))
		}
		rows, err := pool.Query(ctx, `SELECT tableoid::regclass::text, profile_id::text, event, ten, encode(seconds, 'hex') FROM fleet_tens ORDER BY 2, 3, 4`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			vals, err := rows.Values()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&out, vals...)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	written := state()
	wantSecs := map[int64][]index.FleetRow{}
	for _, tenant := range []int64{acme, other} {
		secs, err := db.FleetCells(ctx, tenant, "shop", "", 1794999900, 1795000200)
		if err != nil || len(secs) == 0 {
			t.Fatalf("tenant %d: %d seconds, %v", tenant, len(secs), err)
		}
		wantSecs[tenant] = secs
	}
	var seconds int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM fleet_tens WHERE seconds <> ''`).Scan(&seconds); err != nil || seconds < 10 {
		t.Fatalf("%d tens with seconds (%v): want the profiles' tens", seconds, err)
	}

	if _, err := p.DownTo(ctx, 21); err != nil {
		t.Fatal(err)
	}
	// fleet_seconds as the code before wrote it: a row per second, in the
	// partition of its day.
	for _, tenant := range []int64{acme, other} {
		want := wantSecs[tenant]
		rows, err := sqldb.QueryContext(ctx, `SELECT profile_id::text, host, event, second, samples, idle, cells, idle_cells,
				tableoid::regclass::text = 'fleet_seconds_' || to_char(day, 'YYYYMMDD')
			FROM fleet_seconds WHERE tenant_id = $1`, tenant)
		if err != nil {
			t.Fatal(err)
		}
		var got []index.FleetRow
		for rows.Next() {
			r := index.FleetRow{WallSecond: index.WallSecond{Cells: make([]int32, index.Rows), IdleCells: make([]int32, index.Rows)}}
			var c, ic []byte
			var inDay bool
			if err := rows.Scan(&r.ProfileID, &r.Host, &r.Event, &r.Second, &r.Samples, &r.Idle, &c, &ic, &inDay); err != nil {
				t.Fatal(err)
			}
			if err := errors.Join(index.ReadCells(r.Cells, c), index.ReadCells(r.IdleCells, ic)); err != nil {
				t.Fatal(err)
			}
			if !inDay {
				t.Errorf("second %d of profile %s: not in the partition of its day", r.Second, r.ProfileID)
			}
			got = append(got, r)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if rowsText(sortRows(got)) != rowsText(sortRows(want)) || len(want) == 0 {
			t.Fatalf("tenant %d: fleet_seconds after migrating down:\n%s\nwant:\n%s", tenant, rowsText(sortRows(got)), rowsText(sortRows(want)))
		}
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	if got := state(); got != written {
		t.Fatalf("after migrating down and up again:\n%s\nwant what ingest wrote:\n%s", got, written)
	}
	var n int
	if err := sqldb.QueryRowContext(ctx, `SELECT count(*) FROM pg_class WHERE relname LIKE 'fleet\_seconds%'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("fleet_seconds after migrating up: %d tables and indexes (%v)", n, err)
	}
}

// TestStackSeqsMigration: migration 23 numbers the stacks stored before it
// and writes each profile's stack list as their numbers, which read back
// as the keys the lists held, in order; a later upload that shares stacks
// keeps their numbers; going down writes the keys back, exactly. On Citus
// the tables are distributed, as a deployment's are.
func TestStackSeqsMigration(t *testing.T) {
	ctx := context.Background()
	pool, sqldb, p, db := migratedTo(t, 24, "profile_stacks")
	acme, _ := db.CreateTenant(ctx, "acme", false)
	other, _ := db.CreateTenant(ctx, "other", false)
	a, b, d := []string{"a", "main"}, []string{"b", "main"}, []string{"d", "b", "main"}
	one, _ := store(t, db, acme, "shop", stacksText(100, "one", a, b, a))
	two, _ := store(t, db, acme, "shop", stacksText(200, "two", d, b))
	theirs, _ := store(t, db, other, "shop", stacksText(100, "one", b, d, a))
	profiles := map[string]int64{one.ID: acme, two.ID: acme, theirs.ID: other}
	keysOf := func(db *postgres.DB) map[string][]int64 {
		t.Helper()
		out := map[string][]int64{}
		for id, tenant := range profiles {
			keys, err := db.ProfileStacks(ctx, tenant, id)
			if err != nil || len(keys) == 0 {
				t.Fatalf("profile %s: %v, %v", id, keys, err)
			}
			out[id] = keys
		}
		return out
	}
	want := keysOf(db)

	if _, err := p.DownTo(ctx, 22); err != nil {
		t.Fatal(err)
	}
	for id, keys := range want {
		var got []int64
		if err := pool.QueryRow(ctx, `SELECT stacks FROM profile_stacks WHERE profile_id = $1`, id).Scan(&got); err != nil || !slices.Equal(got, keys) {
			t.Fatalf("profile %s after migrating down: %v (%v), want %v", id, got, err, keys)
		}
	}
	var n int
	if err := sqldb.QueryRowContext(ctx, `SELECT count(*) FROM pg_class WHERE relname IN ('stack_seq', 'stacks_seq')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after migrating down: %d of the sequence and the index (%v)", n, err)
	}

	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	// A fresh replica: numbers are handed out again from the start, and a
	// replica's memory of them is for one numbering (servers migrate at
	// start).
	fresh, err := postgres.Open(ctx, pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if got := keysOf(fresh); !reflect.DeepEqual(got, want) {
		t.Fatalf("after migrating up again: %v, want %v", got, want)
	}
	var stacks int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM stacks WHERE tenant_id = $1`, acme).Scan(&stacks); err != nil {
		t.Fatal(err)
	}
	late, _ := store(t, fresh, acme, "shop", stacksText(300, "three", b, d))
	var after int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM stacks WHERE tenant_id = $1`, acme).Scan(&after); err != nil || after != stacks {
		t.Fatalf("%d stacks after an upload of stacks stored before, want %d (%v)", after, stacks, err)
	}
	keys, err := fresh.ProfileStacks(ctx, acme, late.ID)
	if err != nil || !slices.Equal(keys, []int64{want[two.ID][1], want[two.ID][0]}) {
		t.Fatalf("the later upload's stacks: %v (%v), want b's and d's keys %d and %d", keys, err, want[two.ID][1], want[two.ID][0])
	}
}

// TestZstdRowsMigration: from migration 24 a busy second's offsets and
// stacks are stored compressed (zstd true) and read back as built, a
// quiet second's are not; going down decompresses them in place, byte for
// byte what was read, and drops the column; going up again reads them.
func TestZstdRowsMigration(t *testing.T) {
	ctx := context.Background()
	_, sqldb, p, db := migratedTo(t, 24, "seconds")
	tenant, _ := db.CreateTenant(ctx, "acme", false)
	var busy, quiet strings.Builder
	for i := range 900 {
		fmt.Fprintf(&busy, "app 1 [000] 1795000000.%06d: 1 cpu-clock:\n\tf%d (/bin/app)\n\tmain (/bin/app)\n\n", i*1111+i*i%97, i*i%300)
	}
	for i := range 3 {
		fmt.Fprintf(&quiet, "app 1 [000] 1795000000.%06d: 1 cpu-clock:\n\tf%d (/bin/app)\n\n", i*10101, i)
	}
	b, _ := store(t, db, tenant, "shop", busy.String())
	q, _ := store(t, db, tenant, "shop", quiet.String())
	type stored struct {
		offsets, stacks []byte
		zstd            sql.NullBool
	}
	raw := func(id string) (s stored) {
		t.Helper()
		if err := sqldb.QueryRowContext(ctx, `SELECT offsets, stacks, zstd FROM seconds WHERE profile_id = $1`, id).Scan(&s.offsets, &s.stacks, &s.zstd); err != nil {
			t.Fatal(err)
		}
		return s
	}
	read := func(id string, samples int32) index.Second {
		t.Helper()
		rows, err := db.Seconds(ctx, tenant, id, 0, 0, -1)
		if err != nil || len(rows) != 1 || rows[0].Samples != samples {
			t.Fatalf("profile %s: %d rows, %v", id, len(rows), err)
		}
		n := int32(0)
		if err := rows[0].Walk(1, func(_, _, _, _ uint64) { n++ }); err != nil || n != samples {
			t.Fatalf("profile %s: %d samples walked of %d (%v)", id, n, samples, err)
		}
		return rows[0]
	}
	plain := read(b.ID, 900)
	if s := raw(b.ID); !s.zstd.Valid || !s.zstd.Bool || len(s.offsets)+len(s.stacks) >= len(plain.Offsets)+len(plain.Stacks) {
		t.Fatalf("the busy second: zstd %v, %d bytes stored of %d", s.zstd, len(s.offsets)+len(s.stacks), len(plain.Offsets)+len(plain.Stacks))
	}
	quietRow := read(q.ID, 3)
	if s := raw(q.ID); s.zstd.Valid || !bytes.Equal(s.offsets, quietRow.Offsets) {
		t.Fatalf("the quiet second: zstd %v", s.zstd)
	}

	if _, err := p.DownTo(ctx, 23); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]index.Second{b.ID: plain, q.ID: quietRow} {
		var offsets, stacks []byte
		if err := sqldb.QueryRowContext(ctx, `SELECT offsets, stacks FROM seconds WHERE profile_id = $1`, id).Scan(&offsets, &stacks); err != nil ||
			!bytes.Equal(offsets, want.Offsets) || !bytes.Equal(stacks, want.Stacks) {
			t.Fatalf("profile %s after migrating down: not the rows read before (%v)", id, err)
		}
	}
	var n int
	if err := sqldb.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns WHERE table_name = 'seconds' AND column_name = 'zstd'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("zstd after migrating down: %d columns (%v)", n, err)
	}
	if _, err := p.UpTo(ctx, 24); err != nil {
		t.Fatal(err)
	}
	if got := read(b.ID, 900); !bytes.Equal(got.Offsets, plain.Offsets) || !bytes.Equal(got.Stacks, plain.Stacks) {
		t.Fatal("after migrating up again: the busy second differs")
	}
}
