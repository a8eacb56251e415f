package nflx

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"unsafe"

	"google.golang.org/protobuf/encoding/protowire"
)

// msg is a decoded nflxprofile Profile message: what Parse reads of it.
// Its strings are slices or spans of the input (data), not copies.
type msg struct {
	data                     []byte
	startTime, endTime       float64
	hasStart, hasEnd         bool
	title, description       []byte
	hasTitle, hasDescription bool
	idleSampleCount          uint32
	hasIdle                  bool
	params                   map[string]string

	samples, samplesCPU, samplesPID, samplesTID []uint32
	timeDeltas                                  []float64
	samplesValue                                []uint64

	// ids and nodes are the nodes map: each id once, in the order of its
	// first entry, with the node of its last entry (an entry replaces an
	// earlier one of its id, as in a map). index finds an id's entry.
	ids   []uint32
	nodes []node
	index index
	// children and frames hold every node's children and stack frames,
	// each node's in one run.
	children []uint32
	frames   []stackFrame
}

// node is a Profile.Node as the stacks need it. It holds no pointers: a
// host-minute has ~10^4 nodes for the garbage collector not to scan.
type node struct {
	name, libtype         span
	children, stack       run // in msg.children, msg.frames
	parent, pid, tid, cpu uint32
	has                   uint8 // withParent, withPID, withTID, withCPU
}

// Node fields whose presence counts.
const (
	withParent = 1 << iota
	withPID
	withTID
	withCPU
)

// run is a node's stretch of msg.children or msg.frames.
type run struct{ off, n int }

// stackFrame is a StackFrame as the stacks need it.
type stackFrame struct{ name, libtype span }

// span is a string of the input, msg.data[off:end].
type span struct{ off, end int }

// str is the bytes of s.
func (m *msg) str(s span) []byte { return m.data[s.off:s.end] }

// spanOf is the span of v, a length-delimited field's payload read from
// b (n bytes with its length), which starts at offset at of the input.
func spanOf(at int, v []byte, n int) span {
	off := at + n - len(v)
	return span{off, off + len(v)}
}

// decode reads a Profile message as proto.Unmarshal reads it into the
// generated nflxprofile/v1 types (the reference in its tests): a
// singular field's last value wins, a repeated scalar is read packed or
// not, a map entry without key or value takes the zero key or an empty
// node, a later entry of a key replaces the earlier one, and two values in
// one entry merge; fields it does not know, or knows with another wire
// type, are skipped. It refuses what proto.Unmarshal refuses: tags with a
// field number of 0 or over 2^29-1, wire types 6 and 7, end-group tags
// outside their group, truncated or overlong values, malformed nested
// messages (stack frames and files too), naming the field.
//
// The nodes are why it exists: decoded as generated messages, each node was
// a handful of allocations (message, strings, optional fields, slices)
// and a map insertion; here nodes are values in one slice, their strings
// point into data, and children and stack frames share two slices.
func decode(data []byte) (*msg, error) {
	m := msgs.Get().(*msg)
	m.data = data
	e := entries(data)
	m.ids, m.nodes = slices.Grow(m.ids, e), slices.Grow(m.nodes, e)
	m.index.limit, m.index.hint = uint32(min(2*int64(e)+maxSlack, math.MaxUint32)), e
	b := data
	for len(b) > 0 {
		at := len(data) - len(b)
		num, typ, n, err := tag(b)
		if err != nil {
			return nil, fmt.Errorf("tag at byte %d: %w", at, err)
		}
		b = b[n:]
		n, err = m.field(num, typ, b)
		if err != nil {
			if name := profileFields[num]; name != "" {
				return nil, fmt.Errorf("field %d (%s) at byte %d: %w", num, name, at, err)
			}
			return nil, fmt.Errorf("field %d at byte %d: %w", num, at, err)
		}
		b = b[n:]
	}
	return m, nil
}

