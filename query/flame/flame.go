// Package flame builds flame graphs from selected samples. It counts
// samples per stack (Counts; values are sample counts by default, so a
// heatmap cell's count equals its range's flame graph total, or weighted by
// the sample period) and, over a Layout computed once per dictionary,
// renders the counts as:
//
//   - Flat, the tree in depth-first pre-order with children sorted by name,
//     that the API sends and the dashboard draws (Layout.Flat), and
//     DiffFlat, two sides of a comparison over one tree (Layout.FlatDiff);
//   - Lines, the folded lines stackcollapse-perf.pl writes, sorted
//     bytewise, each given by what it adds to the line before, that the API
//     sends or writes out as folded text (Layout.Lines, Lines.WriteFolded);
//   - the folded stacks as a map, the exports' stacks where a frame name
//     holds ';' (Folded);
//   - the nested JSON tree of d3-flame-graph (Flat.Tree, WriteJSON).
//
// It also merges the flame graphs of several profiles (Merge) and
// truncates a tree to a number of nodes, the rest under "other"
// (Flat.Truncate). It is pure: no I/O but the writer it is handed.
package flame

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/fleetscope/fleetscope"
)

// Counts is a value per stack id.
type Counts struct {
	byStack []uint64
	Total   uint64
}

// Add adds the samples of batch that sel keeps, weighted by period if asked.
func (c *Counts) Add(d *fleetscope.Dict, sel *fleetscope.Selection, batch []fleetscope.Sample, byPeriod bool) {
	for i := range batch {
		s := &batch[i]
		if !sel.Keep(d, s) {
			continue
		}
		v := uint64(1)
		if byPeriod {
			v = s.Period
		}
		c.AddStack(s.Stack, v)
	}
}

// CountsOf returns the counts of values, one per stack id (kept, not
// copied).
func CountsOf(values []uint64) *Counts {
	c := &Counts{byStack: values}
	for _, v := range values {
		c.Total += v
	}
	return c
}

// AddStack adds v to stack.
func (c *Counts) AddStack(stack fleetscope.StackID, v uint64) {
	if int(stack) >= len(c.byStack) {
		c.byStack = append(c.byStack, make([]uint64, int(stack)+1-len(c.byStack))...)
	}
	c.byStack[stack] += v
	c.Total += v
}

func (c *Counts) value(id fleetscope.StackID) uint64 {
	if int(id) < len(c.byStack) {
		return c.byStack[id]
	}
	return 0
}

// Each calls fn for every stack with a non-zero value, in id order.
func (c *Counts) Each(fn func(fleetscope.StackID, uint64)) {
	for id, v := range c.byStack {
		if v > 0 {
			fn(fleetscope.StackID(id), v)
		}
	}
}

// Annotate chooses stackcollapse-perf.pl's optional frame annotations.
type Annotate struct {
	Kernel bool // _[k] on kernel frames
	JIT    bool // _[j] on JIT frames
}

// Name is how folded output prints frame f.
func (a Annotate) Name(f fleetscope.Frame) string {
	switch {
	case a.Kernel && f.Kind&fleetscope.KindKernel != 0:
		return f.Name + "_[k]"
	case a.JIT && f.Kind&fleetscope.KindJIT != 0 && !strings.Contains(f.Name, "_[j]"):
		return f.Name + "_[j]"
	}
	return f.Name
}

// Folded returns the folded stacks, "frame;frame;... value", one per
// distinct text, sorted bytewise as stackcollapse-perf.pl sorts them.
func Folded(d *fleetscope.Dict, c *Counts, a Annotate) map[string]uint64 {
	out := make(map[string]uint64)
	var b strings.Builder
	c.Each(func(id fleetscope.StackID, v uint64) {
		b.Reset()
		for i, f := range d.StackFrames(id) {
			if i > 0 {
				b.WriteByte(';')
			}
			b.WriteString(a.Name(d.FrameAt(f)))
		}
		out[b.String()] += v
	})
	return out
}

// Node is a flame graph node in the JSON tree form used by d3-flame-graph
// and speedscope's importers: {"name","value","children"}.
type Node struct {
	Name     string  `json:"name"`
	Value    uint64  `json:"value"`
	Children []*Node `json:"children"`
}

// Flat is a flame graph tree in depth-first pre-order, children sorted by
// name: node i is named Names[Name[i]], has Value[i] and Depth[i]. Node 0 is
// the root, "all", at depth 0. Flat arrays are compact on the wire and quick
// to draw.
type Flat struct {
	Names []string
	Name  []uint32
	Value []uint64
	Depth []uint32
}

