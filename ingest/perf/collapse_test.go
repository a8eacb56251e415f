package perf_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/ingest/perf"
)

// modes maps the reference files' MODE to stackcollapse-perf.pl's flags.
var modes = map[string]perf.Options{
	"default": {},
	"pid":     {PID: true},
	"tid":     {TID: true},
	"kernel":  {Kernel: true},
	"jit":     {JIT: true},
	"all":     {Kernel: true, JIT: true},
	"addrs":   {Addrs: true},
}

// TestCollapseMatchesStackcollapse checks every reference output in the
// corpus: fleetscope must reproduce stackcollapse-perf.pl byte for byte.
func TestCollapseMatchesStackcollapse(t *testing.T) {
	refs := corpus.Glob(t, "corpus/perf/collapsed/*.folded", 93)
	for _, ref := range refs {
		base := strings.TrimSuffix(filepath.Base(ref), ".folded")
		dot := strings.LastIndexByte(base, '.')
		name, mode := base[:dot], base[dot+1:]
		opts, ok := modes[mode]
		if !ok {
			t.Fatalf("%s: unknown mode %q", ref, mode)
		}
		t.Run(name+"/"+mode, func(t *testing.T) {
			in := inputFor(t, name)
			want, err := os.ReadFile(ref)
			if err != nil {
				t.Fatal(err)
			}
			got := collapse(t, in, opts)
			if !bytes.Equal(got, want) {
				t.Errorf("output differs from stackcollapse-perf.pl:\n%s", lineDiff(want, got))
			}
		})
	}
}

func inputFor(t testing.TB, name string) string {
	t.Helper()
	for _, ext := range []string{".txt", ".txt.gz"} {
		p := filepath.Join(corpus.Dir(), "corpus/perf", name+ext)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Fatalf("no input for %s", name)
	return ""
}

// openInput opens the file at path, decompressed; it is closed when the
// test ends.
func openInput(t testing.TB, path string) io.Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	r, err := ingest.Decompress(f)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func collapse(t testing.TB, path string, opts perf.Options) []byte {
	t.Helper()
	var out bytes.Buffer
	if _, err := perf.Collapse(openInput(t, path), &out, opts); err != nil {
		t.Fatalf("collapse %s: %v", path, err)
	}
	return out.Bytes()
}

// lineDiff shows the lines only in want (-) and only in got (+), at most 20.
func lineDiff(want, got []byte) string {
	w := strings.Split(string(want), "\n")
	g := strings.Split(string(got), "\n")
	in := func(lines []string) map[string]bool {
		m := make(map[string]bool, len(lines))
		for _, l := range lines {
			m[l] = true
		}
		return m
	}
	wm, gm := in(w), in(g)
	var b strings.Builder
	n := 0
	for _, l := range w {
		if !gm[l] && n < 20 {
			fmt.Fprintf(&b, "- %s\n", l)
			n++
		}
	}
	for _, l := range g {
		if !wm[l] && n < 20 {
			fmt.Fprintf(&b, "+ %s\n", l)
			n++
		}
	}
	if n == 0 {
		b.WriteString("(same lines, different order or repetition)\n")
	}
	return b.String()
}
