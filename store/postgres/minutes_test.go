package postgres_test

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
	"github.com/fleetscope/fleetscope/store/postgres"
)

// rollupBySeconds sums the stored seconds of [from, to) by unix slots of
// width seconds, per profile and event: the reference fleet_tens and
// fleet_minutes must equal.
func rollupBySeconds(t *testing.T, db *postgres.DB, tenant int64, app string, width, from, to int64) []index.FleetRow {
	t.Helper()
	secs, err := db.FleetCells(context.Background(), tenant, app, "", from, to)
	if err != nil {
		t.Fatal(err)
	}
	byProfile := map[string][]index.WallSecond{}
	host := map[string]string{}
	for _, s := range secs {
		byProfile[s.ProfileID] = append(byProfile[s.ProfileID], s.WallSecond)
		host[s.ProfileID] = s.Host
	}
	var out []index.FleetRow
	for id, ws := range byProfile {
		for _, m := range index.Rollup(ws, width) {
			out = append(out, index.FleetRow{ProfileID: id, Host: host[id], WallSecond: m})
		}
	}
	return sortRows(out)
}

func sortRows(rows []index.FleetRow) []index.FleetRow {
	slices.SortFunc(rows, func(a, b index.FleetRow) int {
		return cmp.Or(cmp.Compare(a.ProfileID, b.ProfileID), cmp.Compare(a.Event, b.Event), cmp.Compare(a.Second, b.Second))
	})
	return rows
}

func rowsText(rows []index.FleetRow) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%s %s %s %d %d/%d %v %v\n", r.ProfileID, r.Host, r.Event, r.Second, r.Samples, r.Idle, r.Cells, r.IdleCells)
	}
	return b.String()
}

// TestFleetMinutes: a profile's cells by the minute (fleet_minutes) are its
// cells by the second summed, for profiles that cross minutes and carry two
// events, in any window of whole minutes; they follow the profile when its
// app or host changes and go when it is deleted, in the same transaction.
func TestFleetMinutes(t *testing.T) { testRollup(t, index.Minutes) }

// TestFleetTens: the same of a profile's cells by ten seconds
// (fleet_tens), in any window of whole tens of seconds.
func TestFleetTens(t *testing.T) { testRollup(t, index.Tens) }

// testRollup checks the rollup of width seconds (TestFleetMinutes).
func testRollup(t *testing.T, width int64) {
	ctx := context.Background()
	db := newDB(t)
	acme, _ := db.CreateTenant(ctx, "acme", false)
	rng := rand.New(rand.NewPCG(7, 7))
	var ids []string
	for p := range 4 {
		var b strings.Builder
		for range 300 {
			sec := 1795000000 + rng.Int64N(400) - 30 // across minute boundaries, 1795000000 is not one
			ev := []string{"cpu-clock", "cs"}[rng.IntN(2)]
			fmt.Fprintf(&b, "app %d [000] %d.%06d: 1 %s:\n\t1 f%d (/bin/app)\n\n", p, sec, rng.IntN(1e6), ev, rng.IntN(3))
		}
		b.WriteString("swapper 0 [001] 1795000005.000000: 1 cpu-clock:\n\tffffffff81000000 do_idle ([kernel.kallsyms])\n\n")
		info, _ := store(t, db, acme, "shop", b.String())
		ids = append(ids, info.ID)
	}
	check := func(app string, from, to int64) {
		t.Helper()
		got, err := db.FleetRollup(ctx, acme, app, "", width, from, to, true)
		if err != nil {
			t.Fatal(err)
		}
		if want := rollupBySeconds(t, db, acme, app, width, from, to); rowsText(sortRows(got)) != rowsText(want) {
			t.Fatalf("%d-s rows of %s in [%d, %d):\n%s\nwant the seconds summed:\n%s", width, app, from, to, rowsText(got), rowsText(want))
		}
	}
	check("shop", 1794999900, 1795000500) // every slot
	for range 20 {
		from := (1794999900 + rng.Int64N(600)) / width * width
		check("shop", from, from+width*(1+rng.Int64N(5)))
	}
	totals, err := db.FleetRollup(ctx, acme, "shop", "cs", width, 1794999900, 1795000500, false)
	if err != nil || len(totals) == 0 || totals[0].Cells != nil || totals[0].Event != "cs" {
		t.Fatalf("totals of cs: %v %v, want rows of that event without cells", err, totals)
	}

	moved := "moved"
	if _, err := db.UpdateProfile(ctx, acme, ids[0], fleetscope.ProfileUpdate{App: &moved}, "test"); err != nil {
		t.Fatal(err)
	}
	check("moved", 1794999900, 1795000500)
	check("shop", 1794999900, 1795000500)
	if rows, _ := db.FleetRollup(ctx, acme, "moved", "", width, 1794999900, 1795000500, false); len(rows) == 0 {
		t.Fatal("the moved profile has no rollup rows under its new app")
	}
	if _, err := db.DeleteProfile(ctx, acme, ids[1], "test"); err != nil {
		t.Fatal(err)
	}
	check("shop", 1794999900, 1795000500)
	rows, err := db.FleetRollup(ctx, acme, "shop", "", width, 1794999900, 1795000500, false)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.ProfileID == ids[1] {
			t.Fatalf("a deleted profile's %d-s row is left: %+v", width, r)
		}
	}
}
