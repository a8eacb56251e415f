// Package cpuprofile reads V8 CPU profiles: the .cpuprofile JSON that
// `node --cpu-prof` writes and Chrome DevTools saves ({"nodes", "startTime",
// "endTime", "samples", "timeDeltas"}). Each sample becomes a timed sample
// whose stack is the path from V8's (root) node to the sampled node, under
// a process frame "(root)" (a .cpuprofile names no process; nflxprofile's
// converter uses the same stand-in, so both give the same flame graph).
// It owns parsing only: no storage, no detection of other formats.
package cpuprofile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/internal/batch"
	"github.com/fleetscope/fleetscope/ingest/internal/v8"
)

// Process is the root frame of every stack.
const Process = "(root)"

// Event is the name of the one event of a V8 profile.
const Event = "cpu"

// Parse reads one .cpuprofile and streams its samples to sink, in the
// order of the samples array. The JSON is decoded as a stream of fields
// (never the whole text in memory); the node table and the two per-sample
// arrays are held until both arrays are read, since a sample needs its
// node's path and its time delta. Sample times are startTime plus the
// running sum of timeDeltas, in ns on the profile's clock (V8's monotonic
// clock, not the epoch).
//
// Returns EINVALID, naming the field or byte offset, for input that is not
// a V8 CPU profile, has no samples, references unknown nodes, or whose
// "timeDeltas" and "samples" differ in length.
func Parse(r io.Reader, sink func(*fleetscope.Profile, []fleetscope.Sample) error) (*fleetscope.Profile, error) {
	p := batch.NewProfile("cpuprofile")
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{', "the profile object"); err != nil {
		return p, err
	}
	tree := v8.NewTree()
	var (
		samples           []int64
		deltas            []v8.Micros
		start, end        *v8.Micros
		haveNodes, haveTD bool
	)
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return p, syntaxError(dec, err)
		}
		switch key {
		case "nodes":
			haveNodes = true
			if err := expectDelim(dec, '[', `"nodes"`); err != nil {
				return p, err
			}
			for i := 0; dec.More(); i++ {
				var n v8.Node
				if err := dec.Decode(&n); err != nil {
					return p, fieldError(dec, fmt.Sprintf("nodes[%d]", i), err)
				}
				if err := tree.Add(&n); err != nil {
					return p, fleetscope.Errorf(fleetscope.EINVALID, "cpuprofile nodes[%d]: %s", i, err.Error())
				}
			}
			if err := expectDelim(dec, ']', `the end of "nodes"`); err != nil {
				return p, err
			}
		case "samples":
			if err := dec.Decode(&samples); err != nil {
				return p, fieldError(dec, "samples", err)
			}
		case "timeDeltas":
			haveTD = true
			if err := dec.Decode(&deltas); err != nil {
				return p, fieldError(dec, "timeDeltas", err)
			}
		case "startTime":
			if err := dec.Decode(&start); err != nil {
				return p, fieldError(dec, "startTime", err)
			}
		case "endTime":
			if err := dec.Decode(&end); err != nil {
				return p, fieldError(dec, "endTime", err)
			}
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return p, fieldError(dec, fmt.Sprint(key), err)
			}
		}
	}
	if err := expectDelim(dec, '}', "the end of the profile object"); err != nil {
		return p, err
	}
	switch {
	case !haveNodes:
		return p, fleetscope.Errorf(fleetscope.EINVALID, `cpuprofile: no "nodes" field: not a V8 CPU profile`)
	case len(samples) == 0:
		return p, fleetscope.Errorf(fleetscope.EEMPTY, `cpuprofile: no samples (the "samples" field is missing or empty)`)
	case haveTD && len(deltas) != len(samples):
		return p, fleetscope.Errorf(fleetscope.EINVALID, `cpuprofile: %d "timeDeltas" for %d "samples": they must pair up`, len(deltas), len(samples))
	}
	if !haveTD {
		p.Warnings = append(p.Warnings, `no "timeDeltas": the samples have no times (a flame graph works, a heatmap does not)`)
	} else if start == nil {
		p.Warnings = append(p.Warnings, `no "startTime": sample times count from 0`)
	}
	if start != nil {
		p.Meta["startTime"] = fmt.Sprintf("%d µs", int64(*start)/1000)
	}
	if end != nil {
		p.Meta["endTime"] = fmt.Sprintf("%d µs", int64(*end)/1000)
	}
	return p, emit(p, tree, samples, deltas, start, sink)
}

