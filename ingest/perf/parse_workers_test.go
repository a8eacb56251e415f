package perf

import (
	"bytes"
	"runtime"
	"slices"
	"testing"

	"github.com/fleetscope/fleetscope"
)

// TestParseWorkers parses the benchmark profile (74 chunks) with one
// worker, whose dictionary becomes the profile's without a lookup, and with
// four, whose entries are looked up: the same dictionary, the same
// samples, and no stack twice.
func TestParseWorkers(t *testing.T) {
	data := benchInput(t)
	type parsed struct {
		p       *fleetscope.Profile
		samples []fleetscope.Sample
	}
	parse := func(workers int) parsed {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(workers))
		var out parsed
		p, err := Parse(bytes.NewReader(data), func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
			out.samples = append(out.samples, batch...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		out.p = p
		return out
	}
	one, four := parse(1), parse(4)
	if len(one.samples) != 56_990 || !slices.Equal(one.samples, four.samples) {
		t.Fatalf("samples differ: %d with one worker, %d with four", len(one.samples), len(four.samples))
	}
	for _, x := range []parsed{one, four} {
		d := x.p.Dict
		if d.NumFrames() != one.p.Dict.NumFrames() || d.NumStacks() != one.p.Dict.NumStacks() {
			t.Fatalf("dictionaries: %d frames and %d stacks, against %d and %d", d.NumFrames(), d.NumStacks(), one.p.Dict.NumFrames(), one.p.Dict.NumStacks())
		}
		for i := range d.NumFrames() {
			id := fleetscope.FrameID(i)
			if f := d.FrameAt(id); f != one.p.Dict.FrameAt(id) || d.Frame(f) != id {
				t.Fatalf("frame %d: %v, against %v (looked up: %d)", i, f, one.p.Dict.FrameAt(id), d.Frame(f))
			}
		}
		for i := range d.NumStacks() {
			id := fleetscope.StackID(i)
			st := d.StackFrames(id)
			if !slices.Equal(st, one.p.Dict.StackFrames(id)) || d.Stack(slices.Clone(st)) != id || d.Idle(id) != one.p.Dict.Idle(id) {
				t.Fatalf("stack %d: %v, against %v (looked up: %d)", i, st, one.p.Dict.StackFrames(id), d.Stack(slices.Clone(st)))
			}
		}
	}
}
