package perf

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// CollapseStats reports what Collapse saw besides the folded stacks.
type CollapseStats struct {
	Lines        int    // input lines
	Stacks       int    // distinct folded stacks written
	Unrecognized int    // lines the Perl script would warn about
	FirstBadLine int    // line number of the first of them
	Event        string // the event kept (the first seen unless Options.EventFilter)
	Filtered     bool   // samples of other events were dropped
}

// Collapse reads perf script text from r and writes folded stacks to w,
// byte for byte as stackcollapse-perf.pl with the same options would: one
// "frame;frame;... count" line per distinct stack, sorted bytewise, counts
// weighted by the sample period, samples of events other than the first (or
// opts.EventFilter) dropped, and a last sample without a closing blank line
// dropped. The input must already be decompressed.
func Collapse(r io.Reader, w io.Writer, opts Options) (CollapseStats, error) {
	var st CollapseStats
	filter := opts.EventFilter
	workers := make([]*collapser, runtime.GOMAXPROCS(0))
	for i := range workers {
		workers[i] = newCollapser(opts)
	}
	err := pipeline(r,
		func(c *chunk) {
			if filter == "" {
				filter = firstEvent(c.data)
			}
			c.filter = filter
		},
		func(w int, c *chunk) error { return workers[w].chunk(c) },
		func(c *chunk, err error) error {
			st.Lines = c.firstLine - 1 + bytes.Count(c.data, []byte("\n"))
			if len(c.data) > 0 && c.data[len(c.data)-1] != '\n' {
				st.Lines++
			}
			return err
		})
	if err != nil {
		return st, err
	}
	// Each worker sorts its own stacks (in parallel); a k-way merge then
	// sums the stacks several workers saw and writes them in order.
	lists := make([][]folded, len(workers))
	var wg sync.WaitGroup
	for i, cw := range workers {
		if cw.unrecognized > 0 && (st.FirstBadLine == 0 || cw.firstBad < st.FirstBadLine) {
			st.FirstBadLine = cw.firstBad
		}
		st.Unrecognized += cw.unrecognized
		st.Filtered = st.Filtered || cw.filtered
		wg.Add(1)
		go func() {
			defer wg.Done()
			lists[i] = cw.sorted()
		}()
	}
	wg.Wait()
	st.Event = filter
	bw := bufio.NewWriterSize(w, 256<<10)
	var num []byte
	for {
		min := -1
		for i, l := range lists {
			if len(l) > 0 && (min < 0 || l[0].text < lists[min][0].text) {
				min = i
			}
		}
		if min < 0 {
			break
		}
		text, n := lists[min][0].text, uint64(0)
		for i, l := range lists {
			if len(l) > 0 && l[0].text == text {
				n += l[0].n
				lists[i] = l[1:]
			}
		}
		st.Stacks++
		bw.WriteString(text)
		num = append(num[:0], ' ')
		num = strconv.AppendUint(num, n, 10)
		num = append(num, '\n')
		bw.Write(num)
	}
	return st, bw.Flush()
}

// firstEvent finds the event of the first sample header that names one,
// which the Perl script then keeps.
func firstEvent(data []byte) string {
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if _, ok := matchHeader(line); ok {
			if ev, _, ok := matchEvent(line); ok {
				return string(ev)
			}
		}
	}
	return ""
}

// cachedLine is a stack line's folded frames joined by ';' (n of them), by
// its id in the worker's text table.
type cachedLine struct {
	id uint32
	n  int
}

// collapser is one worker's state: its running totals and a cache from a
// stack line's text to its folded frames, since most lines repeat. Folded
// texts (process names and lines' frames) are interned, so a stack is keyed
// by a few ids rather than its whole text; the texts are joined once per
// distinct stack at the end.
type collapser struct {
	opts         Options
	counts       map[string]*uint64 // key: text ids, process name first, as little-endian uint32s
	cache        *lineCache[cachedLine]
	texts        []string
	textIDs      map[string]uint32
	join         func([]tidyFrame, bool) cachedLine
	unrecognized int
	firstBad     int
	filtered     bool

	key     []byte
	pname   []byte
	pnameID uint32
	java    bool
	blocks  []uint32
	buf     []byte
}

func newCollapser(opts Options) *collapser {
	cw := &collapser{
		opts:    opts,
		counts:  make(map[string]*uint64),
		cache:   newLineCache[cachedLine](),
		textIDs: make(map[string]uint32),
	}
	cw.join = cw.joinFrames
	return cw
}