var profileFields = map[protowire.Number]string{
	1: "start_time", 2: "end_time", 3: "samples", 4: "time_deltas", 5: "nodes", 6: "title",
	7: "description", 8: "params", 9: "samples_cpu", 10: "samples_pid", 11: "samples_tid",
	12: "samples_value", 13: "idle_sample_count",
}

// field reads one field of a Profile, its tag already read, and returns
// how many bytes of b it took.
func (m *msg) field(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
	switch typ {
	case protowire.Fixed64Type:
		switch num {
		case 1, 2, 4:
			v, n := protowire.ConsumeFixed64(b)
			if n < 0 {
				return 0, protowire.ParseError(n)
			}
			f := math.Float64frombits(v)
			switch num {
			case 1:
				m.startTime, m.hasStart = f, true
			case 2:
				m.endTime, m.hasEnd = f, true
			default:
				m.timeDeltas = append(m.timeDeltas, f)
			}
			return n, nil
		}
	case protowire.VarintType:
		switch num {
		case 3, 9, 10, 11, 12, 13:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, protowire.ParseError(n)
			}
			switch num {
			case 3:
				m.samples = append(m.samples, uint32(v))
			case 9:
				m.samplesCPU = append(m.samplesCPU, uint32(v))
			case 10:
				m.samplesPID = append(m.samplesPID, uint32(v))
			case 11:
				m.samplesTID = append(m.samplesTID, uint32(v))
			case 12:
				m.samplesValue = append(m.samplesValue, v)
			default:
				m.idleSampleCount, m.hasIdle = uint32(v), true
			}
			return n, nil
		}
	case protowire.BytesType:
		if num > 13 {
			break
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return 0, protowire.ParseError(n)
		}
		var err error
		switch num {
		case 3:
			m.samples, err = packed32(m.samples, v)
		case 4:
			m.timeDeltas, err = packedDoubles(m.timeDeltas, v)
		case 5:
			err = m.nodeEntry(v, len(m.data)-len(b)+n-len(v))
		case 6:
			m.title, m.hasTitle = v, true
		case 7:
			m.description, m.hasDescription = v, true
		case 8:
			err = m.paramEntry(v)
		case 9:
			m.samplesCPU, err = packed32(m.samplesCPU, v)
		case 10:
			m.samplesPID, err = packed32(m.samplesPID, v)
		case 11:
			m.samplesTID, err = packed32(m.samplesTID, v)
		case 12:
			m.samplesValue, err = packed64(m.samplesValue, v)
		default: // 1, 2, 13 are not length-delimited: unknown
		}
		return n, err
	}
	return skip(num, typ, b)
}

// nodeEntry reads an entry of the nodes map: key 1 (uint32), value 2
// (Node).
// at is the offset of b in the input.
func (m *msg) nodeEntry(b []byte, at int) error {
	var id uint32
	var nd node
	for len(b) > 0 {
		num, typ, n, err := tag(b)
		if err != nil {
			return fmt.Errorf("tag: %w", err)
		}
		b, at = b[n:], at+n
		switch {
		case num == 1 && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return fmt.Errorf("field 1 (key): %w", protowire.ParseError(n))
			}
			id = uint32(v)
			b, at = b[n:], at+n
		case num == 2 && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("field 2 (value): %w", protowire.ParseError(n))
			}
			if err := m.node(&nd, v, at+n-len(v)); err != nil {
				return fmt.Errorf("field 2 (value): %w", err)
			}
			b, at = b[n:], at+n
		default:
			n, err := skip(num, typ, b)
			if err != nil {
				return fmt.Errorf("field %d: %w", num, err)
			}
			b, at = b[n:], at+n
		}
	}
	if i, ok := m.index.get(id); ok {
		m.nodes[i] = nd
		return nil
	}
	m.index.put(id, int32(len(m.nodes)))
	m.ids, m.nodes = append(m.ids, id), append(m.nodes, nd)
	return nil
}

