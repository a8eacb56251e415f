package perf

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strconv"
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
	total := workers[0].counts
	for _, cw := range workers {
		if cw.unrecognized > 0 && (st.FirstBadLine == 0 || cw.firstBad < st.FirstBadLine) {
			st.FirstBadLine = cw.firstBad
		}
		st.Unrecognized += cw.unrecognized
		st.Filtered = st.Filtered || cw.filtered
		if cw == workers[0] {
			continue
		}
		for k, v := range cw.counts {
			if p := total[k]; p != nil {
				*p += *v
			} else {
				total[k] = v
			}
		}
	}
	st.Event = filter
	keys := make([]string, 0, len(total))
	for k := range total {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	st.Stacks = len(keys)
	bw := bufio.NewWriterSize(w, 256<<10)
	var num []byte
	for _, k := range keys {
		bw.WriteString(k)
		num = append(num[:0], ' ')
		num = strconv.AppendUint(num, *total[k], 10)
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

// cachedLine is a stack line's folded frames joined by ';' (n of them).
type cachedLine struct {
	s string
	n int
}

// collapser is one worker's state: its running totals and a cache from a
// stack line's text to its folded frames, since most lines repeat.
type collapser struct {
	opts         Options
	counts       map[string]*uint64
	cache        *lineCache[cachedLine]
	unrecognized int
	firstBad     int
	filtered     bool

	key    []byte
	pname  []byte
	java   bool
	blocks []string
}

func newCollapser(opts Options) *collapser {
	return &collapser{
		opts:   opts,
		counts: make(map[string]*uint64),
		cache:  newLineCache[cachedLine](),
	}
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
			key := append(cw.key[:0], cw.pname...)
			for i := len(cw.blocks) - 1; i >= 0; i-- {
				key = append(key, ';')
				key = append(key, cw.blocks[i]...)
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
	cl, ok := cw.cache.fold(line, cw.java, cw.opts, true, joinFrames)
	if ok && open && cl.n > 0 {
		cw.blocks = append(cw.blocks, cl.s)
	}
	return ok
}

// joinFrames is a line's folded text.
func joinFrames(frames []tidyFrame, skip bool) cachedLine {
	if skip {
		return cachedLine{}
	}
	var b []byte
	for i, fr := range frames {
		if i > 0 {
			b = append(b, ';')
		}
		b = append(b, fr.name...)
	}
	return cachedLine{s: string(b), n: len(frames)}
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
