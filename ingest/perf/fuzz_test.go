package perf

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/corpus"
)

// The Perl script's expressions, in RE2 syntax. Go's regexp picks the match a
// backtracking engine would, so these are references for the hand-written
// matchers. Perl's \s includes \v, RE2's does not: spell it out.
var (
	reHeader = regexp.MustCompile(`^([^\t\n\v\f\r ].+?)[\t\n\v\f\r ]+([0-9]+)/*([0-9]+)*[\t\n\v\f\r ]+`)
	reEvent  = regexp.MustCompile(`:[\t\n\v\f\r ]*([0-9]+)*[\t\n\v\f\r ]+([^\t\n\v\f\r ]+):[\t\n\v\f\r ]*$`)
	reFrame  = regexp.MustCompile(`^[\t\n\v\f\r ]*([0-9A-Za-z_]+)[\t\n\v\f\r ]*(.+) \(([^\t\n\v\f\r ]*)\)`)
)

// find runs re over b with Perl's byte semantics: each byte becomes one
// rune (Latin-1), so '.' and \S match a single byte as they do in Perl.
// It returns the submatch offsets mapped back to b.
func find(re *regexp.Regexp, b []byte) []int {
	var s strings.Builder
	pos := make(map[int]int, len(b)+1) // rune string offset -> byte offset
	for i, c := range b {
		pos[s.Len()] = i
		s.WriteRune(rune(c))
	}
	pos[s.Len()] = len(b)
	m := re.FindStringSubmatchIndex(s.String())
	for i, v := range m {
		if v >= 0 {
			m[i] = pos[v]
		}
	}
	return m
}

func group(b []byte, m []int, i int) []byte {
	if m[2*i] < 0 {
		return nil
	}
	return b[m[2*i]:m[2*i+1]]
}

// checkLine compares the hand-written matchers with the references.
func checkLine(t *testing.T, line []byte) {
	h, ok := matchHeader(line)
	if m := find(reHeader, line); (m != nil) != ok {
		t.Fatalf("matchHeader(%q) = %v, regexp says %v", line, ok, m != nil)
	} else if ok && (!bytes.Equal(h.comm, group(line, m, 1)) || !bytes.Equal(h.pid, group(line, m, 2)) || !bytes.Equal(h.tid, group(line, m, 3))) {
		t.Fatalf("matchHeader(%q) = %q %q %q, regexp %q %q %q", line, h.comm, h.pid, h.tid, group(line, m, 1), group(line, m, 2), group(line, m, 3))
	}
	ev, per, ok := matchEvent(line)
	if m := find(reEvent, line); (m != nil) != ok {
		t.Fatalf("matchEvent(%q) = %v, regexp says %v", line, ok, m != nil)
	} else if ok && (!bytes.Equal(ev, group(line, m, 2)) || !bytes.Equal(per, group(line, m, 1))) {
		t.Fatalf("matchEvent(%q) = %q %q, regexp %q %q", line, ev, per, group(line, m, 2), group(line, m, 1))
	}
	f, ok := matchFrame(line)
	if m := find(reFrame, line); (m != nil) != ok {
		t.Fatalf("matchFrame(%q) = %v, regexp says %v", line, ok, m != nil)
	} else if ok && (!bytes.Equal(f.pc, group(line, m, 1)) || !bytes.Equal(f.fn, group(line, m, 2)) || !bytes.Equal(f.mod, group(line, m, 3))) {
		t.Fatalf("matchFrame(%q) = %q %q %q, regexp %q %q %q", line, f.pc, f.fn, f.mod, group(line, m, 1), group(line, m, 2), group(line, m, 3))
	}
	if ok {
		tidy(f, true, Options{Addrs: true, Kernel: true, JIT: true}, true, nil)
		tidy(f, false, Options{}, false, nil)
	}
}

