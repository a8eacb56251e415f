// Package folded reads folded stacks, the text stackcollapse-*.pl scripts
// and many profilers write: one line per stack, "frame;frame;frame COUNT",
// root first, the first frame being the process. A line may start with a
// timestamp column, "SECONDS.FRACTION frame;frame COUNT", which makes the
// samples timed (a heatmap needs it); a file is timed or not as its first
// stack line is. It owns parsing only: no storage, no detection of other
// formats.
package folded

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/internal/batch"
)

// Event is the name of the one event of folded stacks.
const Event = "samples"

// MaxSamples bounds the samples the counts of one file may add up to
// (counts are sample counts, expanded one by one); larger counts are
// weights, to be read with Options.Weighted.
const MaxSamples = 10_000_000

// MaxLine bounds a line's length.
const MaxLine = 16 << 20

// maxCached bounds the cache of stack texts seen (timed files repeat them).
const maxCached = 1 << 16

// Options change how counts are read.
type Options struct {
	// Weighted reads each line as one sample whose period is COUNT (for
	// counts that are weights such as periods or bytes, not sample counts).
	Weighted bool
}

// ParseOptions reads options given as "weighted" (in `--input-format
// folded:weighted`). Returns EINVALID for others.
func ParseOptions(kv map[string]string) (Options, error) {
	var o Options
	for k, v := range kv {
		switch {
		case k == "weighted" && (v == "" || v == "true"):
			o.Weighted = true
		default:
			return o, fleetscope.Errorf(fleetscope.EINVALID, "folded has no option %q (it takes weighted)", k)
		}
	}
	return o, nil
}

// Parse reads folded stacks with counts as sample counts.
func Parse(r io.Reader, sink func(*fleetscope.Profile, []fleetscope.Sample) error) (*fleetscope.Profile, error) {
	return Options{}.Parse(r, sink)
}

