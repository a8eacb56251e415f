package query_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/flame"
	"github.com/fleetscope/fleetscope/store/memory"
	"github.com/fleetscope/fleetscope/store/postgres"
	"github.com/fleetscope/fleetscope/store/postgres/pgtest"
)

// bucketFleet is a planted fleet of hours stored in a real Postgres: three
// hosts, h1 recorded as two overlapping profiles.
type bucketFleet struct {
	db     *postgres.DB
	mem    *memory.Store // the same profiles, for answers summed another way
	url    string
	tenant int64
	ids    map[string]string // name -> profile id
}

// add stores a planted profile of host as name, its samples' periods
// varying with periods.
func (bf *bucketFleet) add(t *testing.T, name, host string, periods bool, meta ingest.Meta, args ...string) {
	t.Helper()
	path, _ := plant(t, args...)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bf.addBytes(t, name, host, periods, meta, b)
}

// addBytes stores a perf script profile of host as name (see add).
func (bf *bucketFleet) addBytes(t *testing.T, name, host string, periods bool, meta ingest.Meta, b []byte) {
	t.Helper()
	if periods { // each sample its own period, as perf script -F +period prints it
		n := 0
		b = eventField.ReplaceAllFunc(b, func(m []byte) []byte {
			n++
			return fmt.Appendf(nil, ": %d cpu-clock:", 250000+n%7*1000)
		})
	}
	pr, err := ingest.ParseIndex(bytes.NewReader(b), "", 0, ingest.Shape{})
	if err != nil {
		t.Fatal(err)
	}
	meta.App, meta.Host = "shop", host
	info := ingest.Describe(meta, pr, time.Now())
	sum := sha256.Sum256(b)
	info.BlobKey = fmt.Sprintf("%d/%x", bf.tenant, sum)
	p, _, err := bf.db.InsertProfile(context.Background(), bf.tenant, info, sum[:], pr.Profile.Dict, pr.Index, nil)
	if err != nil {
		t.Fatal(err)
	}
	if periods && pr.Index.Seconds[0].Periods == nil {
		t.Fatalf("%s: no periods stored per sample", name)
	}
	bf.ids[name] = p.ID
	mi := *p
	if _, err := bf.mem.Add(&mi, pr.Profile.Dict, pr.Index); err != nil {
		t.Fatal(err)
	}
}

var eventField = regexp.MustCompile(`: cpu-clock:`)

