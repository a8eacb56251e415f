package main

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// TestCachesForgetProfiles: every way a profile is deleted or changed
// (retention, an update, a deletion through the API) leaves nothing of it
// in the server's caches, as their per-table metrics count them, and what
// is cached of other profiles stays.
func TestCachesForgetProfiles(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_SWEEP_INTERVAL=250ms"}})
	ctx := context.Background()
	old := s.upload(plant(t, "--seed", "45", "--seconds", "2"))
	kept := s.upload(plant(t, "--seed", "46", "--seconds", "2"))
	s.admin("tenant", "set-limits", "acme", "--retention-days", "30")
	reader := s.as(s.key)
	heatmap := func(id string) {
		t.Helper()
		if _, err := reader.query.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id})); err != nil {
			t.Fatal(err)
		}
	}
	heatmaps := func(want float64) {
		t.Helper()
		if n := s.metric(`fleetscope_cache_entries{table="heatmaps"}`); n != want {
			t.Fatalf("%v heatmaps cached, want %v", n, want)
		}
	}
	heatmap(old)
	heatmap(kept)
	heatmaps(2)
	if s.metric(`fleetscope_cache_bytes{table="heatmaps"}`) <= 0 || s.metric(`fleetscope_cache_loads_total{table="heatmaps"}`) != 2 {
		t.Fatal("heatmaps cached without their bytes or loads counted")
	}
	heatmap(kept)
	if n := s.metric(`fleetscope_cache_hits_total{table="heatmaps"}`); n != 1 {
		t.Fatalf("%v heatmap cache hits, want 1", n)
	}

	// Retention deletes the old profile.
	_, from, _ := s.log.find(0, func(map[string]any) bool { return false })
	if err := s.sql(func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `UPDATE profiles SET created_at = now() - interval '31 days' WHERE id = $1`, old)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	s.log.await(t, from, time.Minute, msg("retention deleted profiles"))
	heatmaps(1)

	// An update forgets the profile; a deletion through the API too.
	app := "renamed"
	admin := s.as(s.newKey("acme", "admin"))
	if _, err := admin.admin.UpdateProfile(ctx, connect.NewRequest(&fsv1.UpdateProfileRequest{Id: kept, App: &app})); err != nil {
		t.Fatal(err)
	}
	heatmaps(0)
	heatmap(kept)
	heatmaps(1)
	if _, err := admin.admin.DeleteProfile(ctx, connect.NewRequest(&fsv1.DeleteProfileRequest{Id: kept})); err != nil {
		t.Fatal(err)
	}
	heatmaps(0)
}
