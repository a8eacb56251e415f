package traceevent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/fleetscope/fleetscope"
)

// scanner cuts a JSON stream into values without decoding them: a trace
// is mostly events this reader does not want, and finding where each one
// ends is far cheaper than decoding it. The events it wants are then
// decoded (and so validated) with encoding/json.
type scanner struct {
	r   *bufio.Reader
	off int64  // bytes consumed
	buf []byte // the last value read with collect
}

// bufSize is the scanner's read buffer (a variable for tests).
var bufSize = 256 << 10

func newScanner(r io.Reader) *scanner {
	return &scanner{r: bufio.NewReaderSize(r, bufSize)}
}

func (s *scanner) errorf(format string, args ...any) error {
	return fleetscope.Errorf(fleetscope.EINVALID, "traceevent: byte %d: %s", s.off, fmt.Sprintf(format, args...))
}

// readErr turns a read error into one for the user.
func (s *scanner) readErr(err error) error {
	var fe *fleetscope.Error
	switch {
	case errors.As(err, &fe):
		return err // e.g. a size limit from the reader
	case isEOF(err):
		return fleetscope.Errorf(fleetscope.EINVALID, "traceevent: the input ends at byte %d, inside the JSON", s.off)
	}
	return err
}

// peek skips white space (and a byte order mark at the start) and returns
// the next byte without consuming it.
func (s *scanner) peek() (byte, error) {
	for {
		b, err := s.r.Peek(1)
		if err != nil {
			return 0, err
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			s.r.Discard(1)
			s.off++
			continue
		case 0xef:
			if s.off == 0 {
				if bom, _ := s.r.Peek(3); bytes.Equal(bom, []byte("\xef\xbb\xbf")) {
					s.r.Discard(3)
					s.off += 3
					continue
				}
			}
		}
		return b[0], nil
	}
}

// expect consumes c, the next byte after white space.
func (s *scanner) expect(c byte, what string) error {
	b, err := s.peek()
	if err != nil {
		return s.readErr(err)
	}
	if b != c {
		return s.errorf("expected %s, found %q", what, b)
	}
	s.r.Discard(1)
	s.off++
	return nil
}

// value reads past one JSON value, keeping its bytes in s.buf if collect.
// It returns read errors as they are: io.ErrUnexpectedEOF if the input
// ends inside the value.
// Objects and arrays are matched by brackets and strings by quotes; their
// content is not checked (encoding/json checks what is decoded).
func (s *scanner) value(collect bool) error {
	s.buf = s.buf[:0]
	c, err := s.peek()
	if err != nil {
		return err
	}
	depth, inStr, esc := 0, false, false
	scalar := c != '{' && c != '[' && c != '"'
	if scalar && !(c == '-' || c >= '0' && c <= '9' || c == 't' || c == 'f' || c == 'n') {
		return s.errorf("not JSON: unexpected %q", c)
	}
	for {
		if s.r.Buffered() == 0 {
			if _, err := s.r.Peek(1); err != nil {
				if scalar && err == io.EOF {
					return nil // a number at the very end
				}
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return err
			}
		}
		buf, _ := s.r.Peek(s.r.Buffered())
		end := -1
		for i := 0; i < len(buf) && end < 0; i++ {
			switch c := buf[i]; {
			case inStr:
				// Jump to the next quote; the backslashes before it say
				// whether it ends the string.
				j := bytes.IndexByte(buf[i:], '"')
				if j < 0 {
					esc = endsInEscape(buf[i:], esc)
					i = len(buf)
					break
				}
				q := i + j
				k := q
				for k > i && buf[k-1] == '\\' {
					k--
				}
				run := q - k
				if k == i && esc { // the first byte was escaped by the last chunk
					run--
				}
				esc = false
				if run%2 != 0 { // an escaped quote: still in the string
					i = q
					break
				}
				inStr, i = false, q
				if depth == 0 {
					end = q + 1
				}
			case scalar:
				if c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\r' || c == '\n' {
					end = i
				}
			case c == '"':
				inStr = true
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				if depth--; depth == 0 {
					end = i + 1
				}
			}
		}
		n := end
		if n < 0 {
			n = len(buf)
		}
		if collect {
			s.buf = append(s.buf, buf[:n]...)
		}
		s.r.Discard(n)
		s.off += int64(n)
		if end >= 0 {
			return nil
		}
	}
}

