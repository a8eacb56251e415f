package ingest

import (
	"bytes"
	"compress/gzip"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/ingest/plugin"
)

// corpusFormats lists every corpus file with the format it is.
func corpusFormats(t testing.TB) map[string]string {
	t.Helper()
	want := map[string]string{
		"corpus/nflxprofile/nodejs1.nflxprofile":            "nflxprofile",
		"corpus/nflxprofile/node20-phases.nflxprofile":      "nflxprofile",
		"corpus/cpuprofile/node20-phases.cpuprofile":        "cpuprofile",
		"corpus/trace_event/chromium156-page.trace.json.gz": "traceevent",
		"corpus/pprof/go-sha-sort.cpu.pprof":                "pprof",
		"bench/perf-mixed-60s.txt.gz":                       "perf",
	}
	for _, f := range corpus.Glob(t, "corpus/perf/*.txt*", 15) {
		if !strings.Contains(f, "workload") && !strings.Contains(f, "LICENSE") {
			want["corpus/perf/"+filepath.Base(f)] = "perf"
		}
	}
	for _, f := range corpus.Glob(t, "corpus/perf/collapsed/*.folded", 90) {
		want["corpus/perf/collapsed/"+filepath.Base(f)] = "folded"
	}
	return want
}

// noPlugins hides plugins on this machine from a test.
func noPlugins(t *testing.T) {
	t.Setenv(plugin.EnvDir, "")
	t.Setenv("PATH", "/nonexistent")
}

// TestDetectCorpus: every corpus file is detected as its format by content,
// renamed to a name without extension, and every other format is less sure.
func TestDetectCorpus(t *testing.T) {
	want := corpusFormats(t)
	noPlugins(t)
	tmp := t.TempDir()
	for rel, format := range want {
		raw := corpus.Read(t, rel)
		renamed := filepath.Join(tmp, "input")
		if err := os.WriteFile(renamed, raw, 0o600); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(renamed)
		if err != nil {
			t.Fatal(err)
		}
		dr, err := Decompress(f)
		if err != nil {
			t.Fatal(err)
		}
		head := make([]byte, HeadSize)
		n, _ := io.ReadFull(dr, head)
		f.Close()
		head = head[:n]
		got, err := Detect(head)
		if err != nil || got.Name != format {
			t.Errorf("%s: detected %q (%v), want %s", rel, got.Name, err, format)
			continue
		}
		win := got.Detect(head)
		for _, other := range formats {
			if other.Name != format && other.Detect(head) >= win {
				t.Errorf("%s: %s scores %d, as sure as %s (%d)", rel, other.Name, other.Detect(head), format, win)
			}
		}
	}
}

// TestParseCorpus: every corpus file parses through the generic path
// (detection included) into samples.
func TestParseCorpus(t *testing.T) {
	want := corpusFormats(t)
	noPlugins(t)
	for rel, format := range want {
		if testing.Short() && strings.HasPrefix(rel, "bench/") {
			continue
		}
		f, err := os.Open(corpus.Path(t, rel))
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		count := func(p *fleetscope.Profile, batch []fleetscope.Sample) error {
			n += len(batch)
			return nil
		}
		p, err := Parse(f, "", 0, count)
		if err != nil && format == "folded" && strings.Contains(err.Error(), "folded:weighted") {
			// Counts weighted by perf's periods (perf-dd-stacks-01): as told.
			f.Seek(0, io.SeekStart)
			n = 0
			p, err = Parse(f, "folded:weighted", 0, count)
		}
		f.Close()
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		if p.Format != format || p.Samples != n || n == 0 {
			t.Errorf("%s: format %s, %d samples (sink got %d), want format %s", rel, p.Format, p.Samples, n, format)
		}
	}
}

// TestDetectRejects: empty input, text and binary garbage are refused with
// an error that lists the formats tried.
func TestDetectRejects(t *testing.T) {
	noPlugins(t)
	rnd := rand.New(rand.NewPCG(1, 2))
	garbage := make([]byte, 4096)
	for i := range garbage {
		garbage[i] = byte(rnd.UintN(256))
	}
	license := corpus.Read(t, "corpus/perf/LICENSE-CDDL-1.0.txt")
	for _, tc := range []struct {
		name string
		in   []byte
		want string
	}{
		{"empty", nil, "empty input"},
		{"license", license, `text starting "Unless otherwise noted`},
		{"changelog", []byte("UnZip, version 6.00, 20 April 2009\n\nFeatures added (or removed):\n\n6.00 (20 Apr 09):\n - new option\n"), "unrecognised input"},
		{"text", []byte("Dear colleague,\nthe report is attached.\nRegards 12\n"), `text starting "Dear colleague,"`},
		{"json", []byte(`{"name": "package", "version": "1.0.0"}`), "unrecognised input"},
		{"garbage", garbage, "binary data"},
		{"zeros", make([]byte, 1000), "binary data"},
	} {
		_, err := Parse(bytes.NewReader(tc.in), "", 0, func(*fleetscope.Profile, []fleetscope.Sample) error { return nil })
		if err == nil || fleetscope.ErrorCode(err) != fleetscope.EINVALID || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want EINVALID with %q", tc.name, err, tc.want)
			continue
		}
		for _, f := range formats {
			if !strings.Contains(err.Error(), f.Name) {
				t.Errorf("%s: the error does not name %s: %v", tc.name, f.Name, err)
			}
		}
	}
	// Gzip of garbage: the same, after decompression.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(garbage)
	zw.Close()
	if _, err := Parse(&gz, "", 0, nil); err == nil || !strings.Contains(err.Error(), "binary data") {
		t.Errorf("gzipped garbage: err = %v", err)
	}
}

