package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
	"github.com/fleetscope/fleetscope/store/postgres"
)

// manyFrames is a perf script of n samples, each its own stack of a frame
// of its own (prefix_i) under root (under the process, java): n+2
// distinct frames, n stacks.
func manyFrames(prefix, root string, n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "java 4242 [000] %d.%06d: cpu-clock:pppH: \n\t400000 %s_%d+0x10 (/tmp/perf-4242.map)\n\t400100 %s+0x11 (/usr/lib/libc.so.6)\n\n",
			100+i/1000, (i%1000)*1000, prefix, i, root)
	}
	return b.String()
}

// folded is a profile's dictionary as text: each stack's frames, in order.
func folded(t *testing.T, db *postgres.DB, tenant int64, p *fleetscope.ProfileInfo) []string {
	t.Helper()
	d, err := db.Dict(context.Background(), tenant, p)
	if err != nil {
		t.Fatalf("profile %s: %v", p.ID, err)
	}
	out := make([]string, d.NumStacks())
	for i := range out {
		var names []string
		for _, f := range d.StackFrames(fleetscope.StackID(i)) {
			names = append(names, d.FrameAt(f).Name)
		}
		out[i] = strings.Join(names, ";")
	}
	return out
}

// dictState is a tenant's dictionary as stored: rows, the rows its
// profiles use, references to rows that are not there, and its bytes.
type dictState struct {
	frames, stacks, usedFrames, usedStacks, danglingStacks, danglingFrames, bytes int64
}

// usedSeqs are the stack numbers in the tenant's profiles' stack lists
// (repeated as often as they are listed).
func usedSeqs(t *testing.T, c *pgx.Conn, tenant int64) []int64 {
	t.Helper()
	rows, err := c.Query(context.Background(), `SELECT seqs FROM profile_stacks WHERE tenant_id = $1`, tenant)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		t.Fatal(err)
	}
	out := []int64{}
	for _, b := range lists {
		seqs, err := index.ReadStackList(b)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, seqs...)
	}
	return out
}

