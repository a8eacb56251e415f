package fleetscope

import (
	"regexp"
	"testing"
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
	x := NewFrameIndex(d)
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
		keep := m.Stacks(d, x)
		for i, id := range s {
			if keep[id] != tc.want[i] {
				t.Errorf("%+v: stack %d kept %v, want %v", tc.f, i, keep[id], tc.want[i])
			}
		}
	}
}
