package perf

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"github.com/fleetscope/fleetscope"
)

// Parse reads perf script text (already decompressed) and streams its samples
// to fn in input order, in batches, using all cores. The profile's Dict grows
// as parsing proceeds: every id in a batch is already in it when fn runs, and
// fn may read the Dict but must not keep the batch. The returned Profile holds
// the header facts, counts and warnings.
//
// A sample is a header line ("comm pid/tid [cpu] time: period event:") and
// its stack lines, ended by a blank line or the next header. Frames are
// folded as stackcollapse-perf.pl folds them without options. A header perf
// printed for an unresolved thread (":-1 -1 [001] time: ...") starts a sample
// like any other. A last sample cut off by the end of input is dropped with
// a warning. Input whose first line is not perf script is rejected with an
// error naming the line.
func Parse(r io.Reader, fn func(p *fleetscope.Profile, batch []fleetscope.Sample) error) (*fleetscope.Profile, error) {
	p := &fleetscope.Profile{Format: "perf", Meta: map[string]string{}, Dict: fleetscope.NewDict(), MinNanos: fleetscope.NoTime}
	workers := make([]*sampler, runtime.GOMAXPROCS(0))
	maps := make([]globalMap, len(workers))
	for i := range workers {
		workers[i] = newSampler()
	}
	var (
		batch        []fleetscope.Sample
		unrecognized int
		firstBad     string
		truncated    string
	)
	err := pipeline(r, nil,
		func(w int, c *chunk) *sampled { return workers[w].chunk(w, c) },
		func(c *chunk, res *sampled) error {
			if res.err != nil {
				return res.err
			}
			if c.seq == 0 {
				for k, v := range res.meta {
					p.Meta[k] = v
				}
			}
			if res.unrecognized > 0 {
				if unrecognized == 0 {
					firstBad = res.firstBad
				}
				unrecognized += res.unrecognized
			}
			if res.truncated != "" {
				truncated = res.truncated
			}
			m := &maps[res.worker]
			m.extend(p.Dict, res)
			batch = batch[:0]
			for _, s := range res.samples {
				s.Stack = m.stacks[s.Stack]
				s.Event = m.events[s.Event]
				if s.TimeNanos == fleetscope.NoTime {
					p.Untimed++
				} else {
					if p.MinNanos == fleetscope.NoTime || s.TimeNanos < p.MinNanos {
						p.MinNanos = s.TimeNanos
					}
					p.MaxNanos = max(p.MaxNanos, s.TimeNanos)
				}
				batch = append(batch, s)
			}
			p.Samples += len(batch)
			if len(batch) == 0 {
				return nil
			}
			return fn(p, batch)
		})
	if err != nil {
		return p, err
	}
	if unrecognized > 0 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%d lines not understood and skipped; the first: %s", unrecognized, firstBad))
	}
	if truncated != "" {
		p.Warnings = append(p.Warnings, fmt.Sprintf("the last sample (%s) is cut off by the end of input: dropped", truncated))
	}
	if p.Samples == 0 {
		return p, fleetscope.Errorf(fleetscope.EINVALID, "no samples found in perf script input")
	}
	return p, nil
}

// MaxLine bounds a line of perf script text: symbol names run to a few KiB
// at most, so a longer line means the input is something else.
const MaxLine = 1 << 20

// globalMap translates one worker's local dictionary ids to the profile's.
type globalMap struct {
	frames []fleetscope.FrameID
	stacks []fleetscope.StackID
	events []fleetscope.EventID
	buf    []fleetscope.FrameID
}