// Layout is what building a flame graph needs of a dictionary alone: the
// frame names ranked, and every stack in name order. Compute it once per
// dictionary and annotation choice (NewLayout) and reuse it for every range;
// it is safe for concurrent use.
type Layout struct {
	names []string // distinct names, sorted
	rank  []uint32 // by frame id
	order []fleetscope.StackID
	pos   []uint32 // by stack id: its place in order
	// The stacks in order as name ranks, back to back: order[i]'s are
	// seq[seqOff[i]:seqOff[i+1]], and its first lcp[i] are order[i-1]'s
	// (lcp[0] = 0). Two stacks of the order share the least lcp between
	// them, so a tree takes only each stack's new frames.
	seq, seqOff, lcp []uint32
	// The stacks in the order of their folded text (orderText): positions
	// in order, text[textOff[j]:textOff[j+1]] those of line j (one text),
	// whose first stack shares its first textLCP[j] names with line j-1's.
	text, textOff, textLCP []uint32
}

// NewLayout prepares d's stacks for flame graphs with annotations a.
func NewLayout(d *fleetscope.Dict, a Annotate) *Layout {
	l, _ := NewLayoutContext(context.Background(), d, a) // never done: never an error
	return l
}

// NewLayoutContext is NewLayout stopping with ctx.Err() and no layout
// once ctx is done: its loops (naming the frames, reading the stacks,
// comparing them in its sorts, laying them out) look at ctx every
// fleetscope.CheckEvery units of work. A caller that caches layouts keeps
// only the ones returned without an error.
func NewLayoutContext(ctx context.Context, d *fleetscope.Dict, a Annotate) (l *Layout, err error) {
	// The sorts' comparisons cannot return an error: a done context
	// unwinds them with a panic of its own, recovered here alone.
	st := &stopper{ctx: ctx}
	tick := st.tick
	defer func() {
		if r := recover(); r != nil {
			s, ok := r.(stopped)
			if !ok {
				panic(r)
			}
			l, err = nil, s.err
		}
	}()
	byFrame := make([]string, d.NumFrames())
	for f := range byFrame {
		tick(1)
		byFrame[f] = a.Name(d.FrameAt(fleetscope.FrameID(f)))
	}
	// The names sort in Go's ordered sort, much quicker than one with a
	// comparison function: one look before and one after (a sort of a
	// million names takes a few hundred milliseconds).
	st.look()
	l = &Layout{names: slices.Compact(slices.Sorted(slices.Values(byFrame))), rank: make([]uint32, len(byFrame))}
	st.look()
	for f, n := range byFrame {
		tick(1)
		i, _ := slices.BinarySearch(l.names, n)
		l.rank[f] = uint32(i)
	}
	// Sort the stacks by their name ranks; equal sequences (frames that
	// print the same) end up next to each other and merge.
	seqs := make([][]uint32, d.NumStacks())
	l.order = make([]fleetscope.StackID, d.NumStacks())
	total := 0
	for i := range seqs {
		fs := d.StackFrames(fleetscope.StackID(i))
		tick(1 + len(fs))
		seq := make([]uint32, len(fs))
		for j, f := range fs {
			seq[j] = l.rank[f]
		}
		seqs[i] = seq
		l.order[i] = fleetscope.StackID(i)
		total += len(seq)
	}
	slices.SortFunc(l.order, func(x, y fleetscope.StackID) int {
		st.tick(1)
		return slices.Compare(seqs[x], seqs[y])
	})
	l.seq = make([]uint32, 0, total)
	l.seqOff = make([]uint32, 1, len(l.order)+1)
	l.lcp = make([]uint32, len(l.order))
	l.pos = make([]uint32, len(l.order))
	var prev []uint32
	for i, id := range l.order {
		l.pos[id] = uint32(i)
		cur := seqs[id]
		tick(1 + len(cur))
		l.lcp[i] = commonPrefix(prev, cur)
		l.seq = append(l.seq, cur...)
		l.seqOff = append(l.seqOff, uint32(len(l.seq)))
		prev = cur
	}
	l.orderText(st)
	return l, nil
}

// stopped carries a done context's error out of a layout's sorts.
type stopped struct{ err error }

// stopper looks at a layout build's context every fleetscope.CheckEvery
// units of work (as fleetscope.Checker), and panics with stopped once it
// is done; tick is small enough to be inlined into the sorts' comparisons.
type stopper struct {
	ctx  context.Context
	work int
}

func (s *stopper) tick(n int) {
	if s.work += n; s.work >= fleetscope.CheckEvery {
		s.look()
	}
}

// look is kept out of tick, so tick inlines.
//
//go:noinline
func (s *stopper) look() {
	s.work = 0
	if err := s.ctx.Err(); err != nil {
		panic(stopped{err})
	}
}