// msgs holds decoded messages for decode to reuse (release): their
// arrays, ~1 MB for a host-minute, are then allocated and cleared once
// per parser in flight, not once per upload.
var msgs = sync.Pool{New: func() any { return new(msg) }}

// maxPooled bounds the arrays a released message keeps for reuse (in
// bytes, roughly): a large file's go to the collector.
const maxPooled = 16 << 20

// release empties m and keeps it for a later decode; m and what it held
// must not be used after. Its strings were spans of data, so nothing a
// parse returned refers to it.
func (m *msg) release() {
	size := 4*(cap(m.ids)+len(m.index.dense)+cap(m.samples)+cap(m.samplesCPU)+cap(m.samplesPID)+cap(m.samplesTID)+cap(m.children)) +
		8*(cap(m.timeDeltas)+cap(m.samplesValue)+len(m.index.sparse)) + int(unsafe.Sizeof(node{}))*cap(m.nodes) + int(unsafe.Sizeof(stackFrame{}))*cap(m.frames)
	if size > maxPooled {
		return
	}
	clear(m.index.sparse)
	*m = msg{
		ids: m.ids[:0], nodes: m.nodes[:0], index: index{dense: m.index.dense[:0], sparse: m.index.sparse},
		samples: m.samples[:0], samplesCPU: m.samplesCPU[:0], samplesPID: m.samplesPID[:0], samplesTID: m.samplesTID[:0],
		timeDeltas: m.timeDeltas[:0], samplesValue: m.samplesValue[:0], children: m.children[:0], frames: m.frames[:0],
	}
	msgs.Put(m)
}

// maxSlack is how far past twice their count node ids may go and still be
// indexed by an array, not a map.
const maxSlack = 1 << 16

// index finds a node's entry by its id: in an array for ids under limit
// (converters number nodes from 0; limit grows with the count of nodes),
// in a map above.
type index struct {
	dense  []int32 // by id: entry+1, 0 if none
	limit  uint32
	hint   int // the count of nodes: dense's first size if ids stay under it
	sparse map[uint32]int32
}

func (x *index) get(id uint32) (int32, bool) {
	if id < x.limit {
		if id < uint32(len(x.dense)) {
			i := x.dense[id]
			return i - 1, i != 0
		}
		return 0, false
	}
	i, ok := x.sparse[id]
	return i, ok
}

func (x *index) put(id uint32, i int32) {
	if id >= x.limit {
		if x.sparse == nil {
			x.sparse = map[uint32]int32{}
		}
		x.sparse[id] = i
		return
	}
	if id >= uint32(len(x.dense)) { // to the count of nodes, then to limit
		n := int(x.limit)
		if len(x.dense) == 0 && int(id) < x.hint {
			n = x.hint
		}
		x.dense = append(x.dense, make([]int32, n-len(x.dense))...)
	}
	x.dense[id] = i + 1
}

// entries counts the nodes map's entries (field 5) up to the first field
// that does not parse (decode then says why), to size msg.nodes once.
func entries(b []byte) int {
	n := 0
	for len(b) > 0 {
		num, typ, l := protowire.ConsumeTag(b)
		if l < 0 {
			break
		}
		b = b[l:]
		if l = protowire.ConsumeFieldValue(num, typ, b); l < 0 {
			break
		}
		if num == 5 && typ == protowire.BytesType {
			n++
		}
		b = b[l:]
	}
	return n
}

var nodeFields = [...]string{1: "function_name", 2: "hit_count", 3: "children", 4: "libtype", 5: "parent",
	6: "pid", 7: "tid", 8: "cpu", 9: "value", 10: "stack", 11: "file"}

