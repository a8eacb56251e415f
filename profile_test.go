package fleetscope

import (
	"slices"
	"testing"
)

// TestDictIndexCatchesUp: entries added without a lookup (AddFrame,
// AddStack) are found by the next Frame and Stack calls, which give new
// entries the next ids; in any order of the two kinds of call.
func TestDictIndexCatchesUp(t *testing.T) {
	d := NewDict()
	root := d.AddFrame(Frame{Name: "app"})
	f1 := d.Frame(Frame{Name: "main"})
	f2 := d.AddFrame(Frame{Name: "work"})
	idle := d.AddFrame(Frame{Name: "cpu_idle"})
	if got := []FrameID{root, f1, f2, idle}; !slices.Equal(got, []FrameID{0, 1, 2, 3}) {
		t.Fatalf("frame ids %v", got)
	}
	for i, f := range []string{"app", "main", "work", "cpu_idle"} {
		if got := d.Frame(Frame{Name: f}); got != FrameID(i) {
			t.Fatalf("Frame(%s) = %d, want %d", f, got, i)
		}
	}
	if got := d.Frame(Frame{Name: "new"}); got != 4 || d.NumFrames() != 5 {
		t.Fatalf("a new frame: id %d of %d", got, d.NumFrames())
	}
	swapper := d.AddFrame(Frame{Name: "swapper"})

	a := d.AddStack([]FrameID{root, f1, f2})
	b := d.Stack([]FrameID{root, f1})
	c := d.AddStack([]FrameID{swapper, idle})
	if a != 0 || b != 1 || c != 2 {
		t.Fatalf("stack ids %d %d %d", a, b, c)
	}
	for i, st := range [][]FrameID{{root, f1, f2}, {root, f1}, {swapper, idle}} {
		if got := d.Stack(st); got != StackID(i) || !slices.Equal(d.StackFrames(got), st) {
			t.Fatalf("Stack(%v) = %d (%v), want %d", st, got, d.StackFrames(got), i)
		}
	}
	if got := d.Stack([]FrameID{root}); got != 3 || d.NumStacks() != 4 {
		t.Fatalf("a new stack: id %d of %d", got, d.NumStacks())
	}
	if d.Idle(a) || !d.Idle(c) {
		t.Fatalf("idle: %v %v, want false true", d.Idle(a), d.Idle(c))
	}
}
