package postgres_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/perf"
	"github.com/fleetscope/fleetscope/store/index"
	"github.com/fleetscope/fleetscope/store/postgres"
)

// storeSpan writes a profile of app on host that spans [start, start+dur]
// (unix ns), as ingest places one: timed (its first second's start shifted
// to start, to the nanosecond) or untimed (its recorded span; Postgres
// keeps the start to the microsecond).
func storeSpan(t *testing.T, db *postgres.DB, tenant int64, app, host string, timed bool, start, dur int64) *fleetscope.ProfileInfo {
	t.Helper()
	text := sample + "# " + host + "\n" // bytes of its own
	b := index.NewBuilder()
	prof, err := perf.Parse(strings.NewReader(text), func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
		return b.Add(batch)
	})
	if err != nil {
		t.Fatal(err)
	}
	ix, err := b.Build(prof.Dict.Idle, prof.Dict.Events(), nil)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(text))
	info := &fleetscope.ProfileInfo{App: app, Host: host, Format: "perf", Samples: int64(prof.Samples), Timed: timed,
		StartSecond: ix.StartSecond, DurationNanos: dur, TimeUnitNanos: ix.TimeUnitNanos,
		StartTime: time.Unix(0, start), EndTime: time.Unix(0, start+dur), TimeSource: "span",
		BlobKey: fmt.Sprintf("%d/%x", tenant, sum)}
	if timed {
		info.TimeSource = "realtime"
		info.WallShiftNanos = start - ix.StartSecond*1e9
	}
	for _, e := range ix.Events {
		info.Events = append(info.Events, fleetscope.EventInfo{Name: e.Name, Samples: e.Samples, Period: e.Period})
	}
	out, created, err := db.InsertProfile(context.Background(), tenant, info, sum[:], prof.Dict, ix, nil)
	if err != nil || !created {
		t.Fatalf("store %s: created %v, %v", host, created, err)
	}
	return out
}