// TestDetectPerf: perf script text is told from text that only looks like
// it in places.
func TestDetectPerf(t *testing.T) {
	noPlugins(t)
	const sample = "java 4242 [001] 8678.595859: cpu-clock:\n\t7f00 main (/bin/app)\n\t7f10 start (/bin/app)\n\n"
	for _, tc := range []struct {
		name, in string
		perf     bool
	}{
		{"samples", strings.Repeat(sample, 3), true},
		{"banner only", "# ========\n# captured on    : Sun Nov 22\n# perf version : 6.1\n", true},
		{"no callchains", "app 12 [000] 1.000100: cpu-clock: ffff main (/bin/app)\napp 12 [000] 1.000200: cpu-clock: ffff main (/bin/app)\n", true},
		{"untimed, no stacks", "Chapter 3 begins\nChapter 4 ends\n", false},
		{"mostly text", sample + strings.Repeat("some words of prose here\n", 10), false},
		{"srcline", strings.Repeat("app 12 [000] 1.000100: cpu-clock:\n\t7f00 main (/bin/app)\n  app.c:12\n\n", 3), true},
		{"NUL", sample + "\x00\n", false},
	} {
		f, err := Detect([]byte(tc.in))
		if got := err == nil && f.Name == "perf"; got != tc.perf {
			t.Errorf("%s: detected %q (%v), want perf %v", tc.name, f.Name, err, tc.perf)
		}
	}
}

// TestDetectAmbiguous: two formats equally sure is an error naming both.
func TestDetectAmbiguous(t *testing.T) {
	noPlugins(t)
	saved := formats
	t.Cleanup(func() { formats = saved })
	Register(Format{Name: "copycat", Detect: func(head []byte) int { return 60 }})
	_, err := Detect([]byte("java;main;run 3\njava;main 1\n"))
	if err == nil || !strings.Contains(err.Error(), "ambiguous") || !strings.Contains(err.Error(), "folded and copycat") {
		t.Errorf("err = %v, want ambiguous folded and copycat", err)
	}
}

// TestInputFormat: --input-format overrides detection, options reach the
// parser, and bad names or options are refused.
func TestInputFormat(t *testing.T) {
	noPlugins(t)
	in := "1.5 app;main;work 2\n"
	// Detected: a timed folded line.
	p, err := Parse(strings.NewReader(in), "", 0, func(*fleetscope.Profile, []fleetscope.Sample) error { return nil })
	if err != nil || p.Format != "folded" || p.Samples != 2 || p.MinNanos != 1_500_000_000 {
		t.Fatalf("detected: %+v, %v", p, err)
	}
	p, err = Parse(strings.NewReader(in), "folded:weighted", 0, func(_ *fleetscope.Profile, b []fleetscope.Sample) error {
		if len(b) != 1 || b[0].Period != 2 {
			t.Errorf("weighted: batch %+v", b)
		}
		return nil
	})
	if err != nil || p.Samples != 1 {
		t.Errorf("folded:weighted: %+v, %v", p, err)
	}
	if _, err := Parse(strings.NewReader(in), "perf", 0, nil); err == nil || !strings.Contains(err.Error(), "not perf script") {
		t.Errorf("forced perf on folded text: err = %v", err)
	}
	for _, bad := range []string{"nosuch", "perf:x=1", "folded:color=red", "traceevent:pid=abc"} {
		if _, err := Lookup(bad); err == nil || fleetscope.ErrorCode(err) != fleetscope.EINVALID {
			t.Errorf("Lookup(%q): err = %v", bad, err)
		}
	}
	if f, err := Lookup("traceevent:pid=13392"); err != nil || f.Name != "traceevent" {
		t.Errorf("Lookup(traceevent:pid=13392) = %v, %v", f.Name, err)
	}
}

// TestTraceEventPick: the option picks one profile of the trace.
func TestTraceEventPick(t *testing.T) {
	corpusFormats(t)
	noPlugins(t)
	for _, tc := range []struct {
		format string
		want   int
	}{{"traceevent", 35028}, {"traceevent:pid=13392", 18145}, {"traceevent:pid=13381,tid=13381", 16883}} {
		f, err := os.Open(corpus.Path(t, "corpus/trace_event/chromium156-page.trace.json.gz"))
		if err != nil {
			t.Fatal(err)
		}
		p, err := Parse(f, tc.format, 0, func(*fleetscope.Profile, []fleetscope.Sample) error { return nil })
		f.Close()
		if err != nil || p.Samples != tc.want {
			t.Errorf("%s: %v samples, %v; want %d", tc.format, p, err, tc.want)
		}
	}
	f, _ := os.Open(corpus.Path(t, "corpus/trace_event/chromium156-page.trace.json.gz"))
	defer f.Close()
	_, err := Parse(f, "traceevent:pid=1", 0, func(*fleetscope.Profile, []fleetscope.Sample) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "pid=13392,tid=13392") {
		t.Errorf("no such profile: err = %v, want the profiles listed", err)
	}
}

