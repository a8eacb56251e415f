package perf_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/ingest/perf"
)

// scriptRecord and scriptEvent are stackcollapse-perf.pl's own patterns
// for a sample's header line and for the period and event at its end.
var (
	scriptRecord = regexp.MustCompile(`^(\S.+?)\s+(\d+)/*(\d+)*\s+`)
	scriptEvent  = regexp.MustCompile(`:\s*(\d+)*\s+(\S+):\s*$`)
)

// scriptEvents reads the file's header lines as stackcollapse-perf.pl
// does, apart from Parse: the event it keeps without options (the first
// one it reads at a header's end; "" if it reads none) and every event it
// reads. A header whose event it cannot read (a uprobe's "probe_x:f:
// (addr)", a tracepoint's payload) is never filtered out: the script
// keeps that sample whatever the event, with a period of 1.
func scriptEvents(t testing.TB, path string) (keep string, read map[string]bool) {
	t.Helper()
	read = map[string]bool{}
	sc := bufio.NewScanner(openInput(t, path))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || !scriptRecord.MatchString(line) {
			continue
		}
		if m := scriptEvent.FindStringSubmatch(line); m != nil {
			if keep == "" {
				keep = m[2]
			}
			read[m[2]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return keep, read
}

// foldParsed folds what Parse finds in the file at path as
// stackcollapse-perf.pl does without options: the samples of the event it
// keeps and those whose event it cannot read (scriptEvents), their periods
// summed by stack, sorted.
func foldParsed(t testing.TB, path string) ([]byte, *fleetscope.Profile) {
	t.Helper()
	keepName, read := scriptEvents(t, path)
	counts := map[string]uint64{}
	var names []string
	p, err := perf.Parse(openInput(t, path), func(p *fleetscope.Profile, batch []fleetscope.Sample) error {
		for _, s := range batch {
			if ev := p.Dict.Events()[s.Event]; keepName != "" && ev != keepName && read[ev] {
				continue // filtered out by the script
			}
			names = names[:0]
			for _, id := range p.Dict.StackFrames(s.Stack) {
				names = append(names, p.Dict.FrameAt(id).Name)
			}
			counts[strings.Join(names, ";")] += s.Period // as the script counts
		}
		return nil
	})
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out bytes.Buffer
	for _, k := range keys {
		fmt.Fprintf(&out, "%s %d\n", k, counts[k])
	}
	return out.Bytes(), p
}

// TestParseFoldsAsStackcollapse: the stacks Parse gives the samples are the
// Perl script's (Collapse, tested against it byte for byte, folds apart
// from Parse): against the references, the benchmark profile's collapse,
// and a thread whose samples share lines while its process changes.
func TestParseFoldsAsStackcollapse(t *testing.T) {
	for _, ref := range corpus.Glob(t, "corpus/perf/collapsed/*.default.folded", 10) {
		name := strings.TrimSuffix(filepath.Base(ref), ".default.folded")
		t.Run(name, func(t *testing.T) {
			want, err := os.ReadFile(ref)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := foldParsed(t, inputFor(t, name))
			if !bytes.Equal(got, want) {
				t.Errorf("Parse's stacks differ from stackcollapse-perf.pl's:\n%s", lineDiff(want, got))
			}
		})
	}
	t.Run("bench", func(t *testing.T) {
		if testing.Short() {
			t.Skip("74 MB")
		}
		path := corpus.Path(t, "bench/perf-mixed-60s.txt.gz")
		if got, _ := foldParsed(t, path); !bytes.Equal(got, collapse(t, path, perf.Options{})) {
			t.Errorf("Parse's stacks differ from Collapse's:\n%s", lineDiff(collapse(t, path, perf.Options{}), got))
		}
	})
	t.Run("thread", func(t *testing.T) {
		// One thread: shared bottoms; a bottom line that is no stack line;
		// its process turning java (Java frames are tidied differently);
		// another thread between; a last sample with nothing in common.
		const java = "\t2 Lcom/x/Y;::run+0x1 (/tmp/perf-1.map)\n\t3 main+0x1 (/bin/a)\n"
		in := "aa 1/1 [0] 1.000001: 1 cpu-clock:\n\t1 f+0x1 (/bin/a)\n" + java + "\n" +
			"aa 1/1 [0] 1.000002: 1 cpu-clock:\n\t9 g+0x1 (/bin/a)\n" + java + "\n" +
			"aa 1/1 [0] 1.000003: 1 cpu-clock:\n\t9 g+0x1 (/bin/a)\n\tnot a stack line\n" + java + "\n" +
			"aa 1/1 [0] 1.000004: 1 cpu-clock:\n\t8 h+0x1 (/bin/a)\n\tnot a stack line\n" + java + "\n" +
			"bb 2/2 [1] 1.000005: 1 cpu-clock:\n" + java + "\n" +
			"java 1/1 [0] 1.000006: 1 cpu-clock:\n\t9 g+0x1 (/bin/a)\n" + java + "\n" +
			"java 1/1 [0] 1.000007: 1 cpu-clock:\n" + java + "\n" +
			"aa 1/1 [0] 1.000008: 1 cpu-clock:\n\t7 k+0x1 (/bin/b)\n\n"
		path := filepath.Join(t.TempDir(), "thread.txt")
		if err := os.WriteFile(path, []byte(in), 0o600); err != nil {
			t.Fatal(err)
		}
		got, p := foldParsed(t, path)
		want := collapse(t, path, perf.Options{})
		if w := "2 lines not understood and skipped; the first: line 13:"; len(p.Warnings) != 1 || !strings.HasPrefix(p.Warnings[0], w) {
			t.Errorf("warnings %q, want one starting %q", p.Warnings, w)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("Parse's stacks differ from Collapse's:\n%s", lineDiff(want, got))
		}
		if !bytes.Contains(want, []byte("java;main;com/x/Y:::run")) || !bytes.Contains(want, []byte("aa;main;Lcom/x/Y:::run")) {
			t.Errorf("the input no longer tells java from other processes:\n%s", want)
		}
	})
}
