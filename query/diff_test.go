package query_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/export"
	"github.com/fleetscope/fleetscope/query/flame"
)

// TestDiffTreeAndChanges: the merged tree's root holds both totals, and the
// functions that changed (self and total, raw and normalized) equal what
// the export package computes from the stacks independently; for two
// ranges of one profile (one dictionary) and for two profiles.
func TestDiffTreeAndChanges(t *testing.T) {
	p := parseFile(t, corpus.Path(t, "bench/perf-mixed-60s.txt.gz"))
	o := parseFile(t, corpus.Path(t, "corpus/perf/perf-java-stacks-01.txt"))
	ctx := context.Background()
	ra, rb := fleetscope.Range{Start: 10e9, End: 20e9}, fleetscope.Range{Start: 30e9, End: 40e9}
	ga, _ := p.q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: p.id, Range: &ra})
	gb, _ := p.q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: p.id, Range: &rb})
	gc, _ := o.q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: o.id})
	for name, pair := range map[string][2]*query.FlameGraph{"ranges": {ga, gb}, "profiles": {gc, gb}} {
		d := query.DiffOf(pair[0], pair[1])
		for _, norm := range []bool{false, true} {
			stacks := d.Stacks()
			if norm {
				stacks = export.Normalize(stacks)
			}
			ta, tb := export.DiffTotals(stacks)
			tree := d.Tree(norm)
			if tree.A[0] != ta || tree.B[0] != tb || !norm && (ta != d.TotalA || tb != d.TotalB) {
				t.Fatalf("%s normalize=%v: root %d/%d, stacks %d/%d, totals %d/%d", name, norm, tree.A[0], tree.B[0], ta, tb, d.TotalA, d.TotalB)
			}
			fns := functionsOf(stacks)
			self, total := query.Changes(tree, 0)
			if !slices.Equal(self, export.Top(fns, export.BySelf, 0)) || !slices.Equal(total, export.Top(fns, export.ByTotal, 0)) {
				t.Fatalf("%s normalize=%v: changes read off the tree differ from the functions of the stacks", name, norm)
			}
			if len(self) == 0 {
				t.Fatalf("%s: nothing changed", name)
			}
		}
	}
}

// BenchmarkDiff: two 10-s ranges of the benchmark profile compared, with
// the merged tree and the change tables, against one range's flame graph.
func BenchmarkDiff(b *testing.B) {
	p, ra, a, bb := benchRanges(b)
	ctx := context.Background()
	b.Run("range", func(b *testing.B) {
		for range b.N {
			g, err := p.q.FlameGraph(ctx, 0, query.FlameRequest{ProfileID: p.id, Range: &ra})
			if err != nil {
				b.Fatal(err)
			}
			g.Flat()
		}
	})
	b.Run("diff", func(b *testing.B) {
		for range b.N {
			d, err := p.q.Diff(ctx, 0, a, bb)
			if err != nil {
				b.Fatal(err)
			}
			query.Changes(d.Tree(false), 20)
		}
	})
}

// TestDiffShapeOfB: B's shape keeps exactly the merged tree's nodes with
// samples in B, each with both of its values (A's counting the subtrees
// only A has), under the same path of names.
func TestDiffShapeOfB(t *testing.T) {
	p, _, a, b := benchRanges(t)
	d, err := p.q.Diff(context.Background(), 0, a, b)
	if err != nil {
		t.Fatal(err)
	}
	paths := func(names []string, name, depth []uint32) []string {
		out := make([]string, len(name))
		var path []string
		for i := range name {
			path = append(path[:depth[i]], names[name[i]])
			out[i] = strings.Join(path, ";")
		}
		return out
	}
	full := d.Tree(false)
	shape := full.ShapeOfB()
	type ab struct{ a, b uint64 }
	want := map[string]ab{}
	aOnly := 0
	for i, path := range paths(full.Names, full.Name, full.Depth) {
		if full.B[i] > 0 || i == 0 {
			want[path] = ab{full.A[i], full.B[i]}
		} else {
			aOnly++
		}
	}
	if aOnly == 0 {
		t.Fatal("no node only A has: the test tests nothing")
	}
	got := paths(shape.Names, shape.Name, shape.Depth)
	if len(got) != len(want) {
		t.Fatalf("B's shape has %d nodes, the merged tree %d with samples in B", len(got), len(want))
	}
	for i, path := range got {
		if w, ok := want[path]; !ok || w != (ab{shape.A[i], shape.B[i]}) {
			t.Fatalf("node %q: A %d B %d, merged tree %+v (found %v)", path, shape.A[i], shape.B[i], w, ok)
		}
	}
	if shape.A[0] != d.TotalA || shape.B[0] != d.TotalB {
		t.Fatalf("root %d/%d, totals %d/%d", shape.A[0], shape.B[0], d.TotalA, d.TotalB)
	}
}