// emit streams samples (node ids, with time deltas if any) to sink,
// rooted at Process.
func emit(p *fleetscope.Profile, tree *v8.Tree, samples []int64, deltas []v8.Micros, start *v8.Micros, sink func(*fleetscope.Profile, []fleetscope.Sample) error) error {
	d := p.Dict
	root := d.Frame(fleetscope.Frame{Name: Process})
	ev := d.Event(Event)
	w := batch.New(p, sink)
	var t int64
	if start != nil {
		t = int64(*start)
	}
	for i, id := range samples {
		st, err := tree.Stack(d, root, id)
		if err != nil {
			return fleetscope.Errorf(fleetscope.EINVALID, "cpuprofile samples[%d]: %s", i, err.Error())
		}
		s := fleetscope.Sample{TimeNanos: fleetscope.NoTime, Period: 1, Stack: st, CPU: -1, PID: -1, TID: -1, Event: ev}
		if deltas != nil {
			var ok bool
			if t, ok = v8.Add(t, int64(deltas[i])); !ok {
				return fleetscope.Errorf(fleetscope.EINVALID, "cpuprofile timeDeltas[%d]: the time overflows", i)
			}
			s.TimeNanos = t
		}
		if err := w.Add(s); err != nil {
			return err
		}
	}
	return w.Flush()
}

func expectDelim(dec *json.Decoder, want json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return syntaxError(dec, err)
	}
	if tok != want {
		return fleetscope.Errorf(fleetscope.EINVALID, "cpuprofile: byte %d: expected %s, found %s", dec.InputOffset(), what, describe(tok))
	}
	return nil
}

func describe(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		return fmt.Sprintf("%q", string(t))
	case string:
		return fmt.Sprintf("the string %q", t)
	case nil:
		return "null"
	default:
		return fmt.Sprint(t)
	}
}

func syntaxError(dec *json.Decoder, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fleetscope.Errorf(fleetscope.EINVALID, "cpuprofile: the input ends at byte %d, inside the JSON", dec.InputOffset())
	}
	var fe *fleetscope.Error
	if errors.As(err, &fe) {
		return err // e.g. a size limit from the reader
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fleetscope.Errorf(fleetscope.EINVALID, "cpuprofile: byte %d: not JSON: %v", se.Offset, err)
	}
	return fleetscope.Errorf(fleetscope.EINVALID, "cpuprofile: byte %d: %v", dec.InputOffset(), err)
}

func fieldError(dec *json.Decoder, field string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fleetscope.Errorf(fleetscope.EINVALID, "cpuprofile %s: byte %d: a %s where %s was expected", field, te.Offset, te.Value, te.Type)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return syntaxError(dec, err)
	}
	var fe *fleetscope.Error
	if errors.As(err, &fe) {
		return err
	}
	return fleetscope.Errorf(fleetscope.EINVALID, "cpuprofile %s: byte %d: %v", field, dec.InputOffset(), err)
}

// Detect says how sure it is that head is a .cpuprofile: a JSON object
// whose first field is "nodes" holding objects with a "callFrame" is
// certain; V8's other fields ("startTime", "samples", ...) first make it
// likely.
func Detect(head []byte) int {
	head = bytes.TrimLeft(bytes.TrimPrefix(head, []byte("\xef\xbb\xbf")), " \t\r\n")
	if len(head) == 0 || head[0] != '{' {
		return 0
	}
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return 0
	}
	known := 0
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			break
		}
		switch key {
		case "nodes":
			if firstNodeHasCallFrame(dec) {
				return 90
			}
			return min(known*30+30, 70)
		case "startTime", "endTime", "samples", "timeDeltas":
			known++
		default:
			return 0 // a field V8 does not write: some other JSON
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			break
		}
	}
	if known >= 2 {
		return 70
	}
	return 0
}

// firstNodeHasCallFrame reads `[{...` and reports whether that object has
// a "callFrame" field.
func firstNodeHasCallFrame(dec *json.Decoder) bool {
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return false
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return false
		}
		if key == "callFrame" {
			return true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	return false
}
