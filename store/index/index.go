// Package index is the compact, exact encoding of a profile's samples that
// the Postgres index stores: one row per (event, second) holding the
// heatmap cells at the default 50 rows (idle and busy apart) and every
// sample's offset within the second and stack, so any range is answered
// exactly without the raw file. It is pure: no I/O.
//
// Offsets are sorted and stored packed (offsets.go) in the profile's time
// unit (unit.go: 1 µs when every timestamp is a whole microsecond, as perf
// prints them; the grid of a double's seconds when every time is one, as
// nflxprofile's are; else 1 ns); stacks as uvarint indexes into the
// profile's stack list; periods only when they vary within the event;
// where each sample ran (process, thread, CPU) as uvarint indexes into the
// profile's list of the distinct ones, only when there are several. The
// store may keep a busy row's offsets and stacks as zstd frames (zstd.go).
package index

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/fleetscope/fleetscope"
)

// Rows is the row count whose cells are stored precomputed.
const Rows = fleetscope.DefaultRows

// Second is one stored row.
type Second struct {
	Event     fleetscope.EventID
	Second    int64 // relative to the profile's start second
	Samples   int32
	Cells     []int32 // non-idle counts per row (Rows of them)
	IdleCells []int32 // idle counts per row
	Offsets   []byte
	// VarintOffsets: Offsets are uvarint steps, as rows were stored
	// before packed offsets (offsets.go); new rows are packed.
	VarintOffsets bool
	Stacks        []byte
	Periods       []byte // nil when every sample has the event's period
	Threads       []byte // nil when the profile has one thread (Index.Threads)
}

// SecondsBytes is the memory rows hold (for caches).
func SecondsBytes(rows []Second) int64 {
	n := int64(64 + 120*len(rows))
	for i := range rows {
		r := &rows[i]
		n += int64(4*(len(r.Cells)+len(r.IdleCells)) + len(r.Offsets) + len(r.Stacks) + len(r.Periods) + len(r.Threads))
	}
	return n
}

// Event is one event's summary.
type Event struct {
	Name     string `json:"name"`
	Samples  int64  `json:"samples"`
	Period   uint64 `json:"period"`             // the period all samples share; see Second.Periods
	Weighted bool   `json:"weighted,omitempty"` // each sample counts as its period (see fleetscope.EventInfo)
}

// Index is a profile's encoded samples.
type Index struct {
	StartSecond   int64 // floor of the earliest timestamp, seconds on the profile clock
	LastNanos     int64 // latest timestamp, ns on the profile clock
	TimeUnitNanos int64
	Timed         bool // false when the profiler recorded no per-sample times
	Events        []Event
	Seconds       []Second
	// Threads are the distinct (process, thread, CPU) of the samples, in
	// the order first seen; Second.Threads index them.
	Threads []fleetscope.Thread
}

type raw struct {
	t      int64
	stack  fleetscope.StackID
	thread int32
	period uint64
}

// Builder collects samples (in any order) and encodes them. It keeps 24
// bytes a sample, in fixed blocks (no copy as it grows), and sorts only
// events whose samples did not arrive in time order (perf script's do).
type Builder struct {
	events   []*samples
	threads  map[fleetscope.Thread]int32
	order    []fleetscope.Thread
	untimed  int
	timed    int
	allMicro bool
	grid     int // the coarsest grid of 2^-grid s every offset is on (unit.go)
	n        int
}

// samples holds one event's samples as they arrived.
type samples struct {
	blocks   [][]raw
	n        int
	sorted   bool // so far in time order
	lastTime int64
}

const blockLen = 1 << 14

func (e *samples) add(r raw) {
	if k := len(e.blocks); k == 0 || len(e.blocks[k-1]) == blockLen {
		e.blocks = append(e.blocks, make([]raw, 0, blockLen))
	}
	blk := &e.blocks[len(e.blocks)-1]
	*blk = append(*blk, r)
	if e.n > 0 && r.t < e.lastTime {
		e.sorted = false
	}
	e.lastTime = r.t
	e.n++
}

