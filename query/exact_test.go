package query_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/perf"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/flame"
	"github.com/fleetscope/fleetscope/query/heatmap"
)

const shared = "../../shared"

// truth is planted.py's truth.json.
type truth struct {
	Base    float64                     `json:"base"`
	Rows    int                         `json:"rows"`
	Samples int                         `json:"samples"`
	NonIdle int                         `json:"non_idle"`
	Windows map[string][][2]float64     `json:"windows"`
	Heatmap map[string]map[string]int64 `json:"heatmap"`
}

// plant runs ../shared/tools/planted.py into a temporary directory.
func plant(t *testing.T, args ...string) (string, *truth) {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command("python3", append([]string{filepath.Join(shared, "tools/planted.py"), dir}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("planted.py %v: %v\n%s", args, err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "truth.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tr truth
	if err := json.Unmarshal(b, &tr); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, "planted.perf"), &tr
}

// parsed is a profile parsed the way the CLI does, kept in memory.
type parsed struct {
	p       *fleetscope.Profile
	samples []fleetscope.Sample
}

func parseFile(t testing.TB, path string) *parsed {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err := ingest.Decompress(f)
	if err != nil {
		t.Fatal(err)
	}
	out := &parsed{}
	out.p, err = perf.Parse(r, func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
		out.samples = append(out.samples, batch...)
		return nil
	})
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	return out
}

func (p *parsed) heatmap(t testing.TB, rows int) *heatmap.Heatmap {
	t.Helper()
	b, err := heatmap.NewBuilder(rows, false)
	if err != nil {
		t.Fatal(err)
	}
	b.Add(p.p.Dict, p.samples)
	h, err := b.Heatmap(0, p.p.Dict.Events()[0], query.StartSecond(p.p.MinNanos)/1e9, query.StartSecond(p.p.MaxNanos)/1e9)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (p *parsed) flame(r fleetscope.Range) *flame.Counts {
	sel := query.Selection{Range: r, StartSecond: query.StartSecond(p.p.MinNanos)}
	var c flame.Counts
	c.Add(p.p.Dict, &sel, p.samples, false)
	return &c
}

// block is one sample of the planted text, read independently of the
// parser under test: its header fields and its text.
type block struct {
	cpu   int
	nanos int64 // absolute
	idle  bool
	text  string
}

func blocks(t *testing.T, path string) []block {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	for _, chunk := range strings.Split(string(b), "\n\n") {
		lines := strings.Split(strings.TrimLeft(chunk, "\n"), "\n")
		i := 0
		for i < len(lines) && strings.HasPrefix(lines[i], "#") {
			i++
		}
		if i >= len(lines) || lines[i] == "" {
			continue
		}
		f := strings.Fields(lines[i]) // comm pid [cpu] ts: event:
		cpu, _ := strconv.Atoi(strings.Trim(f[2], "[]"))
		ns, err := fleetscope.ParseSeconds(strings.TrimSuffix(f[3], ":"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, block{cpu: cpu, nanos: ns, idle: f[0] == "swapper", text: strings.Join(lines[i:], "\n") + "\n\n"})
	}
	return out
}

var plantings = [][]string{
	{"--seed", "1"},
	{"--seed", "2", "--epoch"},
	{"--seed", "3", "--seconds", "12", "--cpus", "4", "--hz", "99"},
	{"--seed", "4", "--seconds", "20", "--epoch", "--hz", "199"},
	{"--seed", "5", "--seconds", "16", "--cpus", "8", "--hz", "49", "--epoch"},
}

// TestHeatmapEqualsPlantedTruth compares the heatmap with truth.json cell for
// cell. planted.py computes rows with floats (floor(50 * (ts % 1))), which
// for a sample exactly on a cell boundary (offset a multiple of 20 ms) can
// land one cell low; the exact rule puts it in the upper cell. Such
// differences are accounted for sample by sample; nothing else may differ.
func TestHeatmapEqualsPlantedTruth(t *testing.T) {
	for _, args := range plantings {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			path, tr := plant(t, args...)
			p := parseFile(t, path)
			if p.p.Samples != tr.Samples {
				t.Fatalf("parsed %d samples, truth says %d", p.p.Samples, tr.Samples)
			}
			h := p.heatmap(t, 50)
			if h.Total != int64(tr.NonIdle) {
				t.Fatalf("heatmap total %d, truth non-idle %d", h.Total, tr.NonIdle)
			}
			diff := map[[2]int]int64{}
			for i, col := range h.Columns {
				for r, n := range col {
					diff[[2]int{i, r}] += n
				}
			}
			for c, rows := range tr.Heatmap {
				for r, n := range rows {
					ci, _ := strconv.Atoi(c)
					ri, _ := strconv.Atoi(r)
					diff[[2]int{ci, ri}] -= n
				}
			}
			start := query.StartSecond(p.p.MinNanos)
			boundary := 0
			for _, b := range blocks(t, path) {
				off := (b.nanos - start) % 1e9
				if b.idle || off%20e6 != 0 {
					continue
				}
				col, row := int((b.nanos-start)/1e9), int(off/20e6)
				cell := [2]int{col, row}
				for _, low := range [][2]int{{col, row - 1}, {col - 1, 49}, {col - 1, row}} {
					if diff[cell] > 0 && diff[low] < 0 {
						diff[cell]--
						diff[low]++
						boundary++
						break
					}
				}
			}
			for cell, d := range diff {
				if d != 0 {
					t.Errorf("cell col %d row %d: heatmap differs from truth by %+d", cell[0], cell[1], d)
				}
			}
			t.Logf("%d samples, %d non-idle, %d columns; %d boundary samples placed by the exact rule", tr.Samples, tr.NonIdle, len(h.Columns), boundary)
		})
	}
}

// TestCellFlameGraphTotalsCellCount checks the invariant for every non-empty
// cell, at several row counts (including ones that do not divide a second
// into whole microseconds).
func TestCellFlameGraphTotalsCellCount(t *testing.T) {
	path, _ := plant(t, "--seed", "11", "--seconds", "8", "--hz", "199", "--epoch")
	p := parseFile(t, path)
	for _, rows := range []int{50, 7, 100, 1} {
		h := p.heatmap(t, rows)
		cells := 0
		for i, col := range h.Columns {
			for r, n := range col {
				got := p.flame(heatmap.CellRange(i, r, rows)).Total
				if got != uint64(n) {
					t.Fatalf("rows %d, cell col %d row %d: count %d, flame graph of %v totals %d", rows, i, r, n, heatmap.CellRange(i, r, rows), got)
				}
				if n > 0 {
					cells++
				}
			}
		}
		t.Logf("rows %d: %d non-empty cells, each equal to its range's flame graph total", rows, cells)
	}
}

// TestRangeFoldedEqualsCollapseOfRange checks that the folded flame graph of
// any range equals collapse run on just the non-idle samples of that range,
// and that a GC window holds GC stacks on CPUs 0-5 plus what ran on 6-7.
func TestRangeFoldedEqualsCollapseOfRange(t *testing.T) {
	for _, args := range plantings[:3] {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			path, tr := plant(t, args...)
			p := parseFile(t, path)
			all := blocks(t, path)
			start := query.StartSecond(p.p.MinNanos)
			check := func(r fleetscope.Range) (string, []block) {
				var text strings.Builder
				var in []block
				for _, b := range all {
					if !b.idle && r.Contains(b.nanos-start) {
						text.WriteString(b.text)
						in = append(in, b)
					}
				}
				var want bytes.Buffer
				if _, err := perf.Collapse(strings.NewReader(text.String()), &want, perf.Options{}); err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				if err := flame.WriteFolded(&got, p.p.Dict, p.flame(r), flame.Annotate{}); err != nil {
					t.Fatal(err)
				}
				if got.String() != want.String() {
					t.Fatalf("range %v: folded flame graph differs from collapse of its samples:\n got %q\nwant %q", r, trim(got.String()), trim(want.String()))
				}
				return got.String(), in
			}
			// Arbitrary microsecond ranges, not only cell boundaries.
			for _, r := range [][2]string{{"0", "1"}, {"2.400000", "2.480000"}, {"0.000001", "3.333333"}, {"5.123456", "5.123457"}, {"11.9", "14.1"}, {"0", "9999"}} {
				s, _ := fleetscope.ParseSeconds(r[0])
				e, _ := fleetscope.ParseSeconds(r[1])
				check(fleetscope.Range{Start: s, End: e})
			}
			gcStack := "java;start_thread;GCTaskThread::run;StealTask::do_it;PSPromotionManager::drain_stacks_depth "
			for _, w := range tr.Windows["gc"] {
				s, _ := fleetscope.ParseSeconds(strconv.FormatFloat(w[0], 'f', 6, 64))
				e, _ := fleetscope.ParseSeconds(strconv.FormatFloat(w[1], 'f', 6, 64))
				folded, in := check(fleetscope.Range{Start: s, End: e})
				var low, high int
				for _, b := range in {
					if b.cpu < 6 {
						low++
						if !strings.Contains(b.text, "GCTaskThread::run") {
							t.Fatalf("GC window %v: CPU %d ran something else:\n%s", w, b.cpu, b.text)
						}
					} else {
						high++
					}
				}
				if low == 0 || !strings.Contains(folded, gcStack+strconv.Itoa(low)+"\n") {
					t.Fatalf("GC window %v: want the GC stack %d times (CPUs 0-5), got:\n%s", w, low, folded)
				}
				var total uint64
				for _, line := range strings.Split(strings.TrimSpace(folded), "\n") {
					n, _ := strconv.ParseUint(line[strings.LastIndexByte(line, ' ')+1:], 10, 64)
					total += n
				}
				if total != uint64(low+high) {
					t.Fatalf("GC window %v: total %d, want %d GC + %d from CPUs 6-7", w, total, low, high)
				}
			}
		})
	}
}