// intern returns the id of a folded text.
func (cw *collapser) intern(b []byte) uint32 {
	if id, ok := cw.textIDs[string(b)]; ok {
		return id
	}
	id := uint32(len(cw.texts))
	cw.texts = append(cw.texts, string(b))
	cw.textIDs[string(b)] = id
	return id
}

// folded is one distinct stack's text and value.
type folded struct {
	text string
	n    uint64
}

// sorted returns the stacks this worker counted, as text, sorted bytewise
// (Perl's cmp on byte strings).
func (cw *collapser) sorted() []folded {
	out := make([]folded, 0, len(cw.counts))
	var b []byte
	for k, v := range cw.counts {
		b = b[:0]
		for i := 0; i+4 <= len(k); i += 4 {
			if i > 0 {
				b = append(b, ';')
			}
			b = append(b, cw.texts[binary.LittleEndian.Uint32([]byte(k[i:i+4]))]...)
		}
		out = append(out, folded{text: string(b), n: *v})
	}
	slices.SortFunc(out, func(x, y folded) int { return strings.Compare(x.text, y.text) })
	return out
}

// chunk runs the Perl script's main loop over one chunk, which starts in the
// state after a blank line.
func (cw *collapser) chunk(c *chunk) error {
	if !c.clean {
		return fmt.Errorf("line %d: no blank line between samples for %d MiB: not perf script output with call graphs", c.firstLine, maxChunk>>20)
	}
	data, lineNo := c.data, c.firstLine-1
	havePname := false
	var period uint64
	cw.blocks = cw.blocks[:0]
	for len(data) > 0 {
		lineNo++
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) > 0 && line[0] == '#' {
			continue
		}
		if len(line) == 0 { // end of stack
			if !havePname {
				continue
			}
			key := binary.LittleEndian.AppendUint32(cw.key[:0], cw.pnameID)
			for i := len(cw.blocks) - 1; i >= 0; i-- {
				key = binary.LittleEndian.AppendUint32(key, cw.blocks[i])
			}
			cw.key = key
			if p := cw.counts[string(key)]; p != nil {
				*p += period
			} else {
				v := period
				cw.counts[string(key)] = &v
			}
			cw.blocks = cw.blocks[:0]
			havePname = false
			continue
		}
		if isSpace(line[0]) { // the common stack line: no header can start so
			if cw.frameLine(line, havePname) {
				continue
			}
		} else if h, ok := matchHeader(line); ok {
			p := uint64(1)
			if ev, per, ok := matchEvent(line); ok {
				if string(ev) != c.filter {
					cw.filtered = true
					continue
				}
				p = parsePeriod(per)
			}
			period = p
			cw.pname = pname(cw.pname[:0], h, cw.opts)
			cw.pnameID = cw.intern(cw.pname)
			cw.java = string(h.comm) == "java" // the reference tidies Java frames with --pid/--tid too
			havePname = true
			continue
		}
		if !isSpace(line[0]) && cw.frameLine(line, havePname) {
			continue
		}
		if cw.unrecognized == 0 || lineNo < cw.firstBad {
			cw.firstBad = lineNo
		}
		cw.unrecognized++
	}
	return nil
}

// frameLine handles a line if it is a stack line, reporting whether it was.
// Stack lines are ignored while no sample is open, as in the Perl script.
func (cw *collapser) frameLine(line []byte, open bool) bool {
	cl, ok := cw.cache.fold(line, cw.java, cw.opts, true, cw.join)
	if ok && open && cl.n > 0 {
		cw.blocks = append(cw.blocks, cl.id)
	}
	return ok
}

// joinFrames interns a line's folded text. (cw.join holds it as a method
// value made once, so the hot path allocates no closure.)
func (cw *collapser) joinFrames(frames []tidyFrame, skip bool) cachedLine {
	if skip {
		return cachedLine{}
	}
	b := cw.buf[:0]
	for i, fr := range frames {
		if i > 0 {
			b = append(b, ';')
		}
		b = append(b, fr.name...)
	}
	cw.buf = b
	return cachedLine{id: cw.intern(b), n: len(frames)}
}

// parsePeriod follows Perl: a missing period, or "0", counts as 1.
func parsePeriod(b []byte) uint64 {
	if len(b) == 0 || string(b) == "0" {
		return 1
	}
	var v uint64
	for _, c := range b {
		v = v*10 + uint64(c-'0')
	}
	return v
}
