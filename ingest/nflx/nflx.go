// Package nflx reads nflxprofile files, the protobuf profile format of
// Netflix's FlameScope and nflxprofile tools (schema: api/nflxprofile/v1).
// It rebuilds each sample's stack as nflxprofile's own flame graph code
// does (an explicit node stack, parent links, or the children tree) and its
// time from start_time and the running sum of time_deltas. It owns parsing
// only: no storage, no detection of other formats.
package nflx

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/fleetscope/fleetscope"
	nflxv1 "github.com/fleetscope/fleetscope/api/gen/nflxprofile/v1"
	"github.com/fleetscope/fleetscope/ingest/internal/batch"
	"github.com/fleetscope/fleetscope/ingest/internal/wire"
)

// Event is the name of the one event of an nflxprofile: the format does
// not record which event was sampled; its converters write CPU profiles.
const Event = "cpu"

// Parse reads one nflxprofile (already decompressed) and streams its
// samples to sink in file order. A protobuf message cannot be decoded
// before its end (the node table may follow the samples), so the file is
// read whole; samples are still handed on in batches.
//
// Stacks: with params has_node_stack = "true" (or, without params, when
// nodes carry stacks) a sample's stack is its node's function_name (the
// process) followed by the node's stack; with has_parent = "true" (or
// parent links) the path of parent links up to a node without a parent (a
// parent id of 0 ends the path, as in nflxprofile); otherwise the path down
// the children lists from node 0. Frames are named as nflxprofile's Node.js
// flame graph view names them: V8 perf map names ("LazyCompile:*fn
// file:line", "InterpretedFunction:fn file:line") become the function name
// ("(anonymous)" if none), ArgumentsAdaptorTrampoline frames are dropped, and
// names are trimmed of surrounding white space. libtype "kernel" and "jit"
// mark frames for the _[k] and _[j] annotations. samples_value, when present
// for every sample, is the period.
//
// Returns EINVALID, naming the field, for bytes that are not an
// nflxprofile, a profile without samples, samples of unknown nodes, cyclic
// parent links and per-sample arrays of the wrong length.
func Parse(r io.Reader, sink func(*fleetscope.Profile, []fleetscope.Sample) error) (*fleetscope.Profile, error) {
	p := batch.NewProfile("nflxprofile")
	data, err := io.ReadAll(r)
	if err != nil {
		return p, err
	}
	var m nflxv1.Profile
	if err := proto.Unmarshal(data, &m); err != nil {
		return p, fleetscope.Errorf(fleetscope.EINVALID, "nflxprofile: not a valid Profile message: %v", err)
	}
	describe(p, &m)
	n := len(m.Samples)
	if n == 0 {
		return p, fleetscope.Errorf(fleetscope.EEMPTY, "nflxprofile: no samples (field 3, samples, is empty)")
	}
	timed := len(m.TimeDeltas) > 0
	switch {
	case timed && len(m.TimeDeltas) != n:
		return p, fleetscope.Errorf(fleetscope.EINVALID, "nflxprofile: %d time_deltas for %d samples: they must pair up", len(m.TimeDeltas), n)
	case !timed:
		p.Warnings = append(p.Warnings, "no time_deltas: the samples have no times (a flame graph works, a heatmap does not)")
	case m.StartTime == nil:
		p.Warnings = append(p.Warnings, "no start_time (a required field): sample times count from 0")
	}
	perSample := func(name string, l int) bool {
		if l != 0 && l != n {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s has %d values for %d samples: ignored", name, l, n))
		}
		return l == n
	}
	hasCPU := perSample("samples_cpu", len(m.SamplesCpu))
	hasPID := perSample("samples_pid", len(m.SamplesPid))
	hasTID := perSample("samples_tid", len(m.SamplesTid))
	hasValue := perSample("samples_value", len(m.SamplesValue))

	b := newBuilder(&m, p.Dict)
	b.internFrames(m.Samples)
	ev := p.Dict.Event(Event)
	w := batch.New(p, sink)
	now := m.GetStartTime()
	for i, id := range m.Samples {
		st, node, err := b.stackOf(id)
		if err != nil {
			return p, fleetscope.Errorf(fleetscope.EINVALID, "nflxprofile samples[%d]: %s", i, err.Error())
		}
		s := fleetscope.Sample{TimeNanos: fleetscope.NoTime, Period: 1, Stack: st, CPU: -1, PID: -1, TID: -1, Event: ev}
		if timed {
			now += m.TimeDeltas[i] // summed as nflxprofile sums them
			ns, ok := nanos(now)
			if !ok {
				return p, fleetscope.Errorf(fleetscope.EINVALID, "nflxprofile time_deltas[%d]: the time %v s is out of range", i, now)
			}
			s.TimeNanos = ns
		}
		if hasValue {
			s.Period = m.SamplesValue[i]
		}
		s.CPU, s.PID, s.TID = id32(node.Cpu), id32(node.Pid), id32(node.Tid)
		if hasCPU {
			s.CPU = clamp(m.SamplesCpu[i])
		}
		if hasPID {
			s.PID = clamp(m.SamplesPid[i])
		}
		if hasTID {
			s.TID = clamp(m.SamplesTid[i])
		}
		if err := w.Add(s); err != nil {
			return p, err
		}
	}
	return p, w.Flush()
}

