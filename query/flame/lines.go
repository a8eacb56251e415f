package flame

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Lines is a flame graph as its folded lines, "frame;frame;... value", in
// the order WriteFolded writes them (sorted bytewise), each line given by
// what it adds to the line before it: line i keeps the first Shared[i]
// frames of line i-1's stack (0 for the first line) and adds the next
// Added[i] frames, whose names are Names[f] for f in Frame, all lines'
// added frames back to back; its value is Value[i]. Sorted lines share
// long prefixes: the benchmark profile's 19,086 lines (15 MB of text) add
// 141k frames, so this is the folded text without its repetition, and
// writing it costs no more than copying the text out.
type Lines struct {
	Names  []string
	Shared []uint32
	Added  []uint32
	Frame  []uint32
	Value  []uint64
}

// orderText puts the layout's stacks in the order of their folded text
// (names joined by ';', compared bytewise). That is name order but where a
// name begins another and goes on with a byte below ';' ("f;g" sorts after
// "f.func1"), or a name holds ';'. Stacks of the same text (and annotations
// that merge frames) make one line.
func (l *Layout) orderText(st *stopper) {
	pos := make([]uint32, len(l.order))
	for i := range pos {
		pos[i] = uint32(i)
	}
	// In name order already but for those few: sorting it again is quick.
	slices.SortStableFunc(pos, func(x, y uint32) int {
		st.tick(1)
		return l.compareText(l.stack(x), l.stack(y))
	})
	l.text = pos
	l.textOff = make([]uint32, 0, len(pos)+1)
	l.textLCP = make([]uint32, 0, len(pos))
	var prev []uint32
	for i, p := range pos {
		cur := l.stack(p)
		st.tick(1)
		if i > 0 && l.compareText(prev, cur) == 0 {
			continue // the same text: the line before's
		}
		l.textOff = append(l.textOff, uint32(i))
		l.textLCP = append(l.textLCP, commonPrefix(prev, cur))
		prev = cur
	}
	l.textOff = append(l.textOff, uint32(len(pos)))
}

// stack is the names (as ranks) of the stack at position p of the order.
func (l *Layout) stack(p uint32) []uint32 { return l.seq[l.seqOff[p]:l.seqOff[p+1]] }

// compareText compares two stacks' folded texts bytewise: frame by frame
// while whole names agree or differ before one ends, byte by byte from a
// name that begins the other's.
func (l *Layout) compareText(x, y []uint32) int {
	k := 0
	for ; k < len(x) && k < len(y); k++ {
		if x[k] == y[k] {
			continue
		}
		a, b := l.names[x[k]], l.names[y[k]]
		m := min(len(a), len(b))
		if c := strings.Compare(a[:m], b[:m]); c != 0 {
			return c
		}
		break
	}
	if k == len(x) || k == len(y) { // one stack is the other's first frames
		return len(x) - len(y)
	}
	cx, cy := textCursor{names: l.names, seq: x[k:]}, textCursor{names: l.names, seq: y[k:]}
	for {
		a, b := cx.next(), cy.next()
		if a != b || a < 0 {
			return a - b
		}
	}
}

// textCursor reads the text of names joined by ';' byte by byte.
type textCursor struct {
	names []string
	seq   []uint32
	k, i  int // the byte i of name k is next
}

// next returns the next byte, or -1 after the last.
func (c *textCursor) next() int {
	for c.k < len(c.seq) {
		if n := c.names[c.seq[c.k]]; c.i < len(n) {
			c.i++
			return int(n[c.i-1])
		}
		c.k, c.i = c.k+1, 0
		if c.k < len(c.seq) {
			return ';'
		}
	}
	return -1
}

