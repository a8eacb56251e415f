package query_test

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/perf"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/flame"
	"github.com/fleetscope/fleetscope/store/memory"
)

// host is one planted profile of a fleet, with its samples read from the
// perf text independently of the code under test.
type host struct {
	name   string
	labels map[string]string
	path   string
	id     string
	shift  int64 // wall = profile clock + shift
	blocks []block
}

// plantFleet stores a fleet of planted profiles in memory: three hosts
// with epoch clocks over partly overlapping windows (8, 6 and 4 s from the
// same second) and one boot-clock host placed by an anchor 2.123456789 s
// after that second.
func plantFleet(t *testing.T) (*query.Service, []*host) {
	t.Helper()
	st := memory.New()
	return query.New(st, query.Options{}), plantFleetIn(t, st)
}

// plantFleetIn stores plantFleet's fleet in st.
func plantFleetIn(t *testing.T, st *memory.Store) []*host {
	t.Helper()
	var hosts []*host
	add := func(name string, labels map[string]string, meta ingest.Meta, args ...string) {
		path, _ := plant(t, args...)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		pr, err := ingest.ParseIndex(f, "", 0, ingest.Shape{})
		if err != nil {
			t.Fatal(err)
		}
		meta.App, meta.Host, meta.Labels = "shop", name, labels
		info := ingest.Describe(meta, pr, time.Now())
		id, err := st.Add(info, pr.Profile.Dict, pr.Index)
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, &host{name: name, labels: labels, path: path, id: id, shift: info.WallShiftNanos, blocks: blocks(t, path)})
	}
	add("h1", map[string]string{"version": "1"}, ingest.Meta{}, "--seed", "21", "--seconds", "8", "--epoch")
	add("h2", map[string]string{"version": "2"}, ingest.Meta{}, "--seed", "22", "--seconds", "6", "--epoch", "--cpus", "4")
	add("h3", map[string]string{"version": "2"}, ingest.Meta{}, "--seed", "23", "--seconds", "4", "--epoch", "--hz", "199")
	// planted.py's boot clock starts at 51234 s.
	add("h4", map[string]string{"version": "1"}, ingest.Meta{AnchorClockNanos: 51234e9, AnchorWall: time.Unix(1795000002, 123456789)},
		"--seed", "24", "--seconds", "5")
	if hosts[3].shift != 1795000002123456789-51234e9 {
		t.Fatalf("anchored host shift %d", hosts[3].shift)
	}
	return hosts
}

const fleetBase = int64(1795000000) * 1e9

// expected counts the fleet's non-idle samples by wall-clock cell, from the
// perf text: (unix second, row) -> count.
func expected(hosts []*host, rows int, from, to int64) map[[2]int64]int64 {
	out := map[[2]int64]int64{}
	for _, h := range hosts {
		for _, b := range h.blocks {
			w := b.nanos + h.shift
			if b.idle || w < from || w >= to {
				continue
			}
			sec := fleetscope.FloorSecond(w)
			out[[2]int64{sec, int64((w - sec*1e9) * int64(rows) / 1e9)}]++
		}
	}
	return out
}