// Parse reads folded stacks line by line and streams their samples to sink
// in input order. A line "STACK COUNT" becomes COUNT samples of that stack
// (one sample with period COUNT if o.Weighted), timed at the line's
// timestamp if it has one (seconds, exactly, to the nanosecond). Blank
// lines and lines starting with '#' are skipped; a trailing "\r" is
// dropped. Frames are kept as written (annotations such as _[k] included).
//
// Returns EINVALID naming the line for a line that is not "STACK COUNT"
// (with the timestamp column if the file has one), for counts adding up to
// more than MaxSamples, and for input without stacks.
func (o Options) Parse(r io.Reader, sink func(*fleetscope.Profile, []fleetscope.Sample) error) (*fleetscope.Profile, error) {
	p := batch.NewProfile("folded")
	br := bufio.NewReaderSize(r, 64<<10)
	w := batch.New(p, sink)
	d := p.Dict
	ev := d.Event(Event)
	if o.Weighted {
		p.SetWeighted(ev) // a line's count is its value
	}
	cache := map[string]fleetscope.StackID{}
	var (
		frames []fleetscope.FrameID
		long   []byte
		timed  = -1 // unknown until the first stack line
	)
	for lineNo := 1; ; lineNo++ {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) { // a long line: gather it
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= MaxLine {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			if len(long) > MaxLine {
				return p, fleetscope.Errorf(fleetscope.EINVALID, "folded line %d: longer than %d bytes", lineNo, MaxLine)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return p, err
		}
		if len(line) == 0 && err == io.EOF {
			break
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) > 0 && line[0] != '#' {
			if timed < 0 { // the first stack line decides
				timed = 0
				if _, ok := split(line, 1); ok {
					timed = 1
				}
			}
			l, ok := split(line, timed)
			if !ok {
				want := "STACK COUNT"
				if timed == 1 {
					want = "SECONDS.FRACTION STACK COUNT (the first line has a timestamp, so all must)"
				}
				return p, fleetscope.Errorf(fleetscope.EINVALID, "folded line %d: not %s: %s", lineNo, want, snippet(line))
			}
			if l.count > 0 {
				st, hit := cache[string(l.stack)]
				if !hit {
					frames = frames[:0]
					for _, f := range bytes.Split(l.stack, []byte(";")) {
						frames = append(frames, d.Frame(fleetscope.Frame{Name: string(f)}))
					}
					st = d.Stack(frames)
					if len(cache) >= maxCached {
						clear(cache)
					}
					cache[string(l.stack)] = st
				}
				s := fleetscope.Sample{TimeNanos: l.time, Period: 1, Stack: st, CPU: -1, PID: -1, TID: -1, Event: ev}
				n := l.count
				if o.Weighted {
					s.Period, n = l.count, 1
				} else if l.count > MaxSamples || uint64(p.Samples)+l.count > MaxSamples {
					return p, fleetscope.Errorf(fleetscope.EINVALID, "folded line %d: the counts add up to more than %d samples: if they are weights (periods, bytes), read the file with --input-format folded:weighted", lineNo, MaxSamples)
				}
				for range n {
					if err := w.Add(s); err != nil {
						return p, err
					}
				}
			}
		}
		if err == io.EOF {
			break
		}
	}
	if err := w.Flush(); err != nil {
		return p, err
	}
	if p.Samples == 0 {
		return p, fleetscope.Errorf(fleetscope.EINVALID, "folded: no stacks with a count above 0")
	}
	return p, nil
}

type folded struct {
	time  int64
	stack []byte
	count uint64
}

// split reads "[TIME ]STACK COUNT"; timed is 1 if the time column must be
// there, 0 if it must not.
func split(line []byte, timed int) (l folded, ok bool) {
	l.time = fleetscope.NoTime
	sp := bytes.LastIndexByte(line, ' ')
	if sp <= 0 {
		return l, false
	}
	c, err := strconv.ParseUint(string(line[sp+1:]), 10, 64)
	if err != nil {
		return l, false
	}
	l.count, l.stack = c, line[:sp]
	if timed == 1 {
		t, rest, ok := bytes.Cut(l.stack, []byte(" "))
		if !ok {
			return l, false
		}
		if l.time, ok = parseSeconds(t); !ok {
			return l, false
		}
		l.stack = rest
	}
	if len(l.stack) == 0 || l.stack[0] == ' ' || l.stack[0] == '\t' {
		return l, false
	}
	return l, true
}

// parseSeconds reads "123.456789" (a fraction of 1 to 9 digits) into ns.
func parseSeconds(b []byte) (int64, bool) {
	whole, frac, ok := bytes.Cut(b, []byte("."))
	if !ok || len(whole) == 0 || len(whole) > 10 || len(frac) == 0 || len(frac) > 9 {
		return 0, false
	}
	var sec, ns int64
	for _, c := range whole {
		if c < '0' || c > '9' {
			return 0, false
		}
		sec = sec*10 + int64(c-'0')
	}
	if sec > fleetscope.MaxTimeNanos/1e9 {
		return fleetscope.BadTime, true // refused by indexing, never wrapped
	}
	for i := range 9 {
		ns *= 10
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			ns += int64(c - '0')
		}
	}
	return sec*1e9 + ns, true
}

func snippet(line []byte) string {
	if len(line) > 80 {
		return strconv.Quote(string(line[:80])) + "..."
	}
	return strconv.Quote(string(line))
}

// Detect says how sure it is that head is folded stacks: every complete
// line (blank lines and # comments aside) must be "STACK COUNT", with or
// without a timestamp column as the first one is, and some stack must have
// two frames or more (a file of one-frame stacks is too much like any text
// with numbers: name the format to read one).
func Detect(head []byte) int {
	lines, multi, timed := 0, false, -1
	for len(head) > 0 {
		i := bytes.IndexByte(head, '\n')
		if i < 0 {
			if lines > 0 {
				break // a partial last line says nothing
			}
			i = len(head) // the first line: all there is, or too long to match
		}
		line := bytes.TrimSuffix(head[:i], []byte("\r"))
		head = head[min(i+1, len(head)):]
		if len(line) == 0 || line[0] == '#' {
			continue
		}
		if timed < 0 {
			timed = 0
			if _, ok := split(line, 1); ok {
				timed = 1
			}
		}
		l, ok := split(line, timed)
		if !ok {
			return 0
		}
		lines++
		multi = multi || bytes.IndexByte(l.stack, ';') >= 0
	}
	switch {
	case lines == 0 || !multi:
		return 0
	case timed == 1:
		return 70
	}
	return 60
}