// extend maps res's new entries into the profile's dictionary d. While d
// holds no more than the entries this worker has mapped into it (always,
// with one worker, as the server parses), the worker's new entries are new
// to d too: they are added without a lookup, and d is not hashed at all.
func (m *globalMap) extend(d *fleetscope.Dict, res *sampled) {
	fresh := d.NumFrames() == len(m.frames) && d.NumStacks() == len(m.stacks)
	for _, f := range res.newFrames {
		if fresh {
			m.frames = append(m.frames, d.AddFrame(f))
		} else {
			m.frames = append(m.frames, d.Frame(f))
		}
	}
	for _, e := range res.newEvents {
		m.events = append(m.events, d.Event(e))
	}
	for _, st := range res.newStacks {
		m.buf = m.buf[:0]
		for _, f := range st {
			m.buf = append(m.buf, m.frames[f])
		}
		if fresh {
			m.stacks = append(m.stacks, d.AddStack(m.buf))
		} else {
			m.stacks = append(m.stacks, d.Stack(m.buf))
		}
	}
}

// sampled is one chunk's result. Ids in samples are the worker's own; the
// new* slices list the dictionary entries the worker added for this chunk,
// in id order. They are read-only views: the worker only ever appends.
type sampled struct {
	worker       int
	samples      []fleetscope.Sample
	newFrames    []fleetscope.Frame
	newStacks    [][]uint32
	newEvents    []string
	meta         map[string]string
	unrecognized int
	firstBad     string
	truncated    string
	err          error
}

// sampler is one worker's parser state, kept across chunks: a local
// dictionary and a cache from a stack line's text to its frames.
type sampler struct {
	frames     []fleetscope.Frame
	frameIndex map[fleetscope.Frame]uint32
	stacks     [][]uint32
	stackIndex map[string]uint32
	events     []string
	eventIndex map[string]uint16
	cache      *lineCache[[]uint32] // frame ids of a line, outermost first
	intern     func([]tidyFrame, bool) []uint32
	nf, ns, ne int // dictionary sizes when the last chunk was handed over

	// per sample
	cur    fleetscope.Sample
	open   bool
	openAt int
	root   uint32
	java   bool
	lines  [][]uint32
	key    []byte
	pbuf   []byte
	ids    []uint32
}

func newSampler() *sampler {
	s := &sampler{
		frameIndex: make(map[fleetscope.Frame]uint32),
		stackIndex: make(map[string]uint32),
		eventIndex: make(map[string]uint16),
		cache:      newLineCache[[]uint32](),
	}
	s.intern = s.internFrames
	return s
}

func (s *sampler) chunk(w int, c *chunk) *sampled {
	res := &sampled{worker: w}
	data, lineNo := c.data, c.firstLine-1
	seenContent := c.seq != 0
	s.open = false
	for len(data) > 0 {
		lineNo++
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		if len(line) > MaxLine {
			res.err = fleetscope.Errorf(fleetscope.EINVALID, "line %d is longer than %d KiB: not perf script text", lineNo, MaxLine>>10)
			return res
		}
		if len(line) > 0 && line[0] == '#' {
			if !seenContent {
				if res.meta == nil {
					res.meta = map[string]string{}
				}
				parseMeta(line, res.meta)
			}
			continue
		}
		if len(line) == 0 {
			s.finish(res)
			continue
		}
		if !isSpace(line[0]) {
			if h, ok := parseHeader(line); ok {
				seenContent = true
				s.finish(res)
				s.start(h, lineNo)
				continue
			}
		}
		if seenContent && s.frameLine(line) {
			continue
		}
		if !seenContent {
			res.err = fleetscope.Errorf(fleetscope.EINVALID, "line %d: not perf script output: %s", lineNo, snippet(line))
			return res
		}
		if res.unrecognized == 0 {
			res.firstBad = fmt.Sprintf("line %d: %s", lineNo, snippet(line))
		}
		res.unrecognized++
	}
	if s.open {
		if c.last {
			res.truncated = fmt.Sprintf("line %d", s.openAt)
			s.open = false
		} else {
			s.finish(res)
		}
	}
	res.newFrames = s.frames[s.nf:len(s.frames):len(s.frames)]
	res.newStacks = s.stacks[s.ns:len(s.stacks):len(s.stacks)]
	res.newEvents = s.events[s.ne:len(s.events):len(s.events)]
	s.nf, s.ns, s.ne = len(s.frames), len(s.stacks), len(s.events)
	return res
}

