package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/google/pprof/profile"
)

// total sums the counts of folded output.
func total(t *testing.T, folded string) int64 {
	t.Helper()
	var n int64
	for _, l := range strings.Split(strings.TrimSpace(folded), "\n") {
		v, err := strconv.ParseInt(l[strings.LastIndexByte(l, ' ')+1:], 10, 64)
		if err != nil {
			t.Fatalf("not folded: %q", l)
		}
		n += v
	}
	return n
}

// TestCollapseFormats: collapse, flamegraph and heatmap read every format,
// detected by content (even renamed) or named with --input-format; perf
// input still folds byte for byte as stackcollapse-perf.pl.
func TestCollapseFormats(t *testing.T) {
	t.Setenv("FLEETSCOPE_PLUGIN_DIR", "")
	pprofSums := pprofTotals(t, "corpus/pprof/go-sha-sort.cpu.pprof")
	tmp := t.TempDir()
	for _, tc := range []struct {
		file, format string
		collapse     int64 // collapse total: samples, or pprof's cpu sum
		flame        int64 // flamegraph total: non-idle samples
	}{
		{"corpus/cpuprofile/node20-phases.cpuprofile", "", 2381, 2368},
		{"corpus/nflxprofile/node20-phases.nflxprofile", "", 2368, 2368},
		{"corpus/nflxprofile/nodejs1.nflxprofile", "nflxprofile", 6, 6},
		{"corpus/trace_event/chromium156-page.trace.json.gz", "", 35028, 14127},
		{"corpus/trace_event/chromium156-page.trace.json.gz", "traceevent:pid=13392", 18145, 13484},
		{"corpus/pprof/go-sha-sort.cpu.pprof", "", pprofSums["samples"], pprofSums["samples"]},
		{"corpus/perf/collapsed/perf-java-stacks-01.default.folded", "", 45, 45},
	} {
		raw := corpus.Read(t, tc.file)
		renamed := filepath.Join(tmp, "input")
		os.WriteFile(renamed, raw, 0o644)
		var flags []string
		if tc.format != "" {
			flags = []string{"--input-format", tc.format}
		}
		if got := total(t, local(t, append(append([]string{"collapse"}, flags...), renamed)...)); got != tc.collapse {
			t.Errorf("collapse %s %v: total %d, want %d", tc.file, flags, got, tc.collapse)
		}
		if got := total(t, local(t, append(append([]string{"flamegraph"}, flags...), renamed)...)); got != tc.flame {
			t.Errorf("flamegraph %s %v: total %d, want %d", tc.file, flags, got, tc.flame)
		}
	}
	// pprof: every sample type's flame graph totals what google/pprof
	// sums, with or without --period (a record counts as its value), and
	// no heatmap.
	pp := corpus.Path(t, "corpus/pprof/go-sha-sort.cpu.pprof")
	for typ, sum := range pprofSums {
		for _, extra := range [][]string{nil, {"--period"}} {
			if got := total(t, local(t, append([]string{"flamegraph", "--event", typ, pp}, extra...)...)); got != sum || sum == 0 {
				t.Errorf("pprof %s %v: total %d, google/pprof sums %d", typ, extra, got, sum)
			}
		}
	}
	if _, errOut, code := run1(nil, "heatmap", pp); code != 1 || !strings.Contains(errOut, "no per-sample timestamps") {
		t.Errorf("pprof heatmap: exit %d, %s", code, errOut)
	}
	// The trace's heatmap counts its non-idle samples.
	var h struct{ Total int64 }
	json.Unmarshal([]byte(local(t, "heatmap", "--json", corpus.Path(t, "corpus/trace_event/chromium156-page.trace.json.gz"))), &h)
	if h.Total != 14127 {
		t.Errorf("trace heatmap total %d", h.Total)
	}
	// perf: byte for byte as before.
	want := corpus.Read(t, "corpus/perf/collapsed/perf-java-stacks-01.all.folded")
	if got := local(t, "collapse", "--all", corpus.Path(t, "corpus/perf/perf-java-stacks-01.txt")); got != string(want) {
		t.Errorf("perf collapse --all differs from stackcollapse-perf.pl")
	}
	// Flags that only perf has are refused for other formats.
	if _, errOut, code := run1(nil, "collapse", "--pid", pp); code != 2 || !strings.Contains(errOut, "apply to perf script input") {
		t.Errorf("collapse --pid on pprof: exit %d, %s", code, errOut)
	}
}

