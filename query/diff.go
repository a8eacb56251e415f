package query

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/export"
	"github.com/fleetscope/fleetscope/query/flame"
)

// Stacks returns the flame graph's stacks as the export formats take them
// (frames as folded output prints them).
func (g *FlameGraph) Stacks() []export.Stack {
	folded := flame.Folded(g.Dict, g.Counts, g.Annotate)
	out := make([]export.Stack, 0, len(folded))
	for line, v := range folded {
		out = append(out, export.Stack{Frames: strings.Split(line, ";"), Value: v})
	}
	slices.SortFunc(out, func(a, b export.Stack) int { return slices.Compare(a.Frames, b.Frames) })
	return out
}

// Export writes the flame graph in an export format (export.FormatSVG,
// FormatPprof, FormatSpeedscope); where names the selection in the
// subtitle.
func (g *FlameGraph) Export(w io.Writer, format, where string, byPeriod bool) error {
	o := export.Options{Subtitle: strings.TrimSpace(g.Event + " " + where), SampleType: "samples", SampleUnit: "count"}
	if byPeriod {
		o.SampleType = fleetscope.EventBase(g.Event)
		if o.SampleType == "cpu-clock" || o.SampleType == "task-clock" {
			o.SampleUnit = "nanoseconds"
		}
	}
	return export.Write(w, format, g.Stacks(), o)
}

// DiffSide is one side of a comparison: a stored profile's range (Profile)
// or a fleet selection (Fleet).
type DiffSide struct {
	Profile *FlameRequest
	Fleet   *fleetscope.FleetSelection
}

// Diff is two flame graphs compared stack by stack.
type Diff struct {
	EventA, EventB string
	TotalA, TotalB uint64
	Stacks         []export.DiffStack // sorted by frames; a stack of either side once
}

// Diff compares B with A: each side's flame graph exactly as the flame
// graph queries answer it, merged by folded stack.
func (s *Service) Diff(ctx context.Context, tenant int64, a, b DiffSide) (*Diff, error) {
	ga, err := s.side(ctx, tenant, a)
	if err != nil {
		return nil, err
	}
	gb, err := s.side(ctx, tenant, b)
	if err != nil {
		return nil, err
	}
	return DiffOf(ga, gb), nil
}

// DiffOf compares two flame graphs stack by stack.
func DiffOf(a, b *FlameGraph) *Diff {
	d := &Diff{EventA: a.Event, EventB: b.Event, TotalA: a.Total, TotalB: b.Total}
	merged := map[string]*export.DiffStack{}
	add := func(g *FlameGraph, side int) {
		for line, v := range flame.Folded(g.Dict, g.Counts, g.Annotate) {
			ds := merged[line]
			if ds == nil {
				ds = &export.DiffStack{Frames: strings.Split(line, ";")}
				merged[line] = ds
			}
			if side == 0 {
				ds.A += v
			} else {
				ds.B += v
			}
		}
	}
	add(a, 0)
	add(b, 1)
	d.Stacks = make([]export.DiffStack, 0, len(merged))
	for _, ds := range merged {
		d.Stacks = append(d.Stacks, *ds)
	}
	slices.SortFunc(d.Stacks, func(x, y export.DiffStack) int { return slices.Compare(x.Frames, y.Frames) })
	return d
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

// DiffTree is the merged tree of both sides in pre-order, children sorted
// by name (as flame.Flat), each node with its value in A and in B.
type DiffTree struct {
	Names          []string
	Name           []uint32
	ValueA, ValueB []uint64
	Depth          []uint32
}

// Tree merges the stacks (sorted by frames, as Diff gives them) into a
// tree rooted at "all".
func (d *Diff) Tree() *DiffTree {
	t := &DiffTree{Names: []string{"all"}, Name: []uint32{0}, ValueA: []uint64{0}, ValueB: []uint64{0}, Depth: []uint32{0}}
	names := map[string]uint32{"all": 0}
	path := []int{0} // node index per depth on the current path
	var prev []string
	for _, s := range d.Stacks {
		common := 0
		for common < len(prev) && common < len(s.Frames) && prev[common] == s.Frames[common] {
			common++
		}
		path = path[:common+1]
		for _, f := range s.Frames[common:] {
			id, ok := names[f]
			if !ok {
				id = uint32(len(t.Names))
				names[f] = id
				t.Names = append(t.Names, f)
			}
			path = append(path, len(t.Name))
			t.Name = append(t.Name, id)
			t.ValueA, t.ValueB = append(t.ValueA, 0), append(t.ValueB, 0)
			t.Depth = append(t.Depth, uint32(len(path)-1))
		}
		for _, n := range path {
			t.ValueA[n] += s.A
			t.ValueB[n] += s.B
		}
		prev = s.Frames
	}
	return t
}

// Changes are the functions that changed most, by self and by total.
func (d *Diff) Changes(top int) (bySelf, byTotal []export.FunctionDiff) {
	fns := export.Functions(d.Stacks)
	return export.Top(fns, export.BySelf, top), export.Top(fns, export.ByTotal, top)
}

// Normalized returns the stacks with A scaled to B's total, as
// difffolded.pl -n does (export.Normalize).
func (d *Diff) Normalized() *Diff {
	n := &Diff{EventA: d.EventA, EventB: d.EventB, TotalB: d.TotalB, Stacks: export.Normalize(d.Stacks)}
	for _, s := range n.Stacks {
		n.TotalA += s.A
	}
	slices.SortFunc(n.Stacks, func(x, y export.DiffStack) int { return slices.Compare(x.Frames, y.Frames) })
	return n
}

// FoldedGraph builds a flame graph from folded text ("frame;...;leaf
// count" lines, as WriteFolded writes them): a flame graph another server
// or tool answered, to compare or export here.
func FoldedGraph(event string, folded []byte) (*FlameGraph, error) {
	d := fleetscope.NewDict()
	counts := &flame.Counts{}
	var frames []fleetscope.FrameID
	for line := range bytes.Lines(folded) {
		line = bytes.TrimRight(line, "\n")
		if len(line) == 0 {
			continue
		}
		i := bytes.LastIndexByte(line, ' ')
		v, err := strconv.ParseUint(string(line[i+1:]), 10, 64)
		if i <= 0 || err != nil {
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "folded line %.80q: want \"frame;...;leaf count\"", line)
		}
		frames = frames[:0]
		for _, name := range strings.Split(string(line[:i]), ";") {
			frames = append(frames, d.Frame(fleetscope.Frame{Name: name}))
		}
		counts.AddStack(d.Stack(frames), v)
	}
	g := &FlameGraph{Event: event, Total: counts.Total, Dict: d, Counts: counts}
	g.layout = func() *flame.Layout { return flame.NewLayout(d, flame.Annotate{}) }
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
	return "[" + bound(rg.Start, "start") + ", " + bound(rg.End, "end") + ")"
}

// WindowTitle names a fleet selection in exports.
func WindowTitle(sel fleetscope.FleetSelection) string {
	f := func(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }
	return "app " + sel.App + " [" + f(sel.From) + ", " + f(sel.To) + ")"
}
