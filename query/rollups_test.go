package query_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/store/index"
	"github.com/fleetscope/fleetscope/store/postgres"
)

// plantLongFleet is a planted fleet of days stored in a real Postgres:
// three hosts of one sample a second on one CPU, two of them recording
// three days, the third a day and a half from the middle of the first.
func plantLongFleet(t *testing.T) *bucketFleet {
	bf := newBucketFleet(t)
	bf.addBytes(t, "d1", "d1", true, ingest.Meta{}, longPlant(t, 7, "--seed", "81", "--epoch"))
	bf.addBytes(t, "d2", "d2", false, ingest.Meta{}, longPlant(t, 7, "--seed", "82", "--epoch"))
	bf.addBytes(t, "d3", "d3", false, ingest.Meta{AnchorClockNanos: 51234e9, AnchorWall: time.Unix(0, fleetBase+43_200_500_000_000)},
		longPlant(t, 4, "--seed", "83"))
	return bf
}

// sampleTime is a perf script sample's header: its time in seconds with
// six decimals.
var sampleTime = regexp.MustCompile(`(?m)^(\S+ +\d+ \[\d+\] )(\d+)\.(\d{6}):`)

// longPlant is a planted profile of copies × 40,000 s, about a sample
// each 10 s on one CPU: planted.py's 4,000 s at 1 Hz (its run time grows
// with the square of the seconds), its times stretched tenfold, copied
// one after another.
func longPlant(t *testing.T, copies int, args ...string) []byte {
	t.Helper()
	path, _ := plant(t, append(args, "--seconds", "4000", "--hz", "1", "--cpus", "1")...)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	base := int64(51234)
	if slices.Contains(args, "--epoch") {
		base = 1795000000
	}
	body := b[sampleTime.FindIndex(b)[0]:]
	out := bytes.Clone(b[:len(b)-len(body)])
	for k := range int64(copies) {
		out = append(out, sampleTime.ReplaceAllFunc(body, func(m []byte) []byte {
			g := sampleTime.FindSubmatch(m)
			s, _ := strconv.ParseInt(string(g[2]), 10, 64)
			us, _ := strconv.ParseInt(string(g[3]), 10, 64)
			at := base*1e6 + ((s-base)*1e6+us)*10 + k*40_000e6
			return fmt.Appendf(nil, "%s%d.%06d:", g[1], at/1e6, at%1e6)
		})...)
	}
	return out
}

