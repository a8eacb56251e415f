// Package nflx reads nflxprofile files, the protobuf profile format of
// Netflix's FlameScope and nflxprofile tools (schema: api/nflxprofile/v1).
// It rebuilds each sample's stack as nflxprofile's own flame graph code
// does (an explicit node stack, parent links, or the children tree) and its
// time from start_time and the running sum of time_deltas. It owns parsing
// only: no storage, no detection of other formats.
//
// It decodes the protobuf by hand (decode.go), not with the generated
// types: a host-minute's ~10^4 nodes were most of an upload's parse as
// generated messages (docs/architecture.md, "Wire codecs"). The decoder
// accepts and refuses exactly what proto.Unmarshal of the generated
// nflxprofile/v1 Profile does, and reads the same values from it; its
// tests and fuzz target check that against proto.Unmarshal, which they
// keep as the reference.
package nflx

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/fleetscope/fleetscope"
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
	return parse(r, decode, sink)
}

// parse is Parse with the decoder as a parameter: its tests parse with
// proto.Unmarshal too.
func parse(r io.Reader, dec func([]byte) (*msg, error), sink func(*fleetscope.Profile, []fleetscope.Sample) error) (*fleetscope.Profile, error) {
	p := batch.NewProfile("nflxprofile")
	buf := buffers.Get().(*bytes.Buffer)
	defer release(buf)
	if _, err := buf.ReadFrom(r); err != nil {
		return p, err
	}
	m, err := dec(buf.Bytes())
	if err != nil {
		return p, fleetscope.Errorf(fleetscope.EINVALID, "nflxprofile: not a valid Profile message: %v", err)
	}
	defer m.release()
	describe(p, m)
	n := len(m.samples)
	if n == 0 {
		return p, fleetscope.Errorf(fleetscope.EEMPTY, "nflxprofile: no samples (field 3, samples, is empty)")
	}
	timed := len(m.timeDeltas) > 0
	switch {
	case timed && len(m.timeDeltas) != n:
		return p, fleetscope.Errorf(fleetscope.EINVALID, "nflxprofile: %d time_deltas for %d samples: they must pair up", len(m.timeDeltas), n)
	case !timed:
		p.Warnings = append(p.Warnings, "no time_deltas: the samples have no times (a flame graph works, a heatmap does not)")
	case !m.hasStart:
		p.Warnings = append(p.Warnings, "no start_time (a required field): sample times count from 0")
	}
	perSample := func(name string, l int) bool {
		if l != 0 && l != n {
			p.Warnings = append(p.Warnings, fmt.Sprintf("%s has %d values for %d samples: ignored", name, l, n))
		}
		return l == n
	}
	hasCPU := perSample("samples_cpu", len(m.samplesCPU))
	hasPID := perSample("samples_pid", len(m.samplesPID))
	hasTID := perSample("samples_tid", len(m.samplesTID))
	hasValue := perSample("samples_value", len(m.samplesValue))

	// At most a frame and a stack a node, and a stack a sample; bounded,
	// as a hint must be whatever the file claims.
	p.Dict.Grow(min(len(m.nodes), maxHint), min(len(m.nodes), n, maxHint))
	b := newBuilder(m, p.Dict)
	b.internFrames(m.samples)
	ev := p.Dict.Event(Event)
	w := batch.New(p, sink)
	now := m.startTime
	for i, id := range m.samples {
		st, node, err := b.stackOf(id)
		if err != nil {
			return p, fleetscope.Errorf(fleetscope.EINVALID, "nflxprofile samples[%d]: %s", i, err.Error())
		}
		s := fleetscope.Sample{TimeNanos: fleetscope.NoTime, Period: 1, Stack: st, CPU: -1, PID: -1, TID: -1, Event: ev}
		if timed {
			now += m.timeDeltas[i] // summed as nflxprofile sums them
			ns, ok := nanos(now)
			if !ok {
				return p, fleetscope.Errorf(fleetscope.EINVALID, "nflxprofile time_deltas[%d]: the time %v s is out of range", i, now)
			}
			s.TimeNanos = ns
		}
		if hasValue {
			s.Period = m.samplesValue[i]
		}
		s.CPU, s.PID, s.TID = id32(node.has&withCPU, node.cpu), id32(node.has&withPID, node.pid), id32(node.has&withTID, node.tid)
		if hasCPU {
			s.CPU = clamp(m.samplesCPU[i])
		}
		if hasPID {
			s.PID = clamp(m.samplesPID[i])
		}
		if hasTID {
			s.TID = clamp(m.samplesTID[i])
		}
		if err := w.Add(s); err != nil {
			return p, err
		}
	}
	return p, w.Flush()
}