func describe(p *fleetscope.Profile, m *nflxv1.Profile) {
	if m.StartTime != nil {
		p.Meta["start_time"] = strconv.FormatFloat(m.GetStartTime(), 'f', -1, 64)
	}
	if m.EndTime != nil {
		p.Meta["end_time"] = strconv.FormatFloat(m.GetEndTime(), 'f', -1, 64)
	}
	if m.Title != nil {
		p.Meta["title"] = m.GetTitle()
	}
	if m.Description != nil {
		p.Meta["description"] = m.GetDescription()
	}
	if m.IdleSampleCount != nil {
		p.Meta["idle_sample_count"] = strconv.FormatUint(uint64(m.GetIdleSampleCount()), 10)
	}
	for _, k := range slices.Sorted(maps.Keys(m.Params)) {
		p.Meta["params."+k] = m.Params[k]
	}
}

// nanos converts seconds to ns, the whole seconds and the fraction apart so
// that no precision is lost to the product's size.
func nanos(sec float64) (int64, bool) {
	if math.IsNaN(sec) || math.Abs(sec) >= math.MaxInt64/1e9-1 {
		return 0, false
	}
	whole := math.Floor(sec)
	return int64(whole)*1e9 + int64(math.Round((sec-whole)*1e9)), true
}

func id32(v *uint32) int32 {
	if v == nil {
		return -1
	}
	return clamp(*v)
}

func clamp(v uint32) int32 {
	if v > math.MaxInt32 {
		return -1
	}
	return int32(v)
}

// Stack modes, as nflxprofile's flame graph code chooses them.
const (
	modeChildren = iota
	modeParent
	modeNodeStack
)

// builder turns sampled nodes into stacks. Nodes are numbered densely
// (slots) and their parent links, frames and stacks kept in arrays, so a
// walk from a leaf to the root costs no map lookups: a minute of a busy
// host is ~10^6 steps.
type builder struct {
	m    *nflxv1.Profile
	d    *fleetscope.Dict
	mode int
	slots
	// parent is each slot's parent slot: root (the walk ends after it) or
	// orphan (the walk fails there); not used in modeNodeStack.
	parent []int32
	stack  []fleetscope.StackID // by slot; noStack until built
	// frameOf caches each slot's frame (noFrame: dropped; unset: not yet),
	// so a frame is interned once per node, not once per stack.
	frameOf []fleetscope.FrameID
	frames  []fleetscope.FrameID
	// names and libs are each slot's function name and libtype, read in
	// slot order (not used in modeNodeStack).
	names, libs []string
}

const (
	root   = -1
	orphan = -2
)

const (
	noFrame  = ^fleetscope.FrameID(0)
	unset    = noFrame - 1
	noStack  = ^fleetscope.StackID(0)
	maxSlack = 1 << 16
)

// slots numbers the nodes 0..n-1: by their ids when those are dense (the
// converters write 0..n-1), else in the map's order.
type slots struct {
	direct bool
	of     map[uint32]int32 // id -> slot when not direct
	node   []*nflxv1.Profile_Node
}

func newSlots(nodes map[uint32]*nflxv1.Profile_Node) slots {
	top := uint32(0)
	for id := range nodes {
		top = max(top, id)
	}
	if int64(top) < 2*int64(len(nodes))+maxSlack {
		s := slots{direct: true, node: make([]*nflxv1.Profile_Node, int(top)+1)}
		for id, n := range nodes {
			s.node[id] = n
		}
		return s
	}
	s := slots{of: make(map[uint32]int32, len(nodes)), node: make([]*nflxv1.Profile_Node, 0, len(nodes))}
	for id, n := range nodes {
		s.of[id] = int32(len(s.node))
		s.node = append(s.node, n)
	}
	return s
}

