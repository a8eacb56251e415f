// Package flame builds flame graphs from selected samples: it counts samples
// per stack and renders the result as folded text (sorted like
// stackcollapse-perf.pl's output) or as a JSON tree. Values are sample counts
// by default, so a heatmap cell's count equals its range's flame graph total;
// they can be weighted by the sample period instead.
package flame

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
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

// WriteFolded writes Folded's lines to w.
func WriteFolded(w io.Writer, d *fleetscope.Dict, c *Counts, a Annotate) error {
	folded := Folded(d, c, a)
	keys := make([]string, 0, len(folded))
	for k := range folded {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	bw := bufio.NewWriter(w)
	for _, k := range keys {
		bw.WriteString(k)
		bw.WriteByte(' ')
		bw.WriteString(strconv.FormatUint(folded[k], 10))
		bw.WriteByte('\n')
	}
	return bw.Flush()
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
	byFrame := make([]string, d.NumFrames())
	for f := range byFrame {
		byFrame[f] = a.Name(d.FrameAt(fleetscope.FrameID(f)))
	}
	l := &Layout{names: slices.Compact(slices.Sorted(slices.Values(byFrame))), rank: make([]uint32, len(byFrame))}
	for f, n := range byFrame {
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
		seq := make([]uint32, len(fs))
		for j, f := range fs {
			seq[j] = l.rank[f]
		}
		seqs[i] = seq
		l.order[i] = fleetscope.StackID(i)
		total += len(seq)
	}
	slices.SortFunc(l.order, func(x, y fleetscope.StackID) int { return slices.Compare(seqs[x], seqs[y]) })
	l.seq = make([]uint32, 0, total)
	l.seqOff = make([]uint32, 1, len(l.order)+1)
	l.lcp = make([]uint32, len(l.order))
	l.pos = make([]uint32, len(l.order))
	var prev []uint32
	for i, id := range l.order {
		l.pos[id] = uint32(i)
		cur := seqs[id]
		l.lcp[i] = commonPrefix(prev, cur)
		l.seq = append(l.seq, cur...)
		l.seqOff = append(l.seqOff, uint32(len(l.seq)))
		prev = cur
	}
	l.orderText()
	return l
}

// SizeBytes estimates the memory the layout holds (for caches).
func (l *Layout) SizeBytes() int64 {
	n := int64(len(l.rank))*4 + int64(len(l.order))*28 + int64(len(l.seq))*4
	for _, s := range l.names {
		n += int64(len(s)) + 16
	}
	return n
}

// FlatTree merges the stacks into a tree rooted at "all", with children
// sorted by name; frames that print the same (with or without annotations)
// merge.
func FlatTree(d *fleetscope.Dict, c *Counts, a Annotate) *Flat {
	return NewLayout(d, a).Flat(c)
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
		n += int(l.seqOff[k.pos+1] - l.seqOff[k.pos] - k.shared)
	}
	t := &skeleton{names: []string{"all"}, name: append(make([]uint32, 0, n), 0), depth: append(make([]uint32, 0, n), 0),
		parent: append(make([]int32, 0, n), 0), stacks: make([]fleetscope.StackID, 0, len(kept)), leaf: make([]int32, 0, len(kept))}
	used := make([]int32, len(l.names)) // rank -> 1 + index in names
	path := []int32{0}
	for _, k := range kept {
		cur := l.seq[l.seqOff[k.pos]:l.seqOff[k.pos+1]]
		path = path[:k.shared+1]
		for j, r := range cur[k.shared:] {
			if used[r] == 0 {
				t.names = append(t.names, l.names[r])
				used[r] = int32(len(t.names))
			}
			t.name = append(t.name, uint32(used[r]-1))
			t.depth = append(t.depth, k.shared+uint32(j)+1)
			t.parent = append(t.parent, path[len(path)-1])
			path = append(path, int32(len(t.parent)-1))
		}
		t.stacks = append(t.stacks, l.order[k.pos])
		t.leaf = append(t.leaf, path[len(path)-1])
	}
	return t
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
		cur := l.seq[l.seqOff[p]:l.seqOff[p+1]]
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
			shared = l.seqOff[i+1] - l.seqOff[i]
		}
	}
	return out
}