// ordered returns the event's samples in time order (stable): the blocks
// as they are when they arrived in order, else one sorted copy.
func (e *samples) ordered(timed bool) [][]raw {
	if !timed || e.sorted {
		return e.blocks
	}
	all := make([]raw, 0, e.n)
	for _, blk := range e.blocks {
		all = append(all, blk...)
	}
	e.blocks = nil
	slices.SortStableFunc(all, func(a, b raw) int { return cmp.Compare(a.t, b.t) })
	return [][]raw{all}
}

// NewBuilder returns an empty Builder.
func NewBuilder() *Builder {
	return &Builder{allMicro: true, grid: 1, threads: map[fleetscope.Thread]int32{}}
}

// Add takes a batch of samples; their stack ids are the profile's own. It
// returns EINVALID for a timestamp outside the accepted range
// (fleetscope.CheckTime), naming the sample.
func (b *Builder) Add(batch []fleetscope.Sample) error {
	for _, s := range batch {
		b.n++
		for int(s.Event) >= len(b.events) {
			b.events = append(b.events, &samples{sorted: true})
		}
		if s.TimeNanos == fleetscope.NoTime {
			b.untimed++
		} else {
			if err := fleetscope.CheckTime(s.TimeNanos); err != nil {
				return fleetscope.Errorf(fleetscope.EINVALID, "sample %d: %s", b.n, err.Error())
			}
			b.timed++
			if s.TimeNanos%1000 != 0 {
				b.allMicro = false
			}
			// The coarsest grid so far: a point of one grid is a point
			// of every finer one, so the exponent only grows.
			for off := s.TimeNanos - fleetscope.FloorSecond(s.TimeNanos)*1e9; b.grid < gridNone && !onGrid(off, b.grid); {
				b.grid++
			}
		}
		th, ok := b.threads[s.Thread()]
		if !ok {
			th = int32(len(b.order))
			b.threads[s.Thread()] = th
			b.order = append(b.order, s.Thread())
		}
		b.events[s.Event].add(raw{t: s.TimeNanos, stack: s.Stack, thread: th, period: s.Period})
	}
	return nil
}

// Build encodes what was added. idle reports whether a stack is idle; names
// are the event names by id; weighted, if set, tells the events whose
// samples count as their period (heatmap cells count so).
func (b *Builder) Build(idle func(fleetscope.StackID) bool, names []string, weighted func(fleetscope.EventID) bool) (*Index, error) {
	if b.timed > 0 && b.untimed > 0 {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "%d samples have timestamps and %d do not: mixed profiles are not supported", b.timed, b.untimed)
	}
	ix := &Index{Timed: b.untimed == 0 && b.timed > 0, TimeUnitNanos: unitOf(b.allMicro, b.grid), Threads: b.order}
	first := true
	for _, ev := range b.events {
		for _, blk := range ev.blocks {
			for _, r := range blk {
				if r.t == fleetscope.NoTime {
					continue
				}
				if first || r.t < ix.StartSecond {
					ix.StartSecond = r.t
				}
				if first || r.t > ix.LastNanos {
					ix.LastNanos = r.t
				}
				first = false
			}
		}
	}
	ix.StartSecond = fleetscope.FloorSecond(ix.StartSecond)
	var run []raw // one second's samples, when they span blocks
	for e, ev := range b.events {
		meta := Event{Name: names[e], Samples: int64(ev.n), Weighted: weighted != nil && weighted(fleetscope.EventID(e))}
		if ev.n > 0 {
			meta.Period = ev.blocks[0][0].period
		}
		varies := false
		for _, blk := range ev.blocks {
			for _, r := range blk {
				varies = varies || r.period != meta.Period
			}
		}
		// Cut the time-ordered samples into seconds (all of them in one
		// "second" when untimed).
		sec := func(r raw) int64 {
			if ix.Timed {
				return fleetscope.FloorSecond(r.t)
			}
			return 0
		}
		blocks := ev.ordered(ix.Timed)
		run = run[:0]
		flush := func() {
			if len(run) > 0 {
				ix.Seconds = append(ix.Seconds, encode(fleetscope.EventID(e), sec(run[0]), run, ix, varies, meta.Weighted, idle))
				run = run[:0]
			}
		}
		for _, blk := range blocks {
			for _, r := range blk {
				if len(run) > 0 && sec(r) != sec(run[0]) {
					flush()
				}
				run = append(run, r)
			}
		}
		flush()
		ev.blocks = nil // encoded: let the raw samples go
		ix.Events = append(ix.Events, meta)
	}
	return ix, nil
}