// TestFleetWindowSelection: the profiles a fleet window [from, to) selects
// are exactly those whose span overlaps it, decided to the nanosecond (a
// profile ending exactly at from is in, one starting exactly at to is out),
// whatever their length: from none to many days, at (and a nanosecond
// either side of) the bound of every span class of the time index
// (migration 00010), timed (placed to the nanosecond) and untimed alike. FleetProfiles and
// FleetLabelSets (one app, and every app) are checked against the overlap
// computed over every stored profile, at each profile's edges and in
// random windows.
func TestFleetWindowSelection(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	acme, _ := db.CreateTenant(ctx, "acme", false)
	other, _ := db.CreateTenant(ctx, "other", false)
	const s = int64(1795000000e9)
	ref := s + 60*24*3600e9 // profiles end here, or start 7 s after
	durations := []int64{0, 20e6, 59_990e6, 60e9, 3 * 3600e9, 50 * 24 * 3600e9}
	for k := range postgres.SpanClasses - 1 { // each class's bound, and a nanosecond either side
		b := postgres.SpanBound(k)
		durations = append(durations, b-1, b, b+1)
	}
	var all []*fleetscope.ProfileInfo
	for i, d := range durations {
		timed := i%2 == 0
		all = append(all,
			storeSpan(t, db, acme, "shop", fmt.Sprintf("end-%d", i), timed, ref-d, d),
			storeSpan(t, db, acme, "shop", fmt.Sprintf("start-%d", i), !timed, ref+7e9, d))
	}
	// The generated span class is the first whose bound holds the duration.
	c := conn(t, db)
	for _, p := range all {
		var got int
		if err := c.QueryRow(ctx, `SELECT span_class FROM profiles WHERE id = $1`, p.ID).Scan(&got); err != nil {
			t.Fatal(err)
		}
		want := 0
		for want < postgres.SpanClasses-1 && p.DurationNanos > postgres.SpanBound(want) {
			want++
		}
		if got != want {
			t.Errorf("%s (%d ns): span class %d, want %d", p.Host, p.DurationNanos, got, want)
		}
	}
	// Another app and another tenant, in the same time.
	storeSpan(t, db, acme, "cart", "cart-1", true, ref-30e9, 60e9)
	storeSpan(t, db, other, "shop", "other-1", true, ref-30e9, 60e9)

	check := func(what string, from, to int64) []string {
		t.Helper()
		var want []string
		for _, p := range all {
			if start, end := fleetscope.WallSpan(p); start < to && end >= from {
				want = append(want, p.Host)
			}
		}
		slices.Sort(want)
		ps, err := db.FleetProfiles(ctx, acme, "shop", nil, nil, from, to, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.Host)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s [%d, %d): FleetProfiles selects %v, want %v", what, from, to, got, want)
		}
		for _, app := range []string{"shop", ""} {
			sets, err := db.FleetLabelSets(ctx, acme, app, from, to, 1000)
			if err != nil {
				t.Fatal(err)
			}
			var hosts []string
			for _, ls := range sets {
				if ls.App == "shop" {
					hosts = append(hosts, ls.Host)
				}
			}
			slices.Sort(hosts)
			if !slices.Equal(hosts, want) {
				t.Errorf("%s [%d, %d): FleetLabelSets of app %q lists the hosts %v, want %v", what, from, to, app, hosts, want)
			}
		}
		return got
	}
	const w = int64(20e6) // a 20-ms window
	for _, p := range all {
		start, end := fleetscope.WallSpan(p)
		for _, c := range []struct {
			what     string
			from, to int64
			in       bool
		}{
			{"ends at from", end, end + w, true},
			{"ends a nanosecond before from", end + 1, end + 1 + w, false},
			{"starts at to", start - w, start, false},
			{"starts a nanosecond before to", start - w, start + 1, true},
		} {
			got := check(p.Host+" "+c.what, c.from, c.to)
			if slices.Contains(got, p.Host) != c.in {
				t.Errorf("%s %s [%d, %d): selected %v, want %v", p.Host, c.what, c.from, c.to, !c.in, c.in)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		from := s + rng.Int64N(ref-s+30e9)
		size := []int64{1, w, 1e9, 60e9, 3600e9, 10 * 24 * 3600e9}[rng.IntN(6)]
		check("random", from, from+1+rng.Int64N(size))
	}
}

// TestFleetWindowUsesTheTimeIndex: a 20-ms window in an app with 6,000
// one-minute profiles (10 hosts, 10 hours) and a few day-long ones, beside
// 10 other apps of the same hours, reads
// a few dozen index entries, not the app's history: every scan of
// profiles is an index scan, the time index among them, and together they
// return few rows (EXPLAIN ANALYZE, run as the tenant as the store runs
// it: row-level security decides which conditions an index may take).
// Before the index, the same window read the 3,000 profiles that end
// after it. On Citus (make test-citus) the plan is the worker's.
func TestFleetWindowUsesTheTimeIndex(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	acme, _ := db.CreateTenant(ctx, "acme", false)
	other, _ := db.CreateTenant(ctx, "other", false)
	c := conn(t, db)
	const base = 1795000000
	insert := func(tenant int64, app string, hosts, count, every, seconds int) {
		t.Helper()
		if _, err := c.Exec(ctx, `INSERT INTO profiles (tenant_id, id, sha256, app, host, format, events, default_event, samples, timed,
				start_second, duration_nanos, time_unit_nanos, start_time, end_time, time_source, size_bytes, blob_key, day)
			SELECT $1, gen_random_uuid(), sha256(convert_to($2 || '/' || h || '/' || m || '/' || $5::int, 'UTF8')), $2, 'host-' || h, 'perf',
				'[{"name": "cpu-clock"}]', 0, 1, false, 0, $5::bigint * 1000000000, 1000,
				to_timestamp($6 + m * $4), to_timestamp($6 + m * $4 + $5), 'span', 1, 'k', '2026-11-28'
			FROM generate_series(1, $3) h, generate_series(0, $7 - 1) m`,
			tenant, app, hosts, every, seconds, base, count); err != nil {
			t.Fatal(err)
		}
	}
	insert(acme, "big", 10, 600, 60, 60) // 10 hosts × 10 h of one-minute profiles
	insert(acme, "big", 5, 1, 0, 86400)  // and 5 whole days, from the same start
	for i := range 10 {                  // other apps, at the same time
		insert(acme, fmt.Sprintf("app-%d", i), 2, 600, 60, 60)
	}
	insert(other, "big", 10, 600, 60, 60) // another tenant's, the same
	if _, err := c.Exec(ctx, `ANALYZE profiles`); err != nil {
		t.Fatal(err)
	}
	from := int64(base+5*3600)*1e9 + 10e6 // mid-way, 10 ms into a second
	to := from + 20e6
	for _, q := range []struct {
		what string
		sql  string
		args []any
	}{
		{what: "FleetProfiles"}, {what: "FleetLabelSets of the app"}, {what: "FleetLabelSets of every app"},
	} {
		switch q.what {
		case "FleetProfiles":
			q.sql, q.args = postgres.FleetProfilesQuery(acme, "big", nil, nil, from, to, 20000)
		case "FleetLabelSets of the app":
			q.sql, q.args = postgres.FleetLabelSetsQuery(acme, "big", from, to, 1000)
		default:
			q.sql, q.args = postgres.FleetLabelSetsQuery(acme, "", from, to, 1000)
		}
		var plan []byte
		err := db.ReadTenant(ctx, acme, func(rows pgx.Rows) error {
			for rows.Next() {
				if err := rows.Scan(&plan); err != nil {
					return err
				}
			}
			return nil
		}, `EXPLAIN (ANALYZE, FORMAT JSON) `+q.sql, q.args...)
		if err != nil {
			t.Fatal(err)
		}
		var root any
		if err := json.Unmarshal(plan, &root); err != nil {
			t.Fatal(err)
		}
		read, used := 0.0, false
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case []any:
				for _, e := range v {
					walk(e)
				}
			case map[string]any:
				node, _ := v["Node Type"].(string)
				rel, _ := v["Relation Name"].(string)
				idx, _ := v["Index Name"].(string)
				num := func(k string) float64 { f, _ := v[k].(float64); return f }
				switch {
				case node == "Seq Scan" && strings.HasPrefix(rel, "profiles"):
					t.Errorf("%s: a sequential scan of %s", q.what, rel)
				case strings.HasPrefix(idx, "profiles") && node != "Bitmap Index Scan":
					read += (num("Actual Rows") + num("Rows Removed by Filter")) * max(num("Actual Loops"), 1)
				case strings.HasPrefix(idx, "profiles"):
					read += num("Actual Rows") * max(num("Actual Loops"), 1)
				}
				if strings.HasPrefix(idx, "profiles_app_span") || strings.HasPrefix(idx, "profiles_span") {
					used = true // the time index (on Citus, a shard's: its name suffixed)
				}
				for _, e := range v {
					walk(e)
				}
			}
		}
		walk(root)
		t.Logf("%s: %.0f index entries read", q.what, read)
		if !used || read == 0 || read > 100 {
			t.Errorf("%s: %.0f index entries read (want a few dozen of the app's 6,005 profiles), the time index used: %v\n%s", q.what, read, used, plan)
		}
	}
}

