package query_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/query"
)

// The function filter keeps exactly the samples whose stack has a matching
// frame: its flame graph total equals the sum of stackcollapse-perf.pl's
// reference lines with such a frame (and --exclude-function the rest; the
// script sums periods where perf printed them), and its heatmap totals the
// same samples.
func TestFunctionFilterMatchesReferenceLines(t *testing.T) {
	files := []string{"perf-java-stacks-01.txt", "perf-java-stacks-02.txt", "perf-js-stacks-01.txt", "perf-dd-stacks-01.txt",
		"perf-rust-Yamakaky-dcpu.txt", "perf-mirageos-stacks-01.txt", "example-perf-stacks.txt.gz"}
	patterns := []string{"Java", "^java$", "GC", "tcp_", "^_?_?[a-z]+_[a-z]+$", "Interpreter|Compile", "[", "no-such-frame-anywhere"}
	ctx := context.Background()
	for _, name := range files {
		p := parseFile(t, corpus.Path(t, "corpus/perf/"+name))
		if n := len(p.p.Dict.Events()); n != 1 {
			t.Fatalf("%s: %d events; the reference mixes events, pick single-event files", name, n)
		}
		ref := readFolded(t, corpus.Path(t, "corpus/perf/collapsed/"+strings.Split(name, ".")[0]+".default.folded"))
		for _, pat := range patterns {
			re, err := regexp.Compile(pat)
			if err != nil { // the service must refuse it the same way
				_, qerr := p.q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: p.id, Filter: fleetscope.Filter{Function: pat}})
				if fleetscope.ErrorCode(qerr) != fleetscope.EINVALID {
					t.Errorf("%s: pattern %q: got %v, want EINVALID", name, pat, qerr)
				}
				continue
			}
			var with, without, withNotGC uint64 // the last: with pat, without a GC frame
			for stack, n := range ref {
				frames := strings.Split(stack, ";")
				if slicesAny(frames, re.MatchString) {
					with += n
					if !slicesAny(frames, func(f string) bool { return strings.Contains(f, "GC") }) {
						withNotGC += n
					}
				} else {
					without += n
				}
			}
			for _, tc := range []struct {
				f    fleetscope.Filter
				want uint64
			}{{fleetscope.Filter{Function: pat}, with}, {fleetscope.Filter{ExcludeFunction: pat}, without},
				{fleetscope.Filter{Function: pat, ExcludeFunction: "GC"}, withNotGC}} {
				g, err := p.q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: p.id, IncludeIdle: true, Filter: tc.f, ByPeriod: true})
				if err != nil {
					t.Fatal(err)
				}
				if g.Total != tc.want {
					t.Errorf("%s %+v: flame graph total %d, reference lines sum %d", name, tc.f, g.Total, tc.want)
				}
				if p.p.Untimed == 0 {
					h, err := p.q.Heatmap(ctx, 0, query.HeatmapRequest{ProfileID: p.id, IncludeIdle: true, Filter: tc.f})
					if err != nil {
						t.Fatal(err)
					}
					n, err := p.q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: p.id, IncludeIdle: true, Filter: tc.f})
					if err != nil {
						t.Fatal(err)
					}
					if uint64(h.Total) != n.Total || (n.Total == 0) != (tc.want == 0) {
						t.Errorf("%s %+v: heatmap total %d, flame graph %d samples (%d by period)", name, tc.f, h.Total, n.Total, tc.want)
					}
				}
			}
		}
	}
}

func slicesAny(frames []string, match func(string) bool) bool {
	for _, f := range frames {
		if match(f) {
			return true
		}
	}
	return false
}

// readFolded reads a reference folded file: stack -> count.
func readFolded(t *testing.T, path string) map[string]uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		i := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseUint(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("%s: %q: %v", path, line, err)
		}
		out[line[:i]] += n
	}
	return out
}

// header is a perf script sample header, read with perf's documented
// layout ("comm tid [cpu] time: [period] event:", or "comm pid/tid ...").
type header struct {
	pid, tid, cpu int32
	event         string
}

var headerRE = regexp.MustCompile(`^(.+?)\s+(-?\d+)(?:/(-?\d+))?\s+\[(\d+)\]\s+\d+\.\d+:\s+(?:\d+\s+)?(\S+):(?:\s.*)?$`)

func headers(t *testing.T, path string) []header {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		if r, err = gzip.NewReader(f); err != nil {
			t.Fatal(err)
		}
	}
	var out []header
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' || line[0] == '\t' || line[0] == ' ' {
			continue
		}
		m := headerRE.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("%s: header %q does not parse", path, line)
		}
		atoi := func(s string) int32 { n, _ := strconv.Atoi(s); return int32(n) }
		h := header{pid: -1, tid: atoi(m[2]), cpu: atoi(m[4]), event: m[5]}
		if m[3] != "" {
			h.pid, h.tid = atoi(m[2]), atoi(m[3])
		}
		out = append(out, h)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// The pid, tid and CPU filters keep the samples whose header names them,