func encode(e fleetscope.EventID, sec int64, rs []raw, ix *Index, varies, weighted bool, idle func(fleetscope.StackID) bool) Second {
	s := Second{Event: e, Samples: int32(len(rs)), Cells: make([]int32, Rows), IdleCells: make([]int32, Rows)}
	if ix.Timed {
		s.Second = sec - ix.StartSecond
	}
	us := make([]uint64, 0, len(rs))
	for _, r := range rs {
		off := int64(0)
		if ix.Timed {
			off = r.t - sec*1e9
		}
		row := fleetscope.Row(off, Rows)
		n := int32(1)
		if weighted {
			n = int32(min(r.period, math.MaxInt32))
		}
		if idle(r.stack) {
			s.IdleCells[row] += n
		} else {
			s.Cells[row] += n
		}
		us = append(us, Units(ix.TimeUnitNanos, off))
		s.Stacks = binary.AppendUvarint(s.Stacks, uint64(r.stack))
		if varies {
			s.Periods = binary.AppendUvarint(s.Periods, r.period)
		}
		if len(ix.Threads) > 1 {
			s.Threads = binary.AppendUvarint(s.Threads, uint64(r.thread))
		}
	}
	s.Offsets = encodeOffsets(&s, us)
	return s
}

// encodeOffsets encodes row s's offsets us (its other columns encoded):
// packed, or as uvarint steps in a row Postgres compresses.
func encodeOffsets(s *Second, us []uint64) []byte {
	b := appendPacked(nil, us)
	if len(b)+len(s.Stacks)+len(s.Periods)+len(s.Threads) > compressedRow {
		b = appendSteps(nil, us)
	}
	return b
}

// compressedRow is about the size from which Postgres compresses a row's
// columns (TOAST_TUPLE_THRESHOLD, ~2 kB): uvarint steps then compress to
// less than packed bits do (their bytes repeat; packed bits hardly), so
// such rows keep them.
const compressedRow = 1800

// FillCells sets s.Cells, a row's busy samples per row of Rows within its
// second, from its offsets (and, for a weighted event, its periods) less
// its IdleCells, exactly as Build counted them: rows are stored without
// their busy cells (migration 21), which are the rest of their samples.
// unitNanos is the profile's time unit, period and weighted its event's.
// A corrupt row is an error.
func FillCells(s *Second, unitNanos int64, period uint64, weighted bool) error {
	if len(s.IdleCells) != Rows {
		return errCorrupt
	}
	cells := make([]int32, Rows)
	offs, periods := offsetsOf(s), s.Periods
	for range s.Samples {
		u, ok := offs.next()
		if !ok || u >= 1e9 {
			return errCorrupt
		}
		off := Nanos(unitNanos, u)
		if off < 0 || off >= 1e9 {
			return errCorrupt
		}
		n := int32(1)
		if weighted {
			p := period
			if periods != nil {
				var k int
				if p, k = binary.Uvarint(periods); k <= 0 {
					return errCorrupt
				}
				periods = periods[k:]
			}
			n = int32(min(p, math.MaxInt32))
		}
		cells[fleetscope.Row(off, Rows)] += n
	}
	for r := range cells {
		cells[r] -= s.IdleCells[r] // (sums wrap as Build's did)
	}
	s.Cells = cells
	return nil
}