// TestFleetHeatmapEqualsSumOfHosts: the fleet heatmap in wall-clock time is
// the sum of the hosts' samples, cell for cell (counted from the perf text),
// at the stored row count and at others; every cell's merged flame graph
// totals it.
func TestFleetHeatmapEqualsSumOfHosts(t *testing.T) {
	q, hosts := plantFleet(t)
	ctx := context.Background()
	sel := fleetscope.FleetSelection{App: "shop", From: fleetBase, To: fleetBase + 10e9}
	for _, rows := range []int{50, 25, 7} {
		h, err := q.FleetHeatmap(ctx, 0, sel, rows, 0)
		if err != nil {
			t.Fatal(err)
		}
		if h.StartSecond != 1795000000 || h.SecondsPerColumn != 1 || len(h.Columns) != 10 || h.Profiles != 4 {
			t.Fatalf("rows %d: start %d, %d columns of %d s, %d profiles", rows, h.StartSecond, len(h.Columns), h.SecondsPerColumn, h.Profiles)
		}
		want := expected(hosts, rows, sel.From, sel.To)
		got := map[[2]int64]int64{}
		for i, col := range h.Columns {
			for r, n := range col {
				if n > 0 {
					got[[2]int64{h.StartSecond + int64(i), int64(r)}] = n
				}
			}
		}
		if !maps.Equal(got, want) {
			t.Fatalf("rows %d: the fleet heatmap differs from the hosts' samples summed by wall clock", rows)
		}
		// Every cell's merged flame graph totals the cell (rows 50 and 7).
		if rows == 25 {
			continue
		}
		cells := 0
		for i, col := range h.Columns {
			for r, n := range col {
				cr := cellRange(i, r, rows)
				cs := sel
				cs.From, cs.To = h.StartSecond*1e9+cr.Start, h.StartSecond*1e9+cr.End
				g, err := q.FleetFlameGraph(ctx, 0, cs, query.FleetFlameOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if g.Total != uint64(n) {
					t.Fatalf("rows %d, cell (%d, %d): count %d, merged flame graph %d", rows, i, r, n, g.Total)
				}
				cells++
			}
		}
		t.Logf("rows %d: %d samples; %d cells, each equal to its merged flame graph", rows, h.Total, cells)
	}
}

// TestFleetFlameGraphIsTheSumOfHosts: for arbitrary nanosecond windows,
// the merged folded flame graph equals the hosts' own range flame graphs
// summed by stack, and equals collapse of exactly the samples in the
// window (the perf text, cut independently).
func TestFleetFlameGraphIsTheSumOfHosts(t *testing.T) {
	q, hosts := plantFleet(t)
	ctx := context.Background()
	for _, w := range [][2]int64{{0, 10e9}, {2_400_000_000, 2_480_000_000}, {2_123_456_789, 3_000_000_001}, {5_999_999_999, 6_000_000_001}, {3_5e8, 9_999_999_999}} {
		sel := fleetscope.FleetSelection{App: "shop", From: fleetBase + w[0], To: fleetBase + w[1]}
		g, err := q.FleetFlameGraph(ctx, 0, sel, query.FleetFlameOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := flame.Folded(g.Dict, g.Counts, flame.Annotate{})
		// The hosts' own flame graphs of the same instants, summed.
		sum := map[string]uint64{}
		var text strings.Builder
		for _, h := range hosts {
			p, err := q.Profile(ctx, 0, h.id)
			if err != nil {
				t.Fatal(err)
			}
			rel := fleetscope.Range{Start: sel.From - h.shift - p.StartSecond*1e9, End: sel.To - h.shift - p.StartSecond*1e9}
			hg, err := q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: h.id, Range: &rel})
			switch {
			case rel.Start > p.DurationNanos || rel.End <= 0: // the window misses this host: refused as such
				if fleetscope.ErrorCode(err) != fleetscope.EINVALID {
					t.Fatalf("a range outside host %s: %v, want EINVALID", h.name, err)
				}
			case err != nil:
				t.Fatal(err)
			default:
				for k, v := range flame.Folded(hg.Dict, hg.Counts, flame.Annotate{}) {
					sum[k] += v
				}
			}
			for _, b := range h.blocks {
				if at := b.nanos + h.shift; !b.idle && at >= sel.From && at < sel.To {
					text.WriteString(b.text)
				}
			}
		}
		if !maps.Equal(got, sum) {
			t.Fatalf("window %v: the merged flame graph differs from the hosts' range flame graphs summed", w)
		}
		if whole := g.Served.WholeProfiles; w == [2]int64{0, 10e9} && whole != 4 {
			t.Fatalf("window %v: %d profiles counted whole from their stack totals, want all 4", w, whole) // the others' windows cut them
		}
		var want bytes.Buffer
		if _, err := perf.Collapse(strings.NewReader(text.String()), &want, perf.Options{}); err != nil {
			t.Fatal(err)
		}
		var folded bytes.Buffer
		g.WriteFolded(&folded)
		if folded.String() != want.String() {
			t.Fatalf("window %v: merged folded output differs from collapse of the window's samples", w)
		}
		if g.Profiles != 4 && g.Profiles != 3 && g.Profiles != 2 {
			t.Fatalf("window %v: %d profiles", w, g.Profiles)
		}
	}
}

