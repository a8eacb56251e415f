package plugin

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/internal/fstest"
)

// The example plugin (a shell and awk program) and its input.
const (
	exampleDir   = "../../testdata/plugins"
	exampleInput = "../../testdata/plugins/dtrace-walltimestamp.out"
)

func needShell(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"sh", "awk"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("FLEETSCOPE_TEST_REQUIRE") == "1" {
				t.Fatalf("the example plugin needs %s: %v", tool, err)
			}
			t.Skipf("the example plugin needs %s", tool)
		}
	}
}

// writePlugin writes a shell script plugin into dir.
func writePlugin(t *testing.T, dir, file, script string) string {
	t.Helper()
	path := filepath.Join(dir, file)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestPluginDiscover: plugins come from FLEETSCOPE_PLUGIN_DIR (any executable,
// the prefix and extension cut from its name) and from PATH (only
// fleetscope-convert-NAME); the directory wins a name.
func TestPluginDiscover(t *testing.T) {
	dir, onPath := t.TempDir(), t.TempDir()
	writePlugin(t, dir, "fleetscope-convert-alpha", "echo dir")
	writePlugin(t, dir, "beta.sh", "echo dir")
	writePlugin(t, onPath, "fleetscope-convert-beta", "echo path")
	writePlugin(t, onPath, "fleetscope-convert-gamma", "echo path")
	writePlugin(t, onPath, "delta", "echo path")                      // no prefix: not a plugin on PATH
	os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644) // not executable
	writePlugin(t, dir, "bad:name", "echo")
	t.Setenv(EnvDir, dir)
	t.Setenv("PATH", onPath)
	ps, err := Discover()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range ps {
		got[p.Name] = filepath.Dir(p.Path)
	}
	want := map[string]string{"alpha": dir, "beta": dir, "gamma": onPath}
	if len(got) != len(want) {
		t.Errorf("found %v, want %v", got, want)
	}
	for n, d := range want {
		if got[n] != d {
			t.Errorf("%s: from %q, want %q", n, got[n], d)
		}
	}
	t.Setenv(EnvDir, filepath.Join(dir, "missing"))
	if _, err := Discover(); err == nil || !strings.Contains(err.Error(), EnvDir) {
		t.Errorf("a missing plugin directory: err = %v", err)
	}
}

// TestPluginDiscoverSeesChanges: directory listings are remembered
// between uploads, yet a plugin added to or removed from a directory
// whose listing was remembered is found or forgotten at the next call.
func TestPluginDiscoverSeesChanges(t *testing.T) {
	dir := t.TempDir()
	t.Setenv(EnvDir, dir)
	t.Setenv("PATH", "")
	old := time.Now().Add(-time.Hour)
	age := func() { // as a directory left alone for an hour: its listing is reused
		t.Helper()
		if err := os.Chtimes(dir, old, old); err != nil {
			t.Fatal(err)
		}
	}
	names := func() []string {
		t.Helper()
		ps, err := Discover()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	age()
	if got := names(); len(got) != 0 {
		t.Fatalf("an empty directory: %v", got)
	}
	if got := names(); len(got) != 0 { // from the remembered listing
		t.Fatalf("an empty directory, again: %v", got)
	}
	path := writePlugin(t, dir, "alpha", "echo")
	if got := names(); !slices.Equal(got, []string{"alpha"}) {
		t.Fatalf("after adding alpha: %v", got)
	}
	old = old.Add(time.Minute)
	age()
	if got := names(); !slices.Equal(got, []string{"alpha"}) {
		t.Fatalf("alpha, from the remembered listing: %v", got)
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := names(); len(got) != 0 {
		t.Fatalf("after removing alpha: %v", got)
	}
}

// TestPluginExampleDTrace runs the example plugin for real: its probe recognises
// its input and nothing else, and its conversion gives one timed sample per
// record of the input, at the record's walltimestamp.
func TestPluginExampleDTrace(t *testing.T) {
	needShell(t)
	t.Setenv(EnvDir, exampleDir)
	ps, err := Discover()
	if err != nil {
		t.Fatal(err)
	}
	var p Plugin
	for _, q := range ps {
		if q.Name == "dtrace" {
			p = q
		}
	}
	if p.Path == "" {
		t.Fatalf("no dtrace plugin in %v", ps)
	}
	data, err := os.ReadFile(exampleInput)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := p.Probe(data); c != 90 || err != nil {
		t.Errorf("probe on its input: %d, %v", c, err)
	}
	for _, other := range [][]byte{[]byte("java;main 1\n"), []byte("hello\n"), nil, bytes.Repeat([]byte{0xff, 0}, 1000)} {
		if c, err := p.Probe(other); c != 0 || err != nil {
			t.Errorf("probe on %q: %d, %v", other[:min(len(other), 20)], c, err)
		}
	}

	// The reference: each record's header holds its walltimestamp (ns).
	var times []int64
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 3 && !strings.HasPrefix(sc.Text(), " ") {
			var ns int64
			for _, c := range f[0] {
				ns = ns*10 + int64(c-'0')
			}
			times = append(times, ns)
		}
	}
	prof, all := fstest.Parse(t, p.Parse, data)
	if len(all) != len(times) || len(times) < 100 {
		t.Fatalf("%d samples, the input has %d records", len(all), len(times))
	}
	for i, s := range all {
		if s.TimeNanos != times[i] {
			t.Fatalf("sample %d at %d, want %d", i, s.TimeNanos, times[i])
		}
	}
	if prof.Format != "dtrace" || prof.Meta["converted_to"] != "folded" {
		t.Errorf("format %q, converted to %q", prof.Format, prof.Meta["converted_to"])
	}
	// The gzip phase: the first 300 ms of each second deflates.
	for _, s := range all {
		deflating := strings.Contains(fstest.StackText(prof.Dict, s.Stack), "libz.so.1`deflate_slow")
		if off := s.TimeNanos % 1e9; deflating != (off < 300e6) {
			t.Fatalf("sample at offset %d ms: deflating %v", off/1e6, deflating)
		}
	}
	if got := fstest.StackText(prof.Dict, all[0].Stack); got != "myapp;myapp`_start;myapp`main;myapp`handle;myapp`compress_block;libz.so.1`deflate;libz.so.1`deflate_slow" {
		t.Errorf("first stack %s", got)
	}
}

// TestPluginFailures: a plugin that fails, prints nonsense or writes neither
// format gets a clear EINVALID error with what it said.
func TestPluginFailures(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		script, want string
	}{
		{"echo 'cannot read this' >&2; exit 3", "convert failed: exit status 3; it said: cannot read this"},
		{"cat >/dev/null; echo 'hello there'", `wrote neither perf script text nor folded stacks (read as folded: folded line 1: not STACK COUNT: "hello there")`},
		{"cat >/dev/null; printf 'a;b 1\\nbroken\\n'; echo oops >&2", `folded line 2: not STACK COUNT: "broken"); it said: oops`},
		{"cat >/dev/null; printf 'a;b 1\\n'; exit 1", "convert failed: exit status 1"},
		{"cat >/dev/null", "wrote nothing"},
	}
	for i, tc := range cases {
		path := writePlugin(t, dir, "p"+string(rune('a'+i)), `[ "$1" = convert ] || { echo 0; exit 0; }
`+tc.script+"\n")
		p := Plugin{Name: "p", Path: path}
		_, err := p.Parse(strings.NewReader("input\n"), func(*fleetscope.Profile, []fleetscope.Sample) error { return nil })
		if err == nil || fleetscope.ErrorCode(err) != fleetscope.EINVALID || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want EINVALID with %q", tc.script, err, tc.want)
		}
	}
	// Probes: nonsense and failure are 0 with an error; numbers are clamped.
	for script, want := range map[string]int{"echo maybe": 0, "exit 1": 0, "echo 250": 100, "echo -5": 0, "cat >/dev/null; echo ' 42 '": 42} {
		p := Plugin{Name: "p", Path: writePlugin(t, dir, "probe", script+"\n")}
		if c := p.Detect([]byte("head")); c != want {
			t.Errorf("%s: Detect = %d, want %d", script, c, want)
		}
	}
	// An input error (a size limit) keeps its code.
	p0 := Plugin{Name: "p", Path: writePlugin(t, dir, "cat", "cat >/dev/null; echo 'a;b 1'\n")}
	tooLarge := io.MultiReader(strings.NewReader("x\n"), iotest.ErrReader(fleetscope.Errorf(fleetscope.ETOOLARGE, "too large")))
	if _, err := p0.Parse(tooLarge, func(*fleetscope.Profile, []fleetscope.Sample) error { return nil }); fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE {
		t.Errorf("input over a limit: err = %v, want ETOOLARGE", err)
	}
	// Perf script output is taken too.
	p := Plugin{Name: "p", Path: writePlugin(t, dir, "perfout", `cat >/dev/null; printf 'app 12 [000] 100.250000: cpu-clock:\n\tffff main (/bin/app)\n\n'`+"\n")}
	prof, all := fstest.Parse(t, p.Parse, []byte("x"))
	if prof.Meta["converted_to"] != "perf" || len(all) != 1 || all[0].TimeNanos != 100_250_000_000 {
		t.Errorf("perf output: %q, %+v", prof.Meta["converted_to"], all)
	}
}