// FillMissingCells fills the busy cells of the rows read without them
// (FillCells); rows that hold theirs (built, not read) keep them. A corrupt
// row is an error naming its second.
func FillMissingCells(rows []Second, unitNanos int64, period uint64, weighted bool) error {
	for i := range rows {
		if rows[i].Cells != nil {
			continue
		}
		if err := FillCells(&rows[i], unitNanos, period, weighted); err != nil {
			return fmt.Errorf("second %d: %w", rows[i].Second, err)
		}
	}
	return nil
}

// Decode appends the samples of a stored row to dst as samples on the
// profile clock, with the profile's own stack ids (below numStacks, the
// profile's count: a row naming another is corrupt); threads are the
// profile's (Index.Threads).
func Decode(dst []fleetscope.Sample, s *Second, startSecond, unitNanos int64, timed bool, period uint64, threads []fleetscope.Thread, numStacks int) ([]fleetscope.Sample, error) {
	offs, stacks, periods, ths := offsetsOf(s), s.Stacks, s.Periods, s.Threads
	base := (startSecond + s.Second) * 1e9
	only := fleetscope.Thread{PID: -1, TID: -1, CPU: -1}
	if len(threads) == 1 {
		only = threads[0]
	}
	for i := int32(0); i < s.Samples; i++ {
		u, ok := offs.next()
		if !ok {
			return dst, errCorrupt
		}
		st, n := binary.Uvarint(stacks)
		if n <= 0 || st >= uint64(numStacks) {
			return dst, errCorrupt
		}
		stacks = stacks[n:]
		p := period
		if periods != nil {
			if p, n = binary.Uvarint(periods); n <= 0 {
				return dst, errCorrupt
			}
			periods = periods[n:]
		}
		th := only
		if ths != nil {
			k, n := binary.Uvarint(ths)
			if n <= 0 || k >= uint64(len(threads)) {
				return dst, errCorrupt
			}
			ths, th = ths[n:], threads[k]
		}
		t := int64(fleetscope.NoTime)
		if timed {
			t = base + Nanos(unitNanos, u)
		}
		dst = append(dst, fleetscope.Sample{TimeNanos: t, Period: p, Stack: fleetscope.StackID(st), Event: s.Event, CPU: th.CPU, PID: th.PID, TID: th.TID})
	}
	return dst, nil
}

var errCorrupt = errors.New("index: corrupt second row")

// WallSecond is one second of a profile's samples of one event in absolute
// time (unix seconds), with the heatmap cells at Rows rows: what fleet
// heatmaps sum. Events are grouped by fleetscope.EventBase.
type WallSecond struct {
	Event     string // base name
	Second    int64  // unix second
	Samples   int32  // non-idle
	Idle      int32
	Cells     []int32 // non-idle per row
	IdleCells []int32
}

// WallSeconds places a profile's samples in absolute time: a sample at t on
// the profile clock is at t + shiftNanos unix ns. When the shift is a whole
// number of seconds the stored cells only move; otherwise every sample is
// decoded and binned again (an anchor rarely falls on a second). idle
// reports whether a stack is idle. Untimed profiles have none.
func WallSeconds(ix *Index, shiftNanos int64, idle func(fleetscope.StackID) bool) ([]WallSecond, error) {
	if !ix.Timed {
		return nil, nil
	}
	type key struct {
		event  string
		second int64
	}
	rows := map[key]*WallSecond{}
	var order []key
	at := func(k key) *WallSecond {
		w, ok := rows[k]
		if !ok {
			w = &WallSecond{Event: k.event, Second: k.second, Cells: make([]int32, Rows), IdleCells: make([]int32, Rows)}
			rows[k] = w
			order = append(order, k)
		}
		return w
	}
	var batch []fleetscope.Sample
	for i := range ix.Seconds {
		s := &ix.Seconds[i]
		base := fleetscope.EventBase(ix.Events[s.Event].Name)
		if shiftNanos%1e9 == 0 {
			w := at(key{base, ix.StartSecond + s.Second + shiftNanos/1e9})
			for r := range Rows {
				w.Cells[r] += s.Cells[r]
				w.IdleCells[r] += s.IdleCells[r]
				w.Samples += s.Cells[r]
				w.Idle += s.IdleCells[r]
			}
			continue
		}
		var err error
		batch, err = Decode(batch[:0], s, ix.StartSecond, ix.TimeUnitNanos, true, ix.Events[s.Event].Period, ix.Threads, math.MaxInt) // rows just built
		if err != nil {
			return nil, err
		}
		n := int32(1)
		for _, smp := range batch {
			if ix.Events[s.Event].Weighted {
				n = int32(min(smp.Period, math.MaxInt32))
			}
			t := smp.TimeNanos + shiftNanos
			sec := fleetscope.FloorSecond(t)
			w := at(key{base, sec})
			row := fleetscope.Row(t-sec*1e9, Rows)
			if idle(smp.Stack) {
				w.IdleCells[row] += n
				w.Idle += n
			} else {
				w.Cells[row] += n
				w.Samples += n
			}
		}
	}
	out := make([]WallSecond, len(order))
	for i, k := range order {
		out[i] = *rows[k]
	}
	slices.SortFunc(out, func(a, b WallSecond) int {
		if c := strings.Compare(a.Event, b.Event); c != 0 {
			return c
		}
		return cmp.Compare(a.Second, b.Second)
	})
	return out, nil
}