// corpusLines returns up to n lines from each perf corpus file.
func corpusLines(t testing.TB, n int) [][]byte {
	var out [][]byte
	files, _ := filepath.Glob(filepath.Join(corpus.Dir(), "corpus/perf/*.txt*")) // seeds, when present
	for _, p := range files {
		if strings.Contains(p, "LICENSE") || strings.Contains(p, "workload") {
			continue
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		var r io.Reader = f
		if strings.HasSuffix(p, ".gz") {
			if r, err = gzip.NewReader(f); err != nil {
				t.Fatal(err)
			}
		}
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for i := 0; i < n && sc.Scan(); i++ {
			out = append(out, append([]byte(nil), sc.Bytes()...))
		}
		f.Close()
	}
	return out
}

var tricky = []string{
	"a 123 [000] 5076.100000: cpu-clock:",
	"a  123 x",
	"V8 WorkerThread 24636/25607 [000] 94564.109216: 100 cycles:",
	":-1    -1 [001]  8678.595859:    2004008 cpu-clock:pppH: ",
	"java 123// 5:",
	"java 123//456 5:",
	"\t7fa4b39f24f8 (/tmp/perf.map)",
	"\t7fa4b39f24f8 foo (bar) (baz)",
	"\tabc  (x)",
	"\tabc foo+0x10 ([kernel.kallsyms])",
	"\tabc a->b->->c+0x1f (/tmp/perf-12.map)",
	"\tabc [unknown] (/usr/lib/libc.so.6)",
	"\tabc foo(anonymous namespace)::bar(int) (x)",
	"\tabc net/http.(*Client).Do (x)",
	"x 1 2 3 4: a: b:",
	"perf 13741/13741 [000]  9006.401114: sched:sched_switch: prev_comm=perf ==> next_comm=x",
	"\x0b\x0b1 2\x0b3 (4)",
}

// TestMatchersAgreeWithRegexp runs the differential check over the corpus.
func TestMatchersAgreeWithRegexp(t *testing.T) {
	lines := corpusLines(t, 1<<30)
	for _, s := range tricky {
		lines = append(lines, []byte(s))
	}
	for _, l := range lines {
		checkLine(t, l)
	}
	t.Logf("%d lines agree", len(lines))
}

func FuzzLine(f *testing.F) {
	for _, l := range corpusLines(f, 40) {
		f.Add(l)
	}
	for _, s := range tricky {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') >= 0 {
			return // lines never hold a newline
		}
		checkLine(t, line)
	})
}

// FuzzParse feeds arbitrary input to both parsers: they must not panic or
// hang, and what Parse returns must be consistent.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join(corpus.Dir(), "corpus/perf/*.txt")) // seeds, when present
	for _, p := range files {
		b, _ := os.ReadFile(p)
		if len(b) > 8<<10 {
			b = b[:8<<10]
		}
		f.Add(b)
	}
	f.Add([]byte("a 1 1.5: e:\n\tff f (m)\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		watchdog := time.AfterFunc(5*time.Second, func() {
			buf := make([]byte, 1<<20)
			panic(fmt.Sprintf("parsing %d bytes took over 5s:\n%s", len(data), buf[:runtime.Stack(buf, true)]))
		})
		defer watchdog.Stop()
		var buf bytes.Buffer
		Collapse(bytes.NewReader(data), &buf, Options{})
		n := 0
		p, err := Parse(bytes.NewReader(data), func(p *fleetscope.Profile, batch []fleetscope.Sample) error {
			for _, s := range batch {
				if int(s.Stack) >= p.Dict.NumStacks() || int(s.Event) >= len(p.Dict.Events()) {
					t.Fatalf("sample refers outside the dictionary: %+v", s)
				}
			}
			n += len(batch)
			return nil
		})
		if err == nil && (p.Samples != n || p.Untimed > n) {
			t.Fatalf("profile says %d samples (%d untimed), %d delivered", p.Samples, p.Untimed, n)
		}
	})
}
