// Package flame builds flame graphs from selected samples: it counts samples
// per stack and renders the result as folded text (sorted like
// stackcollapse-perf.pl's output) or as a JSON tree. Values are sample counts
// by default, so a heatmap cell's count equals its range's flame graph total;
// they can be weighted by the sample period instead.
package flame

import (
	"bufio"
	"encoding/json"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query"
)

// Counts is a value per stack id.
type Counts struct {
	byStack []uint64
	Total   uint64
}

// Add adds the samples of batch that sel keeps, weighted by period if asked.
func (c *Counts) Add(d *fleetscope.Dict, sel *query.Selection, batch []fleetscope.Sample, byPeriod bool) {
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

// AddStack adds v to stack.
func (c *Counts) AddStack(stack fleetscope.StackID, v uint64) {
	if int(stack) >= len(c.byStack) {
		c.byStack = append(c.byStack, make([]uint64, int(stack)+1-len(c.byStack))...)
	}
	c.byStack[stack] += v
	c.Total += v
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

func (a Annotate) name(f fleetscope.Frame) string {
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
			b.WriteString(a.name(d.FrameAt(f)))
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

	index map[string]*Node
}

// Tree merges the stacks into a tree rooted at "all". Children are sorted
// by name.
func Tree(d *fleetscope.Dict, c *Counts, a Annotate) *Node {
	root := &Node{Name: "all", Children: []*Node{}}
	c.Each(func(id fleetscope.StackID, v uint64) {
		n := root
		n.Value += v
		for _, f := range d.StackFrames(id) {
			n = n.child(a.name(d.FrameAt(f)))
			n.Value += v
		}
	})
	root.sort()
	return root
}

func (n *Node) child(name string) *Node {
	if n.index == nil {
		n.index = make(map[string]*Node)
	}
	if ch, ok := n.index[name]; ok {
		return ch
	}
	ch := &Node{Name: name, Children: []*Node{}}
	n.index[name] = ch
	n.Children = append(n.Children, ch)
	return ch
}

func (n *Node) sort() {
	n.index = nil
	slices.SortFunc(n.Children, func(a, b *Node) int { return strings.Compare(a.Name, b.Name) })
	for _, ch := range n.Children {
		ch.sort()
	}
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