// FleetRow is a stored WallSecond of one profile (fleet queries).
type FleetRow struct {
	ProfileID string
	Host      string
	WallSecond
}

// Keyer computes tenant dictionary keys. A frame's key is its id in a
// tenant's dictionary: a hash of its kind and name; a stack's key hashes
// its frame keys, root first. The same frame or stack has the same key in
// every profile, so stacks of different profiles merge by key; collisions
// are detected where keys are stored, never merged. A Keyer hashes in a
// buffer it keeps: one sha256.Sum256 per key (the same digest as writing
// the parts to a sha256.New() in turn, at a fraction of the cost) and no
// allocation once the buffer has grown, for loops over a whole dictionary.
type Keyer struct{ buf []byte }

// Frame returns a frame's key.
func (k *Keyer) Frame(f fleetscope.Frame) int64 {
	k.buf = append(append(k.buf[:0], byte(f.Kind)), f.Name...)
	return k.sum()
}

// Stack returns the key of a stack of frame keys (root first).
func (k *Keyer) Stack(frames []int64) int64 {
	k.buf = k.buf[:0]
	for _, f := range frames {
		k.buf = binary.LittleEndian.AppendUint64(k.buf, uint64(f))
	}
	return k.sum()
}

func (k *Keyer) sum() int64 {
	sum := sha256.Sum256(k.buf)
	return int64(binary.LittleEndian.Uint64(sum[:]))
}

// StackKeys returns the key of each of d's stacks, by stack id.
func StackKeys(d *fleetscope.Dict) []int64 {
	var k Keyer
	frameKeys := make([]int64, d.NumFrames())
	for i := range frameKeys {
		frameKeys[i] = k.Frame(d.FrameAt(fleetscope.FrameID(i)))
	}
	out := make([]int64, d.NumStacks())
	var buf []int64
	for i := range out {
		buf = buf[:0]
		for _, f := range d.StackFrames(fleetscope.StackID(i)) {
			buf = append(buf, frameKeys[f])
		}
		out[i] = k.Stack(buf)
	}
	return out
}

// Counter counts the stored samples of one event of a profile by stack.
type Counter struct {
	UnitNanos int64
	Timed     bool
	Period    uint64 // the event's, for rows that store none
	// ByPeriod counts each sample as its period (for a weighted event, or
	// when asked), else as 1.
	ByPeriod bool
	// Range keeps samples whose time, in ns relative to the profile's
	// start second, lies in it.
	Range fleetscope.Range
	// Threads, when set, keeps samples whose thread (an index of
	// Index.Threads) it marks true.
	Threads []bool
	// Outside keeps the samples outside Range instead (a timed profile's
	// rest, for comparing a range with it).
	Outside bool
}

// Count adds to counts[stack] the value of each sample of row s the
// counter keeps. A row wholly inside the range (and every row of an
// untimed profile) is counted from its stacks alone, without decoding the
// times. counts must hold every stack id the row uses; a corrupt row is an
// error.
func (c *Counter) Count(s *Second, counts []uint64) error {
	return c.count(s, counts, nil)
}