func snippet(line []byte) string {
	if len(line) > 80 {
		return strconv.Quote(string(line[:80])) + "..."
	}
	return strconv.Quote(string(line))
}

// parseMeta reads "# key : value" header lines of perf script --header.
func parseMeta(line []byte, meta map[string]string) {
	k, v, ok := strings.Cut(string(line[1:]), ":")
	if !ok {
		return
	}
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	switch k {
	case "hostname", "os release", "perf version", "arch", "nrcpus online", "cmdline", "captured on", "cpudesc", "clockid":
		meta[k] = v
	}
}

func (s *sampler) start(h sampleHeader, lineNo int) {
	s.open, s.openAt = true, lineNo
	s.cur = h.sample
	s.cur.Event = fleetscope.EventID(s.event(h.event))
	s.pbuf = pname(s.pbuf[:0], h.header, Options{})
	s.root = s.frame1(fleetscope.Frame{Name: string(s.pbuf)})
	s.java = string(h.comm) == "java"
	s.lines = s.lines[:0]
}

// frameLine handles a line if it is a stack line, reporting whether it was.
func (s *sampler) frameLine(line []byte) bool {
	ids, ok := s.cache.fold(line, s.java, Options{}, false, s.intern)
	if ok && s.open && len(ids) > 0 {
		s.lines = append(s.lines, ids)
	}
	return ok
}

// internFrames adds a line's frames to the dictionary. (s.intern holds it
// as a method value made once, so the hot path allocates no closure.)
func (s *sampler) internFrames(frames []tidyFrame, skip bool) []uint32 {
	if skip {
		return nil
	}
	ids := make([]uint32, len(frames))
	for i, fr := range frames {
		ids[i] = s.frame1(fleetscope.Frame{Name: string(fr.name), Kind: fleetscope.FrameKind(fr.kind)})
	}
	return ids
}

// finish ends the open sample, if any, and records it.
func (s *sampler) finish(res *sampled) {
	if !s.open {
		return
	}
	s.open = false
	ids := append(s.ids[:0], s.root)
	for i := len(s.lines) - 1; i >= 0; i-- {
		ids = append(ids, s.lines[i]...)
	}
	s.ids = ids
	key := s.key[:0]
	for _, id := range ids {
		key = binary.LittleEndian.AppendUint32(key, id)
	}
	s.key = key
	st, ok := s.stackIndex[string(key)]
	if !ok {
		st = uint32(len(s.stacks))
		s.stacks = append(s.stacks, append([]uint32(nil), ids...))
		s.stackIndex[string(key)] = st
	}
	s.cur.Stack = fleetscope.StackID(st)
	res.samples = append(res.samples, s.cur)
}

func (s *sampler) frame1(f fleetscope.Frame) uint32 {
	if id, ok := s.frameIndex[f]; ok {
		return id
	}
	id := uint32(len(s.frames))
	s.frames = append(s.frames, f)
	s.frameIndex[f] = id
	return id
}

func (s *sampler) event(name []byte) uint16 {
	if id, ok := s.eventIndex[string(name)]; ok {
		return id
	}
	id := uint16(len(s.events))
	s.events = append(s.events, string(name))
	s.eventIndex[string(name)] = id
	return id
}

// sampleHeader is a parsed sample header line.
type sampleHeader struct {
	header
	event  []byte
	sample fleetscope.Sample // time, period, cpu, pid, tid
}

