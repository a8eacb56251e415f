package query_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/ingest/perf"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/export"
	"github.com/fleetscope/fleetscope/query/flame"
	"github.com/fleetscope/fleetscope/query/heatmap"
	"github.com/fleetscope/fleetscope/store/memory"
)

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
	cmd := exec.Command("python3", append([]string{corpus.Path(t, "tools/planted.py"), dir}, args...)...)
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

// parsed is a profile parsed and indexed as an upload is, kept in memory
// (store/memory) and queried through the query service: the code path of
// both the CLI and the server.
type parsed struct {
	t  testing.TB
	p  *fleetscope.Profile
	q  *query.Service
	id string
}

func parseFile(t testing.TB, path string) *parsed {
	t.Helper()
	st, pr, id := storeFile(t, path)
	return &parsed{t: t, p: pr.Profile, q: query.New(st, query.Options{}), id: id}
}

// storeFile parses and indexes the file at path as an upload is, into a
// new in-memory store, and returns the store and the profile's id.
func storeFile(t testing.TB, path string) (*memory.Store, *ingest.Parsed, string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pr, err := ingest.ParseIndex(f, "", 0, ingest.Shape{})
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	st := memory.New()
	id, err := st.Add(ingest.Describe(ingest.Meta{}, pr, time.Now()), pr.Profile.Dict, pr.Index)
	if err != nil {
		t.Fatal(err)
	}
	return st, pr, id
}