// TestSpanClassMigration: profiles stored before migration 10 get their
// span class when it adds the column, and a window finds them through it
// (once migrated to the latest); migrating down drops it. On Citus (make test-citus) the tables are
// distributed first, as a deployment's were before this migration.
func TestSpanClassMigration(t *testing.T) {
	ctx := context.Background()
	_, sqldb, p, db := migratedTo(t, 9, "profiles")
	exec(t, sqldb, `INSERT INTO tenants (name) VALUES ('acme')`)
	var tenant int64
	if err := sqldb.QueryRowContext(ctx, `SELECT id FROM tenants`).Scan(&tenant); err != nil {
		t.Fatal(err)
	}
	// Profiles ending at 1795000000 s, of 0 s, 1 s and a nanosecond more,
	// a minute, a day and 20 days.
	const end = 1795000000
	durations := []int64{0, 1e9, 1e9 + 1, 60e9, 86400e9, 20 * 86400e9}
	for i, d := range durations {
		exec(t, sqldb, `INSERT INTO profiles (tenant_id, id, sha256, app, host, format, events, default_event, samples, timed,
				start_second, duration_nanos, time_unit_nanos, start_time, end_time, time_source, size_bytes, blob_key, day)
			VALUES ($1, gen_random_uuid(), sha256(convert_to($2, 'UTF8')), 'shop', $2, 'perf', '[]', 0, 1, false,
				0, $3::bigint, 1000, to_timestamp($4::bigint - $3::bigint / 1e9), to_timestamp($4), 'span', 1, 'k', '2026-11-28')`,
			tenant, fmt.Sprint("host-", i), d, end)
	}
	if _, err := p.UpTo(ctx, 10); err != nil {
		t.Fatal(err)
	}
	rows, err := sqldb.QueryContext(ctx, `SELECT span_class FROM profiles ORDER BY duration_nanos`)
	if err != nil {
		t.Fatal(err)
	}
	var classes []int
	for rows.Next() {
		var k int
		if err := rows.Scan(&k); err != nil {
			t.Fatal(err)
		}
		classes = append(classes, k)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if want := []int{0, 0, 1, 3, 9, 11}; !slices.Equal(classes, want) {
		t.Fatalf("span classes after migrating up: %v, want %v", classes, want)
	}
	if _, err := p.Up(ctx); err != nil { // the store reads the latest schema
		t.Fatal(err)
	}
	ps, err := db.FleetProfiles(ctx, tenant, "shop", nil, nil, end*1e9, end*1e9+20e6, 100)
	if err != nil || len(ps) != len(durations) {
		t.Fatalf("a window at the profiles' end selects %d profiles, want %d: %v", len(ps), len(durations), err)
	}
	if _, err := p.DownTo(ctx, 9); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := sqldb.QueryRowContext(ctx, `SELECT count(*) FROM pg_attribute WHERE attrelid = 'profiles'::regclass AND attname = 'span_class' AND NOT attisdropped`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("span_class after migrating down: %d columns, %v", n, err)
	}
}