// CountWeights is Count, and adds to weights[stack] each kept sample's
// period as well (whatever ByPeriod says): a stack bucket keeps both.
func (c *Counter) CountWeights(s *Second, counts, weights []uint64) error {
	return c.count(s, counts, weights)
}

func (c *Counter) count(s *Second, counts, weights []uint64) error {
	base := s.Second * 1e9
	inside := c.Range.Start <= base && base+1e9 <= c.Range.End
	outside := base+1e9 <= c.Range.Start || c.Range.End <= base
	if c.Timed && c.Outside && inside {
		return nil // every sample of the row is in the range
	}
	whole := !c.Timed || inside && !c.Outside || outside && c.Outside
	offs, stacks, periods, ths := offsetsOf(s), s.Stacks, s.Periods, s.Threads
	keepAll, none := ThreadsKept(c.Threads, ths != nil)
	if none {
		return nil
	}
	if whole && keepAll && !c.ByPeriod && weights == nil {
		return countStacks(stacks, s.Samples, counts)
	}
	for i := int32(0); i < s.Samples; i++ {
		in := whole
		if !whole {
			u, ok := offs.next()
			if !ok {
				return errCorrupt
			}
			in = c.Range.Contains(base+Nanos(c.UnitNanos, u)) != c.Outside
		}
		st, n := stackAt(stacks)
		if n <= 0 {
			return errCorrupt
		}
		stacks = stacks[n:]
		v, p := uint64(1), c.Period
		if c.ByPeriod || weights != nil {
			if periods != nil {
				var n int
				if p, n = binary.Uvarint(periods); n <= 0 {
					return errCorrupt
				}
				periods = periods[n:]
			}
			if c.ByPeriod {
				v = p
			}
		}
		if !keepAll {
			th, n := binary.Uvarint(ths)
			if n <= 0 || th >= uint64(len(c.Threads)) {
				return errCorrupt
			}
			ths = ths[n:]
			in = in && c.Threads[th]
		}
		if in {
			if st >= uint64(len(counts)) || weights != nil && st >= uint64(len(weights)) {
				return errCorrupt
			}
			counts[st] += v
			if weights != nil {
				weights[st] += p
			}
		}
	}
	return nil
}

// stackAt decodes the uvarint stack id at the start of b and its length
// (<= 0: corrupt), the one- and two-byte ids (a profile's first 16,384
// stacks) inline.
func stackAt(b []byte) (uint64, int) {
	switch {
	case len(b) > 0 && b[0] < 0x80:
		return uint64(b[0]), 1
	case len(b) > 1 && b[1] < 0x80:
		return uint64(b[0]&0x7f) | uint64(b[1])<<7, 2
	}
	return binary.Uvarint(b)
}

// countStacks adds 1 to counts[stack] for each of the n stack ids in b: a
// row counted whole, as samples, whatever their threads (most of a merged
// flame graph's rows).
func countStacks(b []byte, n int32, counts []uint64) error {
	for ; n > 0; n-- {
		var st uint64
		switch { // stackAt, written out: it does not inline
		case len(b) > 0 && b[0] < 0x80:
			st, b = uint64(b[0]), b[1:]
		case len(b) > 1 && b[1] < 0x80:
			st, b = uint64(b[0]&0x7f)|uint64(b[1])<<7, b[2:]
		default:
			var k int
			if st, k = binary.Uvarint(b); k <= 0 {
				return errCorrupt
			}
			b = b[k:]
		}
		if st >= uint64(len(counts)) {
			return errCorrupt
		}
		counts[st]++
	}
	return nil
}

// SecondsRange names one event's rows of one profile, the relative seconds
// [From, To] (both included; From > To: all of them).
type SecondsRange struct {
	ProfileID string
	Event     int
	From, To  int64
}