// node merges a Node message into nd, as a second value in one map entry
// merges into the first. A node's children and stack frames are appended
// where the previous node's ended, so each node's stay in one run: the
// entries are read one at a time. at is the offset of b in the input.
func (m *msg) node(nd *node, b []byte, at int) error {
	for len(b) > 0 {
		num, typ, n, err := tag(b)
		if err != nil {
			return fmt.Errorf("tag: %w", err)
		}
		b, at = b[n:], at+n
		if n, err = m.nodeField(nd, num, typ, b, at); err != nil {
			if int(num) < len(nodeFields) && nodeFields[num] != "" {
				return fmt.Errorf("field %d (%s): %w", num, nodeFields[num], err)
			}
			return fmt.Errorf("field %d: %w", num, err)
		}
		b, at = b[n:], at+n
	}
	return nil
}

func (m *msg) nodeField(nd *node, num protowire.Number, typ protowire.Type, b []byte, at int) (int, error) {
	switch typ {
	case protowire.VarintType:
		if num < 2 || num > 9 || num == 4 {
			break
		}
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return 0, protowire.ParseError(n)
		}
		switch num {
		case 3:
			if nd.children.n == 0 {
				nd.children.off = len(m.children)
			}
			m.children = append(m.children, uint32(v))
			nd.children.n++
		case 5:
			nd.parent = uint32(v)
			nd.has |= withParent
		case 6:
			nd.pid = uint32(v)
			nd.has |= withPID
		case 7:
			nd.tid = uint32(v)
			nd.has |= withTID
		case 8:
			nd.cpu = uint32(v)
			nd.has |= withCPU
		}
		return n, nil // 2 (hit_count), 9 (value): not used
	case protowire.BytesType:
		switch num {
		case 1, 3, 4, 10, 11:
		default:
			return skip(num, typ, b)
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return 0, protowire.ParseError(n)
		}
		switch num {
		case 1:
			nd.name = spanOf(at, v, n)
		case 3:
			if nd.children.n == 0 {
				nd.children.off = len(m.children)
			}
			l := len(m.children)
			var err error
			if m.children, err = packed32(m.children, v); err != nil {
				return 0, err
			}
			nd.children.n += len(m.children) - l
		case 4:
			nd.libtype = spanOf(at, v, n)
		case 10:
			f, err := frame(v, at+n-len(v))
			if err != nil {
				return 0, err
			}
			if nd.stack.n == 0 {
				nd.stack.off = len(m.frames)
			}
			m.frames = append(m.frames, f)
			nd.stack.n++
		case 11:
			if err := file(v); err != nil {
				return 0, fmt.Errorf("File: %w", err)
			}
		}
		return n, nil
	}
	return skip(num, typ, b)
}

// frame reads a StackFrame: function_name 1, libtype 2, file 3. at is
// the offset of b in the input.
func frame(b []byte, at int) (stackFrame, error) {
	var f stackFrame
	for len(b) > 0 {
		num, typ, n, err := tag(b)
		if err != nil {
			return f, fmt.Errorf("tag: %w", err)
		}
		b, at = b[n:], at+n
		if typ == protowire.BytesType && num <= 3 {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return f, fmt.Errorf("field %d (%s): %w", num, [...]string{1: "function_name", 2: "libtype", 3: "file"}[num], protowire.ParseError(n))
			}
			switch num {
			case 1:
				f.name = spanOf(at, v, n)
			case 2:
				f.libtype = spanOf(at, v, n)
			case 3:
				if err := file(v); err != nil {
					return f, fmt.Errorf("field 3 (file): %w", err)
				}
			}
			b, at = b[n:], at+n
			continue
		}
		if n, err = skip(num, typ, b); err != nil {
			return f, fmt.Errorf("field %d: %w", num, err)
		}
		b, at = b[n:], at+n
	}
	return f, nil
}

// file checks a File message (file_name 1, line 2, column 3), of which
// nothing is used: its fields are read as unknown ones are, which checks
// them as their own types would be checked.
func file(b []byte) error {
	for len(b) > 0 {
		num, typ, n, err := tag(b)
		if err != nil {
			return fmt.Errorf("tag: %w", err)
		}
		b = b[n:]
		if n, err = skip(num, typ, b); err != nil {
			return fmt.Errorf("field %d: %w", num, err)
		}
		b = b[n:]
	}
	return nil
}