// parseHeader recognises a sample header and reads its fields. The process
// name (the root frame) is read exactly as stackcollapse-perf.pl reads it.
// The timestamp is the first token like "123.456789:"; "[cpu]" and
// "pid/tid" (or the tid alone) stand before it, the period and event after.
// A header stackcollapse-perf.pl would not recognise but which has those
// fields is a sample all the same.
func parseHeader(line []byte) (h sampleHeader, ok bool) {
	perlOK := false
	h.header, perlOK = matchHeader(line)
	if len(line) == 0 || isSpace(line[0]) {
		return h, false
	}
	s := &h.sample
	s.TimeNanos, s.CPU, s.Period, s.PID, s.TID = fleetscope.NoTime, -1, 1, -1, -1
	var toks [][2]int // offsets of the tokens before the timestamp
	after := -1
	for i := 0; i < len(line); {
		i = skipSpace(line, i)
		j := i
		for j < len(line) && !isSpace(line[j]) {
			j++
		}
		if i == j {
			break
		}
		if len(toks) > 0 {
			if t, ok := parseTime(line[i:j]); ok {
				s.TimeNanos, after = t, j
				break
			}
			if badTime(line[i:j]) { // a timestamp, but not one we accept
				s.TimeNanos, after = fleetscope.BadTime, j
				break
			}
		}
		toks = append(toks, [2]int{i, j})
		i = j
	}
	idTok := -1
	if after >= 0 {
		k := len(toks) - 1
		if tok := line[toks[k][0]:toks[k][1]]; len(tok) > 2 && tok[0] == '[' && tok[len(tok)-1] == ']' && k > 0 {
			s.CPU = atoi32(tok[1 : len(tok)-1])
			k--
		}
		if k > 0 && isIDs(line[toks[k][0]:toks[k][1]]) {
			idTok = k
		}
	}
	switch {
	case idTok >= 0:
		pid, tid, hasTID := bytes.Cut(line[toks[idTok][0]:toks[idTok][1]], []byte("/"))
		if hasTID {
			s.PID, s.TID = atoi32(pid), atoi32(tid)
		} else {
			s.TID = atoi32(pid) // perf's default output shows the tid only
		}
		if !perlOK {
			h.header = header{comm: line[:toks[idTok-1][1]], pid: pid, end: toks[idTok][1]}
			if hasTID {
				h.tid = tid
			}
		}
	case perlOK:
		if len(h.tid) > 0 {
			s.PID, s.TID = atoi32(h.pid), atoi32(h.tid)
		} else {
			s.TID = atoi32(h.pid)
		}
	default:
		return h, false
	}
	if ev, per, ok := matchEvent(line); ok {
		h.event = ev
		s.Period = parsePeriod(per)
		return h, true
	}
	if after < 0 {
		after = h.end
	}
	tok, r := nextToken(line[after:])
	if allDigits(tok) {
		if next, _ := nextToken(r); next != nil {
			s.Period = parsePeriod(tok)
			tok, _ = nextToken(r)
		}
	}
	h.event = bytes.TrimSuffix(tok, []byte(":"))
	if len(h.event) == 0 {
		h.event = []byte("unknown")
	}
	return h, true
}

// isIDs matches "pid", "pid/tid" or "-1".
func isIDs(tok []byte) bool {
	pid, tid, slash := bytes.Cut(tok, []byte("/"))
	isNum := func(b []byte) bool { return allDigits(bytes.TrimPrefix(b, []byte("-"))) }
	return isNum(pid) && (!slash || isNum(tid))
}

func nextToken(b []byte) (tok, rest []byte) {
	i := skipSpace(b, 0)
	j := i
	for j < len(b) && !isSpace(b[j]) {
		j++
	}
	if i == j {
		return nil, nil
	}
	return b[i:j], b[j:]
}

// badTime recognises the timestamp tokens parseTime refuses: negative,
// too many digits, or not a number ("-5.000000:", "nan:", "inf:").
func badTime(tok []byte) bool {
	if len(tok) < 2 || tok[len(tok)-1] != ':' {
		return false
	}
	body := bytes.TrimPrefix(bytes.TrimPrefix(tok[:len(tok)-1], []byte("-")), []byte("+"))
	switch strings.ToLower(string(body)) {
	case "nan", "inf", "infinity":
		return true
	}
	whole, frac, ok := bytes.Cut(body, []byte("."))
	return ok && allDigits(whole) && allDigits(frac)
}