// TestFleetFilters: hosts and label conditions (k=v, k!=v) narrow the
// selection; the host strip splits the heatmap by host; longer windows get
// several seconds per column.
func TestFleetFilters(t *testing.T) {
	q, hosts := plantFleet(t)
	ctx := context.Background()
	all := fleetscope.FleetSelection{App: "shop", From: fleetBase, To: fleetBase + 10e9}
	total := func(sel fleetscope.FleetSelection) int64 {
		h, err := q.FleetHeatmap(ctx, 0, sel, 50, 0)
		if err != nil {
			t.Fatal(err)
		}
		return h.Total
	}
	perHost := map[string]int64{}
	for _, h := range hosts {
		for _, b := range h.blocks {
			if !b.idle {
				perHost[h.name]++
			}
		}
	}
	for _, tc := range []struct {
		name   string
		hosts  []string
		labels []fleetscope.LabelMatch
		want   []string
	}{
		{"h1 alone", []string{"h1"}, nil, []string{"h1"}},
		{"h2 or h4", []string{"h2", "h4"}, nil, []string{"h2", "h4"}},
		{"version=2", nil, []fleetscope.LabelMatch{{Name: "version", Value: "2"}}, []string{"h2", "h3"}},
		{"version!=2", nil, []fleetscope.LabelMatch{{Name: "version", Value: "2", Not: true}}, []string{"h1", "h4"}},
		{"h1 and version=2", []string{"h1"}, []fleetscope.LabelMatch{{Name: "version", Value: "2"}}, nil},
	} {
		sel := all
		sel.Hosts, sel.Labels = tc.hosts, tc.labels
		var want int64
		for _, h := range tc.want {
			want += perHost[h]
		}
		if got := total(sel); got != want {
			t.Errorf("%s: %d samples, want %d", tc.name, got, want)
		}
	}
	strip, err := q.FleetHosts(ctx, 0, all, 0)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, hs := range strip.Hosts {
		names = append(names, hs.Host)
		if hs.Total != perHost[hs.Host] {
			t.Errorf("host strip %s: %d, want %d", hs.Host, hs.Total, perHost[hs.Host])
		}
	}
	if !slices.IsSortedFunc(strip.Hosts, func(a, b query.HostSeries) int { return int(b.Total - a.Total) }) || len(names) != 4 {
		t.Errorf("host strip not by total: %v", names)
	}
	// Two hours: several seconds per column, rows still offsets within the second.
	long := fleetscope.FleetSelection{App: "shop", From: fleetBase - 3600e9, To: fleetBase + 3600e9}
	h, err := q.FleetHeatmap(ctx, 0, long, 50, 0)
	if err != nil {
		t.Fatal(err)
	}
	if h.SecondsPerColumn != 10 || len(h.Columns) != 720 || h.Total != total(all) || h.Served.Tens == 0 {
		t.Fatalf("2-h window: %d columns of %d s, total %d, served %+v; want 720 of 10 s (8 s widened to whole tens), total %d, from 10-s rows", len(h.Columns), h.SecondsPerColumn, h.Total, h.Served, total(all))
	}
	tl, err := q.FleetTimeline(ctx, 0, long, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, col := range h.Columns {
		var n int64
		for _, c := range col {
			n += c
		}
		if tl.Totals[i] != n {
			t.Fatalf("timeline column %d: %d, heatmap column sums to %d", i, tl.Totals[i], n)
		}
	}
	// Coarser columns on request: the host strip in 10-s steps.
	coarse, err := q.FleetHosts(ctx, 0, all, 10)
	if err != nil || coarse.SecondsPerColumn != 10 || len(coarse.Hosts[0].Columns) != 1 || coarse.Hosts[0].Total != strip.Hosts[0].Total {
		t.Fatalf("host strip in 10-s steps: %+v, %v", coarse, err)
	}
	// A selection with nothing in it answers empty, not an error.
	empty := all
	empty.App = "nothing"
	if h, err := q.FleetHeatmap(ctx, 0, empty, 50, 0); err != nil || h.Total != 0 || h.Profiles != 0 {
		t.Fatalf("empty selection: %v %v", h, err)
	}
	// A reversed window is invalid.
	bad := all
	bad.From, bad.To = all.To, all.From
	if _, err := q.FleetHeatmap(ctx, 0, bad, 50, 0); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
		t.Fatalf("reversed window: %v", err)
	}
}

