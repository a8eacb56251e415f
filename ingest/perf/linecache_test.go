package perf

import (
	"fmt"
	"testing"
)

// TestLineCache folds distinct lines past the table's first size, each
// twice, java and not: build runs once per line and flag, and every answer
// is the line's own. Then the bounds: a cache past its key count or key
// bytes starts again (build runs again) rather than growing.
func TestLineCache(t *testing.T) {
	c := newLineCache[string]()
	builds := 0
	build := func(frames []tidyFrame, skip bool) string {
		builds++
		return string(frames[0].name)
	}
	const n = 20_000 // the table starts with 4,096 slots
	line := func(i int) []byte { return fmt.Appendf(nil, "\t    %x f%d (/bin/app)", 0x1000+i, i) }
	for round := range 2 {
		for _, java := range []bool{false, true} {
			for i := range n {
				v, ok := c.fold(line(i), java, Options{}, false, build)
				if want := fmt.Sprintf("f%d", i); !ok || v != want {
					t.Fatalf("round %d java %v: fold(%q) = %q, %v; want %q", round, java, line(i), v, ok, want)
				}
			}
		}
		if builds != 2*n {
			t.Fatalf("round %d: %d builds, want %d (one per line and java flag)", round, builds, 2*n)
		}
	}
	if len(c.entries) != 2*n || len(c.slots) < 2*len(c.entries) {
		t.Fatalf("%d keys in %d slots", len(c.entries), len(c.slots))
	}
	// A java line is tidied as java: the same text, another key.
	jv, _ := c.fold([]byte("\t    1 Ljava/lang/Thread;::run (/tmp/perf-1.map)"), true, Options{}, false, build)
	gv, _ := c.fold([]byte("\t    1 Ljava/lang/Thread;::run (/tmp/perf-1.map)"), false, Options{}, false, build)
	if jv == gv {
		t.Fatalf("java and non-java folds of a JVM frame agree: %q", jv)
	}

	for _, bound := range []struct {
		name               string
		maxLines, maxBytes int
	}{{"keys", 1000, 1 << 30}, {"bytes", 1 << 30, 1000 * 20}} {
		c := newLineCache[string]()
		c.maxLines, c.maxBytes = bound.maxLines, bound.maxBytes
		builds = 0
		for i := range 5000 {
			c.fold(line(i), false, Options{}, false, build)
			if len(c.entries) > bound.maxLines || len(c.keys) > bound.maxBytes {
				t.Fatalf("%s: %d keys, %d bytes held, bounds %d and %d", bound.name, len(c.entries), len(c.keys), bound.maxLines, bound.maxBytes)
			}
		}
		if v, _ := c.fold(line(0), false, Options{}, false, build); v != "f0" || builds != 5001 {
			t.Fatalf("%s: line 0 again = %q after %d builds; want f0, built again (emptied)", bound.name, v, builds)
		}
	}
}