// slot returns node id's slot, if it is in nodes.
func (s *slots) slot(id uint32) (int32, bool) {
	if s.direct {
		if int64(id) < int64(len(s.node)) && s.node[id] != nil {
			return int32(id), true
		}
		return 0, false
	}
	i, ok := s.of[id]
	return i, ok
}

// internFrames interns the frames of every node on the way from a sampled
// node to the root, in slot order: nodes are read in the order they were
// decoded (a converter writes them by id), not in the samples' order,
// which met each node's name first in a cache miss (a sixth of parsing a
// host-minute). Only sampled nodes and their ancestors are interned, as
// the walks would. Node-stack profiles intern as they go.
func (b *builder) internFrames(samples []uint32) {
	if b.mode == modeNodeStack {
		return
	}
	used := make([]bool, len(b.node))
	for _, id := range samples {
		i, ok := b.slot(id)
		for n := 0; ok && !used[i] && n <= len(b.node); n++ { // n: a cycle ends the walk (stackOf reports it)
			used[i] = true
			if i = b.parent[i]; i < 0 {
				break
			}
		}
	}
	for i, u := range used {
		if u {
			b.nodeFrame(nil, int32(i))
		}
	}
}

// nodeFrame appends slot i's frame to frames, once interned.
func (b *builder) nodeFrame(frames []fleetscope.FrameID, i int32) []fleetscope.FrameID {
	f := b.frameOf[i]
	if f == unset {
		f = noFrame
		if one := b.frame(nil, b.names[i], b.libs[i]); len(one) == 1 {
			f = one[0]
		}
		b.frameOf[i] = f
	}
	if f == noFrame {
		return frames
	}
	return append(frames, f)
}

func newBuilder(m *nflxv1.Profile, d *fleetscope.Dict) *builder {
	b := &builder{m: m, d: d, slots: newSlots(m.Nodes)}
	n := len(b.node)
	b.stack, b.frameOf = make([]fleetscope.StackID, n), make([]fleetscope.FrameID, n)
	for i := range n {
		b.stack[i], b.frameOf[i] = noStack, unset
	}
	param := func(k string) (bool, bool) { v, ok := m.Params[k]; return v == "true", ok }
	nodeStack, ok1 := param("has_node_stack")
	hasParent, ok2 := param("has_parent")
	if !ok1 && !ok2 { // no say in the params: look at the nodes
		for _, n := range m.Nodes {
			nodeStack = nodeStack || len(n.Stack) > 0
			hasParent = hasParent || n.Parent != nil
		}
	}
	switch {
	case nodeStack:
		b.mode = modeNodeStack
		return b
	case hasParent:
		b.mode = modeParent
	default:
		b.mode = modeChildren
	}
	// One pass over the nodes, in slot order, reads each node's name and
	// parent: met first in the samples' order, each node was a cache miss
	// (a sixth of parsing a host-minute).
	b.parent, b.names, b.libs = make([]int32, n), make([]string, n), make([]string, n)
	for i, node := range b.node {
		b.names[i], b.libs[i] = node.GetFunctionName(), node.GetLibtype()
		b.parent[i] = orphan
		if b.mode == modeParent {
			b.parent[i] = root
			if pid := node.GetParent(); pid != 0 {
				if b.parent[i] = orphan; node != nil {
					if p, ok := b.slot(pid); ok {
						b.parent[i] = p
					}
				}
			}
		}
	}
	if b.mode == modeChildren {
		// The tree under node 0, breadth first; the first parent wins.
		top, ok := b.slot(0)
		if !ok {
			return b
		}
		b.parent[top] = root
		queue := []int32{top}
		for len(queue) > 0 {
			i := queue[0]
			queue = queue[1:]
			for _, c := range b.node[i].GetChildren() {
				if j, ok := b.slot(c); ok && b.parent[j] == orphan && j != top {
					b.parent[j] = i
					queue = append(queue, j)
				}
			}
		}
	}
	return b
}

func kind(libtype string) fleetscope.FrameKind {
	switch libtype {
	case "kernel":
		return fleetscope.KindKernel
	case "jit":
		return fleetscope.KindJIT
	}
	return 0
}

