package fleetscope

import (
	"encoding/binary"
	"math"
	"slices"
	"strings"
)

// FrameID, StackID and EventID index a Dict.
type (
	FrameID uint32
	StackID uint32
	EventID uint16
)

// FrameKind records what stackcollapse-perf.pl's annotations would say of a
// frame's module, so flame graphs can add _[k] and _[j] on request.
type FrameKind uint8

const (
	KindKernel FrameKind = 1 << iota // kernel module: [kernel.kallsyms], vmlinux
	KindJIT                          // JIT map: /tmp/perf-PID.map
)

// Frame is one folded frame: a function name tidied exactly as
// stackcollapse-perf.pl tidies it (offsets stripped, [unknown] replaced by the
// module, inlined callees suffixed _[i]). The root frame of every stack is the
// process name.
type Frame struct {
	Name string
	Kind FrameKind
}

// NoTime is Sample.TimeNanos for a sample whose profiler recorded no time.
const NoTime = math.MinInt64

// Sample is one profiler sample. Its stack lives in the profile's Dict.
type Sample struct {
	TimeNanos int64  // as recorded: boot-relative or epoch, in ns; NoTime if absent
	Period    uint64 // the event period (1 when the profiler gave none)
	Stack     StackID
	CPU       int32 // -1 when not recorded
	PID, TID  int32 // -1 when not recorded or not resolved
	Event     EventID
}

// Thread is where a sample ran: process, thread and CPU (-1: not recorded).
type Thread struct{ PID, TID, CPU int32 }

// Thread returns where s ran.
func (s *Sample) Thread() Thread { return Thread{s.PID, s.TID, s.CPU} }

// Dict holds a profile's deduplicated frames, stacks and event names. A
// stack is a sequence of frames from the root (the process) to the leaf.
// It is not safe for concurrent mutation, and Frame and Stack may mutate
// it even when they find what they look up (they index what AddFrame and
// AddStack added): goroutines sharing a Dict read it with FrameAt,
// StackFrames, Idle and the other accessors.
//
// Its lookup indexes are built when first needed: entries added with
// AddFrame and AddStack are indexed by the next Frame or Stack call, so a
// parser that knows its entries are new (the perf parser's own dictionary
// made them unique) pays no hashing for a profile nothing looks up in.
type Dict struct {
	frames     []Frame
	frameIndex map[Frame]FrameID // frames[:framesIndexed]
	stackFrame []FrameID         // all stacks' frames, back to back
	stacks     []stackEntry
	stackIndex map[string]StackID // stacks[:stacksIndexed], by stackKey
	events     []string
	eventIndex map[string]EventID
	eventsFull bool
	key        []byte

	framesIndexed, stacksIndexed int
}

type stackEntry struct {
	off, n uint32
	idle   bool
}

// NewDict returns an empty dictionary.
func NewDict() *Dict {
	return &Dict{
		frameIndex: make(map[Frame]FrameID),
		stackIndex: make(map[string]StackID),
		eventIndex: make(map[string]EventID),
	}
}

// Grow makes room for about frames more frames and stacks more stacks:
// hints, so that a parser that knows its input's size builds the
// dictionary's arrays and stack index once instead of growing them.
func (d *Dict) Grow(frames, stacks int) {
	d.frames = slices.Grow(d.frames, max(frames, 0))
	d.stacks = slices.Grow(d.stacks, max(stacks, 0))
	if len(d.stackIndex) == 0 && stacks > 0 {
		d.stackIndex = make(map[string]StackID, stacks)
	}
}

// Frame interns f and returns its id.
func (d *Dict) Frame(f Frame) FrameID {
	for ; d.framesIndexed < len(d.frames); d.framesIndexed++ {
		d.frameIndex[d.frames[d.framesIndexed]] = FrameID(d.framesIndexed)
	}
	if id, ok := d.frameIndex[f]; ok {
		return id
	}
	id := d.AddFrame(f)
	d.frameIndex[f] = id
	d.framesIndexed++
	return id
}

// AddFrame adds f, which the caller knows is not in d, without looking it
// up, and returns its id. (A frame added twice would have two ids.)
func (d *Dict) AddFrame(f Frame) FrameID {
	d.frames = append(d.frames, f)
	return FrameID(len(d.frames) - 1)
}

// Stack interns the stack made of frames (root first) and returns its id.
func (d *Dict) Stack(frames []FrameID) StackID {
	for ; d.stacksIndexed < len(d.stacks); d.stacksIndexed++ {
		d.stackIndex[string(d.stackKey(d.StackFrames(StackID(d.stacksIndexed))))] = StackID(d.stacksIndexed)
	}
	key := d.stackKey(frames)
	if id, ok := d.stackIndex[string(key)]; ok {
		return id
	}
	id := d.AddStack(frames)
	d.stackIndex[string(key)] = id
	d.stacksIndexed++
	return id
}

// AddStack adds the stack made of frames, which the caller knows is not in
// d, without looking it up, and returns its id. (A stack added twice would
// have two ids.)
func (d *Dict) AddStack(frames []FrameID) StackID {
	id := StackID(len(d.stacks))
	d.stacks = append(d.stacks, stackEntry{off: uint32(len(d.stackFrame)), n: uint32(len(frames)), idle: d.idle(frames)})
	d.stackFrame = append(d.stackFrame, frames...)
	return id
}

// Span is where a stack's frames are in a slice of frame ids: [Off, Off+N).
type Span struct{ Off, N uint32 }

