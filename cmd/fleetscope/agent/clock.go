package agent

import (
	"bufio"
	"bytes"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Anchor says that a profile's clock read ClockNanos at the wall-clock time
// Wall. The server places a boot-clock profile in absolute time with it.
type Anchor struct {
	ClockNanos int64     `json:"clock_nanos"`
	Wall       time.Time `json:"wall"`
	// Source says where the anchor came from: "perf" (the reference time
	// perf wrote in the header, exact) or "agent" (read by the agent).
	Source string `json:"source,omitempty"`
}

// ReadClocks reads CLOCK_MONOTONIC and CLOCK_REALTIME together: the
// monotonic reading bracketed by two wall-clock readings, the tightest of a
// few tries, the wall time taken at the bracket's midpoint. The error is the
// bracket's width (well under a microsecond on an idle machine).
func ReadClocks() Anchor {
	var best Anchor
	bestWidth := int64(-1)
	for range 5 {
		var a, m, b unix.Timespec
		if unix.ClockGettime(unix.CLOCK_REALTIME, &a) != nil ||
			unix.ClockGettime(unix.CLOCK_MONOTONIC, &m) != nil ||
			unix.ClockGettime(unix.CLOCK_REALTIME, &b) != nil {
			continue
		}
		w := b.Nano() - a.Nano()
		if w < 0 { // the wall clock stepped back between the readings
			continue
		}
		if bestWidth < 0 || w < bestWidth {
			bestWidth = w
			best = Anchor{ClockNanos: m.Nano(), Wall: time.Unix(0, a.Nano()+w/2), Source: "agent"}
		}
	}
	if bestWidth < 0 { // no clock_gettime: only Go's clocks are left
		return Anchor{ClockNanos: 0, Wall: time.Now(), Source: "agent"}
	}
	return best
}

// perfHeader is what the agent reads from the header lines of perf script
// --header output.
type perfHeader struct {
	clock     string  // "realtime", "monotonic", ... ("" when perf did not say)
	reference *Anchor // perf's own reference time, when it wrote one
	hostname  string
}

// headerScanner watches the bytes that pass through it for perf's header
// lines ("# clockid: monotonic (1)", "# reference time: ... = TOD (TOD) =
// CLOCK (monotonic)"). It looks at the header only: the first line that is
// not a comment ends its work, and it never holds more than one line.
type headerScanner struct {
	h    perfHeader
	line []byte
	done bool
}

func (s *headerScanner) Write(p []byte) (int, error) {
	n := len(p)
	for !s.done && len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(s.line)+len(p) > 4096 { // no header line is that long
				s.done = true
				break
			}
			s.line = append(s.line, p...)
			break
		}
		s.line = append(s.line, p[:i]...)
		p = p[i+1:]
		s.parseLine(string(s.line))
		s.line = s.line[:0]
	}
	return n, nil
}

func (s *headerScanner) parseLine(line string) {
	if !strings.HasPrefix(line, "#") {
		if strings.TrimSpace(line) != "" {
			s.done = true
		}
		return
	}
	body := strings.TrimSpace(strings.TrimPrefix(line, "#"))
	key, val, ok := strings.Cut(body, ":")
	if !ok {
		return
	}
	key, val = strings.TrimSpace(key), strings.TrimSpace(val)
	switch key {
	case "hostname":
		s.h.hostname = val
	case "clockid":
		// "monotonic (1)"
		name, _, _ := strings.Cut(val, " ")
		s.h.clock = name
	case "reference time":
		// "2026-11-23 13:50:08.253363 = 1795441808.253363 (TOD) = 4143.715827227 (monotonic)"
		parts := strings.Split(val, "=")
		if len(parts) != 3 {
			return
		}
		tod, ok1 := parseSecondsField(parts[1], "(TOD)")
		clk, ok2 := parseSecondsField(parts[2], "")
		if ok1 && ok2 {
			s.h.reference = &Anchor{ClockNanos: clk, Wall: time.Unix(0, tod), Source: "perf"}
		}
	}
}

// parseSecondsField reads "  1795441808.253363 (TOD)" as nanoseconds.
func parseSecondsField(f, wantSuffix string) (int64, bool) {
	f = strings.TrimSpace(f)
	num, rest, _ := strings.Cut(f, " ")
	if wantSuffix != "" && strings.TrimSpace(rest) != wantSuffix {
		return 0, false
	}
	return parseDecimalNanos(num)
}

// parseDecimalNanos parses "123.456789" seconds as nanoseconds, exactly.
func parseDecimalNanos(s string) (int64, bool) {
	whole, frac, _ := strings.Cut(s, ".")
	w, err := strconv.ParseInt(whole, 10, 64)
	if err != nil || w < 0 || len(frac) > 9 {
		return 0, false
	}
	frac += strings.Repeat("0", 9-len(frac))
	f, err := strconv.ParseInt(frac, 10, 64)
	if err != nil {
		return 0, false
	}
	return w*1e9 + f, true
}

// scanHeader reads the header of a perf script file (up to its first
// sample) from r.
func scanHeader(r io.Reader) perfHeader {
	var s headerScanner
	br := bufio.NewReader(io.LimitReader(r, 1<<20))
	for !s.done {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			s.Write([]byte(line))
		}
		if err != nil {
			break
		}
	}
	return s.h
}

// anchorFor decides the anchor sent with a recording: none for wall-clock
// (realtime) timestamps, perf's own reference time when the header has one,
// else the agent's reading taken at record time (nil in watch mode, where
// the agent does not know which clock another tool used).
func anchorFor(h perfHeader, measured *Anchor) *Anchor {
	switch {
	case h.clock == "realtime":
		return nil
	case h.reference != nil && (h.clock == "" || h.clock == "monotonic" || h.clock == "monotonic_raw" || h.clock == "boottime"):
		return h.reference
	}
	return measured
}