// TestStackRollupsAreExact: merged flame graphs over windows of hours to
// days, served from hour and day rollups and their edges, equal, stack for
// stack, the same graphs counted from the per-second rows alone, over
// random windows (not on hour or second edges), hosts, idle and period
// weights. The first query counts and stores the rollups, the next reads
// them and counts none; an upload into a stored day, a change of host and
// a deletion are counted at once; a deletion removes the rows of its
// hours and days.
func TestStackRollupsAreExact(t *testing.T) {
	bf := plantLongFleet(t)
	ctx := context.Background()
	defer query.SetHourHosts(2)() // the three hosts' hours counted as two groups
	q := query.New(bf.db, query.Options{})
	ref := query.New(bf.db, query.Options{NoStackBuckets: true})
	check := func(what string, sel fleetscope.FleetSelection, byPeriod bool) query.Served {
		t.Helper()
		return sameAsSeconds(t, q, ref, bf.tenant, what, sel, byPeriod)
	}
	rng := rand.New(rand.NewPCG(38, 7))
	var days, hours int
	for try := range 6 {
		from := fleetBase + rng.Int64N(40_000e9)
		to := from + 5_000e9 + rng.Int64N(210_000e9)
		sel := fleetscope.FleetSelection{App: "shop", From: from, To: to, IncludeIdle: try%2 == 0}
		if try%3 == 1 {
			sel.Hosts = []string{"d1", "d3"}
		}
		first := check(fmt.Sprintf("window %d, first", try), sel, try%4 == 3)
		again := check(fmt.Sprintf("window %d, again", try), sel, try%4 == 3)
		if first.RollupsCounted == 0 && first.Hours+first.Days == 0 || again.RollupsCounted != 0 || again.BucketsCounted != 0 || again.Hours+again.Days == 0 {
			t.Fatalf("window %d: served %+v, then %+v: want rollups counted, then read", try, first, again)
		}
		days, hours = days+again.Days, hours+again.Hours
	}
	if days == 0 || hours == 0 {
		t.Fatalf("%d day rows and %d hour rows read: the windows did not exercise both", days, hours)
	}
	all := fleetscope.FleetSelection{App: "shop", From: fleetBase, To: fleetBase + 260_000e9, IncludeIdle: true}
	check("every day, first", all, false)
	if s := check("every day", all, false); s.Days != 6 || s.RollupsCounted != 0 {
		t.Fatalf("every day served %+v: want 6 day rows (d1, d2 and d3 of two whole days) and nothing counted", s)
	}
	if _, err := q.FleetFlameGraph(ctx, bf.tenant, all, query.FleetFlameOptions{}); err != nil {
		t.Fatal(err)
	}

	// An upload into a stored day, a change of host, a deletion: the next
	// answers count them.
	bf.add(t, "d2b", "d2", false, ingest.Meta{AnchorClockNanos: 51234e9, AnchorWall: time.Unix(0, fleetBase+100_000e9)}, "--seed", "84", "--seconds", "900")
	if s := check("after an upload", all, false); s.RollupsCounted == 0 {
		t.Fatalf("after an upload into a stored day, served %+v: want it counted again", s)
	}
	d9 := "d9"
	if _, err := bf.db.UpdateProfile(ctx, bf.tenant, bf.ids["d3"], fleetscope.ProfileUpdate{Host: &d9}, "test"); err != nil {
		t.Fatal(err)
	}
	check("after a change of host", all, false)
	check("one host after a change of host", fleetscope.FleetSelection{App: "shop", Hosts: []string{"d9"}, From: all.From, To: all.To}, true)
	c, err := pgx.Connect(ctx, bf.url)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rowsOf := func(host string) (n int) {
		if err := c.QueryRow(ctx, `SELECT count(*) FROM fleet_stack_rollups WHERE host = $1`, host).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if rowsOf("d1") == 0 {
		t.Fatal("no stored rollup of d1 before its deletion")
	}
	if _, err := bf.db.DeleteProfile(ctx, bf.tenant, bf.ids["d1"], "test"); err != nil {
		t.Fatal(err)
	}
	if n := rowsOf("d1"); n != 0 {
		t.Fatalf("%d rollups of d1 kept after its deletion", n)
	}
	check("after a deletion", all, true)
}

// racingSource uploads a profile into the fleet while a rollup is being
// counted (when its first ten-minute buckets are stored: after the
// versions were read and the hour's profiles listed).
type racingSource struct {
	*postgres.DB
	race func()
}

func (r *racingSource) PutFleetStackBuckets(ctx context.Context, tenant int64, app, event string, bs []index.StackBucket) error {
	if r.race != nil {
		race := r.race
		r.race = nil
		race()
	}
	return r.DB.PutFleetStackBuckets(ctx, tenant, app, event, bs)
}

// TestStackRollupsRacedAreNotStored: an upload committed into an hour
// while its rollup is counted from the profiles listed before it: the
// count misses the upload, and is not what the next answer reads (it
// counts the hour again, with the upload).
func TestStackRollupsRacedAreNotStored(t *testing.T) {
	bf := plantBucketFleet(t)
	src := &racingSource{DB: bf.db}
	q := query.New(src, query.Options{})
	ref := query.New(bf.db, query.Options{NoStackBuckets: true})
	// The fleet's two whole hours.
	sel := fleetscope.FleetSelection{App: "shop", From: fleetBase - 400e9, To: fleetBase + 6800e9, IncludeIdle: true}
	src.race = func() {
		bf.add(t, "late", "h2", false, ingest.Meta{AnchorClockNanos: 51234e9, AnchorWall: time.Unix(0, fleetBase+1000e9)}, "--seed", "76", "--seconds", "600")
	}
	if _, served := folded(t, q, bf.tenant, sel, false); served.RollupsCounted == 0 || src.race != nil {
		t.Fatalf("served %+v: want the hours counted, the upload racing them", served)
	}
	q.Flush()
	want, _ := folded(t, ref, bf.tenant, sel, false)
	got, served := folded(t, q, bf.tenant, sel, false)
	if !maps.Equal(got, want) {
		t.Fatalf("after a raced count: served %+v, not the samples with the upload", served)
	}
	if served.RollupsCounted == 0 {
		t.Fatalf("after a raced count: served %+v, want the raced hour counted again", served)
	}
}

// TestCompactRollups: compaction stores the rollups of the sealed hours
// and days a span touches, so that the next flame graph reads them and
// counts none, and equals the per-second path.
func TestCompactRollups(t *testing.T) {
	bf := plantLongFleet(t)
	ctx := context.Background()
	now := time.Unix(0, fleetBase+200_000e9)
	q := query.New(bf.db, query.Options{})
	if _, _, err := q.CompactBuckets(ctx, bf.tenant, "shop", fleetBase, fleetBase+260_000e9, now); err != nil {
		t.Fatal(err)
	}
	n, err := q.CompactRollups(ctx, bf.tenant, "shop", fleetBase, fleetBase+260_000e9, now)
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatal("nothing compacted")
	}
	sel := fleetscope.FleetSelection{App: "shop", From: fleetBase + 1000e9, To: fleetBase + 190_000e9}
	want, _ := folded(t, query.New(bf.db, query.Options{NoStackBuckets: true}), bf.tenant, sel, false)
	got, served := folded(t, query.New(bf.db, query.Options{}), bf.tenant, sel, false)
	if served.RollupsCounted != 0 || served.Days == 0 || !maps.Equal(got, want) {
		t.Fatalf("after compaction: served %+v, equal %v", served, maps.Equal(got, want))
	}
	if again, err := q.CompactRollups(ctx, bf.tenant, "shop", fleetBase, fleetBase+260_000e9, now); err != nil || again != 0 {
		t.Fatalf("compacting again counted %d rollups (%v): want none", again, err)
	}
}
