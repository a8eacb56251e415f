package postgres_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/perf"
	"github.com/fleetscope/fleetscope/store/index"
	"github.com/fleetscope/fleetscope/store/postgres"
	"github.com/fleetscope/fleetscope/store/postgres/pgtest"
)

const sample = `java 4242 [000] 100.250000: cpu-clock:pppH: 
	400000 Lcom/acme/A;::run+0x10 (/tmp/perf-4242.map)
	400100 start_thread+0x11 (/usr/lib/libc.so.6)

swapper     0 [001] 100.500000: cpu-clock:pppH: 
	ffffffff81000000 native_safe_halt+0x10 ([kernel.kallsyms])
	ffffffff81001000 do_idle+0x11 ([kernel.kallsyms])

java 4242 [000] 101.750000: cpu-clock:pppH: 
	400000 Lcom/acme/A;::run+0x10 (/tmp/perf-4242.map)
	400100 start_thread+0x11 (/usr/lib/libc.so.6)

`

// store parses text and writes it for tenant, as ingest does.
func store(t *testing.T, db *postgres.DB, tenant int64, app, text string) (*fleetscope.ProfileInfo, bool) {
	t.Helper()
	return storeWith(t, db, tenant, app, text, nil)
}

// storeWith is store with InsertProfile's beforeCommit.
func storeWith(t *testing.T, db *postgres.DB, tenant int64, app, text string, beforeCommit func() error) (*fleetscope.ProfileInfo, bool) {
	t.Helper()
	out, created, err := insertText(db, tenant, app, text, beforeCommit)
	if err != nil {
		t.Fatal(err)
	}
	return out, created
}

// insertText parses a perf script and inserts it (any goroutine).
func insertText(db *postgres.DB, tenant int64, app, text string, beforeCommit func() error) (*fleetscope.ProfileInfo, bool, error) {
	b := index.NewBuilder()
	prof, err := perf.Parse(strings.NewReader(text), func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
		return b.Add(batch)
	})
	if err != nil {
		return nil, false, err
	}
	ix, err := b.Build(prof.Dict.Idle, prof.Dict.Events(), nil)
	if err != nil {
		return nil, false, err
	}
	sum := sha256.Sum256([]byte(text))
	info := &fleetscope.ProfileInfo{App: app, Format: "perf", Samples: int64(prof.Samples), Timed: ix.Timed,
		StartSecond: ix.StartSecond, DurationNanos: ix.LastNanos - ix.StartSecond*1e9, TimeUnitNanos: ix.TimeUnitNanos,
		StartTime: time.Unix(1795000000, 0), EndTime: time.Unix(1795000002, 0), TimeSource: "upload",
		BlobKey: fmt.Sprintf("%d/%x", tenant, sum)}
	for _, e := range ix.Events {
		info.Events = append(info.Events, fleetscope.EventInfo{Name: e.Name, Samples: e.Samples, Period: e.Period})
	}
	return db.InsertProfile(context.Background(), tenant, info, sum[:], prof.Dict, ix, beforeCommit)
}

