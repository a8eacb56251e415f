package flame_test

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/ingest/perf"
	"github.com/fleetscope/fleetscope/query/flame"
)

// TestTreeAgreesWithFolded rebuilds folded stacks from the tree (a node's
// self value is its value less its children's) and compares them with
// Folded, for corpus profiles with and without annotations (which change
// which frames merge).
func TestTreeAgreesWithFolded(t *testing.T) {
	files := corpus.Glob(t, "corpus/perf/*.txt*", 15)
	n := 0
	for _, path := range files {
		if strings.Contains(path, "LICENSE") || strings.Contains(path, "workload") {
			continue
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := ingest.Decompress(f)
		var samples []fleetscope.Sample
		p, err := perf.Parse(r, func(_ *fleetscope.Profile, b []fleetscope.Sample) error { samples = append(samples, b...); return nil })
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, ann := range []flame.Annotate{{}, {Kernel: true, JIT: true}} {
			var c flame.Counts
			for e := range p.Dict.Events() {
				sel := fleetscope.Selection{Event: fleetscope.EventID(e), IncludeIdle: true, Range: fleetscope.All}
				c.Add(p.Dict, &sel, samples, true)
			}
			var wantText strings.Builder
			if err := flame.WriteFolded(&wantText, p.Dict, &c, ann); err != nil {
				t.Fatal(err)
			}
			l := flame.NewLayout(p.Dict, ann)
			if foldedByText(l.Flat(&c)) != wantText.String() {
				t.Fatalf("%s %+v: the tree's folded lines differ from the counts'", path, ann)
			}
			if writeLines(t, l.Lines(&c)) != wantText.String() {
				t.Fatalf("%s %+v: the lines differ from the counts' folded lines", path, ann)
			}
			want := flame.Folded(p.Dict, &c, ann)
			got := map[string]uint64{}
			root := flame.Tree(p.Dict, &c, ann)
			if root.Value != c.Total {
				t.Fatalf("%s: root %d, total %d", path, root.Value, c.Total)
			}
			var walk func(n *flame.Node, prefix string)
			walk = func(n *flame.Node, prefix string) {
				self := n.Value
				for i, ch := range n.Children {
					if i > 0 && n.Children[i-1].Name >= ch.Name {
						t.Fatalf("%s: children of %q not sorted: %q before %q", path, n.Name, n.Children[i-1].Name, ch.Name)
					}
					self -= ch.Value
					p := ch.Name
					if prefix != "" {
						p = prefix + ";" + ch.Name
					}
					walk(ch, p)
				}
				if self > 0 && prefix != "" {
					got[prefix] += self
				}
			}
			walk(root, "")
			if len(got) != len(want) {
				t.Fatalf("%s %+v: tree gives %d stacks, folded %d", path, ann, len(got), len(want))
			}
			for k, v := range want {
				if got[k] != v {
					t.Fatalf("%s %+v: stack %q: tree %d, folded %d", path, ann, k, got[k], v)
				}
			}
			n++
		}
	}
	if n < 30 {
		t.Fatalf("only %d profile variants checked", n)
	}
}

// TestFoldedOrder: the tree's folded lines and the layout's lines
// equal the counts' folded lines (sorted by stack bytewise, even around
// separators and control characters in names), with and without
// annotations.
func TestFoldedOrder(t *testing.T) {
	d := fleetscope.NewDict()
	counts := &flame.Counts{}
	add := func(v uint64, names ...string) {
		var fs []fleetscope.FrameID
		for _, n := range names {
			kind := fleetscope.FrameKind(0)
			if strings.HasPrefix(n, "k:") {
				n, kind = n[2:], fleetscope.KindKernel
			}
			fs = append(fs, d.Frame(fleetscope.Frame{Name: n, Kind: kind}))
		}
		counts.AddStack(d.Stack(fs), v)
	}
	add(3, "a", "b")
	add(2, "a", "b", "c")
	add(1, "a", "b\tx")
	add(4, "a", "b!x")
	add(5, "a;b")
	add(6, "x", "k:sys")
	add(7, "x", "sys")
	add(1, "a")
	check(t, d, counts) // with a name holding ';': sorted
	d, counts = fleetscope.NewDict(), &flame.Counts{}
	add(3, "a", "b")
	add(2, "a", "b", "c")
	add(1, "a", "b\tx")
	add(4, "a", "b!x")
	add(4, "a", "b:x", "y")
	add(4, "a", "b:x")
	add(4, "a", "b x")
	add(4, "a", "b", "x y")
	add(4, "a", "b", "x")
	add(4, "a", "b", "x", "z")
	add(4, "a", "b1")
	add(4, "a", "b<", "q")
	add(4, "a", "b\x7f")
	add(2, "", "e") // empty names still take their ';'
	add(1, "", "", "e")
	add(6, "x", "k:sys")
	add(7, "x", "sys")
	add(1, "a")
	check(t, d, counts) // no ';' in names: in the tree's order
}

// TestLayoutFewStacks: a layout's trees of a few of its stacks (a short
// range's, found from the counts) and of many (found by walking its whole
// order) write the counts' folded lines, one side or two (a diff's sides
// each write their own).
func TestLayoutFewStacks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 9))
	d := fleetscope.NewDict()
	var stacks []fleetscope.StackID
	for range 4000 {
		var fs []fleetscope.FrameID
		for range 1 + rng.IntN(12) {
			fs = append(fs, d.Frame(fleetscope.Frame{Name: fmt.Sprintf("f%d", rng.IntN(40))}))
		}
		stacks = append(stacks, d.Stack(fs))
	}
	l := flame.NewLayout(d, flame.Annotate{})
	pick := func(k int) *flame.Counts {
		c := &flame.Counts{}
		for range k {
			c.AddStack(stacks[rng.IntN(len(stacks))], uint64(1+rng.IntN(3)))
		}
		return c
	}
	folded := func(f *flame.Flat) string {
		// Siblings in strictly increasing name order: each path once.
		last := map[int]string{} // depth -> the name of the latest node there
		for i := 1; i < len(f.Name); i++ {
			dep, name := int(f.Depth[i]), f.Names[f.Name[i]]
			if prev, ok := last[dep]; ok && prev >= name {
				t.Fatalf("node %d (%q) after its sibling %q", i, name, prev)
			}
			last[dep] = name
			for dd := range last {
				if dd > dep {
					delete(last, dd)
				}
			}
		}
		return foldedByText(f)
	}
	for _, k := range []int{1, 2, 20, 100, 3000} { // below and above the layout's stacks / 16
		a, b := pick(k), pick(k/2+1)
		for _, c := range []*flame.Counts{a, b} {
			var want strings.Builder
			if err := flame.WriteFolded(&want, d, c, flame.Annotate{}); err != nil {
				t.Fatal(err)
			}
			if got := folded(l.Flat(c)); got != want.String() {
				t.Fatalf("%d stacks: the tree's folded lines\n%s\nwant\n%s", k, got, want.String())
			}
			if got := writeLines(t, l.Lines(c)); got != want.String() {
				t.Fatalf("%d stacks: Lines wrote\n%s\nwant\n%s", k, got, want.String())
			}
		}
		df := l.FlatDiff(a, b)
		sideA := folded(&flame.Flat{Names: df.Names, Name: df.Name, Value: df.A, Depth: df.Depth})
		sideB := folded(&flame.Flat{Names: df.Names, Name: df.Name, Value: df.B, Depth: df.Depth})
		if sideA != folded(l.Flat(a)) || sideB != folded(l.Flat(b)) {
			t.Fatalf("%d stacks: a diff's sides differ from their own trees", k)
		}
	}
}