// Lines returns the folded lines of counts c: a line per stack text with a
// value, the folded text of the tree Flat(c) (a stack without frames has
// none, as the tree's root has none), from the order of texts kept with
// the layout. No tree is built: a whole profile's lines take two passes
// over its stacks, the first for each line's value and the sizes.
func (l *Layout) Lines(c *Counts) *Lines {
	nLines := len(l.textOff) - 1
	value := make([]uint64, nLines)
	lines, frames := 0, 0
	shared := uint32(0) // frames the next line shares with the last one kept
	for j := range nLines {
		shared = min(shared, l.textLCP[j])
		first, end := l.textOff[j], l.textOff[j+1]
		for _, p := range l.text[first:end] {
			value[j] += c.value(l.order[p])
		}
		if n := uint32(len(l.stack(l.text[first]))); value[j] != 0 && n > 0 {
			lines++
			frames += int(n - shared)
			shared = n
		}
	}
	out := &Lines{Shared: make([]uint32, 0, lines), Added: make([]uint32, 0, lines), Frame: make([]uint32, 0, frames), Value: make([]uint64, 0, lines)}
	used := l.usedNames()
	shared = 0
	for j, v := range value {
		shared = min(shared, l.textLCP[j])
		seq := l.stack(l.text[l.textOff[j]])
		if v == 0 || len(seq) == 0 {
			continue
		}
		out.Shared = append(out.Shared, shared)
		out.Added = append(out.Added, uint32(len(seq))-shared)
		for _, r := range seq[shared:] {
			out.Frame = append(out.Frame, used.of(r))
		}
		out.Value = append(out.Value, v)
		shared = uint32(len(seq))
	}
	out.Names = used.names
	return out
}

// Check reports whether ls is well formed: as many of Shared, Added and
// Value, each line keeping no more frames than the line before has and
// adding at least one if it keeps none, Added adding up to Frame's length
// and each frame naming a name.
func (ls *Lines) Check() error {
	n := len(ls.Value)
	if len(ls.Shared) != n || len(ls.Added) != n {
		return errors.New("shared, added and value of different lengths")
	}
	depth, frames := uint64(0), uint64(0)
	for i := range n {
		if uint64(ls.Shared[i]) > depth || ls.Shared[i] == 0 && ls.Added[i] == 0 {
			return fmt.Errorf("line %d: keeps %d frames of %d and adds %d", i, ls.Shared[i], depth, ls.Added[i])
		}
		depth = uint64(ls.Shared[i]) + uint64(ls.Added[i])
		frames += uint64(ls.Added[i])
	}
	if frames != uint64(len(ls.Frame)) {
		return fmt.Errorf("lines add %d frames, not the %d given", frames, len(ls.Frame))
	}
	for i, f := range ls.Frame {
		if int(f) >= len(ls.Names) {
			return fmt.Errorf("frame %d: name %d of %d", i, f, len(ls.Names))
		}
	}
	return nil
}

// ErrMalformed is the error of lines (or a tree) not well formed.
var ErrMalformed = errors.New("flame: malformed")

// WriteFolded writes the lines as text, in large writes; lines Check
// refuses are an error (ErrMalformed), before anything is written.
func (ls *Lines) WriteFolded(w io.Writer) error {
	if err := ls.Check(); err != nil {
		return fmt.Errorf("%w lines: %w", ErrMalformed, err)
	}
	out := make([]byte, 0, 256<<10)
	var line []byte       // the current line's stack text
	ends := []int{0}      // ends[d]: its length to d frames
	frames := ls.Frame[:] // the frames not yet added
	for i, v := range ls.Value {
		keep := ls.Shared[i]
		line, ends = line[:ends[keep]], ends[:keep+1]
		for _, f := range frames[:ls.Added[i]] {
			if len(ends) > 1 {
				line = append(line, ';')
			}
			line = append(line, ls.Names[f]...)
			ends = append(ends, len(line))
		}
		frames = frames[ls.Added[i]:]
		if len(out)+len(line)+22 > cap(out) && len(out) > 0 {
			if _, err := w.Write(out); err != nil {
				return err
			}
			out = out[:0]
		}
		out = append(strconv.AppendUint(append(append(out, line...), ' '), v, 10), '\n')
	}
	if len(out) > 0 {
		_, err := w.Write(out)
		return err
	}
	return nil
}

// FoldedSize is the number of bytes WriteFolded writes (0 for lines Check
// refuses), for a writer sized once.
func (ls *Lines) FoldedSize() int {
	if ls.Check() != nil {
		return 0
	}
	size := 0
	ends := []int{0}
	frames := ls.Frame
	var digits [20]byte
	for i, v := range ls.Value {
		ends = ends[:ls.Shared[i]+1]
		for _, f := range frames[:ls.Added[i]] {
			l := ends[len(ends)-1] + len(ls.Names[f])
			if len(ends) > 1 {
				l++ // the ';'
			}
			ends = append(ends, l)
		}
		frames = frames[ls.Added[i]:]
		size += ends[len(ends)-1] + 2 + len(strconv.AppendUint(digits[:0], v, 10))
	}
	return size
}
