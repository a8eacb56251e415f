package query

import (
	"context"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/export"
	"github.com/fleetscope/fleetscope/query/flame"
)

// Stacks returns the flame graph's stacks as the export formats take them
// (frames as folded output prints them).
//
// They are read off the merged tree, whose children are in name order, so
// in pre-order its stacks come sorted as the exports want them: no folded
// text built, hashed, split and sorted (half of an export's time for the
// benchmark profile). A tree whose names hold ';' is read from its folded
// lines instead, split at every ';' as flamegraph.pl reads them.
func (g *FlameGraph) Stacks() []export.Stack {
	if stacks, ok := treeStacks(g.Flat()); ok {
		return stacks
	}
	return g.foldedStacks()
}

// foldedStacks is Stacks read from the folded lines.
func (g *FlameGraph) foldedStacks() []export.Stack {
	folded := flame.Folded(g.Dict, g.Counts, g.Annotate)
	out := make([]export.Stack, 0, len(folded))
	for line, v := range folded {
		out = append(out, export.Stack{Frames: strings.Split(line, ";"), Value: v})
	}
	slices.SortFunc(out, func(a, b export.Stack) int { return slices.Compare(a.Frames, b.Frames) })
	return out
}

// MaxExportNodes bounds the answers built whole in memory before they are
// sent: an export (pprof, speedscope, SVG), folded text, or a comparison,
// of a flame graph whose merged tree has more nodes is refused with
// ETOOLARGE (CheckSize) before it is built. They take about 700 bytes a
// node (a 2.2-million-node profile's pprof took 1.5 GB), so this is about
// 512 MiB; the benchmark profile has 141,000 nodes.
const MaxExportNodes = 750_000

// CheckSize refuses (ETOOLARGE) a flame graph answer, what, over a tree
// of nodes nodes: over MaxExportNodes.
func CheckSize(what string, nodes int) error {
	if nodes <= MaxExportNodes {
		return nil
	}
	return fleetscope.Errorf(fleetscope.ETOOLARGE, "%s of %d flame graph nodes: at most %d (about %d MiB in memory); narrow the range or add a function filter",
		what, nodes, MaxExportNodes, MaxExportNodes*700>>20)
}