// TestCollapseCLIMatchesEveryReference runs the CLI, as a user does, over
// every stackcollapse-perf.pl reference in the corpus (each file, each
// mode, the three recorded-perf-* files included): byte for byte.
func TestCollapseCLIMatchesEveryReference(t *testing.T) {
	flags := map[string][]string{"default": nil, "pid": {"--pid"}, "tid": {"--tid"}, "kernel": {"--kernel"},
		"jit": {"--jit"}, "all": {"--all"}, "addrs": {"--addrs"}}
	recorded := 0
	for _, ref := range corpus.Glob(t, "corpus/perf/collapsed/*.folded", 93) {
		base := strings.TrimSuffix(filepath.Base(ref), ".folded")
		dot := strings.LastIndexByte(base, '.')
		name, mode := base[:dot], base[dot+1:]
		f, ok := flags[mode]
		if !ok {
			t.Fatalf("%s: unknown mode %q", ref, mode)
		}
		in := filepath.Join(corpus.Dir(), "corpus/perf", name+".txt")
		if _, err := os.Stat(in); err != nil {
			in += ".gz"
		}
		want, err := os.ReadFile(ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := local(t, append(append([]string{"collapse"}, f...), in)...); got != string(want) {
			t.Errorf("fleetscope collapse %v %s differs from stackcollapse-perf.pl's %s", f, filepath.Base(in), filepath.Base(ref))
		}
		if strings.HasPrefix(name, "recorded-perf-") {
			recorded++
		}
	}
	if recorded != 21 {
		t.Errorf("%d references for the recorded-perf-* files, want 3 files × 7 modes", recorded)
	}
}

// TestPluginFormat: a converter plugin's format works end to end.
func TestPluginFormat(t *testing.T) {
	dir, _ := filepath.Abs("../../testdata/plugins")
	t.Setenv("FLEETSCOPE_PLUGIN_DIR", dir)
	in := filepath.Join(dir, "dtrace-walltimestamp.out")
	var h struct {
		StartSecond int64
		Total       int64
	}
	json.Unmarshal([]byte(local(t, "heatmap", "--json", in)), &h)
	if h.StartSecond != 1700000000 || h.Total != 290 {
		t.Errorf("heatmap: start %d, %d samples; want 1700000000, 290", h.StartSecond, h.Total)
	}
	if got := total(t, local(t, "collapse", in)); got != 290 {
		t.Errorf("collapse total %d", got)
	}
}

// TestServiceFormats: every format uploads, and the server answers as the
// local file does (heatmaps for timed formats, flame graphs for all).
func TestServiceFormats(t *testing.T) {
	s := startService(t, serviceOpts{})
	for _, tc := range []struct {
		file  string
		timed bool
	}{
		{corpus.Path(t, "corpus/cpuprofile/node20-phases.cpuprofile"), true},
		{corpus.Path(t, "corpus/nflxprofile/nodejs1.nflxprofile"), true},
		{corpus.Path(t, "corpus/nflxprofile/node20-phases.nflxprofile"), true},
		{corpus.Path(t, "corpus/trace_event/chromium156-page.trace.json.gz"), true},
		{corpus.Path(t, "corpus/pprof/go-sha-sort.cpu.pprof"), false},
		{corpus.Path(t, "corpus/perf/collapsed/perf-java-stacks-01.default.folded"), false},
	} {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			id := s.upload(tc.file)
			cases := [][]string{{"flamegraph"}, {"flamegraph", "--include-idle", "--period"}, {"flamegraph", "--format", "json"}}
			if tc.timed {
				cases = append(cases, []string{"heatmap", "--json"}, []string{"heatmap", "--json", "--rows", "7", "--include-idle"}, []string{"flamegraph", "--start", "0.5", "--end", "1.25"})
			} else if _, errOut, code := s.cli("heatmap", "--profile", id); code != 1 || !strings.Contains(errOut, "no per-sample timestamps") {
				t.Errorf("heatmap of an untimed profile: exit %d, %s", code, errOut)
			}
			for _, args := range cases {
				want := local(t, append(args, tc.file)...)
				if got := s.mustCLI(append(args, "--profile", id)...); got != want {
					t.Fatalf("%v: server %.300q, local %.300q", args, got, want)
				}
			}
		})
	}
}

// pprofTotals sums a pprof file's values per sample type with google/pprof:
// the reference its flame graphs must total.
func pprofTotals(t *testing.T, rel string) map[string]int64 {
	t.Helper()
	p, err := profile.ParseData(corpus.Read(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for i, st := range p.SampleType {
		for _, s := range p.Sample {
			out[st.Type] += s.Value[i]
		}
	}
	if out["samples"] != 303 { // what go tool pprof -raw sums over 225 records
		t.Fatalf("google/pprof sums %d samples", out["samples"])
	}
	return out
}