// frame appends a frame to frames unless nflxprofile's Node.js view skips
// it (ArgumentsAdaptorTrampoline).
func (b *builder) frame(frames []fleetscope.FrameID, name, libtype string) []fleetscope.FrameID {
	if strings.Contains(name, "ArgumentsAdaptorTrampoline") {
		return frames
	}
	return append(frames, b.d.Frame(fleetscope.Frame{Name: strings.TrimSpace(tidyV8(name)), Kind: kind(libtype)}))
}

// tidyV8 turns a V8 perf map name ("LazyCompile:*name file:line",
// "InterpretedFunction:name file:line") into the function name, as
// nflxprofile's Node.js flame graph view does; other names are kept.
func tidyV8(name string) string {
	rest, ok := strings.CutPrefix(name, "LazyCompile:")
	if !ok {
		if rest, ok = strings.CutPrefix(name, "InterpretedFunction:"); !ok {
			return name
		}
	}
	rest = strings.TrimPrefix(rest, "*")
	if fn, file, ok := strings.Cut(rest, " "); ok && file != "" {
		rest = fn
	}
	if rest == "" {
		return "(anonymous)"
	}
	return rest
}

// stack returns the stack of a sample of node id, and the node.
func (b *builder) stackOf(id uint32) (fleetscope.StackID, *nflxv1.Profile_Node, error) {
	i, ok := b.slot(id)
	if !ok {
		return 0, nil, fmt.Errorf("node %d is not in nodes", id)
	}
	node := b.node[i]
	if st := b.stack[i]; st != noStack {
		return st, node, nil
	}
	frames := b.frames[:0]
	switch b.mode {
	case modeNodeStack:
		frames = b.frame(frames, node.GetFunctionName(), node.GetLibtype())
		for _, f := range node.Stack {
			frames = b.frame(frames, f.GetFunctionName(), f.GetLibtype())
		}
	default:
		for cur, n := i, 0; ; n++ {
			if n > len(b.node) {
				return 0, nil, fmt.Errorf("node %d: its parent links form a cycle", id)
			}
			frames = b.nodeFrame(frames, cur)
			p := b.parent[cur]
			if p == root {
				break
			}
			if p == orphan {
				if b.mode == modeParent {
					return 0, nil, fmt.Errorf("node %d: parent %d is not in nodes", b.idOf(cur), b.node[cur].GetParent())
				}
				return 0, nil, fmt.Errorf("node %d is not in the tree under node 0 (no parent links in this profile)", id)
			}
			cur = p
		}
		slices.Reverse(frames)
	}
	b.frames = frames
	st := b.d.Stack(frames)
	b.stack[i] = st
	return st, node, nil
}

// idOf is slot i's node id (for messages).
func (s *slots) idOf(i int32) uint32 {
	if s.direct {
		return uint32(i)
	}
	for id, j := range s.of {
		if j == i {
			return id
		}
	}
	return 0
}

// Detect says how sure it is that head is an nflxprofile: protobuf whose
// fields all fit the Profile message, starting with start_time (field 1, a
// double) as the converters write it.
func Detect(head []byte) int {
	first := protowire.Number(0)
	fields, whole, ok := wire.Scan(head, func(num protowire.Number, typ protowire.Type, val []byte, truncated bool) bool {
		if first == 0 {
			first = num
		}
		return fits(num, typ, val, truncated)
	})
	if !ok || fields < 2 {
		return 0
	}
	switch {
	case first == 1:
		return 80
	case whole && first <= 5:
		return 50
	}
	return 0
}

func fits(num protowire.Number, typ protowire.Type, val []byte, truncated bool) bool {
	switch num {
	case 1, 2: // start_time, end_time
		return typ == protowire.Fixed64Type
	case 3, 9, 10, 11, 12: // samples, samples_cpu/pid/tid/value
		return typ == protowire.VarintType || typ == protowire.BytesType && wire.Packed(val, protowire.VarintType, truncated)
	case 4: // time_deltas
		return typ == protowire.Fixed64Type || typ == protowire.BytesType && wire.Packed(val, protowire.Fixed64Type, truncated)
	case 5: // nodes: map entry {1: uint32 key, 2: Node}
		if typ != protowire.BytesType {
			return false
		}
		_, _, ok := wire.Scan(val, func(n protowire.Number, t protowire.Type, _ []byte, _ bool) bool {
			return n == 1 && t == protowire.VarintType || n == 2 && t == protowire.BytesType
		})
		return ok
	case 6, 7, 8: // title, description, params
		return typ == protowire.BytesType
	case 13: // idle_sample_count
		return typ == protowire.VarintType
	}
	return false
}