func (p *parsed) heatmap(t testing.TB, rows int) *heatmap.Heatmap {
	t.Helper()
	h, err := p.q.Heatmap(context.Background(), 0, query.HeatmapRequest{ProfileID: p.id, Rows: rows})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (p *parsed) flame(r fleetscope.Range) *flame.Counts {
	p.t.Helper()
	g, err := p.q.FlameGraph(context.Background(), 0, query.FlameRequest{ProfileID: p.id, Range: &r})
	if err != nil {
		p.t.Fatal(err)
	}
	return g.Counts
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
			start := (fleetscope.FloorSecond(p.p.MinNanos) * 1e9)
			boundary := 0
			for _, b := range blocks(t, path) {
				off := (b.nanos - start) % 1e9
				if b.idle || off%20e6 != 0 {
					continue
				}
				col, row := int((b.nanos-start)/1e9), int(off/20e6)
				// planted.py may put a sample that lies exactly on a row
				// boundary one row lower (earlier in time): the row below,
				// or the previous second's last row. That move, and no
				// other, is allowed.
				cell, low := [2]int{col, row}, [2]int{col, row - 1}
				if row == 0 {
					low = [2]int{col - 1, 49}
				}
				if diff[cell] > 0 && diff[low] < 0 {
					diff[cell]--
					diff[low]++
					boundary++
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
				got := p.flame(cellRange(i, r, rows)).Total
				if got != uint64(n) {
					t.Fatalf("rows %d, cell col %d row %d: count %d, flame graph of %v totals %d", rows, i, r, n, cellRange(i, r, rows), got)
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
			start := (fleetscope.FloorSecond(p.p.MinNanos) * 1e9)
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
				got := foldedText(p.p.Dict, p.flame(r))
				if got != want.String() {
					t.Fatalf("range %v: folded flame graph differs from collapse of its samples:\n got %q\nwant %q", r, trim(got), trim(want.String()))
				}
				return got, in
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

// TestWholeProfileFoldedEqualsReference checks every perf corpus file: the
// flame graph of the whole profile (idle included, weighted by period)
// equals stackcollapse-perf.pl's own output (the corpus reference
// collapsed/NAME.default.folded, made by the Perl script) for the events the
// script keeps: the first event of the file that is not a tracepoint, and
// tracepoints (and probes), whose payload after the event name keeps the
// script from filtering them.
func TestWholeProfileFoldedEqualsReference(t *testing.T) {
	files := corpus.Glob(t, "corpus/perf/*.txt*", 15)
	n := 0
	for _, path := range files {
		base := filepath.Base(path)
		if strings.HasPrefix(base, "LICENSE") || strings.Contains(base, "workload") {
			continue
		}
		n++
		t.Run(base, func(t *testing.T) {
			name := strings.TrimSuffix(strings.TrimSuffix(base, ".gz"), ".txt")
			want := corpus.Read(t, "corpus/perf/collapsed/"+name+".default.folded")
			p := parseFile(t, path)
			sum := map[string]uint64{}
			first := ""
			for _, ev := range p.p.Dict.Events() {
				if !tracepoint(ev) && first == "" {
					first = ev
				}
			}
			for _, ev := range p.p.Dict.Events() {
				if ev != first && !tracepoint(ev) {
					continue
				}
				g, err := p.q.FlameGraph(context.Background(), 0, query.FlameRequest{ProfileID: p.id, Event: ev, IncludeIdle: true, ByPeriod: true})
				if err != nil {
					t.Fatal(err)
				}
				for stack, v := range flame.Folded(g.Dict, g.Counts, flame.Annotate{}) {
					sum[stack] += v
				}
				sameStacks(t, g.Stacks(), g.FoldedStacks())
				d := query.DiffOf(g, g)
				if got, want := d.Stacks(), d.DictStacks(); !slices.EqualFunc(got, want, func(a, b export.DiffStack) bool {
					return a.A == b.A && a.B == b.B && slices.Equal(a.Frames, b.Frames)
				}) {
					t.Fatalf("a comparison's stacks from the tree (%d) differ from the dictionary's (%d)", len(got), len(want))
				}
			}
			stacks := slices.Sorted(maps.Keys(sum))
			var got strings.Builder
			for _, k := range stacks {
				fmt.Fprintf(&got, "%s %d\n", k, sum[k])
			}
			if got.String() != string(want) {
				t.Fatalf("whole-profile flame graph differs from stackcollapse-perf.pl's:\n got %q\nwant %q", trim(got.String()), trim(string(want)))
			}
			t.Logf("%d samples, events %v, %d stacks", p.p.Samples, p.p.Dict.Events(), p.p.Dict.NumStacks())
		})
	}
	if n < 15 {
		t.Fatalf("only %d corpus files found", n)
	}
}

// TestUnresolvedThreadSamplesCount checks the benchmark file's four samples
// from threads perf could not resolve (":-1 -1 [001] 8678.595859: ..."):
// they have a time and count in the heatmap like any other sample.
// (stackcollapse-perf.pl reads their whole header up to the period as the
// process name; the folded stacks keep that, so collapse still matches.)
func TestUnresolvedThreadSamplesCount(t *testing.T) {
	path := corpus.Path(t, "bench/perf-mixed-60s.txt.gz")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var samples []fleetscope.Sample
	prof, err := ingest.Parse(f, "", 0, func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
		samples = append(samples, batch...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if prof.Samples != 56990 || prof.Untimed != 0 {
		t.Fatalf("parsed %d samples (%d without time), want 56,990 all timed", prof.Samples, prof.Untimed)
	}
	unresolved := 0
	for _, s := range samples {
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

// TestRestFoldedEqualsCollapseOfRest: the rest of a profile (the samples
// outside a range, for "this range vs the rest") folds exactly as collapse
// of just those samples, and range + rest = the whole profile.
func TestRestFoldedEqualsCollapseOfRest(t *testing.T) {
	path, _ := plant(t, plantings[0]...)
	p := parseFile(t, path)
	all := blocks(t, path)
	start := fleetscope.FloorSecond(p.p.MinNanos) * 1e9
	whole := p.flame(fleetscope.All).Total
	for _, r := range []fleetscope.Range{{Start: 2_400_000_000, End: 2_480_000_000}, {Start: 0, End: 1e9}, {Start: 1_234_567, End: 5_000_000_001},
		{Start: 3e9, End: fleetscope.All.End}, {Start: fleetscope.All.Start, End: 1}} {
		var text strings.Builder
		for _, b := range all {
			if !b.idle && !r.Contains(b.nanos-start) {
				text.WriteString(b.text)
			}
		}
		var want bytes.Buffer
		if _, err := perf.Collapse(strings.NewReader(text.String()), &want, perf.Options{}); err != nil {
			t.Fatal(err)
		}
		g, err := p.q.FlameGraph(context.Background(), 0, query.FlameRequest{ProfileID: p.id, Range: &r, Outside: true})
		if err != nil {
			t.Fatal(err)
		}
		got := foldedText(p.p.Dict, g.Counts)
		if got != want.String() {
			t.Errorf("rest of %v: folded differs from collapse of the samples outside it:\n%s\nwant:\n%s", r, trim(got), trim(want.String()))
		}
		if in := p.flame(r).Total; in+g.Total != whole {
			t.Errorf("range %v: %d inside + %d outside != %d in the whole profile", r, in, g.Total, whole)
		}
	}
	if _, err := p.q.FlameGraph(context.Background(), 0, query.FlameRequest{ProfileID: p.id, Outside: true}); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
		t.Errorf("the rest without a range: %v, want invalid", err)
	}
}

// sameStacks fails unless the export stacks read off the tree equal those
// read from the folded lines, in order.
func sameStacks(t *testing.T, got, want []export.Stack) {
	t.Helper()
	if !slices.EqualFunc(got, want, func(a, b export.Stack) bool { return a.Value == b.Value && slices.Equal(a.Frames, b.Frames) }) {
		t.Fatalf("stacks from the tree (%d) differ from the folded lines' (%d)", len(got), len(want))
	}
}

// foldedText is flame.Folded's lines as text, sorted bytewise as
// stackcollapse-perf.pl sorts them.
func foldedText(d *fleetscope.Dict, c *flame.Counts) string {
	var b strings.Builder
	folded := flame.Folded(d, c, flame.Annotate{})
	for _, k := range slices.Sorted(maps.Keys(folded)) {
		fmt.Fprintf(&b, "%s %d\n", k, folded[k])
	}
	return b.String()
}