// parseTime reads "seconds.fraction:" into nanoseconds, exactly. A time
// past fleetscope.MaxTimeNanos reads as fleetscope.BadTime, never wrapped.
func parseTime(tok []byte) (int64, bool) {
	if len(tok) < 4 || tok[len(tok)-1] != ':' {
		return 0, false
	}
	tok = tok[:len(tok)-1]
	dot := bytes.IndexByte(tok, '.')
	if dot <= 0 || dot == len(tok)-1 || dot > 10 || !allDigits(tok[:dot]) || !allDigits(tok[dot+1:]) {
		return 0, false
	}
	var sec, ns int64
	for _, c := range tok[:dot] {
		sec = sec*10 + int64(c-'0')
	}
	if sec > fleetscope.MaxTimeNanos/1e9 {
		return fleetscope.BadTime, true
	}
	frac := tok[dot+1:]
	for i := 0; i < 9; i++ {
		ns *= 10
		if i < len(frac) {
			ns += int64(frac[i] - '0')
		}
	}
	return sec*1e9 + ns, true
}

func allDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

func atoi32(b []byte) int32 {
	v, err := strconv.ParseInt(string(b), 10, 32)
	if err != nil {
		return -1
	}
	return int32(v)
}

// Detect says how sure it is that head (the first bytes of an input) is
// perf script text. Lines are classified as the parser classifies them:
// comments, sample headers ("comm pid ... time: event:") and stack lines.
// A first sample header with stack lines under it, every header timed,
// makes it near certain; untimed samples with stacks, or timed samples
// without stacks (perf script without -g), likely. A stack line must start
// with an address. Text with more than 1 in 20 lines neither comments,
// headers nor lines under a sample, or with more unexplained lines under
// samples than headers and stack lines, binary data (NUL bytes) and untimed
// headers without stacks are not perf script; a "perf script --header"
// banner alone is fairly sure.
func Detect(head []byte) int {
	banner := false
	headers, timed, frames, extra, other := 0, 0, 0, 0, 0
	for len(head) > 0 {
		i := bytes.IndexByte(head, '\n')
		if i < 0 {
			break // a partial last line says nothing
		}
		line := head[:i]
		head = head[i+1:]
		switch {
		case bytes.IndexByte(line, 0) >= 0:
			return 0
		case len(line) == 0:
			continue
		case line[0] == '#':
			if headers == 0 && (bytes.Contains(line, []byte("perf version")) || bytes.Contains(line, []byte("captured on"))) {
				banner = true
			}
			continue
		}
		if !isSpace(line[0]) {
			if h, ok := parseHeader(line); ok {
				headers++
				if h.sample.TimeNanos != fleetscope.NoTime {
					timed++
				}
				continue
			}
		}
		if _, ok := matchFrame(line); ok && headers > 0 && hexFirst(line) {
			frames++
			continue
		}
		if headers > 0 && isSpace(line[0]) {
			extra++ // more under a sample (perf script -F +srcline, ...)
			continue
		}
		other++
	}
	score := 0
	switch {
	case headers == 0 || other*20 > headers+frames || extra > headers+frames:
	case frames > 0 && timed == headers:
		score = 90
	case frames > 0:
		score = 70
	case timed == headers:
		score = 60
	}
	if banner && score == 0 && headers == 0 && other == 0 {
		score = 50
	}
	return score
}

// hexFirst reports whether a stack line starts with an address: perf
// prints one (in hex) before each frame.
func hexFirst(line []byte) bool {
	tok, _ := nextToken(line)
	if len(tok) == 0 {
		return false
	}
	for _, c := range tok {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}
