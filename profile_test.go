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

// TestAddStacks: stacks added from spans of one slice, in any order of the
// spans, into an empty dictionary (which takes the slice over) and then
// into one that has stacks (which copies it); Stack finds them all after.
func TestAddStacks(t *testing.T) {
	d := NewDict()
	for _, f := range []string{"app", "main", "work", "swapper", "cpu_idle"} {
		d.AddFrame(Frame{Name: f})
	}
	frames := []FrameID{3, 4, 0, 1, 2}
	d.AddStacks(frames, []Span{{Off: 2, N: 3}, {Off: 0, N: 2}, {Off: 2, N: 2}})
	d.AddStacks([]FrameID{0}, []Span{{Off: 0, N: 1}})
	want := [][]FrameID{{0, 1, 2}, {3, 4}, {0, 1}, {0}}
	for i, st := range want {
		if got := d.StackFrames(StackID(i)); !slices.Equal(got, st) {
			t.Fatalf("stack %d: %v, want %v", i, got, st)
		}
		if got := d.Stack(st); got != StackID(i) {
			t.Fatalf("Stack(%v) = %d, want %d", st, got, i)
		}
	}
	if d.Idle(0) || !d.Idle(1) || d.NumStacks() != 4 {
		t.Fatalf("idle %v %v, %d stacks", d.Idle(0), d.Idle(1), d.NumStacks())
	}
}

// TestIdle: the idle stacks isIdleStack names, and a dictionary's stacks
// marked the same.
func TestIdle(t *testing.T) {
	for _, c := range []struct {
		process string
		frames  []string
		want    bool
	}{
		{"swapper", []string{"secondary_startup_64", "cpu_startup_entry", "do_idle", "default_idle_call"}, true},
		{"swapper", []string{"start_kernel", "intel_idle_irq"}, true},
		{"swapper", []string{"irq_exit", "__do_softirq"}, false},
		{"swapper", nil, false},
		{"java", []string{"start_thread", "do_idle"}, false}, // an idle loop's name outside the kernel's swapper
		{"node", []string{"(root)", "(idle)"}, true},
		{"chrome", []string{"(program)"}, true},
		{"node", []string{"(idle)", "main"}, false}, // (idle) only as the leaf
		{"node", nil, false},
	} {
		if got := isIdleStack(c.process, c.frames); got != c.want {
			t.Errorf("isIdleStack(%q, %q) = %v, want %v", c.process, c.frames, got, c.want)
		}
		d := NewDict()
		ids := []FrameID{d.Frame(Frame{Name: c.process})}
		for _, f := range c.frames {
			ids = append(ids, d.Frame(Frame{Name: f}))
		}
		if got := d.Idle(d.Stack(ids)); got != c.want {
			t.Errorf("Dict: stack %q %q idle %v, want %v", c.process, c.frames, got, c.want)
		}
	}
}

// isIdleStack is isIdle over a sample's process and its frames below it.
func isIdleStack(process string, frames []string) bool {
	return isIdle(process, len(frames), func(i int) string { return frames[i] })
}

// TestDictGrow: room made before or between the entries changes no id and
// loses no entry (Grow only sizes the arrays and an empty stack index).
func TestDictGrow(t *testing.T) {
	d := NewDict()
	d.Grow(-1, -1)
	d.Grow(4, 4)
	f := d.AddFrame(Frame{Name: "main"})
	a := d.AddStack([]FrameID{f})
	d.Grow(8, 8) // the stack is not indexed yet
	g := d.Frame(Frame{Name: "work"})
	b := d.Stack([]FrameID{f, g})
	d.Grow(8, 8) // and now it is
	if got := d.Stack([]FrameID{f}); got != a || a != 0 || b != 1 {
		t.Fatalf("stack ids %d %d, found again %d", a, b, got)
	}
	if got := d.Stack([]FrameID{f, g}); got != b || d.NumStacks() != 2 || d.NumFrames() != 2 {
		t.Fatalf("Stack(main;work) = %d of %d stacks, %d frames", got, d.NumStacks(), d.NumFrames())
	}
}