// buffers holds the files parse reads whole, for reuse: a host-minute's
// ~0.6 MB was read into ~1.3 MB of fresh, cleared memory at every upload.
var buffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func release(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooled {
		buf.Reset()
		buffers.Put(buf)
	}
}

// maxHint bounds the dictionary's room made before parsing (Dict.Grow).
const maxHint = 1 << 16

func describe(p *fleetscope.Profile, m *msg) {
	if m.hasStart {
		p.Meta["start_time"] = strconv.FormatFloat(m.startTime, 'f', -1, 64)
	}
	if m.hasEnd {
		p.Meta["end_time"] = strconv.FormatFloat(m.endTime, 'f', -1, 64)
	}
	if m.hasTitle {
		p.Meta["title"] = string(m.title)
	}
	if m.hasDescription {
		p.Meta["description"] = string(m.description)
	}
	if m.hasIdle {
		p.Meta["idle_sample_count"] = strconv.FormatUint(uint64(m.idleSampleCount), 10)
	}
	for k, v := range m.params {
		p.Meta["params."+k] = v
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

// id32 is a node's pid, tid or cpu v, if has says it is there.
func id32(has uint8, v uint32) int32 {
	if has == 0 {
		return -1
	}
	return clamp(v)
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
// (their slots: the order of msg.nodes) and their parent links, frames and
// stacks kept in arrays, so a walk from a leaf to the root costs no map
// lookups: a minute of a busy host is ~10^6 steps.
type builder struct {
	m    *msg
	d    *fleetscope.Dict
	mode int
	// parent is each slot's parent slot: root (the walk ends after it) or
	// orphan (the walk fails there); not used in modeNodeStack.
	parent []int32
	stack  []fleetscope.StackID // by slot; noStack until built
	// frameOf caches each slot's frame (noFrame: dropped; unset: not yet),
	// so a frame is interned once per node, not once per stack.
	frameOf []fleetscope.FrameID
	frames  []fleetscope.FrameID
	// seen holds the frames interned so far by name, for each kind, so
	// that a name is made a string once per frame, not once per node.
	seen [fleetscope.KindJIT + 1]map[string]fleetscope.FrameID
}

const (
	root   = -1
	orphan = -2
)

const (
	noFrame = ^fleetscope.FrameID(0)
	unset   = noFrame - 1
	noStack = ^fleetscope.StackID(0)
)

// slot returns node id's slot, if it is in nodes.
func (b *builder) slot(id uint32) (int32, bool) { return b.m.index.get(id) }

// internFrames interns the frames of every node on the way from a sampled
// node to the root, in slot order: nodes are read in the order they were
// decoded, as they lie in memory, not in the samples' order, which met
// each node's name first in a cache miss (a sixth of parsing a
// host-minute). Only sampled nodes and their ancestors are interned, as
// the walks would. Node-stack profiles intern as they go.
func (b *builder) internFrames(samples []uint32) {
	if b.mode == modeNodeStack {
		return
	}
	used := make([]bool, len(b.m.nodes))
	for _, id := range samples {
		i, ok := b.slot(id)
		for n := 0; ok && !used[i] && n <= len(used); n++ { // n: a cycle ends the walk (stackOf reports it)
			used[i] = true
			if i = b.parent[i]; i < 0 {
				break
			}
		}
	}
	for i, u := range used {
		if u {
			b.nodeFrame(int32(i))
		}
	}
}

// nodeFrame is slot i's frame (noFrame: none), interned the first time.
func (b *builder) nodeFrame(i int32) fleetscope.FrameID {
	f := b.frameOf[i]
	if f == unset {
		var ok bool
		if f, ok = b.frameID(b.m.str(b.m.nodes[i].name), b.m.str(b.m.nodes[i].libtype)); !ok {
			f = noFrame
		}
		b.frameOf[i] = f
	}
	return f
}

func newBuilder(m *msg, d *fleetscope.Dict) *builder {
	b := &builder{m: m, d: d}
	n := len(m.nodes)
	b.stack, b.frameOf = make([]fleetscope.StackID, n), make([]fleetscope.FrameID, n)
	for i := range n {
		b.stack[i], b.frameOf[i] = noStack, unset
	}
	param := func(k string) (bool, bool) { v, ok := m.params[k]; return v == "true", ok }
	nodeStack, ok1 := param("has_node_stack")
	parents, ok2 := param("has_parent")
	if !ok1 && !ok2 { // no say in the params: look at the nodes
		for i := range m.nodes {
			nodeStack = nodeStack || m.nodes[i].stack.n > 0
			parents = parents || m.nodes[i].has&withParent != 0
		}
	}
	switch {
	case nodeStack:
		b.mode = modeNodeStack
		return b
	case parents:
		b.mode = modeParent
	default:
		b.mode = modeChildren
	}
	// One pass over the nodes, in slot order, links each to its parent.
	b.parent = make([]int32, n)
	for i := range m.nodes {
		b.parent[i] = orphan
		if b.mode == modeParent {
			b.parent[i] = root
			if pid := m.nodes[i].parent; pid != 0 {
				b.parent[i] = orphan
				if p, ok := b.slot(pid); ok {
					b.parent[i] = p
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
			c := m.nodes[i].children
			for _, c := range m.children[c.off : c.off+c.n] {
				if j, ok := b.slot(c); ok && b.parent[j] == orphan && j != top {
					b.parent[j] = i
					queue = append(queue, j)
				}
			}
		}
	}
	return b
}

func kind(libtype []byte) fleetscope.FrameKind {
	switch string(libtype) {
	case "kernel":
		return fleetscope.KindKernel
	case "jit":
		return fleetscope.KindJIT
	}
	return 0
}

// frame appends a frame to frames unless nflxprofile's Node.js view skips
// it (ArgumentsAdaptorTrampoline).
func (b *builder) frame(frames []fleetscope.FrameID, name, libtype []byte) []fleetscope.FrameID {
	if f, ok := b.frameID(name, libtype); ok {
		return append(frames, f)
	}
	return frames
}

// frameID interns a frame, unless nflxprofile's Node.js view skips it
// (ArgumentsAdaptorTrampoline).
func (b *builder) frameID(name, libtype []byte) (fleetscope.FrameID, bool) {
	if bytes.Contains(name, argumentsAdaptor) {
		return 0, false
	}
	name = bytes.TrimSpace(tidyV8(name))
	k := kind(libtype)
	if f, ok := b.seen[k][string(name)]; ok {
		return f, true
	}
	// Only frameID adds frames to the profile's dictionary, and seen holds
	// every one it added: a name not seen is not there (no second lookup).
	s := string(name)
	f := b.d.AddFrame(fleetscope.Frame{Name: s, Kind: k})
	if b.seen[k] == nil {
		b.seen[k] = map[string]fleetscope.FrameID{}
	}
	b.seen[k][s] = f
	return f, true
}

var argumentsAdaptor = []byte("ArgumentsAdaptorTrampoline")

// tidyV8 turns a V8 perf map name ("LazyCompile:*name file:line",
// "InterpretedFunction:name file:line") into the function name, as
// nflxprofile's Node.js flame graph view does; other names are kept.
func tidyV8(name []byte) []byte {
	rest, ok := bytes.CutPrefix(name, lazyCompile)
	if !ok {
		if rest, ok = bytes.CutPrefix(name, interpretedFunction); !ok {
			return name
		}
	}
	rest = bytes.TrimPrefix(rest, star)
	if fn, file, ok := bytes.Cut(rest, space); ok && len(file) > 0 {
		rest = fn
	}
	if len(rest) == 0 {
		return anonymous
	}
	return rest
}

var (
	lazyCompile, interpretedFunction = []byte("LazyCompile:"), []byte("InterpretedFunction:")
	star, space, anonymous           = []byte("*"), []byte(" "), []byte("(anonymous)")
)

// stack returns the stack of a sample of node id, and the node.
func (b *builder) stackOf(id uint32) (fleetscope.StackID, *node, error) {
	i, ok := b.slot(id)
	if !ok {
		return 0, nil, fmt.Errorf("node %d is not in nodes", id)
	}
	node := &b.m.nodes[i]
	if st := b.stack[i]; st != noStack {
		return st, node, nil
	}
	frames := b.frames[:0]
	switch b.mode {
	case modeNodeStack:
		frames = b.frame(frames, b.m.str(node.name), b.m.str(node.libtype))
		for _, f := range b.m.frames[node.stack.off : node.stack.off+node.stack.n] {
			frames = b.frame(frames, b.m.str(f.name), b.m.str(f.libtype))
		}
	default:
		for cur, n := i, 0; ; n++ {
			if n > len(b.m.nodes) {
				return 0, nil, fmt.Errorf("node %d: its parent links form a cycle", id)
			}
			if f := b.nodeFrame(cur); f != noFrame {
				frames = append(frames, f)
			}
			p := b.parent[cur]
			if p == root {
				break
			}
			if p == orphan {
				if b.mode == modeParent {
					return 0, nil, fmt.Errorf("node %d: parent %d is not in nodes", b.m.ids[cur], b.m.nodes[cur].parent)
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