// paramEntry reads an entry of the params map: key 1, value 2, strings.
func (m *msg) paramEntry(b []byte) error {
	var k, v []byte
	for len(b) > 0 {
		num, typ, n, err := tag(b)
		if err != nil {
			return fmt.Errorf("tag: %w", err)
		}
		b = b[n:]
		if (num == 1 || num == 2) && typ == protowire.BytesType {
			s, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return fmt.Errorf("field %d (%s): %w", num, [...]string{1: "key", 2: "value"}[num], protowire.ParseError(n))
			}
			if num == 1 {
				k = s
			} else {
				v = s
			}
			b = b[n:]
			continue
		}
		if n, err = skip(num, typ, b); err != nil {
			return fmt.Errorf("field %d: %w", num, err)
		}
		b = b[n:]
	}
	if m.params == nil {
		m.params = map[string]string{}
	}
	m.params[string(k)] = string(v)
	return nil
}

var (
	errFieldNumber = errors.New("field number out of range")
	errEndGroup    = errors.New("end-group tag outside a group")
)

// tag reads a field's tag, refusing what proto.Unmarshal refuses in a
// message: field number 0 or over 2^29-1, an end-group tag (a message's
// fields are never inside a group of its own).
func tag(b []byte) (protowire.Number, protowire.Type, int, error) {
	var num protowire.Number
	var typ protowire.Type
	n := 1
	if b[0] < 0x80 { // fields 1-15
		num, typ = protowire.Number(b[0]>>3), protowire.Type(b[0]&7)
		if num == 0 {
			return 0, 0, 0, errFieldNumber
		}
	} else {
		if num, typ, n = protowire.ConsumeTag(b); n < 0 {
			return 0, 0, 0, protowire.ParseError(n)
		}
		if num > protowire.MaxValidNumber {
			return 0, 0, 0, errFieldNumber
		}
	}
	if typ == protowire.EndGroupType {
		return 0, 0, 0, errEndGroup
	}
	return num, typ, n, nil
}

// skip steps over a field that is not read, checking it as
// proto.Unmarshal checks an unknown field (groups to their end).
func skip(num protowire.Number, typ protowire.Type, b []byte) (int, error) {
	n := protowire.ConsumeFieldValue(num, typ, b)
	if n < 0 {
		return 0, protowire.ParseError(n)
	}
	return n, nil
}

// packed32 appends a packed run of varints, each truncated to 32 bits as
// a uint32 field's are.
func packed32(dst []uint32, b []byte) ([]uint32, error) {
	dst = slices.Grow(dst, varints(b))
	for len(b) > 0 {
		var v uint64
		n := 1
		if b[0] < 0x80 {
			v = uint64(b[0])
		} else if v, n = protowire.ConsumeVarint(b); n < 0 {
			return dst, protowire.ParseError(n)
		}
		dst = append(dst, uint32(v))
		b = b[n:]
	}
	return dst, nil
}

// packed64 appends a packed run of varints.
func packed64(dst []uint64, b []byte) ([]uint64, error) {
	dst = slices.Grow(dst, varints(b))
	for len(b) > 0 {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return dst, protowire.ParseError(n)
		}
		dst = append(dst, v)
		b = b[n:]
	}
	return dst, nil
}

// varints counts the varints of a packed run: one per byte under 0x80.
func varints(b []byte) int {
	n := 0
	for _, c := range b {
		if c < 0x80 {
			n++
		}
	}
	return n
}

// packedDoubles appends a packed run of doubles.
func packedDoubles(dst []float64, b []byte) ([]float64, error) {
	if len(b)%8 != 0 {
		return dst, fmt.Errorf("%d bytes of packed doubles", len(b))
	}
	dst = slices.Grow(dst, len(b)/8)
	for ; len(b) > 0; b = b[8:] {
		v, _ := protowire.ConsumeFixed64(b)
		dst = append(dst, math.Float64frombits(v))
	}
	return dst, nil
}