// TestFleetSampleFilters: under function and CPU filters the fleet heatmap
// is the hosts' kept samples summed by wall clock (read from the perf
// text), every cell equals its merged flame graph, and the host strip and
// timeline sum to the heatmap's columns.
func TestFleetSampleFilters(t *testing.T) {
	q, hosts := plantFleet(t)
	ctx := context.Background()
	frames := func(text string) []string {
		var out bytes.Buffer
		if _, err := perf.Collapse(strings.NewReader(text), &out, perf.Options{}); err != nil {
			t.Fatal(err)
		}
		line := strings.TrimSpace(out.String())
		return strings.Split(line[:strings.LastIndexByte(line, ' ')], ";")
	}
	for _, tc := range []struct {
		f    fleetscope.Filter
		keep func(b block) bool
	}{
		{fleetscope.Filter{CPUs: []int32{0, 2}}, func(b block) bool { return b.cpu == 0 || b.cpu == 2 }},
		{fleetscope.Filter{Function: "GC"}, func(b block) bool {
			return slices.ContainsFunc(frames(b.text), func(f string) bool { return strings.Contains(f, "GC") })
		}},
		{fleetscope.Filter{ExcludeFunction: "^java$", CPUs: []int32{1}}, func(b block) bool { return b.cpu == 1 && frames(b.text)[0] != "java" }},
	} {
		kept := make([]*host, len(hosts))
		for i, h := range hosts {
			k := *h
			k.blocks = slices.DeleteFunc(slices.Clone(h.blocks), func(b block) bool { return !tc.keep(b) })
			kept[i] = &k
		}
		sel := fleetscope.FleetSelection{App: "shop", From: fleetBase, To: fleetBase + 10e9, Filter: tc.f}
		for _, rows := range []int{50, 7} {
			h, err := q.FleetHeatmap(ctx, 0, sel, rows, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := expected(kept, rows, sel.From, sel.To)
			got := map[[2]int64]int64{}
			for i, col := range h.Columns {
				for r, n := range col {
					if n > 0 {
						got[[2]int64{h.StartSecond + int64(i), int64(r)}] = n
					}
				}
			}
			if !maps.Equal(got, want) || h.Total == 0 {
				t.Fatalf("%+v rows %d: the fleet heatmap (%d samples) differs from the kept samples summed by wall clock", tc.f, rows, h.Total)
			}
			if rows != 7 {
				continue
			}
			for i, col := range h.Columns {
				for r, n := range col {
					cr := cellRange(i, r, rows)
					cs := sel
					cs.From, cs.To = h.StartSecond*1e9+cr.Start, h.StartSecond*1e9+cr.End
					g, err := q.FleetFlameGraph(ctx, 0, cs, query.FleetFlameOptions{})
					if err != nil {
						t.Fatal(err)
					}
					if g.Total != uint64(n) {
						t.Fatalf("%+v cell (%d, %d): count %d, merged flame graph %d", tc.f, i, r, n, g.Total)
					}
				}
			}
			strip, err := q.FleetHosts(ctx, 0, sel, 0)
			if err != nil {
				t.Fatal(err)
			}
			line, err := q.FleetTimeline(ctx, 0, sel, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, col := range h.Columns {
				var want, hostSum int64
				for _, n := range col {
					want += n
				}
				for _, hs := range strip.Hosts {
					hostSum += hs.Columns[i]
				}
				if hostSum != want || line.Totals[i] != want {
					t.Fatalf("%+v column %d: heatmap %d, host strip %d, timeline %d", tc.f, i, want, hostSum, line.Totals[i])
				}
			}
		}
	}
}

// TestFleetFlameGraphSmallCache: with a cache budget too small to keep the
// tenant's numbering of its stacks (over half of 700 bytes here: a new one
// each query) or much else, merged flame graphs and
// series are the same as with the default budget, asked for repeatedly.
func TestFleetFlameGraphSmallCache(t *testing.T) {
	st := memory.New()
	plantFleetIn(t, st)
	big, small := query.New(st, query.Options{}), query.New(st, query.Options{CacheBytes: 700})
	ctx := context.Background()
	for round := range 2 {
		for _, w := range [][2]int64{{0, 10e9}, {2_400_000_000, 2_480_000_000}, {2_123_456_789, 3_000_000_001}, {3_5e8, 9_999_999_999}} {
			for _, hosts := range [][]string{nil, {"h2", "h4"}} {
				sel := fleetscope.FleetSelection{App: "shop", Hosts: hosts, From: fleetBase + w[0], To: fleetBase + w[1]}
				var folded [2]string
				var totals [2]int64
				for i, q := range []*query.Service{big, small} {
					g, err := q.FleetFlameGraph(ctx, 0, sel, query.FleetFlameOptions{})
					if err != nil {
						t.Fatal(err)
					}
					var b bytes.Buffer
					g.WriteFolded(&b)
					folded[i] = b.String()
					series, err := q.FleetSeries(ctx, 0, sel, 0, nil)
					if err != nil {
						t.Fatal(err)
					}
					for _, g := range series.Groups {
						totals[i] += g.Total
					}
				}
				if folded[0] == "" || folded[0] != folded[1] || totals[0] != totals[1] {
					t.Fatalf("round %d, window %v, hosts %v: a small cache answers otherwise (series %d, %d)", round, w, hosts, totals[0], totals[1])
				}
			}
		}
	}
}

// TestFleetByPeriodWholeAndCut: weighted by period, with periods that
// vary by sample and two events, a merged flame graph is the hosts' range
// flame graphs summed, for windows that hold profiles whole (counted from
// their stack totals) and windows that cut them (from their rows).
func TestFleetByPeriodWholeAndCut(t *testing.T) {
	st := memory.New()
	q := query.New(st, query.Options{})
	ctx := context.Background()
	var ids []string
	for h := range 3 {
		var b strings.Builder
		for i := range 400 {
			ev := []string{"cpu-clock", "page-faults"}[i%7/6]
			fmt.Fprintf(&b, "app %d [000] %d.%06d: %d %s:\n\t1 f%d (/bin/app)\n\t2 main (/bin/app)\n\n",
				10+h, 1795000000+h*3+i/100, (i%100)*10000+h, 1+(i*7+h)%5, ev, (i*i+h)%(200+h))
		}
		pr, err := ingest.ParseIndex(strings.NewReader(b.String()), "", 0, ingest.Shape{})
		if err != nil {
			t.Fatal(err)
		}
		info := ingest.Describe(ingest.Meta{App: "shop", Host: fmt.Sprint("h", h)}, pr, time.Now())
		id, err := st.Add(info, pr.Profile.Dict, pr.Index)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for _, w := range [][2]int64{{0, 20e9}, {1e9, 20e9}, {0, 6_500_000_000}, {2_990_000_000, 7_000_000_000}} {
		for _, event := range []string{"cpu-clock", "page-faults"} {
			sel := fleetscope.FleetSelection{App: "shop", Event: event, From: fleetBase + w[0], To: fleetBase + w[1]}
			g, err := q.FleetFlameGraph(ctx, 0, sel, query.FleetFlameOptions{ByPeriod: true})
			if err != nil {
				t.Fatal(err)
			}
			sum := map[string]uint64{}
			whole := 0
			for _, id := range ids {
				p, _ := q.Profile(ctx, 0, id)
				rel := fleetscope.Range{Start: sel.From - p.StartSecond*1e9, End: sel.To - p.StartSecond*1e9}
				if rel.Start <= 0 && p.DurationNanos < rel.End {
					whole++
				}
				hg, err := q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: id, Event: event, Range: &rel, ByPeriod: true})
				if err != nil {
					continue // the window misses this host
				}
				for k, v := range flame.Folded(hg.Dict, hg.Counts, flame.Annotate{}) {
					sum[k] += v
				}
			}
			if got := flame.Folded(g.Dict, g.Counts, flame.Annotate{}); !maps.Equal(got, sum) {
				t.Fatalf("window %v, %s: the merged flame graph by period differs from the hosts' summed", w, event)
			}
			if g.Served.WholeProfiles != whole {
				t.Fatalf("window %v, %s: %d profiles counted from their stack totals, want %d", w, event, g.Served.WholeProfiles, whole)
			}
		}
	}
}