// SizeBytes estimates the memory the layout holds (for caches).
func (l *Layout) SizeBytes() int64 {
	n := int64(len(l.rank))*4 + int64(len(l.order))*28 + int64(len(l.seq))*4
	for _, s := range l.names {
		n += int64(len(s)) + 16
	}
	return n
}

// Flat builds the flame graph of counts c over l's dictionary in one pass
// over the stacks in name order, each sharing the prefix it has with the
// one before: no per-node maps, and nodes come out in pre-order.
func (l *Layout) Flat(c *Counts) *Flat {
	t := l.walk(c, nil)
	value := make([]uint64, len(t.name))
	for k, id := range t.stacks {
		value[t.leaf[k]] += c.value(id)
	}
	sumUp(value, t.parent)
	return &Flat{Names: t.names, Name: t.name, Value: value, Depth: t.depth}
}

// sumUp adds each node's value to its parent's, leaves first (pre-order
// puts every node after its parent).
func sumUp(v []uint64, parent []int32) {
	for i := len(v) - 1; i > 0; i-- {
		v[parent[i]] += v[i]
	}
}

// DiffFlat is the flame graph of two sides of a comparison, as Flat with a
// value per side: node i has A[i] samples in the baseline and B[i] in the
// other side.
type DiffFlat struct {
	Names []string
	Name  []uint32
	A, B  []uint64
	Depth []uint32
}

// FlatDiff builds the merged flame graph of counts a and b over l's
// dictionary, as Flat does: a stack of either side is in it.
func (l *Layout) FlatDiff(a, b *Counts) *DiffFlat {
	t := l.walk(a, b)
	va, vb := make([]uint64, len(t.name)), make([]uint64, len(t.name))
	for k, id := range t.stacks {
		va[t.leaf[k]] += a.value(id)
		vb[t.leaf[k]] += b.value(id)
	}
	sumUp(va, t.parent)
	sumUp(vb, t.parent)
	return &DiffFlat{Names: t.names, Name: t.name, A: va, B: vb, Depth: t.depth}
}

// ShapeOfB returns the tree as a differential flame graph draws it, in
// B's shape: the nodes with samples in B (and the root), each with both
// values as they are. A node's A still counts every A sample under it,
// those of pruned subtrees included. Names not used any more are dropped.
func (t *DiffFlat) ShapeOfB() *DiffFlat {
	n := 0
	for i, b := range t.B {
		if b > 0 || i == 0 {
			n++
		}
	}
	out := &DiffFlat{Name: make([]uint32, 0, n), A: make([]uint64, 0, n), B: make([]uint64, 0, n), Depth: make([]uint32, 0, n)}
	index := make([]int32, len(t.Names)) // old name -> 1 + new
	for i, b := range t.B {
		if b == 0 && i > 0 {
			continue
		}
		nm := t.Name[i]
		if index[nm] == 0 {
			out.Names = append(out.Names, t.Names[nm])
			index[nm] = int32(len(out.Names))
		}
		out.Name = append(out.Name, uint32(index[nm]-1))
		out.A, out.B, out.Depth = append(out.A, t.A[i]), append(out.B, b), append(out.Depth, t.Depth[i])
	}
	return out
}

// skeleton is a tree without values: its nodes in pre-order (name, an
// index in names; depth; parent) and, for each stack it holds, the node
// the stack's path ends at (stacks that print the same share it).
type skeleton struct {
	names       []string
	name, depth []uint32
	parent      []int32
	stacks      []fleetscope.StackID
	leaf        []int32
}

// walk builds the skeleton of the stacks with a value in a or in b (nil:
// none), visiting them in name order and adding only the frames each does
// not share with the one before.
func (l *Layout) walk(a, b *Counts) *skeleton {
	kept := l.kept(a, b)
	n := 1 // first the sizes, so that nothing grows
	for _, k := range kept {
		n += len(l.stack(k.pos)) - int(k.shared)
	}
	t := &skeleton{name: append(make([]uint32, 0, n), 0), depth: append(make([]uint32, 0, n), 0),
		parent: append(make([]int32, 0, n), 0), stacks: make([]fleetscope.StackID, 0, len(kept)), leaf: make([]int32, 0, len(kept))}
	used := l.usedNames("all")
	path := []int32{0}
	for _, k := range kept {
		cur := l.stack(k.pos)
		path = path[:k.shared+1]
		for j, r := range cur[k.shared:] {
			t.name = append(t.name, used.of(r))
			t.depth = append(t.depth, k.shared+uint32(j)+1)
			t.parent = append(t.parent, path[len(path)-1])
			path = append(path, int32(len(t.parent)-1))
		}
		t.stacks = append(t.stacks, l.order[k.pos])
		t.leaf = append(t.leaf, path[len(path)-1])
	}
	t.names = used.names
	return t
}