func TestInsertIsIdempotentAndRoundTrips(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	acme, err := db.CreateTenant(ctx, "acme", false)
	if err != nil {
		t.Fatal(err)
	}
	p1, created := store(t, db, acme, "api", sample)
	if !created {
		t.Fatal("first insert not created")
	}
	p2, created := store(t, db, acme, "api", sample)
	if created || p2.ID != p1.ID {
		t.Fatalf("second insert of the same bytes: created=%v id %s, want the first profile %s", created, p2.ID, p1.ID)
	}
	// The same stacks in a second profile reuse the tenant dictionary.
	store(t, db, acme, "api", sample+"# other bytes\n")
	var frames, stacks int
	conn(t, db).QueryRow(ctx, `SELECT (SELECT count(*) FROM frames), (SELECT count(*) FROM stacks)`).Scan(&frames, &stacks)
	if frames != 6 || stacks != 2 {
		t.Fatalf("dictionary has %d frames and %d stacks, want 6 and 2 (deduplicated across profiles)", frames, stacks)
	}
	d, err := db.Dict(ctx, acme, p1)
	if err != nil {
		t.Fatal(err)
	}
	secs, err := db.Seconds(ctx, acme, p1.ID, 0, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	threads, err := db.Threads(ctx, acme, p1.ID)
	if err != nil {
		t.Fatal(err)
	}
	// Where each sample ran, as the parser saw it (in time order).
	var want []fleetscope.Thread
	if _, err := perf.Parse(strings.NewReader(sample), func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
		for _, s := range batch {
			want = append(want, s.Thread())
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(threads) != 2 {
		t.Fatalf("stored threads %v, want the 2 distinct ones of %v", threads, want)
	}
	var got []string
	var ran []fleetscope.Thread
	for i := range secs {
		batch, err := index.Decode(nil, &secs[i], p1.StartSecond, p1.TimeUnitNanos, true, 1, threads, d.NumStacks())
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range batch {
			ran = append(ran, s.Thread())
			var names []string
			for _, f := range d.StackFrames(s.Stack) {
				names = append(names, d.FrameAt(f).Name)
			}
			got = append(got, fmt.Sprintf("%s %s idle=%v", fleetscope.FormatSeconds(s.TimeNanos), strings.Join(names, ";"), d.Idle(s.Stack)))
		}
	}
	if !slices.Equal(ran, want) {
		t.Fatalf("decoded threads %v, want %v", ran, want)
	}
	wantText := []string{
		"100.250000 java;start_thread;com/acme/A:::run idle=false",
		"100.500000 swapper;do_idle;native_safe_halt idle=true",
		"101.750000 java;start_thread;com/acme/A:::run idle=false",
	}
	if strings.Join(got, "\n") != strings.Join(wantText, "\n") {
		t.Fatalf("decoded samples:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(wantText, "\n"))
	}
}

func conn(t *testing.T, db *postgres.DB) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dbURL(t, db))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

var urls = map[*postgres.DB]string{}

func dbURL(t *testing.T, db *postgres.DB) string { return urls[db] }

func newDB(t *testing.T) *postgres.DB {
	url := pgtest.NewURL(t)
	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	urls[db] = url
	return db
}

// TestRowLevelSecurity proves the second wall on every table that holds a
// tenant's rows (found in the catalog: every table with a tenant_id column,
// so a new one cannot be forgotten): RLS is on with a policy; a query run
// as the tenant role that forgets its tenant filter still sees only that
// tenant's rows, and without the tenant setting it sees nothing at all;
// as one tenant, writing another's rows (insert, move, update, delete) is
// refused on every such table.
func TestRowLevelSecurity(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	a, _ := db.CreateTenant(ctx, "a", false)
	b, _ := db.CreateTenant(ctx, "b", false)
	// A row of each tenant in every table: profiles, dictionary, seconds,
	// keys, share links and the audit log.
	for _, tenant := range []int64{a, b} {
		p, _ := store(t, db, tenant, fmt.Sprint("app", tenant), sample+strings.Repeat("\n", int(tenant)))
		if _, _, err := db.NewKey(ctx, tenant, fleetscope.KeyOptions{Scopes: []string{"read"}, Actor: "test"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := db.CreateShareLink(ctx, tenant, fleetscope.ShareLink{ProfileID: p.ID, CreatedBy: "test", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		if _, err := db.AppendLiveSegment(ctx, tenant, "stream", 0, p.ID, fleetscope.LiveStream{App: "live"}); err != nil {
			t.Fatal(err)
		}
		b := index.StackBucket{Host: "h", Bucket: 600, Keys: []int64{tenant}, Counts: []uint64{1}, Weights: []uint64{1}}
		if err := db.PutFleetStackBuckets(ctx, tenant, "app", "cycles", []index.StackBucket{b}); err != nil {
			t.Fatal(err)
		}
		b.Bucket, b.Version = 3600, 1
		if err := db.PutFleetStackRollups(ctx, tenant, "app", "cycles", index.HourSeconds, []index.StackBucket{b}); err != nil {
			t.Fatal(err)
		}
	}
	c := conn(t, db)
	// A deleted profile leaves its tenant a dictionaries row; a pin is an
	// upload's while a reclaim is under way (written here directly).
	for _, tenant := range []int64{a, b} {
		p, _ := store(t, db, tenant, "gone", sample+"# deleted\n"+strings.Repeat("\n", int(tenant)))
		if _, err := db.DeleteProfile(ctx, tenant, p.ID, "test"); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Exec(ctx, `INSERT INTO dictionary_pins (tenant_id, profile_id, stacks, frames) VALUES ($1, $2, '{}', '{}')`, tenant, p.ID); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := c.Query(ctx, `SELECT c.relname, c.relrowsecurity, EXISTS (SELECT FROM pg_policy p WHERE p.polrelid = c.oid)
		FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition
		  AND EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped)
		ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var name string
		var rls, policy bool
		if err := rows.Scan(&name, &rls, &policy); err != nil {
			t.Fatal(err)
		}
		if !rls || !policy {
			t.Errorf("table %s holds tenants' rows but has row-level security %v, a policy %v", name, rls, policy)
		}
		tables = append(tables, name)
	}
	if len(tables) < 8 {
		t.Fatalf("only %d tenant tables found: %v", len(tables), tables)
	}
	t.Logf("tenant tables: %v", tables)
	count := func(setting string) map[string]int {
		out := map[string]int{}
		err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if setting != "" {
				if err := setTenant(ctx, tx, setting); err != nil {
					return err
				}
			}
			if _, err := tx.Exec(ctx, `SET LOCAL ROLE fleetscope_tenant`); err != nil {
				return err
			}
			for _, table := range tables {
				var n int
				if err := tx.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil { // no tenant filter
					return err
				}
				out[table] = n
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for table, n := range count("") {
		if n != 0 {
			t.Errorf("without a tenant setting, %s shows %d rows", table, n)
		}
	}
	onlyA := count(fmt.Sprint(a))
	for _, table := range tables {
		var n int
		c.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()+` WHERE tenant_id = $1`, a).Scan(&n)
		if onlyA[table] != n || n == 0 {
			t.Errorf("as tenant a, unfiltered %s shows %d rows; a owns %d", table, onlyA[table], n)
		}
	}
	// Writing another tenant's rows is refused too, on every table: as
	// tenant a, a copy of one of a's rows given to b, and a's own rows moved
	// to b, are refused by the policy's WITH CHECK (before any unique or
	// foreign key constraint is looked at); b's rows cannot be updated or
	// deleted (the policy hides them: 0 rows).
	ownedByB := func() map[string]int {
		out := map[string]int{}
		for _, table := range tables {
			var n int
			if err := c.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()+` WHERE tenant_id = $1`, b).Scan(&n); err != nil {
				t.Fatal(err)
			}
			out[table] = n
		}
		return out
	}
	before := ownedByB()
	asA := func(sql string) (int64, error) {
		var n int64
		err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			if err := setTenant(ctx, tx, fmt.Sprint(a)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `SET LOCAL ROLE fleetscope_tenant`); err != nil {
				return err
			}
			tag, err := tx.Exec(ctx, sql)
			n = tag.RowsAffected()
			return err
		})
		return n, err
	}
	for _, table := range tables {
		id := pgx.Identifier{table}.Sanitize()
		var cols string // the columns a row is written with (not generated ones)
		if err := c.QueryRow(ctx, `SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) FROM pg_attribute
			WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attgenerated = ''`, table).Scan(&cols); err != nil {
			t.Fatal(err)
		}
		for what, sql := range map[string]string{
			"inserting a copy of a's row for b": fmt.Sprintf(`INSERT INTO %[1]s (%[3]s)
				SELECT %[3]s FROM (SELECT (jsonb_populate_record(NULL::%[1]s, to_jsonb(r) || jsonb_build_object('tenant_id', %[2]d::bigint))).*
				FROM %[1]s r LIMIT 1) x ON CONFLICT DO NOTHING`, id, b, cols), // (Citus sends an INSERT ... SELECT without ON CONFLICT as a COPY, which RLS refuses outright)
			"moving a's rows to b": fmt.Sprintf(`UPDATE %s SET tenant_id = %d`, id, b),
		} {
			n, err := asA(sql)
			var pgErr *pgconn.PgError
			rls := errors.As(err, &pgErr) && pgErr.Code == "42501" && strings.Contains(pgErr.Message, "row-level security")
			// Citus refuses to change a row's distribution column before
			// the policy is looked at (the copy still meets the policy).
			citus := pgErr != nil && pgErr.Code == "0A000" && strings.Contains(pgErr.Message, "partition value")
			if !rls && !(citus && strings.HasPrefix(what, "moving")) {
				t.Errorf("%s: as tenant a, %s: %d rows, %v; want a row-level security violation", table, what, n, err)
			}
		}
		for what, sql := range map[string]string{
			"updating b's rows": fmt.Sprintf(`UPDATE %s SET tenant_id = tenant_id WHERE tenant_id = %d`, id, b),
			"deleting b's rows": fmt.Sprintf(`DELETE FROM %s WHERE tenant_id = %d`, id, b),
		} {
			if n, err := asA(sql); err != nil || n != 0 {
				t.Errorf("%s: as tenant a, %s: %d rows, %v; want 0 rows", table, what, n, err)
			}
		}
	}
	if after := ownedByB(); !maps.Equal(after, before) {
		t.Errorf("b's rows before tenant a's writes: %v, after: %v", before, after)
	}
	// And through the store: tenant b cannot read a's profile.
	pa, _ := store(t, db, a, "api", sample)
	if _, err := db.Profile(ctx, b, pa.ID); fleetscope.ErrorCode(err) != fleetscope.ENOTFOUND {
		t.Fatalf("tenant b reading a's profile: %v, want not found", err)
	}
	if secs, err := db.Seconds(ctx, b, pa.ID, 0, 0, -1); err != nil || len(secs) != 0 {
		t.Fatalf("tenant b reading a's seconds: %d rows, %v", len(secs), err)
	}
}

// setTenant sets the tenant as the store does (SET LOCAL, which Citus
// forwards to the workers, where the policies read it).
func setTenant(ctx context.Context, tx pgx.Tx, tenant string) error {
	if _, err := tx.Exec(ctx, `SET LOCAL citus.propagate_set_commands TO local`); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `SET LOCAL fleetscope.tenant_id TO '`+strings.ReplaceAll(tenant, "'", "''")+`'`)
	return err
}

func TestKeysAndSearch(t *testing.T) {
	ctx := context.Background()
	db := pgtest.New(t)
	if _, err := db.CreateTenant(ctx, "Bad Name", false); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
		t.Fatalf("bad tenant name: %v", err)
	}
	id, _ := db.CreateTenant(ctx, "acme", false)
	if _, err := db.CreateTenant(ctx, "acme", false); fleetscope.ErrorCode(err) != fleetscope.ECONFLICT {
		t.Fatalf("duplicate tenant: %v", err)
	}
	if again, err := db.CreateTenant(ctx, "acme", true); err != nil || again != id {
		t.Fatalf("if-not-exists: %d %v, want %d", again, err, id)
	}
	secret, err := db.CreateKey(ctx, "acme", []string{"read"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := db.Authenticate(ctx, secret)
	if err != nil || p.TenantID != id || !p.Can("read") || p.Can("ingest") {
		t.Fatalf("authenticate: %+v %v", p, err)
	}
	for _, bad := range []string{"", "fsk_", secret + "x", strings.Replace(secret, "fsk_", "fsx_", 1)} {
		if _, err := db.Authenticate(ctx, bad); fleetscope.ErrorCode(err) != fleetscope.EUNAUTHENTICATED {
			t.Errorf("key %q: %v, want unauthenticated", bad, err)
		}
	}
	if _, err := db.CreateKey(ctx, "acme", []string{"root"}); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
		t.Fatalf("bad scope: %v", err)
	}
	for i := range 5 {
		store(t, db, id, fmt.Sprintf("app%d", i%2), sample+strings.Repeat("\n", i+1))
	}
	var seen []string
	tok := ""
	for {
		page, next, err := db.Search(ctx, id, fleetscope.ProfileFilter{PageSize: 2, PageToken: tok})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range page {
			seen = append(seen, p.ID)
		}
		if tok = next; tok == "" {
			break
		}
	}
	if len(seen) != 5 {
		t.Fatalf("paged search found %d profiles, want 5", len(seen))
	}
	if page, _, _ := db.Search(ctx, id, fleetscope.ProfileFilter{App: "app1"}); len(page) != 2 {
		t.Fatalf("search app1: %d, want 2", len(page))
	}
	if page, _, _ := db.Search(ctx, id, fleetscope.ProfileFilter{Since: time.Unix(1795000003, 0)}); len(page) != 0 {
		t.Fatalf("search since after the end: %d, want 0", len(page))
	}
	if _, _, err := db.Search(ctx, id, fleetscope.ProfileFilter{PageToken: "garbage"}); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
		t.Fatalf("bad page token: %v", err)
	}
}

// TestDictionaryCollisionsAreRefused: a stack whose key is stored with
// other content is a collision, refused with ECONFLICT and nothing stored,
// whether the replica remembers the key (no SQL check then) or not (the
// SQL check).
func TestDictionaryCollisionsAreRefused(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	acme, _ := db.CreateTenant(ctx, "acme", false)
	store(t, db, acme, "api", sample)
	prof, err := perf.Parse(strings.NewReader(sample), func(*fleetscope.Profile, []fleetscope.Sample) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	keys := index.StackKeys(prof.Dict)
	insert := func(db *postgres.DB, text string) error {
		b := index.NewBuilder()
		p, _ := perf.Parse(strings.NewReader(text), func(_ *fleetscope.Profile, batch []fleetscope.Sample) error { return b.Add(batch) })
		ix, _ := b.Build(p.Dict.Idle, p.Dict.Events(), nil)
		sum := sha256.Sum256([]byte(text))
		info := &fleetscope.ProfileInfo{App: "api", Format: "perf", Samples: int64(p.Samples), Timed: true, StartSecond: ix.StartSecond,
			TimeUnitNanos: 1000, StartTime: time.Unix(1795000000, 0), EndTime: time.Unix(1795000002, 0), TimeSource: "upload", BlobKey: "x"}
		for _, e := range ix.Events {
			info.Events = append(info.Events, fleetscope.EventInfo{Name: e.Name, Samples: e.Samples})
		}
		_, _, err := db.InsertProfile(ctx, acme, info, sum[:], p.Dict, ix, nil)
		return err
	}
	// The replica remembers the key with other content.
	db.RememberStack(acme, keys[0], 12345)
	if err := insert(db, sample+"\n"); fleetscope.ErrorCode(err) != fleetscope.ECONFLICT {
		t.Fatalf("a remembered collision: %v, want ECONFLICT", err)
	}
	// Another replica, remembering nothing, finds it in SQL.
	other, err := postgres.Open(ctx, dbURL(t, db))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	c := conn(t, db)
	if _, err := c.Exec(ctx, `UPDATE stacks SET frames = frames || 1::bigint WHERE id = $1`, keys[1]); err != nil {
		t.Fatal(err)
	}
	if err := insert(other, sample+"\n\n"); fleetscope.ErrorCode(err) != fleetscope.ECONFLICT {
		t.Fatalf("a stored collision: %v, want ECONFLICT", err)
	}
	var n int
	c.QueryRow(ctx, `SELECT count(*) FROM profiles`).Scan(&n)
	if n != 1 {
		t.Fatalf("%d profiles after refused collisions, want the first alone", n)
	}
}

// TestReadTenantRefused: a read the server refuses (the query fails after
// BEGIN and the tenant's settings went in the same pipeline) is rolled
// back, and its connection goes back to the pool usable, not dropped.
func TestReadTenantRefused(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewURL(t)
	db, err := postgres.Open(ctx, url+"&pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	pid := func() (p int32) {
		t.Helper()
		err := db.ReadTenant(ctx, 1, func(rows pgx.Rows) error {
			rows.Next()
			return rows.Scan(&p)
		}, `SELECT pg_backend_pid()`)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := pid()
	err = db.ReadTenant(ctx, 1, func(rows pgx.Rows) error {
		for rows.Next() {
		}
		return rows.Err()
	}, `SELECT 1 / (count(*) - count(*)) FROM profiles`)
	if err == nil || !strings.Contains(err.Error(), "division by zero") {
		t.Fatalf("refused read: %v, want division by zero", err)
	}
	if after := pid(); after != before {
		t.Fatalf("the connection was replaced (backend %d, then %d): the failed transaction was not rolled back", before, after)
	}
}

// TestReadTenantRetriesOnANewConnection: a read whose connection was killed
// is retried on a new one, which has none of the old one's prepared
// statements.
func TestReadTenantRetriesOnANewConnection(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewURL(t)
	db, err := postgres.Open(ctx, url+"&pool_max_conns=1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	pid := func() (p int32) {
		t.Helper()
		err := db.ReadTenant(ctx, 1, func(rows pgx.Rows) error {
			rows.Next()
			return rows.Scan(&p)
		}, `SELECT pg_backend_pid()`)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	before := pid() // its statements are now prepared on that connection
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `SELECT pg_terminate_backend($1::int)`, before); err != nil {
		t.Fatal(err)
	}
	if after := pid(); after == before {
		t.Fatalf("still backend %d after it was terminated", after)
	}
}

// TestAfterALostConnectionTheOthersAreChecked: when the database ends every
// session (a restart, or TestFailuresLeaveNothingHalfWritten killing
// backends), the pool's idle connections are all dead; the read that finds
// the first one retries, and the pool must not hand it more dead ones.
func TestAfterALostConnectionTheOthersAreChecked(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewURL(t)
	db, err := postgres.Open(ctx, url+"&pool_max_conns=6")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	read := func() error {
		return db.ReadTenant(ctx, 1, func(rows pgx.Rows) error {
			for rows.Next() {
			}
			return rows.Err()
		}, `SELECT pg_sleep(0.2)`)
	}
	var wg sync.WaitGroup
	for range 6 { // six connections, then idle in the pool
		wg.Add(1)
		go func() { defer wg.Done(); read() }()
	}
	wg.Wait()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n < 4 {
		t.Fatalf("terminated %d sessions, want the pool's six", n)
	}
	for i := range 3 {
		if err := read(); err != nil {
			t.Fatalf("read %d after the sessions ended: %v", i+1, err)
		}
	}
}

// TestStackDict reads stacks back by id in any order: stack i of the
// dictionary is ids[i], with its frames and idleness as parsed, frames
// shared between stacks stored once; a repeated id, an unknown one and
// another tenant's are refused.
func TestStackDict(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	acme, err := db.CreateTenant(ctx, "acme", false)
	if err != nil {
		t.Fatal(err)
	}
	other, err := db.CreateTenant(ctx, "other", false)
	if err != nil {
		t.Fatal(err)
	}
	text := sample + `java 4242 [000] 102.000000: cpu-clock:pppH: 
	400200 Lcom/acme/B;::call+0x1 (/tmp/perf-4242.map)
	400000 Lcom/acme/A;::run+0x10 (/tmp/perf-4242.map)
	400100 start_thread+0x11 (/usr/lib/libc.so.6)

java 4242 [000] 102.500000: cpu-clock:pppH: 
	400300 Lcom/acme/C;::leaf+0x1 (/tmp/perf-4242.map)
	400200 Lcom/acme/B;::call+0x1 (/tmp/perf-4242.map)
	400000 Lcom/acme/A;::run+0x10 (/tmp/perf-4242.map)
	400100 start_thread+0x11 (/usr/lib/libc.so.6)

`
	p, _ := store(t, db, acme, "api", text)
	stack := func(d *fleetscope.Dict, i int) string {
		var names []string
		for _, f := range d.StackFrames(fleetscope.StackID(i)) {
			names = append(names, d.FrameAt(f).Name)
		}
		return fmt.Sprintf("%s idle=%v", strings.Join(names, ";"), d.Idle(fleetscope.StackID(i)))
	}
	ids, err := db.ProfileStacks(ctx, acme, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	inOrder, err := db.Dict(ctx, acme, p)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := range ids {
		want = append(want, stack(inOrder, i))
	}
	slices.Sort(want)
	wantAll := []string{
		"java;start_thread;com/acme/A:::run idle=false",
		"java;start_thread;com/acme/A:::run;com/acme/B:::call idle=false",
		"java;start_thread;com/acme/A:::run;com/acme/B:::call;com/acme/C:::leaf idle=false",
		"swapper;do_idle;native_safe_halt idle=true",
	}
	if !slices.Equal(want, wantAll) {
		t.Fatalf("the profile's stacks:\n%s\nwant:\n%s", strings.Join(want, "\n"), strings.Join(wantAll, "\n"))
	}
	rev := slices.Clone(ids)
	slices.Reverse(rev)
	d, err := db.StackDict(ctx, acme, rev)
	if err != nil {
		t.Fatal(err)
	}
	if d.NumStacks() != len(ids) || d.NumFrames() != 8 {
		t.Fatalf("%d stacks of %d frames, want %d stacks of 8 frames (each stored once)", d.NumStacks(), d.NumFrames(), len(ids))
	}
	for i := range rev {
		if got, want := stack(d, i), stack(inOrder, len(ids)-1-i); got != want {
			t.Errorf("stack %d (id %d): %s, want %s", i, rev[i], got, want)
		}
	}
	for name, bad := range map[string]struct {
		tenant int64
		ids    []int64
		err    string
	}{
		"repeated": {acme, append(slices.Clone(ids), ids[0]), "repeats"},
		"unknown":  {acme, append(slices.Clone(ids), 12345), "missing"},
		"tenant":   {other, ids, "missing"},
	} {
		_, err := db.StackDict(ctx, bad.tenant, bad.ids)
		if err == nil || !strings.Contains(err.Error(), bad.err) || fleetscope.ErrorCode(err) == fleetscope.EUNAVAILABLE {
			t.Errorf("%s: %v (%s), want an error saying %q, not that the database is unavailable", name, err, fleetscope.ErrorCode(err), bad.err)
		}
	}
}

// TestConcurrentMigrate: servers starting together on a new database (a
// deployment's replicas) all migrate it without error: one at a time.
func TestConcurrentMigrate(t *testing.T) {
	url := pgtest.NewURL(t)
	ctx := context.Background()
	const n = 4
	errs := make(chan error, n)
	for range n {
		db, err := postgres.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		go func() { errs <- db.Migrate(ctx) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("a server's migration: %v", err)
		}
	}
}

// TestKeysPerTenantAreBounded: a tenant has at most MaxKeysPerTenant live
// keys; the next is refused as too_large, revoking one makes room again,
// and another tenant is not affected.
func TestKeysPerTenantAreBounded(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	a, _ := db.CreateTenant(ctx, "a", false)
	b, _ := db.CreateTenant(ctx, "b", false)
	var first fleetscope.Key
	for i := range postgres.MaxKeysPerTenant {
		_, k, err := db.NewKey(ctx, a, fleetscope.KeyOptions{Scopes: []string{"read"}, Actor: "test"})
		if err != nil {
			t.Fatalf("key %d: %v", i, err)
		}
		if i == 0 {
			first = k
		}
	}
	_, _, err := db.NewKey(ctx, a, fleetscope.KeyOptions{Scopes: []string{"read"}, Actor: "test"})
	if fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE {
		t.Fatalf("key %d: %v, want too_large", postgres.MaxKeysPerTenant+1, err)
	}
	if _, _, err := db.NewKey(ctx, b, fleetscope.KeyOptions{Scopes: []string{"read"}, Actor: "test"}); err != nil {
		t.Fatalf("another tenant's key: %v", err)
	}
	if err := db.RevokeKey(ctx, a, first.ID, "test"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := db.NewKey(ctx, a, fleetscope.KeyOptions{Scopes: []string{"read"}, Actor: "test"}); err != nil {
		t.Fatalf("a key after a revocation: %v", err)
	}
}

// TestRowsBothWays: a profile's rows go in one INSERT of arrays up to
// 4,096 rows and by COPY beyond; profiles on either side of that bound
// read back every second, in the profile's clock and in absolute time.
func TestRowsBothWays(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	acme, _ := db.CreateTenant(ctx, "acme", false)
	for _, n := range []int{4096, 4097} {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "app 1 [000] %d.%06d: 1 cpu-clock:\n\t1 f%d (/bin/app)\n\n", 1795000000+i, 250000, i%3)
		}
		p, _ := store(t, db, acme, fmt.Sprint("app", n), b.String())
		rows, err := db.Cells(ctx, acme, p.ID, 0)
		if err != nil || len(rows) != n {
			t.Fatalf("%d seconds: %d rows read back (%v)", n, len(rows), err)
		}
		for i, r := range rows {
			if err := index.FillCells(&r, p.TimeUnitNanos, p.Events[0].Period, false); err != nil || r.Second != int64(i) || r.Samples != 1 || r.Cells[index.Rows/4] != 1 {
				t.Fatalf("%d seconds: row %d is %+v (%v)", n, i, r, err)
			}
		}
		fleet, err := db.FleetCells(ctx, acme, fmt.Sprint("app", n), "cpu-clock", 1795000000, 1795000000+int64(n))
		if err != nil || len(fleet) != n {
			t.Fatalf("%d seconds: %d fleet rows (%v)", n, len(fleet), err)
		}
	}
}

// TestReadCanceledIsTheCallers: a read whose context ends while its rows
// arrive answers the context's error, not "connection lost" (pgx closes
// the connection under a canceled read), so a load shared with other
// callers is loaded again for them rather than failed.
func TestReadCanceledIsTheCallers(t *testing.T) {
	db := newDB(t)
	acme, _ := db.CreateTenant(context.Background(), "acme", false)
	var b strings.Builder
	for i := range 20000 {
		fmt.Fprintf(&b, "app 1 [000] %d.%06d: 1 cpu-clock:\n\t1 f%d (/bin/app)\n\n", 1795000000+i, 250000, i%3)
	}
	p, _ := store(t, db, acme, "app", b.String())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rows := 0
	err := db.FleetSeconds(ctx, acme, []index.SecondsRange{{ProfileID: p.ID, Event: 0, From: 0, To: 20000}}, func(int, *index.Second) error {
		if rows++; rows == 1 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a read canceled after %d of 20,000 rows: %v, want context.Canceled", rows, err)
	}
}

// TestFleetSecondsInnerRowsWithoutOffsets: a fleet read sends the rows
// strictly inside each range (and every row of a range of all seconds)
// without their offsets, and every other column as stored; the edges come
// whole.
func TestFleetSecondsInnerRowsWithoutOffsets(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	acme, _ := db.CreateTenant(ctx, "acme", false)
	var b strings.Builder
	for i := range 6 {
		for k := range 3 {
			fmt.Fprintf(&b, "app 1 [000] %d.%06d: 1 cpu-clock:\n\t1 f%d (/bin/app)\n\n", 1795000000+i, 100000+k*300000, (i+k)%4)
		}
	}
	p, _ := store(t, db, acme, "app", b.String())
	stored, err := db.Seconds(ctx, acme, p.ID, 0, 0, 5)
	if err != nil || len(stored) != 6 {
		t.Fatalf("%d rows stored (%v), want 6", len(stored), err)
	}
	for _, rg := range []index.SecondsRange{{ProfileID: p.ID, From: 1, To: 4}, {ProfileID: p.ID, From: 2, To: 2}, {ProfileID: p.ID, From: 0, To: -1}} {
		got := map[int64]index.Second{}
		err := db.FleetSeconds(ctx, acme, []index.SecondsRange{rg}, func(_ int, s *index.Second) error {
			got[s.Second] = *s
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range stored {
			s, ok := got[want.Second]
			if in := rg.From > rg.To || rg.From <= want.Second && want.Second <= rg.To; ok != in {
				t.Fatalf("range %d..%d: second %d read %v, want %v", rg.From, rg.To, want.Second, ok, in)
			}
			if !ok {
				continue
			}
			wantOffsets := want.Offsets
			if rg.Inner(want.Second) {
				wantOffsets = nil
			}
			if !bytes.Equal(s.Offsets, wantOffsets) || (s.Offsets == nil) != (wantOffsets == nil) || !bytes.Equal(s.Stacks, want.Stacks) ||
				s.Samples != want.Samples || !bytes.Equal(s.Periods, want.Periods) || !bytes.Equal(s.Threads, want.Threads) {
				t.Errorf("range %d..%d, second %d: read %+v, want the stored row with offsets %v", rg.From, rg.To, want.Second, s, wantOffsets)
			}
		}
	}
}

// TestFleetStackTotals: a profile's stack totals are stored with it and
// add what its rows count whole; another tenant reads none of them, and a
// profile stored before totals were kept (NULL) is left out.
func TestFleetStackTotals(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	acme, _ := db.CreateTenant(ctx, "acme", false)
	globex, _ := db.CreateTenant(ctx, "globex", false)
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "app 1 [000] %d.%06d: %d cpu-clock:\n\t1 f%d (/bin/app)\n\n", 1795000000+i/100, (i%100)*10000, 1+i%3, i%150)
	}
	p, _ := store(t, db, acme, "app", b.String())
	old, _ := store(t, db, acme, "app", b.String()+"\n")
	if _, err := conn(t, db).Exec(ctx, `UPDATE profile_stacks SET totals = NULL WHERE profile_id = $1`, old.ID); err != nil {
		t.Fatal(err)
	}
	stacks, err := db.ProfileStacks(ctx, acme, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.Seconds(ctx, acme, p.ID, 0, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	for _, byPeriod := range []bool{false, true} {
		want, got := make([]uint64, len(stacks)), make([]uint64, len(stacks))
		c := index.Counter{UnitNanos: p.TimeUnitNanos, Timed: true, Period: p.Events[0].Period, ByPeriod: byPeriod, Range: fleetscope.All}
		for i := range rows {
			if err := c.Count(&rows[i], want); err != nil {
				t.Fatal(err)
			}
		}
		var read []int
		err := db.FleetStackTotals(ctx, acme, []string{old.ID, p.ID}, func(i int, totals []byte) error {
			read = append(read, i)
			return index.AddStackTotals(totals, 0, p.Events[0].Period, byPeriod, got, nil)
		})
		if err != nil || !slices.Equal(read, []int{1}) {
			t.Fatalf("read the totals of %v (%v), want those of the second profile only", read, err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("by period %v: the stored totals differ from the rows' counts", byPeriod)
		}
	}
	err = db.FleetStackTotals(ctx, globex, []string{p.ID}, func(int, []byte) error {
		t.Fatal("another tenant read the totals")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestAnalyzeStale: with autovacuum off (as on the test machines), the
// tables an upload grows are analyzed once they changed past autovacuum's
// threshold, not again until they change that much more, and not more
// often than the interval asked.
func TestAnalyzeStale(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	c := conn(t, db)
	var autovacuum string
	if err := c.QueryRow(ctx, `SHOW autovacuum`).Scan(&autovacuum); err != nil {
		t.Fatal(err)
	}
	if autovacuum != "off" {
		t.Skip("autovacuum is on: Postgres analyzes by itself, and AnalyzeStale does nothing")
	}
	var citus bool
	if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')`).Scan(&citus); err != nil {
		t.Fatal(err)
	}
	if citus {
		t.Skip("on Citus the rows are in the workers' shards, which the workers analyze: the coordinator's tables do not change")
	}
	acme, _ := db.CreateTenant(ctx, "acme", false)
	upload := func(from int) {
		for i := from; i < from+60; i++ {
			store(t, db, acme, "app", fmt.Sprintf("app 1 [000] 1795000000.%06d: 1 cpu-clock:\n\t1 f%d (/bin/app)\n\n", i, i))
		}
	}
	// The uploads' counts reach the statistics when their connections
	// flush them (at most a second or so after a transaction, once idle).
	analyzeProfiles := func(every time.Duration) {
		t.Helper()
		var analyzed []string
		for deadline := time.Now().Add(30 * time.Second); !slices.Contains(analyzed, "profiles"); time.Sleep(200 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("profiles not analyzed after 60 uploads (analyzed: %v)", analyzed)
			}
			var err error
			if analyzed, err = db.AnalyzeStale(ctx, every); err != nil {
				t.Fatal(err)
			}
		}
	}
	upload(0)
	analyzeProfiles(time.Hour) // never analyzed: the interval does not hold it back
	var stats int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM pg_stats WHERE tablename = 'profiles' AND schemaname = current_schema()`).Scan(&stats); err != nil || stats == 0 {
		t.Fatalf("profiles has %d column statistics after its analysis (%v)", stats, err)
	}
	again, err := db.AnalyzeStale(ctx, 0)
	if err != nil || slices.Contains(again, "profiles") {
		t.Fatalf("analyzed %v again without changes (%v)", again, err)
	}
	// Changed past the threshold again: not within the interval, and
	// analyzed once it is over (here: no interval).
	upload(60)
	time.Sleep(2 * time.Second) // the counts flushed
	if again, err = db.AnalyzeStale(ctx, time.Hour); err != nil || slices.Contains(again, "profiles") {
		t.Fatalf("analyzed %v again within the interval (%v)", again, err)
	}
	analyzeProfiles(0)
}

// TestCorruptRowIsNotUnavailable: a stored row that cannot be decoded is
// an internal error that names it, read once: not "the database is
// unavailable, retry later", which has clients retry what can never
// succeed. The connection's next reads go on as before.
func TestCorruptRowIsNotUnavailable(t *testing.T) {
	db := newDB(t)
	ctx := context.Background()
	acme, _ := db.CreateTenant(ctx, "acme", false)
	store(t, db, acme, "app", "app 1 [000] 1795000000.250000: 1 cpu-clock:\n\t1 f (/bin/app)\n\n")
	read := func() error {
		return db.FleetRows(ctx, acme, "app", "", 1, 1795000000, 1795000001, true, func(*index.FleetRow) error { return nil })
	}
	if err := read(); err != nil {
		t.Fatal(err)
	}
	c := conn(t, db)
	if _, err := c.Exec(ctx, `UPDATE fleet_tens SET seconds = '\x000101'`); err != nil {
		t.Fatal(err)
	}
	retried := db.Retried()
	err := read()
	if code := fleetscope.ErrorCode(err); code != fleetscope.EINTERNAL || !strings.Contains(err.Error(), "heatmap cells") {
		t.Fatalf("a corrupt row read: %v (%s), want an internal error naming the cells", err, code)
	}
	if n := db.Retried() - retried; n != 0 {
		t.Errorf("the read ran %d more times: a corrupt row is read once", n)
	}
	for i := range 8 { // every pooled connection still answers
		if _, err := db.FleetCounts(ctx, acme, "app", nil, 1795000000e9, 1795000001e9); err != nil {
			t.Fatalf("read %d after the corrupt row: %v", i, err)
		}
	}
}