// endsInEscape reports whether string content seg, whose first byte is
// escaped if esc, ends with a backslash that escapes what follows.
func endsInEscape(seg []byte, esc bool) bool {
	k := len(seg)
	for k > 0 && seg[k-1] == '\\' {
		k--
	}
	run := len(seg) - k
	if k == 0 && esc {
		run--
	}
	return run%2 != 0
}

// wanted reports whether an event's text may be one this reader decodes:
// a profile event or process or thread names.
func wanted(ev []byte) bool {
	return bytes.Contains(ev, []byte(`Profile`)) || bytes.Contains(ev, []byte(`_name"`))
}

func (t *trace) read(r io.Reader) error {
	s := newScanner(r)
	c, err := s.peek()
	if err != nil {
		if err == io.EOF {
			return fleetscope.Errorf(fleetscope.EINVALID, "traceevent: empty input")
		}
		return s.readErr(err)
	}
	switch c {
	case '[':
		s.r.Discard(1)
		s.off++
		return t.readEvents(s, true)
	case '{':
		s.r.Discard(1)
		s.off++
		found := false
		for first := true; ; first = false {
			c, err := s.peek()
			if err != nil {
				return s.readErr(err)
			}
			if c == '}' {
				break
			}
			if !first {
				if err := s.expect(',', `"," or "}"`); err != nil {
					return err
				}
			}
			if c, _ := s.peek(); c != '"' {
				return s.errorf("expected a field name, found %q", c)
			}
			if err := s.value(true); err != nil {
				return s.readErr(err)
			}
			var key string
			if err := json.Unmarshal(s.buf, &key); err != nil {
				return s.errorf("a bad field name: %v", err)
			}
			if err := s.expect(':', `":"`); err != nil {
				return err
			}
			if key != "traceEvents" {
				if err := s.value(false); err != nil {
					return s.readErr(err)
				}
				continue
			}
			found = true
			if err := s.expect('[', `"traceEvents" to be an array`); err != nil {
				return err
			}
			if err := t.readEvents(s, false); err != nil {
				return err
			}
		}
		if !found {
			return fleetscope.Errorf(fleetscope.EINVALID, `traceevent: a JSON object without "traceEvents": not a trace`)
		}
		return nil
	}
	return fleetscope.Errorf(fleetscope.EINVALID, "traceevent: the input is not a JSON array or object of trace events")
}

// readEvents reads the array of events after its '['. An array trace may
// end without ']' (the format allows it), even after a comma.
func (t *trace) readEvents(s *scanner, openEnded bool) error {
	for first := true; ; first = false {
		c, err := s.peek()
		if err == io.EOF && openEnded {
			return nil
		}
		if err != nil {
			return s.readErr(err)
		}
		if c == ']' {
			s.r.Discard(1)
			s.off++
			return nil
		}
		if !first {
			if err := s.expect(',', `"," or "]"`); err != nil {
				return err
			}
			c, err := s.peek()
			switch {
			case err == io.EOF && openEnded:
				return nil
			case err != nil:
				return s.readErr(err)
			case c == ']':
				continue // a trailing comma: tolerated
			}
		}
		off := s.off
		if c, _ := s.peek(); c != '{' {
			return fleetscope.Errorf(fleetscope.EINVALID, "traceevent: event %d (byte %d): not a JSON object", t.events, off)
		}
		if err := s.value(true); err != nil {
			if openEnded && isEOF(err) {
				t.cutOff = true // a trace written by a process that died
				return nil
			}
			return s.readErr(err)
		}
		t.events++
		if !wanted(s.buf) {
			continue
		}
		var ev event
		if err := json.Unmarshal(s.buf, &ev); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				return fleetscope.Errorf(fleetscope.EINVALID, "traceevent: event %d (byte %d): field %s: a %s where %s was expected", t.events-1, off, te.Field, te.Value, te.Type)
			}
			return fleetscope.Errorf(fleetscope.EINVALID, "traceevent: event %d (byte %d): %v", t.events-1, off, err)
		}
		if err := t.event(&ev); err != nil {
			return fleetscope.Errorf(fleetscope.EINVALID, "traceevent: event %d (%s, byte %d): %s", t.events-1, ev.Name, off, err.Error())
		}
	}
}

func isEOF(err error) bool { return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) }