func stateOf(t *testing.T, c *pgx.Conn, tenant int64) dictState {
	t.Helper()
	var s dictState
	err := c.QueryRow(context.Background(), `
		WITH us AS (SELECT DISTINCT u AS seq FROM unnest($2::bigint[]) u),
		     uf AS (SELECT DISTINCT unnest(s.frames) AS id FROM stacks s WHERE s.tenant_id = $1 AND s.seq IN (SELECT seq FROM us))
		SELECT (SELECT count(*) FROM frames WHERE tenant_id = $1), (SELECT count(*) FROM stacks WHERE tenant_id = $1),
		       (SELECT count(*) FROM uf), (SELECT count(*) FROM us),
		       (SELECT count(*) FROM us WHERE seq NOT IN (SELECT seq FROM stacks WHERE tenant_id = $1)),
		       (SELECT count(*) FROM (SELECT DISTINCT unnest(frames) AS id FROM stacks WHERE tenant_id = $1) a
		          WHERE id NOT IN (SELECT id FROM frames WHERE tenant_id = $1)),
		       coalesce((SELECT sum(octet_length(name) + 80) FROM frames WHERE tenant_id = $1), 0)::bigint
		     + coalesce((SELECT sum(8 * cardinality(frames) + 104) FROM stacks WHERE tenant_id = $1), 0)::bigint`, tenant, usedSeqs(t, c, tenant)).Scan(
		&s.frames, &s.stacks, &s.usedFrames, &s.usedStacks, &s.danglingStacks, &s.danglingFrames, &s.bytes)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkUsage: StoredBytes is the profiles' raw bytes and the bytes of the
// tenant's dictionary rows, exactly.
func checkUsage(t *testing.T, db *postgres.DB, c *pgx.Conn, tenant int64, when string) dictState {
	t.Helper()
	s := stateOf(t, c, tenant)
	var raw int64
	if err := c.QueryRow(context.Background(), `SELECT coalesce(sum(size_bytes), 0)::bigint FROM profiles WHERE tenant_id = $1`, tenant).Scan(&raw); err != nil {
		t.Fatal(err)
	}
	got, _, err := db.StoredBytes(context.Background(), tenant)
	if err != nil {
		t.Fatal(err)
	}
	if got != raw+s.bytes {
		t.Fatalf("%s: usage %d, want %d raw + %d of dictionary rows", when, got, raw, s.bytes)
	}
	if s.danglingStacks+s.danglingFrames > 0 {
		t.Fatalf("%s: %d stacks and %d frames referenced but missing", when, s.danglingStacks, s.danglingFrames)
	}
	return s
}

// twoTenants is a new index with tenants acme and other, and a
// connection to it.
func twoTenants(t *testing.T) (*postgres.DB, *pgx.Conn, int64, int64) {
	db := newDB(t)
	acme, err := db.CreateTenant(context.Background(), "acme", false)
	if err != nil {
		t.Fatal(err)
	}
	other, err := db.CreateTenant(context.Background(), "other", false)
	if err != nil {
		t.Fatal(err)
	}
	return db, conn(t, db), acme, other
}

// TestReclaimDictionary: deleting profiles and reclaiming leaves exactly
// the rows the remaining profiles use; they read back unchanged; usage
// counts the dictionary rows throughout; another tenant's dictionary is
// untouched; and an upload of the deleted content afterwards, on this
// replica or one that remembers the reclaimed keys, writes them again.
func TestReclaimDictionary(t *testing.T) {
	ctx := context.Background()
	db, c, acme, other := twoTenants(t)
	replica, err := postgres.Open(ctx, dbURL(t, db))
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()

	big := manyFrames("gone", "start_thread", 3000)
	p1, _ := store(t, db, acme, "api", big)
	store(t, replica, acme, "api", big+"# the replica remembers its keys\n")
	p2, _ := store(t, db, acme, "api", manyFrames("kept", "start_thread", 500))
	p3, _ := store(t, db, acme, "api", sample)
	store(t, db, other, "api", big)
	store(t, db, other, "api", sample)
	before := checkUsage(t, db, c, acme, "after the uploads")
	if before.frames < 3500 {
		t.Fatalf("%d frames stored, want over 3500", before.frames)
	}
	otherBefore := checkUsage(t, db, c, other, "the other tenant")
	keep2, keep3 := folded(t, db, acme, p2), folded(t, db, acme, p3)

	// Deleting leaves the rows, and they are still counted.
	rows, err := c.Query(ctx, `SELECT id::text FROM profiles WHERE tenant_id = $1 AND samples = 3000`, acme)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(ids) != 2 || !slices.Contains(ids, p1.ID) {
		t.Fatalf("profiles to delete: %v %v", ids, err)
	}
	for _, id := range ids {
		if _, err := db.DeleteProfile(ctx, acme, id, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if s := checkUsage(t, db, c, acme, "after the deletes"); s.frames != before.frames || s.stacks != before.stacks || s.bytes != before.bytes {
		t.Fatalf("deleting changed the dictionary: %+v, was %+v", s, before)
	}

	r, err := db.ReclaimDictionaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after := checkUsage(t, db, c, acme, "after the reclaim")
	if after.frames != after.usedFrames || after.stacks != after.usedStacks {
		t.Fatalf("after the reclaim: %+v, want only the rows the profiles use", after)
	}
	if r.Frames != before.frames-after.frames || r.Stacks != before.stacks-after.stacks || r.Bytes != before.bytes-after.bytes || r.Frames < 3000 {
		t.Fatalf("reclaimed %+v, want the %d frames, %d stacks and %d bytes gone", r, before.frames-after.frames, before.stacks-after.stacks, before.bytes-after.bytes)
	}
	if !slices.Equal(folded(t, db, acme, p2), keep2) || !slices.Equal(folded(t, db, acme, p3), keep3) {
		t.Fatal("a remaining profile's dictionary changed")
	}
	if s := checkUsage(t, db, c, other, "the other tenant after"); s != otherBefore {
		t.Fatalf("the other tenant's dictionary changed: %+v, was %+v", s, otherBefore)
	}
	// Nothing is due any more.
	if r, err := db.ReclaimDictionaries(ctx); err != nil || r.Tenants != 0 {
		t.Fatalf("a second reclaim: %+v %v, want none due", r, err)
	}

	// The deleted content again, on both replicas: each writes the keys it
	// remembers from before the reclaim.
	for i, d := range []*postgres.DB{db, replica} {
		p, created := store(t, d, acme, "api", big+strings.Repeat("#\n", i+2))
		if !created {
			t.Fatal("not created")
		}
		if got := folded(t, db, acme, p); len(got) != 3000 {
			t.Fatalf("replica %d: %d stacks read back, want 3000", i, len(got))
		}
	}
	checkUsage(t, db, c, acme, "after uploading again")
}

// TestReclaimRacesUploads interleaves a reclaim with uploads of the
// tenant that use rows the reclaim finds unused: one in flight when the
// reclaim begins, one between its marking and its deleting of stacks, one
// (of new stacks of old frames) between its marking and deleting of
// frames. Each ends up stored whole.
func TestReclaimRacesUploads(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	c := conn(t, db)
	acme, _ := db.CreateTenant(ctx, "acme", false)
	text := manyFrames("f", "start_thread", 200)
	drop := func(p *fleetscope.ProfileInfo) {
		t.Helper()
		if _, err := db.DeleteProfile(ctx, acme, p.ID, "test"); err != nil {
			t.Fatal(err)
		}
	}

	// In flight: the reclaim waits for the upload's commit.
	p, _ := store(t, db, acme, "api", text)
	drop(p)
	done := make(chan error, 1)
	inFlight, _ := storeWith(t, db, acme, "api", text+"#1\n", func() error {
		go func() { _, err := db.ReclaimDictionary(ctx, acme); done <- err }()
		deadline := time.Now().Add(10 * time.Second)
		for {
			var waiting bool
			if err := c.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_locks l JOIN pg_database d ON d.oid = l.database AND d.datname = current_database()
				WHERE l.locktype = 'advisory' AND NOT l.granted AND l.objid = $1::bigint::oid)`, acme).Scan(&waiting); err != nil {
				return err
			}
			if waiting {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the reclaim did not wait for the upload")
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := folded(t, db, acme, inFlight); len(got) != 200 {
		t.Fatalf("the upload in flight: %d stacks, want 200", len(got))
	}
	checkUsage(t, db, c, acme, "after the first race")

	// Between marking and deleting stacks: the same stacks again.
	drop(inFlight)
	var late *fleetscope.ProfileInfo
	db.SetReclaimHook(func(point string) {
		if point == "stacks marked" {
			late, _ = store(t, db, acme, "api", text+"#2\n")
		}
	})
	r, err := db.ReclaimDictionary(ctx, acme)
	db.SetReclaimHook(nil)
	if err != nil {
		t.Fatal(err)
	}
	if late == nil {
		t.Fatal("no upload during the reclaim")
	}
	if got := folded(t, db, acme, late); len(got) != 200 {
		t.Fatalf("the upload between stacks marked and deleted: %d stacks, want 200", len(got))
	}
	if s := checkUsage(t, db, c, acme, "after the second race"); r.Stacks != 0 || s.stacks != 200 || s.frames != 202 {
		t.Fatalf("reclaimed %+v, left %+v: want the pinned stacks kept", r, s)
	}

	// Between marking and deleting frames: new stacks (another root) of
	// the frames just found unused.
	drop(late)
	late = nil
	db.SetReclaimHook(func(point string) {
		if point == "frames marked" {
			late, _ = store(t, db, acme, "api", manyFrames("f", "clone3", 200))
		}
	})
	r, err = db.ReclaimDictionary(ctx, acme)
	db.SetReclaimHook(nil)
	if err != nil {
		t.Fatal(err)
	}
	if late == nil {
		t.Fatal("no upload during the reclaim")
	}
	if got := folded(t, db, acme, late); len(got) != 200 || !strings.Contains(got[0], ";clone3;") {
		t.Fatalf("the upload between frames marked and deleted reads %d stacks (%.60q), want 200 under clone3", len(got), got)
	}
	s := checkUsage(t, db, c, acme, "after the third race")
	if r.Stacks != 200 || r.Frames != 1 || s.stacks != 200 || s.frames != 202 || s.usedFrames != 202 {
		t.Fatalf("reclaimed %+v, left %+v: want the old stacks and start_thread gone, the pinned frames kept", r, s)
	}
	var pins int
	if err := c.QueryRow(ctx, `SELECT count(*) FROM dictionary_pins`).Scan(&pins); err != nil || pins != 0 {
		t.Fatalf("%d pins left (%v)", pins, err)
	}

	// Superseded: another reclaim begins (as one would whose session lock
	// was lost with its connection) after an upload pinned its keys for
	// this one, and clears the pins; this one deletes nothing more.
	drop(late)
	late = nil
	db.SetReclaimHook(func(point string) {
		if point == "stacks marked" {
			late, _ = store(t, db, acme, "api", manyFrames("f", "clone3", 200)+"#3\n")
			for _, q := range []string{`UPDATE dictionaries SET generation = generation + 1 WHERE tenant_id = $1`, `DELETE FROM dictionary_pins WHERE tenant_id = $1`} {
				if _, err := c.Exec(ctx, q, acme); err != nil {
					t.Error(err)
				}
			}
		}
	})
	r, err = db.ReclaimDictionary(ctx, acme)
	db.SetReclaimHook(nil)
	if err != nil || r.Stacks+r.Frames != 0 {
		t.Fatalf("a superseded reclaim: %+v %v, want nothing deleted", r, err)
	}
	if got := folded(t, db, acme, late); len(got) != 200 {
		t.Fatalf("the upload before the other reclaim began: %d stacks, want 200", len(got))
	}
	checkUsage(t, db, c, acme, "after a superseded reclaim")
}

// TestDictionaryReclaimMigration: migration 12 counts the dictionary rows
// stored before it in their tenant's usage, and makes a reclaim due, which
// deletes the rows of profiles deleted before it. On Citus the other
// tables are distributed when it runs, as a deployment's are.
func TestDictionaryReclaimMigration(t *testing.T) {
	ctx := context.Background()
	db, c, acme, other := twoTenants(t)
	gone, _ := store(t, db, acme, "api", manyFrames("gone", "start_thread", 300))
	kept, _ := store(t, db, acme, "api", sample)
	store(t, db, other, "api", sample)
	keep := folded(t, db, acme, kept)
	p, _ := migrator(t, poolOf(t, db))
	if _, err := p.DownTo(ctx, 11); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `DELETE FROM profiles WHERE id = $1`, gone.ID); err != nil { // as deletes did before
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 12); err != nil {
		t.Fatal(err)
	}
	if err := db.Distribute(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil { // the store reads the latest schema
		t.Fatal(err)
	}
	before := checkUsage(t, db, c, acme, "after the migration")
	checkUsage(t, db, c, other, "the other tenant after the migration")
	if before.frames < 300 {
		t.Fatalf("%+v: want the deleted profile's frames still there", before)
	}
	r, err := db.ReclaimDictionaries(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after := checkUsage(t, db, c, acme, "after the reclaim")
	if r.Tenants != 2 || r.Frames != before.frames-after.frames || after.frames != after.usedFrames || after.stacks != after.usedStacks {
		t.Fatalf("reclaimed %+v, left %+v (was %+v): want only the rows the kept profile uses", r, after, before)
	}
	if !slices.Equal(folded(t, db, acme, kept), keep) {
		t.Fatal("the kept profile's dictionary changed")
	}
}