func check(t *testing.T, d *fleetscope.Dict, counts *flame.Counts) {
	t.Helper()
	for _, ann := range []flame.Annotate{{}, {Kernel: true}} {
		var want strings.Builder
		if err := flame.WriteFolded(&want, d, counts, ann); err != nil {
			t.Fatal(err)
		}
		l := flame.NewLayout(d, ann)
		if got := foldedByText(l.Flat(counts)); got != want.String() {
			t.Fatalf("annotate %+v: the tree's folded lines\n%s\nwant\n%s", ann, got, want.String())
		}
		if lines := writeLines(t, l.Lines(counts)); lines != want.String() {
			t.Fatalf("annotate %+v: Lines wrote\n%s\nwant\n%s", ann, lines, want.String())
		}
	}
}

// writeLines writes lines as text, checking that FoldedSize counts its
// bytes.
func writeLines(t *testing.T, ls *flame.Lines) string {
	t.Helper()
	var b strings.Builder
	if err := ls.WriteFolded(&b); err != nil {
		t.Fatal(err)
	}
	if n := ls.FoldedSize(); n != b.Len() {
		t.Fatalf("FoldedSize %d, WriteFolded wrote %d bytes", n, b.Len())
	}
	return b.String()
}

// failingWriter takes n writes, then fails every write after.
type failingWriter struct {
	n, calls int
	bytes    int
}

