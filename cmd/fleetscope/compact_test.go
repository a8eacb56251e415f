package main

import (
	"context"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// TestStoredProfilesAreCompacted: the server counts the stack buckets of
// the profiles it stores by itself (FLEETSCOPE_COMPACT_INTERVAL), so the
// first merged flame graph over them reads buckets instead of counting
// them, and totals what the profile's own flame graph of the same range
// totals.
func TestStoredProfilesAreCompacted(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_COMPACT_INTERVAL=200ms"}})
	ctx := context.Background()
	// 1,300 s from 1795000000 (400 s into a ten-minute bucket): one whole
	// bucket, [1795000200, 1795000800), and two partial ones.
	path := plant(t, "--seed", "81", "--seconds", "1300", "--epoch", "--hz", "5")
	id := s.upload(path, "--host", "h1")
	line, _ := s.log.await(t, 0, time.Minute, msg("stack buckets compacted"))
	if n, _ := line["buckets"].(float64); n != 3 {
		t.Fatalf("compacted %v buckets, want the 3 the profile touches", line["buckets"])
	}
	var rows int
	if err := s.sql(func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT count(*) FROM fleet_stack_buckets WHERE app = 'test' AND host = 'h1'`).Scan(&rows)
	}); err != nil || rows != 3 {
		t.Fatalf("%d stored buckets (%v), want 3", rows, err)
	}
	from, to := time.Unix(1795000100, 0), time.Unix(1795000900, 0)
	g, err := s.as(s.key).fleet.GetFleetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFleetFlameGraphRequest{
		Selection: &fsv1.FleetSelection{App: "test", From: timestamppb.New(from), To: timestamppb.New(to), IncludeIdle: true},
		Format:    fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_TREE}))
	if err != nil {
		t.Fatal(err)
	}
	acc := g.Msg.GetAccounting()
	if acc.GetServedBuckets() != 1 || acc.GetCountedBuckets() != 0 {
		t.Fatalf("the first flame graph read %d buckets and counted %d: want the compacted one read", acc.GetServedBuckets(), acc.GetCountedBuckets())
	}
	start, end := int64(100e9), int64(900e9) // relative to the profile's first second, 1795000000
	one, err := s.as(s.key).query.GetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id, IncludeIdle: true,
		StartNanos: &start, EndNanos: &end, Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_TREE}))
	if err != nil {
		t.Fatal(err)
	}
	if g.Msg.GetFlameGraph().GetTotal() != one.Msg.GetTotal() || g.Msg.GetFlameGraph().GetTotal() == 0 {
		t.Fatalf("fleet flame graph of [+100 s, +900 s) totals %d, the profile's own %d", g.Msg.GetFlameGraph().GetTotal(), one.Msg.GetTotal())
	}
}