// TestPluginDetected: a plugin in FLEETSCOPE_PLUGIN_DIR is a format:
// detected by its probe, listed, and its output parsed with times.
func TestPluginDetected(t *testing.T) {
	dir, err := filepath.Abs("../testdata/plugins")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(plugin.EnvDir, dir)
	t.Setenv("PATH", "/usr/bin:/bin")
	if !slices.Contains(formatNames(), "dtrace (plugin)") {
		t.Fatalf("formats %v: no dtrace plugin", formatNames())
	}
	f, err := os.Open(filepath.Join(dir, "dtrace-walltimestamp.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	p, err := Parse(f, "", 0, func(_ *fleetscope.Profile, b []fleetscope.Sample) error { n += len(b); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if p.Format != "dtrace" || p.Meta["converted_to"] != "folded" || p.Untimed != 0 || n != p.Samples || n == 0 {
		t.Errorf("format %s via %s, %d samples (%d untimed)", p.Format, p.Meta["converted_to"], p.Samples, p.Untimed)
	}
	// Input no format and no plugin recognises: the plugin is named.
	_, err = Parse(strings.NewReader("nothing to see here\n"), "", 0, nil)
	if err == nil || !strings.Contains(err.Error(), "dtrace (plugin)") {
		t.Errorf("err = %v, want the plugin listed", err)
	}
}

var benchFiles sync.Map

func benchFile(b *testing.B, rel string) []byte {
	if v, ok := benchFiles.Load(rel); ok {
		return v.([]byte)
	}
	raw := corpus.Read(b, rel)
	r, err := Decompress(bytes.NewReader(raw))
	if err != nil {
		b.Fatal(err)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		b.Fatal(err)
	}
	benchFiles.Store(rel, data)
	return data
}

// benchParse parses a decompressed file through the generic path
// (detection included) and reports MB/s and samples/s.
func benchParse(b *testing.B, rel string) {
	b.Setenv(plugin.EnvDir, "")
	data := benchFile(b, rel)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		_, err := Parse(bytes.NewReader(data), "", 0, func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
			n += len(batch)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(runtime.GOMAXPROCS(0)), "procs")
}

// BenchmarkParseTraceEvent: the 40 MB Chrome trace (35,028 samples).
func BenchmarkParseTraceEvent(b *testing.B) {
	benchParse(b, "corpus/trace_event/chromium156-page.trace.json.gz")
}

// BenchmarkParsePerf: the 74 MB benchmark perf file (56,990 samples).
func BenchmarkParsePerf(b *testing.B) { benchParse(b, "bench/perf-mixed-60s.txt.gz") }

// FuzzDetect: no input makes detection or the generic parse panic, and
// detection fails only with EINVALID. (Parse may also return the reader's
// errors as they are, e.g. corrupt gzip data: callers wrap those.)
func FuzzDetect(f *testing.F) {
	f.Add([]byte("java 4242 [001] 8678.595859: cpu-clock:\n\t7f00 main (/bin/app)\n\n"))
	f.Add([]byte("1.5 app;main;a 2\napp;b 1\n"))
	f.Add([]byte(`{"nodes":[{"id":1,"callFrame":{}}],"samples":[1],"timeDeltas":[1]}`))
	f.Add([]byte(`{"traceEvents":[{"ph":"P","name":"ProfileChunk","pid":1,"args":{"data":{"cpuProfile":{"nodes":[{"id":1,"callFrame":{}}],"samples":[1]},"timeDeltas":[1]}}}]}`))
	f.Add([]byte("\x09\x00\x00\x00\x00\x00\x00\xf0\x3f\x11\x00\x00\x00\x00\x00\x00\x00\x40\x1a\x01\x00"))
	f.Add([]byte("\x0a\x04\x08\x01\x10\x02\x32\x00\x32\x07samples"))
	f.Fuzz(func(t *testing.T, data []byte) {
		t.Setenv(plugin.EnvDir, "")
		t.Setenv("PATH", "/nonexistent")
		if _, err := Detect(data); err != nil && fleetscope.ErrorCode(err) != fleetscope.EINVALID {
			t.Fatalf("Detect: %v", err)
		}
		Parse(bytes.NewReader(data), "", 1<<20, func(*fleetscope.Profile, []fleetscope.Sample) error { return nil })
	})
}

// formatNames lists the formats as Lookup's error names them: built-in
// ones and the plugins found now.
func formatNames() []string {
	fs, _ := available()
	return names(fs)
}
