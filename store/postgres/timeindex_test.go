package postgres_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

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
// either side of) every power of 4 seconds, timed (placed to the
// nanosecond) and untimed alike. FleetProfiles and
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
	for k := range 11 { // 1 s to 4^10 s, by powers of 4, and a nanosecond either side
		b := int64(1e9) << (2 * k)
		durations = append(durations, b-1, b, b+1)
	}
	var all []*fleetscope.ProfileInfo
	for i, d := range durations {
		timed := i%2 == 0
		all = append(all,
			storeSpan(t, db, acme, "shop", fmt.Sprintf("end-%d", i), timed, ref-d, d),
			storeSpan(t, db, acme, "shop", fmt.Sprintf("start-%d", i), !timed, ref+7e9, d))
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