// newBucketFleet is an empty fleet: a tenant of a new database.
func newBucketFleet(t *testing.T) *bucketFleet {
	ctx := context.Background()
	url := pgtest.NewURL(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	tenant, err := db.CreateTenant(ctx, "t", false)
	if err != nil {
		t.Fatal(err)
	}
	return &bucketFleet{db: db, mem: memory.New(), url: url, tenant: tenant, ids: map[string]string{}}
}

func plantBucketFleet(t *testing.T) *bucketFleet {
	bf := newBucketFleet(t)
	bf.add(t, "h1a", "h1", true, ingest.Meta{}, "--seed", "71", "--seconds", "5000", "--epoch", "--hz", "3")
	// planted.py's boot clock starts at 51234 s: anchored 4,000.3 s into
	// the fleet, overlapping h1a by 1,000 s.
	bf.add(t, "h1b", "h1", false, ingest.Meta{AnchorClockNanos: 51234e9, AnchorWall: time.Unix(0, fleetBase+4000_300_000_000)},
		"--seed", "72", "--seconds", "3000", "--hz", "2")
	bf.add(t, "h2", "h2", true, ingest.Meta{}, "--seed", "73", "--seconds", "7000", "--epoch", "--hz", "2", "--cpus", "3")
	bf.add(t, "h3", "h3", false, ingest.Meta{}, "--seed", "74", "--seconds", "6500", "--epoch", "--hz", "4")
	return bf
}

// folded is a fleet flame graph's stacks and their counts.
func folded(t *testing.T, q *query.Service, tenant int64, sel fleetscope.FleetSelection, byPeriod bool) (map[string]uint64, query.Served) {
	t.Helper()
	g, err := q.FleetFlameGraph(context.Background(), tenant, sel, query.FleetFlameOptions{ByPeriod: byPeriod})
	if err != nil {
		t.Fatal(err)
	}
	return flame.Folded(g.Dict, g.Counts, g.Annotate), g.Served
}

// sameAsSeconds checks that q's fleet flame graph of sel (caches
// emptied: a cached answer is not what is tested) equals ref's, counted
// from the per-second rows alone, stack for stack, and is not empty; it
// returns what served q's.
func sameAsSeconds(t *testing.T, q, ref *query.Service, tenant int64, what string, sel fleetscope.FleetSelection, byPeriod bool) query.Served {
	t.Helper()
	q.Flush()
	want, _ := folded(t, ref, tenant, sel, byPeriod)
	got, served := folded(t, q, tenant, sel, byPeriod)
	if !maps.Equal(got, want) {
		var gn, wn uint64
		for _, v := range got {
			gn += v
		}
		for _, v := range want {
			wn += v
		}
		t.Fatalf("%s: %d stacks totalling %d (served %+v), want %d totalling %d", what, len(got), gn, served, len(want), wn)
	}
	if len(want) == 0 {
		t.Fatalf("%s: an empty answer proves nothing", what)
	}
	return served
}

// TestStackBucketsAreExact: merged flame graphs served from stored stack
// buckets equal, stack for stack, the same graphs counted from the
// per-second rows alone, over random windows of hours (not on bucket or
// second edges), hosts, idle and period weights; the first query of a
// window counts and stores its sealed buckets, the next reads them; an
// upload into stored buckets, a change of host and a deletion are counted
// at once, and a deletion removes the rows of its buckets.
func TestStackBucketsAreExact(t *testing.T) {
	bf := plantBucketFleet(t)
	ctx := context.Background()
	q := query.New(bf.db, query.Options{})
	ref := query.New(bf.db, query.Options{NoStackBuckets: true})
	rng := rand.New(rand.NewPCG(5, 8))
	check := func(what string, sel fleetscope.FleetSelection, byPeriod bool) query.Served {
		t.Helper()
		return sameAsSeconds(t, q, ref, bf.tenant, what, sel, byPeriod)
	}
	var read, counted int
	for try := range 16 {
		from := fleetBase + rng.Int64N(2000e9) - 300e9
		to := from + 1200e9 + rng.Int64N(6000e9)
		sel := fleetscope.FleetSelection{App: "shop", From: from, To: to, IncludeIdle: try%2 == 0}
		if try%3 == 1 {
			sel.Hosts = []string{"h1"}
		}
		first := check(fmt.Sprintf("window %d, first", try), sel, try%4 == 3)
		again := check(fmt.Sprintf("window %d, again", try), sel, try%4 == 3)
		// Buckets the first call counted inside whole hours are read as
		// their hours' rollups the second time (fleet_long.go).
		if again.BucketsCounted != 0 || again.RollupsCounted != 0 || again.Buckets+again.Hours < min(first.Buckets+first.BucketsCounted, 1) {
			t.Fatalf("window %d: served %+v, then %+v: want every bucket and rollup read the second time", try, first, again)
		}
		read, counted = read+again.Buckets, counted+first.BucketsCounted
	}
	if read == 0 || counted == 0 {
		t.Fatalf("buckets read %d, counted %d: the windows did not exercise both", read, counted)
	}
	all := fleetscope.FleetSelection{App: "shop", From: fleetBase, To: fleetBase + 7200e9, IncludeIdle: true}
	if s := check("two hours", all, false); s.Buckets == 0 {
		t.Fatalf("two hours served %+v: want stored buckets", s)
	}
	// A new profile in stored buckets, a change of host, a deletion: the
	// next answers count them.
	bf.add(t, "h2b", "h2", false, ingest.Meta{AnchorClockNanos: 51234e9, AnchorWall: time.Unix(0, fleetBase+1800e9)}, "--seed", "75", "--seconds", "900")
	if s := check("after an upload", all, false); s.BucketsCounted == 0 {
		t.Fatalf("after an upload into stored buckets, served %+v: want them counted again", s)
	}
	h3 := "h9"
	if _, err := bf.db.UpdateProfile(ctx, bf.tenant, bf.ids["h3"], fleetscope.ProfileUpdate{Host: &h3}, "test"); err != nil {
		t.Fatal(err)
	}
	check("after a change of host", all, false)
	check("one host after a change of host", fleetscope.FleetSelection{App: "shop", Hosts: []string{"h9"}, From: all.From, To: all.To}, true)
	c, err := pgx.Connect(ctx, bf.url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	// h1a's buckets: those starting before its end, 5,000 s in.
	rowsOf := func() (n int) {
		if err := c.QueryRow(ctx, `SELECT count(*) FROM fleet_stack_buckets WHERE host = 'h1' AND bucket < $1`, fleetBase/1e9+5000).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if rowsOf() == 0 {
		t.Fatal("no stored bucket of h1a before its deletion")
	}
	if _, err := bf.db.DeleteProfile(ctx, bf.tenant, bf.ids["h1a"], "test"); err != nil {
		t.Fatal(err)
	}
	if n := rowsOf(); n != 0 {
		t.Fatalf("%d buckets of h1a kept after its deletion", n)
	}
	check("after a deletion", all, true)
}

// TestCompactBuckets: compaction stores the sealed buckets a window
// touches, and only those (as of its clock), so that a flame graph over
// them reads them all, and equals the per-second path.
func TestCompactBuckets(t *testing.T) {
	bf := plantBucketFleet(t)
	ctx := context.Background()
	now := time.Unix(0, fleetBase+3600e9) // an hour into the fleet's recording
	n, sealed, err := query.New(bf.db, query.Options{}).CompactBuckets(ctx, bf.tenant, "shop", fleetBase, fleetBase+7200e9, now)
	if err != nil {
		t.Fatal(err)
	}
	if want := (fleetBase + 3600e9 - 120e9) / 600e9 * 600e9; sealed != want {
		t.Fatalf("sealed up to %d, want %d", sealed, want)
	}
	c, err := pgx.Connect(ctx, bf.url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var rows int
	var last int64
	if err := c.QueryRow(ctx, `SELECT count(*), coalesce(max(bucket), 0) FROM fleet_stack_buckets`).Scan(&rows, &last); err != nil {
		t.Fatal(err)
	}
	if rows != n || n == 0 || (last+600)*1e9 > sealed {
		t.Fatalf("%d buckets stored (reported %d), the last at %d: want those ending by %d", rows, n, last, sealed)
	}
	sel := fleetscope.FleetSelection{App: "shop", From: fleetBase - 400e9, To: sealed}
	want, _ := folded(t, query.New(bf.db, query.Options{NoStackBuckets: true}), bf.tenant, sel, false)
	got, served := folded(t, query.New(bf.db, query.Options{}), bf.tenant, sel, false)
	if served.BucketsCounted != 0 || served.Buckets == 0 || !maps.Equal(got, want) {
		t.Fatalf("after compaction: served %+v, equal %v", served, maps.Equal(got, want))
	}
}

// TestColumnTotalsAreExact: host strips and timelines summed by host and
// column in Postgres (ColumnTotals), and heatmaps of profiles counted
// there, equal the same answers summed in Go from each profile's rows and
// the profiles listed (the memory store), and the same answers read from
// the per-second rows alone (NoRollups), column for column and cell for
// cell, over random windows of minutes to 6 hours, column widths (seconds,
// whole tens of seconds, whole minutes), hosts and idle; the 10-s and
// minute rows serve the wide columns.
func TestColumnTotalsAreExact(t *testing.T) {
	bf := plantBucketFleet(t)
	ctx := context.Background()
	pg, mem := query.New(bf.db, query.Options{}), query.New(bf.mem, query.Options{})
	ref := query.New(bf.db, query.Options{NoRollups: true})
	rng := rand.New(rand.NewPCG(7, 11))
	minutes, tens := 0, 0
	for try := range 24 {
		from := fleetBase + rng.Int64N(3000e9) - 300e9
		to := from + 600e9 + rng.Int64N(9000e9)
		sel := fleetscope.FleetSelection{App: "shop", From: from, To: to, IncludeIdle: try%2 == 0}
		if try%3 == 2 {
			sel.Hosts = []string{"h2", "h3"}
		}
		minSPC := []int64{1, 30, 60, 120, 7, 20, 25, 0}[try%8]
		if minSPC == 0 { // 6 hours: 22-s columns widened to 30 s
			sel.From = fleetBase - rng.Int64N(9000e9)
			sel.To = sel.From + 6*3600e9
		}
		for _, other := range []struct {
			name string
			q    *query.Service
			t    int64
		}{{"the per-profile one", mem, 0}, {"the one from the seconds alone", ref, bf.tenant}} {
			want, err := other.q.FleetTimeline(ctx, other.t, sel, minSPC)
			if err != nil {
				t.Fatal(err)
			}
			got, err := pg.FleetTimeline(ctx, bf.tenant, sel, minSPC)
			if err != nil {
				t.Fatal(err)
			}
			if got.StartSecond != want.StartSecond || got.SecondsPerColumn != want.SecondsPerColumn || !slices.Equal(got.Totals, want.Totals) || got.Profiles != want.Profiles {
				t.Fatalf("window %d (%d-s columns): timeline %d columns totalling %d, want %s: %d totalling %d", try, want.SecondsPerColumn, len(got.Totals), sum(got.Totals), other.name, len(want.Totals), sum(want.Totals))
			}
			if sum(want.Totals) == 0 {
				t.Fatalf("window %d: an empty timeline proves nothing", try)
			}
			if other.q == mem {
				minutes, tens = minutes+got.Served.Minutes, tens+got.Served.Tens
			}
			gm, err := pg.FleetHeatmap(ctx, bf.tenant, sel, 50, minSPC)
			if err != nil {
				t.Fatal(err)
			}
			wm, err := other.q.FleetHeatmap(ctx, other.t, sel, 50, minSPC)
			if err != nil {
				t.Fatal(err)
			}
			if gm.StartSecond != wm.StartSecond || gm.SecondsPerColumn != wm.SecondsPerColumn || !reflect.DeepEqual(gm.Columns, wm.Columns) ||
				gm.Accounting.Event != wm.Accounting.Event || gm.Accounting.Profiles != wm.Accounting.Profiles || !maps.Equal(gm.LeftOut, wm.LeftOut) {
				t.Fatalf("window %d: the heatmap (%d profiles, event %q) differs from %s (%d, %q)", try, gm.Accounting.Profiles, gm.Accounting.Event, other.name, wm.Accounting.Profiles, wm.Accounting.Event)
			}
			if spc := gm.SecondsPerColumn; spc%10 == 0 && gm.Served.Tens+gm.Served.Minutes == 0 || other.q == ref && wm.Served.Tens+wm.Served.Minutes != 0 {
				t.Fatalf("window %d: %d-s columns served by %+v, and from the seconds alone by %+v", try, spc, gm.Served, wm.Served)
			}
			gh, err := pg.FleetHosts(ctx, bf.tenant, sel, minSPC)
			if err != nil {
				t.Fatal(err)
			}
			wh, err := other.q.FleetHosts(ctx, other.t, sel, minSPC)
			if err != nil {
				t.Fatal(err)
			}
			if len(gh.Hosts) != len(wh.Hosts) {
				t.Fatalf("window %d: %d hosts, want %d", try, len(gh.Hosts), len(wh.Hosts))
			}
			for i := range wh.Hosts {
				if g, w := gh.Hosts[i], wh.Hosts[i]; g.Host != w.Host || g.Total != w.Total || !slices.Equal(g.Columns, w.Columns) {
					t.Fatalf("window %d, host %s: total %d, want %s %d (%s)", try, g.Host, g.Total, w.Host, w.Total, other.name)
				}
			}
		}
	}
	if minutes == 0 || tens == 0 {
		t.Fatalf("windows served by %d minute rows and %d 10-s rows: want both", minutes, tens)
	}
}

func sum(xs []int64) (n int64) {
	for _, x := range xs {
		n += x
	}
	return n
}
