package query_test

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/store/memory"
)

// TestFleetSeriesIsExact: over windows of whole seconds a fleet series is
// the fleet timeline, column for column; over nanosecond windows each
// column counts exactly the samples of its second that lie in the window
// (counted from the perf text), and the columns total the merged flame
// graph of the same selection; grouped by host, each group is that host's
// own series.
func TestFleetSeriesIsExact(t *testing.T) {
	q, hosts := plantFleet(t)
	ctx := context.Background()
	whole := fleetscope.FleetSelection{App: "shop", From: fleetBase, To: fleetBase + 10e9}
	for _, minSPC := range []int64{0, 3} {
		s, err := q.FleetSeries(ctx, 0, whole, minSPC, nil)
		if err != nil {
			t.Fatal(err)
		}
		tl, err := q.FleetTimeline(ctx, 0, whole, minSPC)
		if err != nil {
			t.Fatal(err)
		}
		if s.StartSecond != tl.StartSecond || s.SecondsPerColumn != tl.SecondsPerColumn || len(s.Groups) != 1 || !slices.Equal(s.Groups[0].Columns, tl.Totals) {
			t.Fatalf("minSPC %d: the series of a whole-second window differs from the timeline: %+v vs %+v", minSPC, s, tl)
		}
	}
	for _, w := range [][2]int64{{0, 10e9}, {2_400_000_000, 2_480_000_000}, {2_123_456_789, 3_000_000_001}, {5_999_999_999, 6_000_000_001},
		{350_000_000, 9_999_999_999}, {1_000_000_000, 1_500_000_000}, {1_250_000_000, 2_000_000_000}} {
		sel := fleetscope.FleetSelection{App: "shop", From: fleetBase + w[0], To: fleetBase + w[1]}
		s, err := q.FleetSeries(ctx, 0, sel, 0, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int64]int64{}
		for _, h := range hosts {
			for _, b := range h.blocks {
				if at := b.nanos + h.shift; !b.idle && at >= sel.From && at < sel.To {
					want[fleetscope.FloorSecond(at)]++
				}
			}
		}
		got := map[int64]int64{}
		var total int64
		for _, g := range s.Groups {
			for i, n := range g.Columns {
				if n != 0 {
					got[s.StartSecond+int64(i)*s.SecondsPerColumn] += n
				}
				total += n
			}
		}
		if s.SecondsPerColumn != 1 || !maps.Equal(got, want) {
			t.Fatalf("window %v: series %v, the window's samples by second %v", w, got, want)
		}
		g, err := q.FleetFlameGraph(ctx, 0, sel, query.FleetFlameOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if uint64(total) != g.Total || s.Profiles != g.Profiles {
			t.Fatalf("window %v: series total %d (%d profiles), merged flame graph %d (%d profiles)", w, total, s.Profiles, g.Total, g.Profiles)
		}
	}
	sel := fleetscope.FleetSelection{App: "shop", From: fleetBase + 2_123_456_789, To: fleetBase + 7_500_000_001}
	byHost, err := q.FleetSeries(ctx, 0, sel, 2, func(p *fleetscope.ProfileInfo) string { return p.Host })
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, g := range byHost.Groups {
		keys = append(keys, g.Key)
		one := sel
		one.Hosts = []string{g.Key}
		own, err := q.FleetSeries(ctx, 0, one, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		fg, err := q.FleetFlameGraph(ctx, 0, one, query.FleetFlameOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(own.Groups) != 1 || !slices.Equal(own.Groups[0].Columns, g.Columns) || uint64(g.Total) != fg.Total {
			t.Fatalf("host %s: grouped %v (total %d), alone %+v, flame graph %d", g.Key, g.Columns, g.Total, own.Groups, fg.Total)
		}
	}
	if !slices.Equal(keys, []string{"h1", "h2", "h3", "h4"}) {
		t.Fatalf("groups %v", keys)
	}
}

// TestFleetSeriesUntimed: a profile without per-sample times (pprof)
// counts whole, in the column of its span's start, when its span lies
// inside the window, and not otherwise: as in merged flame graphs.
func TestFleetSeriesUntimed(t *testing.T) {
	st := memory.New()
	plantFleetIn(t, st)
	pr, err := ingest.ParseIndex(bytes.NewReader(corpus.Read(t, "corpus/pprof/go-sha-sort.cpu.pprof")), "", 0, ingest.Shape{})
	if err != nil {
		t.Fatal(err)
	}
	meta := ingest.Meta{App: "shop", Host: "pp", SpanStart: time.Unix(1795000003, 5e8), SpanEnd: time.Unix(1795000005, 0)}
	if _, err := st.Add(ingest.Describe(meta, pr, time.Now()), pr.Profile.Dict, pr.Index); err != nil {
		t.Fatal(err)
	}
	q := query.New(st, query.Options{})
	ctx := context.Background()
	for _, c := range []struct {
		from, to int64
		inside   bool
	}{{1_500_000_000, 9_250_000_000, true}, {3_500_000_000, 5_000_000_000, true}, {4_000_000_000, 9_000_000_000, false}, {0, 4_999_999_999, false}} {
		for _, ev := range []string{"samples", "cpu"} {
			sel := fleetscope.FleetSelection{App: "shop", From: fleetBase + c.from, To: fleetBase + c.to, Event: ev}
			s, err := q.FleetSeries(ctx, 0, sel, 0, nil)
			if err != nil {
				t.Fatal(err)
			}
			g, err := q.FleetFlameGraph(ctx, 0, sel, query.FleetFlameOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !c.inside {
				if len(s.Groups) != 0 || g.Total != 0 || s.LeftOut[query.LeftUntimedSpan] != 1 {
					t.Fatalf("%v %s: a profile whose span is not inside the window counted: %+v, flame graph %d", c, ev, s, g.Total)
				}
				continue
			}
			col := 1795000003 - s.StartSecond
			if len(s.Groups) != 1 || g.Total == 0 || uint64(s.Groups[0].Total) != g.Total || s.Groups[0].Columns[col] != s.Groups[0].Total {
				t.Fatalf("%v %s: series %+v (column %d), flame graph total %d", c, ev, s.Groups, col, g.Total)
			}
		}
	}
}