// tracepoint reports event names like "sched:sched_switch" or
// "probe_reqsim:handle_request" (group:name, not name:modifiers).
func tracepoint(ev string) bool {
	_, name, ok := strings.Cut(ev, ":")
	return ok && strings.ContainsAny(name, "_0123456789")
}

func trim(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}

// TestWholeProfileFoldedEqualsCollapse checks every perf corpus file: the
// flame graph of the whole profile (idle included, weighted by period) equals
// stackcollapse-perf.pl's folding of the event it keeps.
func TestWholeProfileFoldedEqualsCollapse(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(shared, "corpus/perf/*.txt*"))
	n := 0
	for _, path := range files {
		base := filepath.Base(path)
		if strings.HasPrefix(base, "LICENSE") || strings.Contains(base, "workload") {
			continue
		}
		n++
		t.Run(base, func(t *testing.T) {
			p := parseFile(t, path)
			f, _ := os.Open(path)
			defer f.Close()
			r, _ := ingest.Decompress(f)
			var want bytes.Buffer
			st, err := perf.Collapse(r, &want, perf.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var c flame.Counts
			for _, s := range p.samples {
				// The Perl script filters only events it can read off a
				// header ending in "event:"; tracepoints with a payload
				// after the name pass unfiltered.
				if ev := p.p.Dict.Events()[s.Event]; st.Event == "" || ev == st.Event || tracepoint(ev) {
					c.AddStack(s.Stack, s.Period)
				}
			}
			var got bytes.Buffer
			flame.WriteFolded(&got, p.p.Dict, &c, flame.Annotate{})
			if got.String() != want.String() {
				t.Fatalf("whole-profile flame graph differs from collapse:\n got %q\nwant %q", trim(got.String()), trim(want.String()))
			}
			t.Logf("%d samples, events %v, %d stacks", p.p.Samples, p.p.Dict.Events(), p.p.Dict.NumStacks())
		})
	}
	if n < 15 {
		t.Fatalf("only %d corpus files found under %s", n, shared)
	}
}

// TestUnresolvedThreadSamplesCount checks the benchmark file's four samples
// from threads perf could not resolve (":-1 -1 [001] 8678.595859: ..."):
// they have a time and count in the heatmap like any other sample.
// (stackcollapse-perf.pl reads their whole header up to the period as the
// process name; the folded stacks keep that, so collapse still matches.)
func TestUnresolvedThreadSamplesCount(t *testing.T) {
	path := filepath.Join(shared, "bench/perf-mixed-60s.txt.gz")
	p := parseFile(t, path)
	if p.p.Samples != 56990 || p.p.Untimed != 0 {
		t.Fatalf("parsed %d samples (%d without time), want 56,990 all timed", p.p.Samples, p.p.Untimed)
	}
	unresolved := 0
	for _, s := range p.samples {
		if s.PID == -1 && s.TID == -1 {
			unresolved++
			if s.CPU < 0 || s.TimeNanos == fleetscope.NoTime {
				t.Errorf("unresolved-thread sample without cpu or time: %+v", s)
			}
		}
	}
	if unresolved != 4 {
		t.Fatalf("found %d unresolved-thread samples, want 4", unresolved)
	}
}