// Export writes the flame graph in an export format (export.FormatSVG,
// FormatPprof, FormatSpeedscope); where names the selection (its range or
// window) in the title, after the event and the graph's Source. A graph of
// timed samples goes to speedscope as its timeline: each sample its own
// entry, in time order (export.WriteSpeedscopeTimeline). Any other export
// of a graph over MaxExportNodes is refused (ETOOLARGE) before anything is
// built; ctx.Err() once ctx is done.
func (g *FlameGraph) Export(ctx context.Context, w io.Writer, format, where string, byPeriod bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	title := g.Title(where)
	if format == export.FormatSpeedscope && g.timeline != nil {
		return g.timeline(w, title)
	}
	o := export.Options{Subtitle: title, SampleType: "samples", SampleUnit: "count"}
	if byPeriod {
		o.SampleType = fleetscope.EventBase(g.Event)
		if o.SampleType == "cpu-clock" || o.SampleType == "task-clock" {
			o.SampleUnit = "nanoseconds"
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	flat := g.Flat()
	if err := CheckSize("an export", len(flat.Name)); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	stacks, ok := treeStacks(flat)
	if !ok {
		stacks = g.foldedStacks()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return export.WriteContext(ctx, w, format, stacks, o)
}

// CheckSize refuses (ETOOLARGE) an answer of the whole graph built in
// memory (an export, folded text) over MaxExportNodes.
func (g *FlameGraph) CheckSize(what string) error { return CheckSize(what, len(g.Flat().Name)) }

// Title names the graph in exports: its event, Source and where (a range
// or window; "whole profile" for a profile's graph without one), as
// "cpu-clock, app web, host h1, profile 01J…, [2.400000, 2.480000) s".
func (g *FlameGraph) Title(where string) string {
	if where == "" && g.Source != "" && !strings.HasPrefix(g.Source, "fleet") {
		where = "whole profile"
	}
	var parts []string
	for _, p := range []string{g.Event, g.Source, where} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", ")
}

// DiffSide is one side of a comparison: a stored profile's range (Profile)
// or a fleet selection (Fleet).
type DiffSide struct {
	Profile *FlameRequest
	Fleet   *fleetscope.FleetSelection
}

// Diff is two flame graphs compared stack by stack, over one dictionary.
type Diff struct {
	EventA, EventB string
	TotalA, TotalB uint64
	Dict           *fleetscope.Dict
	A, B           *flame.Counts
	Annotate       flame.Annotate
	layout         *flame.Layout
}

// Diff compares B with A: each side's flame graph exactly as the flame
// graph queries answer it, merged stack by stack.
func (s *Service) Diff(ctx context.Context, tenant int64, a, b DiffSide) (*Diff, error) {
	ga, err := s.side(ctx, tenant, a)
	if err != nil {
		return nil, err
	}
	gb, err := s.side(ctx, tenant, b)
	if err != nil {
		return nil, err
	}
	return diffOf(ctx, ga, gb)
}

// DiffOf compares two flame graphs stack by stack. Two ranges of one
// profile share its dictionary and layout; otherwise both sides' stacks
// are put in one new dictionary, by frame.
func DiffOf(a, b *FlameGraph) *Diff {
	d, _ := diffOf(context.Background(), a, b)
	return d
}

// diffOf is DiffOf, stopping with ctx.Err() once ctx is done.
func diffOf(ctx context.Context, a, b *FlameGraph) (*Diff, error) {
	d := &Diff{EventA: a.Event, EventB: b.Event, TotalA: a.Total, TotalB: b.Total, Annotate: a.Annotate}
	if a.Dict == b.Dict && a.Annotate == b.Annotate {
		d.Dict, d.A, d.B, d.layout = a.Dict, a.Counts, b.Counts, a.layout
		return d, nil
	}
	d.Dict, d.A, d.B = fleetscope.NewDict(), &flame.Counts{}, &flame.Counts{}
	var frames []fleetscope.FrameID
	check := fleetscope.NewChecker(ctx)
	var err error
	copyIn := func(g *FlameGraph, into *flame.Counts) {
		g.Counts.Each(func(id fleetscope.StackID, v uint64) {
			if err != nil {
				return
			}
			fs := g.Dict.StackFrames(id)
			if err = check.Tick(len(fs)); err != nil {
				return
			}
			frames = frames[:0]
			for _, f := range fs {
				frames = append(frames, d.Dict.Frame(g.Dict.FrameAt(f)))
			}
			into.AddStack(d.Dict.Stack(frames), v)
		})
	}
	copyIn(a, d.A)
	copyIn(b, d.B)
	if err != nil {
		return nil, err
	}
	if d.layout, err = flame.NewLayoutContext(ctx, d.Dict, d.Annotate); err != nil {
		return nil, err
	}
	return d, nil
}

// Stacks returns the compared stacks for the export formats (frames as
// folded output prints them), sorted by frames.
//
// They are read off the merged tree of both sides (as FlameGraph.Stacks).
func (d *Diff) Stacks() []export.DiffStack {
	if stacks, ok := treeDiffStacks(d.layout.FlatDiff(d.A, d.B)); ok {
		return stacks
	}
	return d.dictStacks()
}

// dictStacks is Stacks read from the dictionary, stack by stack.
func (d *Diff) dictStacks() []export.DiffStack {
	var out []export.DiffStack
	add := func(c *flame.Counts, side int) {
		c.Each(func(id fleetscope.StackID, v uint64) {
			s := export.DiffStack{Frames: d.frames(id)}
			if side == 0 {
				s.A = v
			} else {
				s.B = v
			}
			out = append(out, s)
		})
	}
	add(d.A, 0)
	add(d.B, 1)
	return export.MergeDiff(out)
}

func (d *Diff) frames(id fleetscope.StackID) []string {
	fs := d.Dict.StackFrames(id)
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = d.Annotate.Name(d.Dict.FrameAt(f))
	}
	return out
}

// Tree is the merged tree of both sides, in pre-order, children sorted by
// name; with normalize, A is scaled to B's total stack by stack as
// difffolded.pl -n scales it (export.Normalize).
func (d *Diff) Tree(normalize bool) *flame.DiffFlat {
	t := d.layout.FlatDiff(d.A, d.B)
	if normalize && d.TotalA != d.TotalB && d.TotalA != 0 {
		normalizeTree(t, d.TotalA, d.TotalB)
	}
	return t
}

// normalizeTree scales each node's own A (the samples of the stack that
// ends there) to floor(A × totalB / totalA), then sums the subtrees again.
func normalizeTree(t *flame.DiffFlat, totalA, totalB uint64) {
	n := len(t.Name)
	parent := make([]int, n)
	stack := []int{0}
	self := slices.Clone(t.A)
	for i := 1; i < n; i++ {
		stack = stack[:t.Depth[i]]
		parent[i] = stack[len(stack)-1]
		self[parent[i]] -= t.A[i]
		stack = append(stack, i)
	}
	for i := range self {
		t.A[i] = export.Scale(self[i], totalB, totalA)
	}
	for i := n - 1; i > 0; i-- {
		t.A[parent[i]] += t.A[i]
	}
}

// Changes are the functions that changed most (top of each), by self and
// by total samples, read off the merged tree (A normalized or not).
func Changes(t *flame.DiffFlat, top int) (bySelf, byTotal []export.FunctionDiff) {
	fns := make([]export.FunctionDiff, len(t.Names))
	for i, name := range t.Names {
		fns[i].Name = name
	}
	n := len(t.Name)
	onPath := make([]int, len(t.Names)) // how often each name is on the current path
	path := []int{0}
	for i := 1; i <= n; i++ {
		depth := 0
		if i < n {
			depth = int(t.Depth[i])
		}
		for len(path) > max(depth, 1) { // leave the nodes i is not under
			j := path[len(path)-1]
			path = path[:len(path)-1]
			onPath[t.Name[j]]--
		}
		if i == n {
			break
		}
		f := &fns[t.Name[i]]
		if onPath[t.Name[i]] == 0 { // a recursion counts once
			f.TotalA += t.A[i]
			f.TotalB += t.B[i]
		}
		f.SelfA += t.A[i]
		f.SelfB += t.B[i]
		if p := path[len(path)-1]; p > 0 {
			fp := &fns[t.Name[p]]
			fp.SelfA -= t.A[i]
			fp.SelfB -= t.B[i]
		}
		onPath[t.Name[i]]++
		path = append(path, i)
	}
	fns = fns[1:] // not "all"
	return export.Top(fns, export.BySelf, top), export.Top(fns, export.ByTotal, top)
}

// side answers one side's flame graph.
func (s *Service) side(ctx context.Context, tenant int64, d DiffSide) (*FlameGraph, error) {
	switch {
	case d.Profile != nil && d.Fleet == nil:
		return s.FlameGraph(ctx, tenant, *d.Profile)
	case d.Fleet != nil && d.Profile == nil:
		g, err := s.FleetFlameGraph(ctx, tenant, *d.Fleet, FleetFlameOptions{})
		if err != nil {
			return nil, err
		}
		return g.FlameGraph, nil
	}
	return nil, fleetscope.Errorf(fleetscope.EINVALID, "each side of a comparison is a profile or a fleet selection")
}

// LinesGraph builds a flame graph from folded lines (flame.Lines, as the
// server answers FLAME_GRAPH_FORMAT_FOLDED_LINES): a flame graph another
// server answered, to compare or export here. Lines Check refuses are
// EINVALID.
func LinesGraph(event string, ls *flame.Lines) (*FlameGraph, error) {
	if err := ls.Check(); err != nil {
		return nil, fleetscope.Wrap(err, fleetscope.EINVALID, "malformed folded lines")
	}
	d := fleetscope.NewDict()
	counts := &flame.Counts{}
	ids := make([]fleetscope.FrameID, len(ls.Names))
	for i, name := range ls.Names {
		ids[i] = d.Frame(fleetscope.Frame{Name: name})
	}
	var stack []fleetscope.FrameID
	frames := ls.Frame
	for i, v := range ls.Value {
		stack = stack[:ls.Shared[i]]
		for _, f := range frames[:ls.Added[i]] {
			stack = append(stack, ids[f])
		}
		frames = frames[ls.Added[i]:]
		counts.AddStack(d.Stack(stack), v)
	}
	g := &FlameGraph{Event: event, Total: counts.Total, Dict: d, Counts: counts}
	g.layout = flame.NewLayout(d, flame.Annotate{})
	return g, nil
}

// RangeTitle names a profile range in exports: "[S, E)" in seconds from
// the profile's start second ("" for the whole profile).
func RangeTitle(rg *fleetscope.Range) string {
	if rg == nil {
		return ""
	}
	bound := func(ns int64, open string) string {
		if ns == fleetscope.All.Start || ns == fleetscope.All.End {
			return open
		}
		return fleetscope.FormatSeconds(ns)
	}
	return "[" + bound(rg.Start, "start") + ", " + bound(rg.End, "end") + ") s"
}

// WindowTitle names a fleet selection in exports.
func WindowTitle(sel fleetscope.FleetSelection) string {
	f := func(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }
	return "app " + sel.App + " [" + f(sel.From) + ", " + f(sel.To) + ")"
}