// Tree merges the stacks into a nested tree rooted at "all" (see FlatTree).
func Tree(d *fleetscope.Dict, c *Counts, a Annotate) *Node {
	return FlatTree(d, c, a).Tree()
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

// WriteFolded writes the tree as folded stacks, "frame;frame;... value",
// one line per stack text (a node that ends stacks contributes its value
// less its children's; nodes that print the same text add up), sorted
// bytewise: the same lines as WriteFolded of the counts it was built from.
// Pre-order with children in name order is that order but where a name
// begins a later sibling's and the sibling goes on with a byte below ';'
// ("f" and "f.func1": "f;..." sorts after "f.func1"): there the children's
// lines are ordered by key (a child's own line by its name, the lines
// below it by its name and ';'). A name holding ';' breaks that (its lines
// can interleave with another's), and so do siblings out of name order (a
// tree from elsewhere): such a tree is written by sorting its lines. A
// tree Check refuses is an error, before anything is written.
func (f *Flat) WriteFolded(w io.Writer) error {
	n := len(f.Name)
	if n == 0 {
		return nil
	}
	if err := f.Check(); err != nil {
		return fmt.Errorf("flame: malformed tree: %w", err)
	}
	if f.NameHoldsSemicolon() {
		return f.writeFoldedSorted(w)
	}
	name := func(i int32) string { return f.Names[f.Name[i]] }
	// Where each node's subtree ends (end[i]: the next node not under it),
	// whether its children need ordering by key (the top bit of end), and
	// the longest line's stack text.
	end := make([]int32, n)
	last := make([]int32, 0, 64) // last[d]: the latest node at depth d
	plen := make([]int, 1, 64)   // plen[d]: the stack text's length to depth d
	longest, maxDepth := 0, 0
	for i := range int32(n) {
		dep := int(f.Depth[i])
		for _, j := range last[dep:] { // their subtrees end here
			end[j] |= i
		}
		if dep > 0 {
			if len(last) > dep { // a sibling before i
				a, b := name(last[dep]), name(i)
				if a >= b {
					return f.writeFoldedSorted(w) // not in name order: not a tree this package built
				}
				if len(a) < len(b) && b[:len(a)] == a && b[len(a)] < ';' {
					end[last[dep-1]] |= reorderBit
				}
			}
			l := plen[dep-1] + len(name(i))
			if dep > 1 {
				l++ // the ';'
			}
			plen = append(plen[:dep], l)
			longest = max(longest, l)
		}
		last = append(last[:dep], i)
		maxDepth = max(maxDepth, dep)
	}
	for _, j := range last {
		end[j] |= int32(n)
	}
	fw := &foldedWriter{f: f, end: end, prefix: make([]byte, longest), ends: make([]int, maxDepth+1),
		out: make([]byte, 0, max(256<<10, 2*(longest+24))), w: w}
	fw.below(0)
	return fw.flush()
}

// FoldedSize is the number of bytes WriteFolded writes, for a writer sized
// once; at most that where a name holds ';' (stacks that read the same then
// share a line): the server's folded answer for the
// benchmark profile is 15 MB, which a buffer grown by doubling copies over
// again and again, each copy a long stretch the garbage collector must
// wait out to stop the goroutine. A malformed tree is 0.
func (f *Flat) FoldedSize() int {
	open := make([]int32, 0, 64)   // open[d]: the node open at depth d
	below := make([]uint64, 0, 64) // below[d]: its children's values so far
	plen := make([]int, 0, 64)     // plen[d]: its stack text's length
	size := 0
	closeTo := func(dep int) {
		for d := len(open) - 1; d >= max(dep, 1); d-- {
			if self := f.Value[open[d]] - below[d]; self != 0 { // as foldedWriter.self reckons it
				size += plen[d] + 2 + len(strconv.AppendUint(make([]byte, 0, 20), self, 10))
			}
		}
		open, below, plen = open[:dep], below[:dep], plen[:dep]
	}
	for i := range int32(len(f.Name)) {
		dep := int(f.Depth[i])
		if dep > len(open) {
			return 0
		}
		closeTo(dep)
		l := 0
		if dep > 0 {
			l = plen[dep-1] + len(f.Names[f.Name[i]])
			if dep > 1 {
				l++ // the ';'
			}
			below[dep-1] += f.Value[i]
		}
		open, below, plen = append(open, i), append(below, 0), append(plen, l)
	}
	closeTo(0)
	return size
}

// reorderBit, in foldedWriter.end, marks a node whose children's lines
// need ordering by key.
const reorderBit = -1 << 31

// foldedWriter writes a tree's folded lines (Flat.WriteFolded).
type foldedWriter struct {
	f      *Flat
	end    []int32 // where each node's subtree ends, | reorderBit
	prefix []byte  // the current stack text, room for the longest
	ends   []int   // the prefix's length at each depth
	out    []byte  // lines not yet written
	w      io.Writer
	err    error
}

// foldedItem is a child's own line (below = false) or the lines below it.
type foldedItem struct {
	node  int32
	below bool
}

func (fw *foldedWriter) name(i int32) string { return fw.f.Names[fw.f.Name[i]] }

// next is where node i's subtree ends; reorder is whether its children
// need ordering by key.
func (fw *foldedWriter) next(i int32) int32   { return fw.end[i] &^ reorderBit }
func (fw *foldedWriter) reorder(i int32) bool { return fw.end[i] < 0 }

// self is node i's own value: its value less its children's.
func (fw *foldedWriter) self(i int32) uint64 {
	v := fw.f.Value[i]
	for c, e := i+1, fw.next(i); c < e; c = fw.next(c) {
		v -= fw.f.Value[c]
	}
	return v
}

// enter makes the prefix node i's lines start with.
func (fw *foldedWriter) enter(i int32) {
	dep := int(fw.f.Depth[i])
	at := 0
	if dep > 1 {
		at = fw.ends[dep-1]
		fw.prefix[at] = ';'
		at++
	}
	fw.ends[dep] = at + copy(fw.prefix[at:], fw.name(i))
}

// line writes node i's line, if it has its own value.
func (fw *foldedWriter) line(i int32) {
	v := fw.self(i)
	if v == 0 {
		return
	}
	p := fw.prefix[:fw.ends[fw.f.Depth[i]]]
	if len(fw.out)+len(p)+22 > cap(fw.out) {
		fw.flush()
	}
	fw.out = append(strconv.AppendUint(append(append(fw.out, p...), ' '), v, 10), '\n')
}

// flush writes the lines kept so far; after a write error it only keeps
// the error.
func (fw *foldedWriter) flush() error {
	if fw.err == nil && len(fw.out) > 0 {
		_, fw.err = fw.w.Write(fw.out)
	}
	fw.out = fw.out[:0]
	return fw.err
}

// items returns node p's children's items ordered by key.
func (fw *foldedWriter) items(p int32) []foldedItem {
	var items []foldedItem
	for c := p + 1; c < fw.next(p); c = fw.next(c) {
		if fw.self(c) != 0 {
			items = append(items, foldedItem{c, false})
		}
		if fw.next(c) > c+1 {
			items = append(items, foldedItem{c, true})
		}
	}
	slices.SortFunc(items, fw.less)
	return items
}

// less orders items by key: a child's own line by its name, the lines
// below it by its name and ';'.
func (fw *foldedWriter) less(x, y foldedItem) int {
	a, b := fw.name(x.node), fw.name(y.node)
	m := min(len(a), len(b))
	if c := strings.Compare(a[:m], b[:m]); c != 0 {
		return c
	}
	switch {
	case len(a) == len(b): // one child: its own line first
		return cmp.Compare(b2i(x.below), b2i(y.below))
	case len(a) < len(b): // a's key goes on with ';' or ends
		if !x.below {
			return -1
		}
		return cmp.Compare(';', b[m])
	default:
		if !y.below {
			return 1
		}
		return cmp.Compare(a[m], ';')
	}
}

// write writes the lines of items, in order.
func (fw *foldedWriter) write(items []foldedItem) {
	for _, x := range items {
		fw.enter(x.node)
		if x.below {
			fw.below(x.node)
		} else {
			fw.line(x.node)
		}
	}
}

// below writes the lines below node p: in pre-order, but for the children
// of a node to reorder.
func (fw *foldedWriter) below(p int32) {
	if fw.reorder(p) {
		fw.write(fw.items(p))
		return
	}
	for i, e := p+1, fw.next(p); i < e; {
		fw.enter(i)
		if fw.reorder(i) {
			fw.line(i)
			fw.below(i)
			i = fw.next(i)
		} else {
			fw.line(i)
			i++
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeFoldedSorted writes the folded lines by sorting their text.
func (f *Flat) writeFoldedSorted(w io.Writer) error {
	n := len(f.Name)
	self := slices.Clone(f.Value)
	plen := make([]int, n) // each node's stack text length
	path := []int{}
	size, count := 0, 0
	for i := range n {
		dep := int(f.Depth[i])
		path = append(path[:dep], i)
		if i > 0 {
			p := path[dep-1]
			self[p] -= f.Value[i]
			plen[i] = plen[p] + len(f.Names[f.Name[i]])
			if p > 0 {
				plen[i]++ // the ';'
			}
		}
	}
	for i := 1; i < n; i++ {
		if self[i] != 0 {
			size += plen[i]
			count++
		}
	}
	type line struct {
		start, end int // the stack's text in text
		value      uint64
	}
	text := make([]byte, 0, size) // every stack's text, back to back
	lines := make([]line, 0, count)
	ends := make([]int, 0, 64) // the path's text length at each depth
	var prefix []byte
	for i := 1; i < n; i++ {
		dep := int(f.Depth[i]) // 1 for the root's children
		ends = ends[:dep-1]
		if dep > 1 {
			prefix = append(prefix[:ends[dep-2]], ';')
		} else {
			prefix = prefix[:0]
		}
		prefix = append(prefix, f.Names[f.Name[i]]...)
		ends = append(ends, len(prefix))
		if self[i] != 0 {
			start := len(text)
			text = append(text, prefix...)
			lines = append(lines, line{start, len(text), self[i]})
		}
	}
	slices.SortFunc(lines, func(a, b line) int { return bytes.Compare(text[a.start:a.end], text[b.start:b.end]) })
	bw := bufio.NewWriterSize(w, 1<<16)
	var buf []byte
	for i, l := range lines {
		if i+1 < len(lines) && bytes.Equal(text[l.start:l.end], text[lines[i+1].start:lines[i+1].end]) {
			lines[i+1].value += l.value // the same text: one line
			continue
		}
		buf = append(append(buf[:0], text[l.start:l.end]...), ' ')
		buf = append(strconv.AppendUint(buf, l.value, 10), '\n')
		bw.Write(buf)
	}
	return bw.Flush()
}