// usedNames numbers the layout's names that a tree or lines use, in the
// order they are first met, after the names given to start with.
type usedNames struct {
	all   []string // the layout's, by rank
	names []string
	index []uint32 // rank -> 1 + index in names
}

func (l *Layout) usedNames(first ...string) *usedNames {
	return &usedNames{all: l.names, names: first, index: make([]uint32, len(l.names))}
}

// of is the number of rank r's name, which it adds if it is new.
func (u *usedNames) of(r uint32) uint32 {
	if u.index[r] == 0 {
		u.names = append(u.names, u.all[r])
		u.index[r] = uint32(len(u.names))
	}
	return u.index[r] - 1
}

// keptStack is a stack of a tree: its place in the layout's order and how
// many frames it shares with the tree's stack before it.
type keptStack struct{ pos, shared uint32 }

// kept lists the stacks with a value in a or in b (nil: none) in the
// layout's order. A few (a short range's) are found from the counts,
// sorted, and each compared with the one before; more, by walking the
// whole order, where two stacks share the least lcp between them.
func (l *Layout) kept(a, b *Counts) []keptStack {
	limit := len(l.order) / 16
	var pos []uint32
	for _, c := range []*Counts{a, b} {
		if c == nil {
			continue
		}
		for id, v := range c.byStack {
			if v == 0 || id >= len(l.pos) {
				continue
			}
			if len(pos) == limit {
				return l.keptAll(a, b)
			}
			pos = append(pos, l.pos[id])
		}
	}
	slices.Sort(pos)
	pos = slices.Compact(pos) // a stack of both sides
	out := make([]keptStack, len(pos))
	var prev []uint32
	for i, p := range pos {
		cur := l.stack(p)
		out[i] = keptStack{p, commonPrefix(prev, cur)}
		prev = cur
	}
	return out
}

// commonPrefix is how many first names two stacks share.
func commonPrefix(a, b []uint32) uint32 {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return uint32(n)
}

func (l *Layout) keptAll(a, b *Counts) []keptStack {
	var out []keptStack
	shared := uint32(0) // what the stack shares with the last one kept
	for i, id := range l.order {
		shared = min(shared, l.lcp[i])
		if a.value(id) != 0 || b != nil && b.value(id) != 0 {
			out = append(out, keptStack{uint32(i), shared})
			shared = uint32(len(l.stack(uint32(i))))
		}
	}
	return out
}

// Check reports whether f is a well-formed pre-order tree.
func (f *Flat) Check() error {
	n := len(f.Name)
	if n == 0 || len(f.Value) != n || len(f.Depth) != n || f.Depth[0] != 0 {
		return errors.New("arrays of different lengths, or no root")
	}
	for i := 1; i < n; i++ {
		if f.Depth[i] < 1 || f.Depth[i] > f.Depth[i-1]+1 || int(f.Name[i]) >= len(f.Names) {
			return fmt.Errorf("node %d: bad depth or name", i)
		}
	}
	return nil
}

// Tree nests a flat tree: one slab of Nodes, children cut from one array.
func (f *Flat) Tree() *Node {
	n := len(f.Name)
	out := make([]Node, n)
	kids := make([]int, n)
	parent := make([]int, n)
	path := []int{}
	for i := range n {
		dep := int(f.Depth[i])
		path = append(path[:dep], i)
		if i > 0 {
			parent[i] = path[dep-1]
			kids[parent[i]]++
		}
	}
	slab := make([]*Node, n)
	off := 0
	for i := range n {
		out[i].Name = f.Names[f.Name[i]]
		out[i].Value = f.Value[i]
		out[i].Children = slab[off : off : off+kids[i]]
		off += kids[i]
		if i > 0 {
			p := &out[parent[i]]
			p.Children = append(p.Children, &out[i])
		}
	}
	return &out[0]
}

// WriteJSON writes the tree as JSON.
func WriteJSON(w io.Writer, root *Node) error {
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	if err := enc.Encode(root); err != nil {
		return err
	}
	return bw.Flush()
}

// NameHoldsSemicolon reports whether a frame's name holds ';', which folded
// lines read as more frames: such a tree's stacks are not its nodes' paths.
func (f *Flat) NameHoldsSemicolon() bool {
	for _, name := range f.Names {
		if strings.IndexByte(name, ';') >= 0 {
			return true
		}
	}
	return false
}