var errFull = fmt.Errorf("disk full")

func (w *failingWriter) Write(p []byte) (int, error) {
	w.calls++
	if w.calls > w.n {
		return 0, errFull
	}
	w.bytes += len(p)
	return len(p), nil
}

// TestLinesWriteError: the lines go out in large writes (more than one
// for a big profile), and a write that fails is the answer's error, with
// no write tried after it.
func TestLinesWriteError(t *testing.T) {
	d := fleetscope.NewDict()
	counts := &flame.Counts{}
	long := strings.Repeat("com.example.service.Handler$Inner.method", 4)
	for i := range 4000 {
		fs := []fleetscope.FrameID{d.Frame(fleetscope.Frame{Name: "main"})}
		for j := range 6 {
			fs = append(fs, d.Frame(fleetscope.Frame{Name: fmt.Sprintf("%s%d_%d", long, j, i%(50+j))}))
		}
		counts.AddStack(d.Stack(fs), uint64(i+1))
	}
	lines := flame.NewLayout(d, flame.Annotate{}).Lines(counts)
	var all failingWriter
	all.n = 1 << 30
	if err := lines.WriteFolded(&all); err != nil {
		t.Fatal(err)
	}
	if all.calls < 2 {
		t.Fatalf("%d bytes in %d writes: want lines this size to need several", all.bytes, all.calls)
	}
	w := failingWriter{n: 1}
	if err := lines.WriteFolded(&w); err != errFull {
		t.Fatalf("WriteFolded = %v, want the writer's error", err)
	}
	if w.calls != 2 {
		t.Fatalf("%d writes: want none after the one that failed", w.calls)
	}
}

// foldedByText is a well-formed tree's folded lines, the slow way: each
// node's stack text and self value, added up by text, sorted.
func foldedByText(f *flame.Flat) string {
	self := slices.Clone(f.Value)
	text := make([]string, len(f.Name))
	var path []int
	for i := range f.Name {
		dep := int(f.Depth[i])
		path = append(path[:dep], i)
		if i == 0 {
			continue
		}
		p := path[dep-1]
		self[p] -= f.Value[i]
		text[i] = f.Names[f.Name[i]]
		if p > 0 {
			text[i] = text[p] + ";" + text[i]
		}
	}
	sum := map[string]uint64{}
	for i := 1; i < len(f.Name); i++ {
		if self[i] != 0 {
			sum[text[i]] += self[i]
		}
	}
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(sum)) {
		b.WriteString(k + " " + strconv.FormatUint(sum[k], 10) + "\n")
	}
	return b.String()
}
