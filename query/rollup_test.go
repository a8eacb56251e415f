package query_test

import (
	"context"
	"maps"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/store/memory"
)

// TestFleetRollupsAreExact: over a fleet recording for hours, windows of
// columns of a minute or more are answered from the minute rows, and of
// whole tens of seconds from the 10-s rows (the accounting says how many),
// and seconds at their edges, and every answer
// equals the hosts' samples counted from the perf text: the heatmap cell
// for cell, the host strip and the timeline column for column, and the
// series with its partial first and last seconds counted exactly.
func TestFleetRollupsAreExact(t *testing.T) {
	st := memory.New()
	q := query.New(st, query.Options{})
	var hosts []*host
	for i, args := range [][]string{
		{"--seed", "61", "--seconds", "9000", "--epoch", "--hz", "3"},
		{"--seed", "62", "--seconds", "7000", "--epoch", "--hz", "2", "--cpus", "3"},
	} {
		path, _ := plant(t, args...)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := ingest.ParseIndex(f, "", 0, ingest.Shape{})
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		name := []string{"h1", "h2"}[i]
		info := ingest.Describe(ingest.Meta{App: "shop", Host: name}, pr, time.Now())
		id, err := st.Add(info, pr.Profile.Dict, pr.Index)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, &host{name: name, path: path, id: id, shift: info.WallShiftNanos, blocks: blocks(t, path)})
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(3, 9))
	minutes, tens := 0, 0
	for try := range 30 {
		from := fleetBase + rng.Int64N(3000e9) - 200e9 // not on a second, most of the time
		to := from + 3600e9 + rng.Int64N(5000e9)
		minSPC := []int64{60, 120, 300, 1, 30}[try%5]
		sel := fleetscope.FleetSelection{App: "shop", From: from, To: to, IncludeIdle: try%2 == 0}
		first, end := fleetscope.FloorSecond(from), fleetscope.FloorSecond(to-1)+1
		// The reference: every sample of the seconds the window touches
		// (heatmap, strip, timeline), or of the window itself (series).
		cells := map[[2]int64]int64{} // (second, row)
		inWindow := map[int64]int64{} // second, samples in [from, to)
		for _, h := range hosts {
			for _, b := range h.blocks {
				w := b.nanos + h.shift
				sec := fleetscope.FloorSecond(w)
				if sec < first || sec >= end || b.idle && !sel.IncludeIdle {
					continue
				}
				cells[[2]int64{sec, (w - sec*1e9) * 50 / 1e9}]++
				if w >= from && w < to {
					inWindow[sec]++
				}
			}
		}
		h, err := q.FleetHeatmap(ctx, 0, sel, 50, minSPC)
		if err != nil {
			t.Fatal(err)
		}
		spc, start := h.SecondsPerColumn, h.StartSecond
		if spc >= 60 && (spc%60 != 0 || start%spc != 0 || start > first || start+spc <= first) {
			t.Fatalf("window %d: columns of %d s from %d: want whole minutes, aligned, the first holding second %d", try, spc, start, first)
		}
		if spc >= 5 && (spc%10 != 0 || start%spc != 0 || start > first || start+spc <= first) {
			t.Fatalf("window %d: columns of %d s from %d: want whole tens of seconds, aligned, the first holding second %d", try, spc, start, first)
		}
		minutes, tens = minutes+h.Served.Minutes, tens+h.Served.Tens
		if spc%60 == 0 && end-first > 3*60 && h.Served.Minutes == 0 {
			t.Fatalf("window %d: %d-s columns over %d s served by %+v: want minute rows", try, spc, end-first, h.Served)
		}
		if spc%10 == 0 && spc%60 != 0 && h.Served.Tens == 0 {
			t.Fatalf("window %d: %d-s columns over %d s served by %+v: want 10-s rows", try, spc, end-first, h.Served)
		}
		want := map[[2]int64]int64{} // (column, row)
		for k, n := range cells {
			want[[2]int64{(k[0] - start) / spc, k[1]}] += n
		}
		got := map[[2]int64]int64{}
		for i, col := range h.Columns {
			for r, n := range col {
				if n != 0 {
					got[[2]int64{int64(i), int64(r)}] = n
				}
			}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("window %d (%d-s columns, served %+v): the heatmap differs from the samples counted from the text", try, spc, h.Served)
		}
		tl, err := q.FleetTimeline(ctx, 0, sel, minSPC)
		if err != nil {
			t.Fatal(err)
		}
		hs, err := q.FleetHosts(ctx, 0, sel, minSPC)
		if err != nil {
			t.Fatal(err)
		}
		series, err := q.FleetSeries(ctx, 0, sel, minSPC, nil)
		if err != nil {
			t.Fatal(err)
		}
		if tl.StartSecond != start || tl.SecondsPerColumn != spc || hs.StartSecond != start || series.StartSecond != start {
			t.Fatalf("window %d: the timeline, host strip and series do not share the heatmap's columns", try)
		}
		wantCols, wantWindow := make([]int64, len(h.Columns)), make([]int64, len(h.Columns))
		for k, n := range cells {
			wantCols[(k[0]-start)/spc] += n
		}
		for sec, n := range inWindow {
			wantWindow[(sec-start)/spc] += n
		}
		hostCols := make([]int64, len(h.Columns))
		for _, hsr := range hs.Hosts {
			for i, n := range hsr.Columns {
				hostCols[i] += n
			}
		}
		var seriesCols []int64
		if len(series.Groups) == 1 {
			seriesCols = series.Groups[0].Columns
		}
		for i := range wantCols {
			if tl.Totals[i] != wantCols[i] || hostCols[i] != wantCols[i] || wantWindow[i] != 0 && (i >= len(seriesCols) || seriesCols[i] != wantWindow[i]) {
				t.Fatalf("window %d, column %d: timeline %d, host strip %v, series %v; want %d (series %d)", try, i, tl.Totals[i], hostCols, seriesCols, wantCols[i], wantWindow[i])
			}
		}
	}
	if minutes == 0 || tens == 0 {
		t.Fatalf("windows served by %d minute rows and %d 10-s rows: want both", minutes, tens)
	}
	t.Logf("30 windows, %d minute rows and %d 10-s rows read", minutes, tens)
}
