package fleetscope

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope/query/ctxtest"
)

// TestNameMatcherAgreesWithRegexp: the substring shortcut for literal
// patterns answers as the regular expression does.
func TestNameMatcherAgreesWithRegexp(t *testing.T) {
	names := []string{"GCTaskThread::run", "malloc", "java/lang/Thread:::run", "a.b", "axb", "", "gc", "PSPromotionManager::drain_stacks_depth(bool)", "x1", "!GC", "GC!", "A\x01c"}
	for _, p := range []string{"GC", "GC|malloc", "x1|GC", `a\.b`, "a.b", "(?i)gc", "^malloc$", "run|", "drain_stacks_depth(bool)", `drain_stacks_depth\(bool\)`, "[Gg]C", "::"} {
		nm, err := compile("function", p)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(p)
		for _, n := range names {
			if got, want := nm.match(n, byteMask(n)), re.MatchString(n); got != want {
				t.Errorf("pattern %q on %q: %v, the regexp says %v (literals %q)", p, n, got, want, nm.literals)
			}
		}
	}
	for p, want := range map[string]int{"GC": 1, "GC|malloc": 2, `a\.b`: 1, "a.b": 0, "(?i)gc": 0, "^malloc$": 0, "[Gg]C": 0} {
		if got := len(literals(p)); got != want {
			t.Errorf("literals(%q): %d, want %d", p, got, want)
		}
	}
}

// TestMatcherStacks: a stack is kept when a frame matches the function
// and none the exclusion, recursion and shared frames included.
func TestMatcherStacks(t *testing.T) {
	d := NewDict()
	stack := func(names ...string) StackID {
		var ids []FrameID
		for _, n := range names {
			ids = append(ids, d.Frame(Frame{Name: n}))
		}
		return d.Stack(ids)
	}
	s := []StackID{stack("java", "a", "b", "a"), stack("java", "GCTaskThread::run", "a"), stack("c"), stack("java", "b")}
	x, err := NewFrameIndex(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		f    Filter
		want []bool
	}{
		{Filter{Function: "^a$"}, []bool{true, true, false, false}},
		{Filter{Function: "a"}, []bool{true, true, false, true}},
		{Filter{ExcludeFunction: "GC"}, []bool{true, false, true, true}},
		{Filter{Function: "^a$", ExcludeFunction: "GC"}, []bool{true, false, false, false}},
		{Filter{Function: "java", ExcludeFunction: "^b$|GC"}, []bool{false, false, false, false}},
		{Filter{Function: "nothing"}, []bool{false, false, false, false}},
	} {
		m, err := tc.f.Compile()
		if err != nil {
			t.Fatal(err)
		}
		keep, err := m.Stacks(context.Background(), d, x)
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range s {
			if keep[id] != tc.want[i] {
				t.Errorf("%+v: stack %d kept %v, want %v", tc.f, i, keep[id], tc.want[i])
			}
		}
	}
}

// A pattern whose program is over MaxPatternProgram instructions is
// refused as EINVALID naming the limit (`[a-z_:]{1000}X` took a minute
// over long names); literal alternatives of any length, and realistic
// patterns, pass.
func TestPatternProgramBounded(t *testing.T) {
	for _, p := range []string{`[a-z_:]{1000}X`, `a{2,300}`, `(x{20}){30}`} {
		_, err := (&Filter{Function: p}).Compile()
		if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), fmt.Sprint(MaxPatternProgram)) {
			t.Errorf("%q: got %v, want EINVALID naming %d", p, err, MaxPatternProgram)
		}
		if _, err := (&Filter{ExcludeFunction: p}).Compile(); ErrorCode(err) != EINVALID {
			t.Errorf("exclude %q: got %v, want EINVALID", p, err)
		}
	}
	for _, p := range []string{`^_?_?[a-z]+_[a-z]+$`, `(?i)tcp_.*send`, `^(std::)?vector<.*>::push_back$`, `[a-z_:]{100}X`,
		strings.Repeat("x", MaxFilterPattern/2) + "|" + strings.Repeat("y", MaxFilterPattern/2-1)} {
		if _, err := (&Filter{Function: p}).Compile(); err != nil {
			t.Errorf("%.40q: %v", p, err)
		}
	}
}

// bigDict is a dictionary of n distinct long frame names, a stack each.
func bigDict(n int) *Dict {
	d := NewDict()
	pad := strings.Repeat("abcdefgh_", 40)
	for i := range n {
		d.Stack([]FrameID{d.Frame(Frame{Name: "proc"}), d.Frame(Frame{Name: fmt.Sprintf("%s%d", pad, i)})})
	}
	return d
}

// A function filter over a large dictionary looks at its context while it
// matches (and while the frame index is built) and stops at the first look
// that finds it done, returning its error: with a context done from the
// third look, it looks exactly three times; an already cancelled context
// stops it at the first look.
func TestStacksHonoursContext(t *testing.T) {
	d := bigDict(200_000)
	x, err := NewFrameIndex(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"no-such-frame", `[0-9]{3}x$`} {
		m, err := (&Filter{Function: p, ExcludeFunction: "zzz"}).Compile()
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxtest.CancelAfter(3)
		keep, err := m.Stacks(ctx, d, x)
		if !errors.Is(err, context.Canceled) || keep != nil {
			t.Fatalf("%q: got %v, want context.Canceled", p, err)
		}
		if ctx.Calls() != 3 {
			t.Errorf("%q: the context was looked at %d times, want 3 (stop at the first look that finds it done)", p, ctx.Calls())
		}
		cancelled, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := m.Stacks(cancelled, d, x); !errors.Is(err, context.Canceled) {
			t.Errorf("%q, cancelled context: got %v, want context.Canceled", p, err)
		}
		if p != "no-such-frame" {
			continue
		}
		if keep, err := m.Stacks(context.Background(), d, x); err != nil || len(keep) != d.NumStacks() {
			t.Errorf("%q: %v", p, err)
		}
	}
	ctx := ctxtest.CancelAfter(2)
	if _, err := NewFrameIndex(ctx, d); !errors.Is(err, context.Canceled) || ctx.Calls() != 2 {
		t.Errorf("frame index: got %v after %d looks, want context.Canceled after 2", err, ctx.Calls())
	}
}