// Inner says whether second lies strictly between the range's ends (every
// second does in a range of all of them). A fleet count asks for the
// seconds its window touches, so an inner row is wholly inside the window
// and counted from its stacks alone: the stores send inner rows without
// their offsets (a day's merge reads about half the bytes), and a row
// without offsets that had to be cut would fail as corrupt, not count
// wrong.
func (r SecondsRange) Inner(second int64) bool {
	return r.From > r.To || r.From < second && second < r.To
}

// ThreadsKept says how a thread filter (keep marks the kept threads, by
// index of Index.Threads; nil keeps all) applies to samples whose threads
// are stored or not: it keeps every sample (all), none, or looks each
// one's thread up. A one-thread profile stores no threads: the filter
// keeps all of it or nothing.
func ThreadsKept(keep []bool, stored bool) (all, none bool) {
	switch {
	case keep == nil:
		return true, false
	case !stored:
		one := len(keep) > 0 && keep[0]
		return one, !one
	}
	return false, false
}

// Cells adds the value of each sample of row s the counter keeps (Range and
// Outside aside: a heatmap takes whole seconds) to cells[r], r the sample's
// row of rows within its second; stacks, when set, keeps only the samples
// of the stacks it marks true. It is the heatmap's count without decoding
// samples. The row must be of a timed profile; a corrupt row is an error.
func (c *Counter) Cells(s *Second, rows int, stacks []bool, cells []int64) error {
	offs, sts, periods, ths := offsetsOf(s), s.Stacks, s.Periods, s.Threads
	keepAll, none := ThreadsKept(c.Threads, ths != nil)
	if none {
		return nil
	}
	for i := int32(0); i < s.Samples; i++ {
		u, ok := offs.next()
		if !ok {
			return errCorrupt
		}
		var st uint64
		var n int
		if b := sts; len(b) > 0 && b[0] < 0x80 { // one-byte uvarint: most stacks of a profile
			st, sts = uint64(b[0]), b[1:]
		} else if st, n = binary.Uvarint(sts); n > 0 {
			sts = sts[n:]
		} else {
			return errCorrupt
		}
		v := uint64(1)
		if c.ByPeriod {
			v = c.Period
			if periods != nil {
				if v, n = binary.Uvarint(periods); n <= 0 {
					return errCorrupt
				}
				periods = periods[n:]
			}
		}
		in := true
		if !keepAll {
			th, n := binary.Uvarint(ths)
			if n <= 0 || th >= uint64(len(c.Threads)) {
				return errCorrupt
			}
			ths = ths[n:]
			in = c.Threads[th]
		}
		if stacks != nil {
			if st >= uint64(len(stacks)) {
				return errCorrupt
			}
			in = in && stacks[st]
		}
		off := Nanos(c.UnitNanos, u)
		if off < 0 || off >= 1e9 {
			return errCorrupt
		}
		if in {
			cells[fleetscope.Row(off, rows)] += int64(min(v, math.MaxInt64))
		}
	}
	return nil
}

// Walk calls fn with each sample of row s, in stored order: its offset
// within the second in the profile's time unit, stack, thread (an index of
// Index.Threads; 0 when the row stores none) and period (the event's,
// period, when the row stores none). A corrupt row is an error.
func (s *Second) Walk(period uint64, fn func(offset, stack, thread, period uint64)) error {
	offs, sts, periods, ths := offsetsOf(s), s.Stacks, s.Periods, s.Threads
	for i := int32(0); i < s.Samples; i++ {
		u, ok := offs.next()
		st, n := binary.Uvarint(sts)
		if !ok || n <= 0 {
			return errCorrupt
		}
		sts = sts[n:]
		p, th := period, uint64(0)
		if periods != nil {
			var n int
			if p, n = binary.Uvarint(periods); n <= 0 {
				return errCorrupt
			}
			periods = periods[n:]
		}
		if ths != nil {
			var n int
			if th, n = binary.Uvarint(ths); n <= 0 {
				return errCorrupt
			}
			ths = ths[n:]
		}
		fn(u, st, th, p)
	}
	return nil
}

// Rollup widths: the stored rollups of a profile's wall seconds
// (fleet_tens, fleet_minutes), in seconds.
const (
	Tens    = 10
	Minutes = 60
)