// counted straight from the perf text; the by-thread/CPU/process series
// sum to the heatmap's columns, and each equals its own filter's total.
func TestThreadFiltersMatchPerfText(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"bench/perf-mixed-60s.txt.gz", "corpus/perf/recorded-perf-sched-switch-F.txt", "corpus/perf/recorded-perf-realtime-2events.txt"} {
		path := corpus.Path(t, name)
		p := parseFile(t, path)
		hs := headers(t, path)
		if len(hs) != p.p.Samples {
			t.Fatalf("%s: %d headers read, the parser has %d samples", name, len(hs), p.p.Samples)
		}
		for _, ev := range p.p.Dict.Events() {
			count := func(keep func(header) bool) (n uint64) {
				for _, h := range hs {
					if h.event == ev && keep(h) {
						n++
					}
				}
				return n
			}
			cpus, tids, pids := map[int32]bool{}, map[int32]bool{}, map[int32]bool{}
			for _, h := range hs {
				cpus[h.cpu], tids[h.tid], pids[h.pid] = true, true, true
			}
			check := func(f fleetscope.Filter, want uint64) {
				t.Helper()
				g, err := p.q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: p.id, Event: ev, IncludeIdle: true, Filter: f})
				if err != nil {
					t.Fatal(err)
				}
				h, err := p.q.Heatmap(ctx, 0, query.HeatmapRequest{ProfileID: p.id, Event: ev, IncludeIdle: true, Filter: f})
				if err != nil {
					t.Fatal(err)
				}
				if g.Total != want || uint64(h.Total) != want {
					t.Errorf("%s %s %+v: flame graph %d, heatmap %d, perf text %d", name, ev, f, g.Total, h.Total, want)
				}
			}
			n := 0
			for c := range cpus {
				check(fleetscope.Filter{CPUs: []int32{c}}, count(func(h header) bool { return h.cpu == c }))
				n++
			}
			for tid := range tids {
				if n++; n > 40 {
					break
				}
				check(fleetscope.Filter{TIDs: []int32{tid}}, count(func(h header) bool { return h.tid == tid }))
			}
			for pid := range pids {
				check(fleetscope.Filter{PIDs: []int32{pid}}, count(func(h header) bool { return h.pid == pid }))
			}
			// Any of a list, and conditions together.
			var two []int32
			for c := range cpus {
				if len(two) < 2 {
					two = append(two, c)
				}
			}
			check(fleetscope.Filter{CPUs: two}, count(func(h header) bool { return h.cpu == two[0] || len(two) > 1 && h.cpu == two[1] }))
			for tid := range tids {
				check(fleetscope.Filter{CPUs: two[:1], TIDs: []int32{tid}}, count(func(h header) bool { return h.cpu == two[0] && h.tid == tid }))
				break
			}

			// Series: each column sums to the heatmap's; each series is its
			// own filter's total.
			heat, err := p.q.Heatmap(ctx, 0, query.HeatmapRequest{ProfileID: p.id, Event: ev})
			if err != nil {
				t.Fatal(err)
			}
			for _, by := range []string{query.ByCPU, query.ByThread, query.ByProcess} {
				set, err := p.q.HeatmapSeries(ctx, 0, query.SeriesRequest{ProfileID: p.id, Event: ev, By: by, Top: 5})
				if err != nil {
					t.Fatal(err)
				}
				if set.StartSecond != heat.StartSecond || set.SecondsPerColumn != heat.SecondsPerColumn {
					t.Fatalf("%s by %s: columns from %d, %d s each; heatmap's from %d, %d s", name, by, set.StartSecond, set.SecondsPerColumn, heat.StartSecond, heat.SecondsPerColumn)
				}
				for i, col := range heat.Columns {
					var want, got int64
					for _, c := range col {
						want += c
					}
					for _, sr := range set.Series {
						got += sr.Columns[i]
					}
					if got != want {
						t.Errorf("%s by %s column %d: series sum %d, heatmap column %d", name, by, i, got, want)
					}
				}
				if by != query.ByCPU {
					continue
				}
				for _, sr := range set.Series {
					if sr.Key == query.SeriesOther || sr.Key == query.SeriesUnknown {
						continue
					}
					c, _ := strconv.Atoi(sr.Key)
					g, err := p.q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: p.id, Event: ev, Filter: fleetscope.Filter{CPUs: []int32{int32(c)}}})
					if err != nil {
						t.Fatal(err)
					}
					if uint64(sr.Total) != g.Total {
						t.Errorf("%s cpu %s: series total %d, flame graph %d", name, sr.Key, sr.Total, g.Total)
					}
				}
			}
		}
	}
}

// Every cell of a filtered heatmap totals its range's filtered flame graph.
func TestFilteredCellsEqualFlameGraphs(t *testing.T) {
	path, _ := plant(t, "--seed", "6", "--seconds", "6")
	p := parseFile(t, path)
	ctx := context.Background()
	for _, f := range []fleetscope.Filter{{Function: "GC"}, {ExcludeFunction: "^java$"}, {CPUs: []int32{0, 3}}, {Function: "a", CPUs: []int32{1}}} {
		for _, rows := range []int{50, 7} {
			h, err := p.q.Heatmap(ctx, 0, query.HeatmapRequest{ProfileID: p.id, Rows: rows, Filter: f})
			if err != nil {
				t.Fatal(err)
			}
			if h.Total == 0 {
				t.Fatalf("%+v: nothing kept; pick a filter that keeps something", f)
			}
			for c, col := range h.Columns {
				for r, n := range col {
					rg := cellRange(c, r, rows) // one second a column
					g, err := p.q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: p.id, Range: &rg, Filter: f})
					if err != nil {
						t.Fatal(err)
					}
					if g.Total != uint64(n) {
						t.Fatalf("%+v rows %d cell (%d,%d): count %d, flame graph %d", f, rows, c, r, n, g.Total)
					}
				}
			}
		}
	}
}
