package postgres_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
)

// TestSampleTierRows: a profile is due to leave the sample tier once its
// tenant has one and it was stored longer ago than that; MoveSamples
// moves it (or keeps its rows) only from the tier, as its tenant only;
// its rows are deleted only once moved, in the same transaction as its
// state; the consistency check knows profiles without rows.
func TestSampleTierRows(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	a, _ := db.CreateTenant(ctx, "a", false)
	b, _ := db.CreateTenant(ctx, "b", false)
	pa, _ := store(t, db, a, "app", sample)
	pa2, _ := store(t, db, a, "app", strings.Replace(sample, "100.250000", "100.260000", 1))
	pb, _ := store(t, db, b, "app", sample)
	c := conn(t, db)
	if _, err := c.Exec(ctx, `UPDATE profiles SET created_at = now() - interval '3 days'`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	due := func(moved bool, cutoff time.Time) []string {
		t.Helper()
		refs, err := db.SamplesDue(ctx, now, cutoff, moved, 10)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, r := range refs {
			ids = append(ids, r.ID)
		}
		slices.Sort(ids)
		return ids
	}
	rows := func(id string) (n int) {
		t.Helper()
		if err := c.QueryRow(ctx, `SELECT count(*) FROM seconds WHERE profile_id = $1`, id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := due(false, now); got != nil {
		t.Fatalf("due without a tier: %v", got)
	}
	if err := db.SetTenantLimits(ctx, "a", fleetscope.Limits{SampleDays: 4}); err != nil {
		t.Fatal(err)
	}
	if got := due(false, now); got != nil {
		t.Fatalf("due within the tier: %v", got)
	}
	if err := db.SetTenantLimits(ctx, "a", fleetscope.Limits{SampleDays: 2}); err != nil {
		t.Fatal(err)
	}
	if ts, _ := db.Tenant(ctx, a); ts.SampleDays != 2 {
		t.Fatalf("tenant a's sample days: %d", ts.SampleDays)
	}
	want := []string{pa.ID, pa2.ID}
	slices.Sort(want)
	if got := due(false, now); !slices.Equal(got, want) {
		t.Fatalf("due past the tier: %v, want tenant a's %v", got, want)
	}

	digest := []byte("a digest of 32 bytes, for a test")
	// Another tenant cannot move a's profile.
	if err := db.MoveSamples(ctx, b, pa.ID, now, digest); err != nil {
		t.Fatal(err)
	}
	if p, _ := db.Profile(ctx, a, pa.ID); p.Cold {
		t.Fatal("tenant b moved tenant a's profile")
	}
	before := rows(pa.ID)
	if err := db.MoveSamples(ctx, a, pa.ID, now, digest); err != nil {
		t.Fatal(err)
	}
	if err := db.MoveSamples(ctx, a, pa2.ID, now, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.MoveSamples(ctx, a, pa2.ID, now, digest); err != nil { // kept is for good
		t.Fatal(err)
	}
	if p, _ := db.Profile(ctx, a, pa.ID); !p.Cold || rows(pa.ID) != before || string(p.SamplesDigest) != string(digest) {
		t.Fatalf("moved: cold %v with %d rows, digest %q; want cold with its %d rows until the grace, and the digest", p.Cold, rows(pa.ID), p.SamplesDigest, before)
	}
	if p, _ := db.Profile(ctx, a, pa2.ID); p.Cold {
		t.Fatal("a profile whose rows are kept reads as cold")
	}
	if got := due(false, now); got != nil {
		t.Fatalf("due after the moves: %v", got)
	}
	if got := due(true, now); got != nil {
		t.Fatalf("rows due for deletion at the move: %v", got)
	}
	if got := due(true, now.Add(time.Second)); !slices.Equal(got, []string{pa.ID}) {
		t.Fatalf("rows due after the move: %v, want %s's", got, pa.ID)
	}
	if err := db.DropMovedSamples(ctx, b, pa.ID); err != nil {
		t.Fatal(err)
	}
	if rows(pa.ID) != before {
		t.Fatal("tenant b deleted tenant a's rows")
	}
	for _, id := range []string{pa.ID, pa2.ID, pb.ID} {
		if err := db.DropMovedSamples(ctx, a, id); err != nil {
			t.Fatal(err)
		}
	}
	if rows(pa.ID) != 0 || rows(pa2.ID) == 0 || rows(pb.ID) == 0 {
		t.Fatalf("after the drops: %d, %d and %d rows; want only the moved profile's deleted", rows(pa.ID), rows(pa2.ID), rows(pb.ID))
	}
	if got := due(true, now.Add(time.Second)); got != nil {
		t.Fatalf("rows due after their deletion: %v", got)
	}
	if bad, err := db.CheckConsistency(ctx); err != nil || len(bad) != 0 {
		t.Fatalf("consistency: %v %v", bad, err)
	}
	// A profile in the tier without its rows is still found.
	if _, err := c.Exec(ctx, `DELETE FROM seconds WHERE profile_id = $1`, pb.ID); err != nil {
		t.Fatal(err)
	}
	if bad, _ := db.CheckConsistency(ctx); len(bad) != 1 {
		t.Fatalf("consistency with a profile's rows gone: %v", bad)
	}
}