// FloorTo rounds t down to a multiple of n (t may be negative): the first
// second of the slot of n seconds that second t is in, the same for
// nanoseconds.
func FloorTo(t, n int64) int64 {
	q := t / n
	if t%n != 0 && t < 0 {
		q--
	}
	return q * n
}

// Rollup sums a profile's wall seconds by unix slots of width seconds (the
// floor of each second to a multiple of width, below 0 too), per event:
// each row's Second is its slot's first. Rows come sorted by event, then
// slot.
func Rollup(secs []WallSecond, width int64) []WallSecond {
	type key struct {
		event string
		slot  int64
	}
	at := map[key]int{}
	var out []WallSecond
	for _, s := range secs {
		k := key{s.Event, FloorTo(s.Second, width)}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, WallSecond{Event: k.event, Second: k.slot, Cells: make([]int32, len(s.Cells)), IdleCells: make([]int32, len(s.IdleCells))})
		}
		m := &out[i]
		m.Samples += s.Samples
		m.Idle += s.Idle
		for r := range s.Cells {
			m.Cells[r] += s.Cells[r]
		}
		for r := range s.IdleCells {
			m.IdleCells[r] += s.IdleCells[r]
		}
	}
	slices.SortFunc(out, func(a, b WallSecond) int {
		return cmp.Or(cmp.Compare(a.Event, b.Event), cmp.Compare(a.Second, b.Second))
	})
	return out
}

// ColumnTotal is one host's stored totals of one event summed over a
// column of a fleet's grid (fleet host strips and timelines).
type ColumnTotal struct {
	Host          string
	Column        int64
	Samples, Idle int64
}

// Digest is the SHA-256 of a profile's rows, by event (every field of
// every row, each with its length; the offsets as uvarint steps however
// the row holds them, CanonicalOffsets): what the sample tier keeps of the rows
// it deletes, so that rows parsed again from the raw file are used only
// when they are exactly those.
func Digest(byEvent [][]Second) [32]byte {
	h := sha256.New()
	var b []byte
	put := func(p []byte) {
		b = binary.AppendUvarint(b[:0], uint64(len(p)))
		h.Write(b)
		h.Write(p)
	}
	cells := func(c []int32) {
		b = binary.AppendUvarint(b[:0], uint64(len(c)))
		for _, v := range c {
			b = binary.AppendVarint(b, int64(v))
		}
		h.Write(b)
	}
	for ev, rows := range byEvent {
		b = binary.AppendUvarint(binary.AppendUvarint(b[:0], uint64(ev)), uint64(len(rows)))
		h.Write(b)
		for i := range rows {
			r := &rows[i]
			b = binary.AppendVarint(binary.AppendVarint(b[:0], r.Second), int64(r.Samples))
			h.Write(b)
			cells(r.Cells)
			cells(r.IdleCells)
			if offs, ok := CanonicalOffsets(r); ok {
				put(offs)
			} else {
				put(r.Offsets) // corrupt: matches nothing built
			}
			put(r.Stacks)
			put(r.Periods)
			put(r.Threads)
		}
	}
	var sum [32]byte
	h.Sum(sum[:0])
	return sum
}

// ByEvent returns the index's rows by event, at least events of them: each
// event's rows in order of second, as Build writes them.
func (ix *Index) ByEvent(events int) [][]Second {
	out := make([][]Second, events)
	for _, sec := range ix.Seconds {
		for int(sec.Event) >= len(out) {
			out = append(out, nil)
		}
		out[sec.Event] = append(out[sec.Event], sec)
	}
	return out
}

// SecondsIn returns the rows, in order of second, of the seconds [from,
// to] (both included; from > to: all of them).
func SecondsIn(rows []Second, from, to int64) []Second {
	if from > to {
		return rows
	}
	lo := sort.Search(len(rows), func(i int) bool { return rows[i].Second >= from })
	hi := sort.Search(len(rows), func(i int) bool { return rows[i].Second > to })
	return rows[lo:hi]
}