// AddStacks adds, in order, the stack frames[s.Off : s.Off+s.N] of each s in
// spans, without looking them up (as AddStack). A dictionary without stacks
// takes frames over instead of copying it: the caller must not change it.
func (d *Dict) AddStacks(frames []FrameID, spans []Span) {
	base := uint32(len(d.stackFrame))
	if base == 0 {
		d.stackFrame = frames
	} else {
		d.stackFrame = append(d.stackFrame, frames...)
	}
	d.stacks = slices.Grow(d.stacks, len(spans))
	for _, s := range spans {
		d.stacks = append(d.stacks, stackEntry{off: base + s.Off, n: s.N, idle: d.idle(frames[s.Off : s.Off+s.N])})
	}
}

// stackKey writes frames' ids into d.key: a stack's key in stackIndex.
func (d *Dict) stackKey(frames []FrameID) []byte {
	key := d.key[:0]
	for _, f := range frames {
		key = binary.LittleEndian.AppendUint32(key, uint32(f))
	}
	d.key = key
	return key
}

// MaxEvents is how many event names a dictionary holds: EventID's range.
const MaxEvents = 1 << 16

// Event interns an event name. Past MaxEvents names it returns the last
// id and marks the dictionary full (EventsFull): ids never wrap.
func (d *Dict) Event(name string) EventID {
	if id, ok := d.eventIndex[name]; ok {
		return id
	}
	if len(d.events) >= MaxEvents {
		d.eventsFull = true
		return MaxEvents - 1
	}
	id := EventID(len(d.events))
	d.events = append(d.events, name)
	d.eventIndex[name] = id
	return id
}

// EventsFull reports whether more than MaxEvents names were interned (the
// samples of the extra ones are misattributed: refuse such a profile).
func (d *Dict) EventsFull() bool { return d.eventsFull }

// FrameAt returns the frame with id.
func (d *Dict) FrameAt(id FrameID) Frame { return d.frames[id] }

// StackFrames returns the frames of stack id, root first. The slice must not
// be modified.
func (d *Dict) StackFrames(id StackID) []FrameID {
	s := d.stacks[id]
	return d.stackFrame[s.off : s.off+s.n : s.off+s.n]
}

// Idle reports whether stack id is idle: the kernel's idle loop, or V8's
// (idle) or (program) leaf (the rule isIdle states).
func (d *Dict) Idle(id StackID) bool { return d.stacks[id].idle }

// Events returns the event names by id.
func (d *Dict) Events() []string { return d.events }

// NumFrames and NumStacks report the dictionary's size.
func (d *Dict) NumFrames() int { return len(d.frames) }
func (d *Dict) NumStacks() int { return len(d.stacks) }

// EventID returns the id of an event name.
func (d *Dict) EventID(name string) (EventID, bool) {
	id, ok := d.eventIndex[name]
	return id, ok
}

func (d *Dict) idle(frames []FrameID) bool {
	if len(frames) == 0 {
		return false
	}
	return isIdle(d.frames[frames[0]].Name, len(frames)-1, func(i int) string { return d.frames[frames[1+i]].Name })
}

// isIdle reports whether a sample of process whose n frames below the
// process are named by frame(i), root first, is idle: its process is the
// kernel's swapper and one of its frames is an idle loop (cpu_idle,
// cpuidle_enter*, do_idle, default_idle*, native_safe_halt, mwait_idle*,
// intel_idle*, acpi_idle*, xen_hypercall_sched_op); or, for V8 and Chrome
// profiles, its leaf is the (idle) or (program) pseudo-frame.
func isIdle(process string, n int, frame func(i int) string) bool {
	if process != "swapper" {
		leaf := ""
		if n > 0 {
			leaf = frame(n - 1)
		}
		return leaf == "(idle)" || leaf == "(program)"
	}
	for i := range n {
		if isIdleFrame(frame(i)) {
			return true
		}
	}
	return false
}

func isIdleFrame(f string) bool {
	switch f {
	case "cpu_idle", "do_idle", "native_safe_halt", "xen_hypercall_sched_op":
		return true
	}
	for _, p := range []string{"cpuidle_enter", "default_idle", "mwait_idle", "intel_idle", "acpi_idle"} {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	return false
}

// Profile is everything about a parsed profile except its samples, which
// parsers stream to their caller.
type Profile struct {
	Format   string            // "perf", ...
	Meta     map[string]string // header facts, e.g. hostname, cmdline
	Dict     *Dict
	Samples  int   // samples delivered
	Untimed  int   // of which without a timestamp
	MinNanos int64 // earliest timestamp (valid when Samples > Untimed)
	MaxNanos int64 // latest timestamp
	Warnings []string
	// Weighted marks, by event id, events whose samples are pre-aggregated
	// records (pprof, weighted folded text): each counts as its period (its
	// value), not as one sample.
	Weighted []bool
}

// SetWeighted marks event ev as weighted.
func (p *Profile) SetWeighted(ev EventID) {
	for int(ev) >= len(p.Weighted) {
		p.Weighted = append(p.Weighted, false)
	}
	p.Weighted[ev] = true
}

// IsWeighted reports whether event ev is weighted.
func (p *Profile) IsWeighted(ev EventID) bool { return int(ev) < len(p.Weighted) && p.Weighted[ev] }

// SizeBytes estimates the memory the dictionary holds (for caches).
func (d *Dict) SizeBytes() int64 {
	n := int64(cap(d.stackFrame))*4 + int64(len(d.stacks))*12
	for _, f := range d.frames {
		n += int64(len(f.Name)) + 24
	}
	// Index maps: an entry, its key and bucket overhead, about 48 bytes
	// beyond the key's own bytes (a stack's key is 4 bytes per frame).
	n += int64(len(d.frameIndex))*48 + int64(len(d.stackIndex))*48
	for _, s := range d.stacks[:d.stacksIndexed] {
		n += int64(s.n) * 4
	}
	return n
}
