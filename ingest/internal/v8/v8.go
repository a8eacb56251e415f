// Package v8 holds what the V8 CPU profile readers share (ingest/cpuprofile
// for .cpuprofile files, ingest/traceevent for Chrome traces): the node
// tree as V8 writes it (ids, callFrame, children or parent links) and the
// turning of a sampled node into a stack of the profile's dictionary, rooted
// at a process frame. It reads no input itself.
package v8

import (
	"fmt"
	"math"
	"strconv"

	"github.com/fleetscope/fleetscope"
)

// CallFrame is a node's function, as V8 writes it (only what fleetscope
// reads: the URL, line and column are not part of a frame's name).
type CallFrame struct {
	FunctionName string `json:"functionName"`
}

// Node is one node of a V8 CPU profile: a .cpuprofile lists children, a
// trace's ProfileChunk gives each node its parent.
type Node struct {
	ID        int64     `json:"id"`
	CallFrame CallFrame `json:"callFrame"`
	Children  []int64   `json:"children"`
	Parent    *int64    `json:"parent"`
}

// Name is the frame name of a function: its name, or "(anonymous)" for
// an unnamed one, as nflxprofile's converter names it.
func Name(f *CallFrame) string {
	if f.FunctionName == "" {
		return "(anonymous)"
	}
	return f.FunctionName
}

// Tree is one profile's nodes. Nodes may arrive in any order and in
// several batches; stacks are resolved when asked for.
type Tree struct {
	nodes  map[int64]*entry
	cache  map[int64]fleetscope.StackID
	frames []fleetscope.FrameID
}

type entry struct {
	name      string
	parent    int64
	hasParent bool
}

// NewTree returns an empty tree.
func NewTree() *Tree {
	return &Tree{nodes: map[int64]*entry{}, cache: map[int64]fleetscope.StackID{}}
}

// Has reports whether node id is defined (not only listed as a child).
func (t *Tree) Has(id int64) bool {
	e := t.nodes[id]
	return e != nil && e.name != ""
}

// Add records node n. Its children, if listed, get n as their parent.
// Returns EINVALID if a node with the same id is already known.
func (t *Tree) Add(n *Node) error {
	e := t.node(n.ID)
	if e.name != "" {
		return fleetscope.Errorf(fleetscope.EINVALID, "node id %d appears twice", n.ID)
	}
	e.name = Name(&n.CallFrame)
	if n.Parent != nil {
		e.parent, e.hasParent = *n.Parent, true
	}
	for _, c := range n.Children {
		ce := t.node(c)
		if ce.hasParent && ce.parent != n.ID {
			return fleetscope.Errorf(fleetscope.EINVALID, "node %d is a child of both %d and %d", c, ce.parent, n.ID)
		}
		ce.parent, ce.hasParent = n.ID, true
	}
	return nil
}

func (t *Tree) node(id int64) *entry {
	e := t.nodes[id]
	if e == nil {
		e = &entry{}
		t.nodes[id] = e
	}
	return e
}

// Stack returns the stack of a sample whose leaf is node id: root (the
// process frame) first, then the path from the tree's root node to id.
// Results are cached by id, so one Tree serves one root. Returns EINVALID
// for an unknown node, a parent link to an unknown node or a cycle.
func (t *Tree) Stack(d *fleetscope.Dict, root fleetscope.FrameID, id int64) (fleetscope.StackID, error) {
	if st, ok := t.cache[id]; ok {
		return st, nil
	}
	frames := t.frames[:0]
	for cur, n := id, 0; ; n++ {
		e := t.nodes[cur]
		if e == nil || e.name == "" {
			if cur == id {
				return 0, fleetscope.Errorf(fleetscope.EINVALID, "sample of unknown node %d", id)
			}
			return 0, fleetscope.Errorf(fleetscope.EINVALID, "node %d: parent %d not in the profile", id, cur)
		}
		if n > len(t.nodes) {
			return 0, fleetscope.Errorf(fleetscope.EINVALID, "node %d: its parent links form a cycle", id)
		}
		frames = append(frames, d.Frame(fleetscope.Frame{Name: e.name}))
		if !e.hasParent {
			break
		}
		cur = e.parent
	}
	frames = append(frames, root)
	for i, j := 0, len(frames)-1; i < j; i, j = i+1, j-1 {
		frames[i], frames[j] = frames[j], frames[i]
	}
	t.frames = frames
	st := d.Stack(frames)
	t.cache[id] = st
	return st, nil
}

// Micros is a time or a duration V8 wrote in microseconds (an integer, or a
// number with a fraction), held in nanoseconds.
type Micros int64

// UnmarshalJSON reads a JSON number of microseconds exactly (to the
// nanosecond), refusing values out of range.
func (m *Micros) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		return nil
	}
	const limit = (1<<63 - 1) / 1000
	if us, err := strconv.ParseInt(s, 10, 64); err == nil {
		if us > limit || us < -limit {
			return fmt.Errorf("%s µs is out of range", s)
		}
		*m = Micros(us * 1000)
		return nil
	}
	us, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(us) || math.Abs(us) > limit {
		return fmt.Errorf("%s is not a time in µs", s)
	}
	*m = Micros(math.Round(us * 1000))
	return nil
}

// Add returns t+d, or false if that overflows.
func Add(t, d int64) (int64, bool) {
	s := t + d
	if (d > 0 && s < t) || (d < 0 && s > t) {
		return 0, false
	}
	return s, true
}
