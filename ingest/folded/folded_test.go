package folded

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/ingest/internal/fstest"
)

// TestCorpusRoundTrip: every folded file of the corpus (stackcollapse-perf.pl
// output) reads back to the same lines: with counts as weights always, and
// with counts as samples where they add up to few enough (some files' counts
// are perf periods, millions of them).
func TestCorpusRoundTrip(t *testing.T) {
	files := corpus.Glob(t, "corpus/perf/collapsed/*.folded", 1)
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if Detect(data[:min(len(data), 64<<10)]) == 0 {
			t.Errorf("%s: not detected", filepath.Base(f))
		}
		var want []string
		var total uint64
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			want = append(want, sc.Text())
			n, _ := strconv.ParseUint(sc.Text()[strings.LastIndexByte(sc.Text(), ' ')+1:], 10, 64)
			total += n
		}
		for _, weighted := range []bool{true, false} {
			if !weighted && total > 100_000 {
				continue
			}
			p, all := fstest.Parse(t, Options{Weighted: weighted}.Parse, data)
			got := fstest.Folded(p, all, "", true, weighted)
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%s (weighted %v): read back differently:\n%s\nwant\n%s", filepath.Base(f), weighted, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if p.Untimed != p.Samples || !weighted && uint64(p.Samples) != total {
				t.Errorf("%s: %d samples, %d untimed, want %d untimed", filepath.Base(f), p.Samples, p.Untimed, total)
			}
		}
	}
}

// TestTimed: a leading timestamp column gives each sample its time,
// exactly to the nanosecond.
func TestTimed(t *testing.T) {
	in := "# converted\n1700000000.000000001 app;main;a 1\r\n\n1700000000.5 app;main;b 2\n1700000001.123456789 app;main;a 1"
	p, all := fstest.Parse(t, Parse, []byte(in))
	want := []int64{1700000000000000001, 1700000000500000000, 1700000000500000000, 1700000001123456789}
	if len(all) != len(want) {
		t.Fatalf("%d samples", len(all))
	}
	for i, s := range all {
		if s.TimeNanos != want[i] {
			t.Errorf("sample %d at %d, want %d", i, s.TimeNanos, want[i])
		}
	}
	if got := strings.Join(fstest.Folded(p, all, "", true, false), "|"); got != "app;main;a 2|app;main;b 2" {
		t.Errorf("folded %s", got)
	}
}

// TestErrors: a bad line is named; a missing time column in a timed file
// too; huge sample counts point at folded:weighted.
func TestErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"a;b 1\nnot folded\n", `line 2: not STACK COUNT: "not folded"`},
		{"1.5 a;b 1\na;b 1\n", "line 2: not SECONDS.FRACTION STACK COUNT"},
		{"a;b 1\na;b 10000000\n", "folded:weighted"},
		{"a;b 0\n", "no stacks"},
		{"", "no stacks"},
		{" a;b 1\n", "line 1"},
	} {
		_, err := Parse(strings.NewReader(tc.in), func(*fleetscope.Profile, []fleetscope.Sample) error { return nil })
		if err == nil || fleetscope.ErrorCode(err) != fleetscope.EINVALID || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want EINVALID with %q", tc.in, err, tc.want)
		}
	}
	if _, err := ParseOptions(map[string]string{"colour": "red"}); err == nil {
		t.Errorf("unknown option accepted")
	}
}

// TestLongLine: lines longer than the read buffer are read whole.
func TestLongLine(t *testing.T) {
	frames := make([]string, 20000)
	for i := range frames {
		frames[i] = "frame" + strconv.Itoa(i)
	}
	in := strings.Join(frames, ";") + " 3\n"
	p, all := fstest.Parse(t, Parse, []byte(in))
	if len(all) != 3 || len(p.Dict.StackFrames(all[0].Stack)) != 20000 {
		t.Errorf("%d samples", len(all))
	}
}

// TestDetect: folded stacks are recognised; text with numbers is not.
func TestDetect(t *testing.T) {
	for in, want := range map[string]bool{
		"java;main;run 12\njava;main 3\n":          true,
		"1.25 java;main 1\n2.5 java;main;x 1\n":    true,
		"java;main 12":                             true,
		"# comment\n\njava;a 1\n":                  true,
		"page 12\nchapter 3\n":                     false, // one-frame stacks only
		"java;main 12\nhello world\n":              false,
		"perf 1234 [000] 1.5: cpu-clock:\n":        false,
		"{\"a\": 1}\n":                             false,
		"java;main x\n":                            false,
		"":                                         false,
		"1.5 java;main 1\njava;main 1\n":           false,
		"java;main 1\n" + strings.Repeat("x", 100): true, // a cut-off last line says nothing
	} {
		if got := Detect([]byte(in)) > 0; got != want {
			t.Errorf("Detect(%q) = %v, want %v", in, got, want)
		}
	}
}