// benchRanges parses the benchmark profile and names two of its 10-s
// ranges, [10, 20) (also as a range) and [30, 40), as diff sides.
func benchRanges(tb testing.TB) (p *parsed, ra fleetscope.Range, a, b query.DiffSide) {
	p = parseFile(tb, corpus.Path(tb, "bench/perf-mixed-60s.txt.gz"))
	ra, rb := fleetscope.Range{Start: 10e9, End: 20e9}, fleetscope.Range{Start: 30e9, End: 40e9}
	side := func(r fleetscope.Range) query.DiffSide {
		return query.DiffSide{Profile: &query.FlameRequest{ProfileID: p.id, Range: &r}}
	}
	return p, ra, side(ra), side(rb)
}

// TestLinesGraph: a flame graph rebuilt from another's folded lines (a
// diff side the server answered) writes the same folded text and keeps the
// total, a range's and a whole profile's; malformed lines are EINVALID.
func TestLinesGraph(t *testing.T) {
	p := parseFile(t, corpus.Path(t, "corpus/perf/perf-java-stacks-01.txt"))
	ctx := context.Background()
	rg := fleetscope.Range{Start: 0, End: 1e9}
	for _, r := range []query.FlameRequest{{ProfileID: p.id}, {ProfileID: p.id, Range: &rg}} {
		g, err := p.q.FlameGraph(ctx, 0, r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := query.LinesGraph(g.Event, g.Lines())
		if err != nil {
			t.Fatal(err)
		}
		var want, got strings.Builder
		if err := g.WriteFolded(&want); err != nil {
			t.Fatal(err)
		}
		if err := back.WriteFolded(&got); err != nil {
			t.Fatal(err)
		}
		if got.String() != want.String() || back.Total != g.Total || back.Event != g.Event || want.Len() == 0 {
			t.Fatalf("range %v: rebuilt total %d, event %q, %d bytes of text; want %d, %q, %d bytes, the same", r.Range, back.Total, back.Event, got.Len(), g.Total, g.Event, want.Len())
		}
	}
	bad := &flame.Lines{Names: []string{"a"}, Shared: []uint32{0}, Added: []uint32{1}, Frame: []uint32{1}, Value: []uint64{1}}
	if _, err := query.LinesGraph("cpu", bad); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
		t.Fatalf("malformed lines: %v, want EINVALID", err)
	}
}

// functionsOf returns every function of the stacks with its self and total
// values in A and B, sorted by name, computed from the stacks directly: the
// reference Changes, which reads them off the merged tree, is checked
// against (the same as export's tests check Top with).
func functionsOf(stacks []export.DiffStack) []export.FunctionDiff {
	index := make(map[string]int)
	var fns []export.FunctionDiff
	var lastStack []int // per function: the last stack counted in its total
	for si, s := range stacks {
		if s.A == 0 && s.B == 0 {
			continue
		}
		for j, name := range s.Frames {
			i, ok := index[name]
			if !ok {
				i = len(fns)
				index[name] = i
				fns = append(fns, export.FunctionDiff{Name: name})
				lastStack = append(lastStack, -1)
			}
			if lastStack[i] != si {
				lastStack[i] = si
				fns[i].TotalA += s.A
				fns[i].TotalB += s.B
			}
			if j == len(s.Frames)-1 {
				fns[i].SelfA += s.A
				fns[i].SelfB += s.B
			}
		}
	}
	slices.SortFunc(fns, func(x, y export.FunctionDiff) int { return strings.Compare(x.Name, y.Name) })
	return fns
}
