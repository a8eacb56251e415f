package fleetscope

import (
	"regexp"
	"testing"
)

// TestNameMatcherAgreesWithRegexp: the substring shortcut for literal
// patterns answers as the regular expression does.
func TestNameMatcherAgreesWithRegexp(t *testing.T) {
	names := []string{"GCTaskThread::run", "malloc", "java/lang/Thread:::run", "a.b", "axb", "", "gc", "PSPromotionManager::drain_stacks_depth(bool)", "x1"}
	for _, p := range []string{"GC", "GC|malloc", "x1|GC", `a\.b`, "a.b", "(?i)gc", "^malloc$", "run|", "drain_stacks_depth(bool)", `drain_stacks_depth\(bool\)`, "[Gg]C", "::"} {
		nm, err := compile("function", p)
		if err != nil {
			t.Fatal(err)
		}
		re := regexp.MustCompile(p)
		for _, n := range names {
			if got, want := nm.match(n), re.MatchString(n); got != want {
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
