// Package query answers questions about parsed profiles: which samples a
// selection (event, idle, time range) keeps; its subpackages build heatmaps
// (query/heatmap) and flame graphs (query/flame) from those samples. Query
// code is pure: no I/O beyond the writers it is handed, so it is easy to test
// and to benchmark.
package query

import (
	"math"
	"strings"

	"github.com/fleetscope/fleetscope"
)

// Selection chooses samples: one event, idle or not, and a half-open range
// of time relative to the profile's start second.
type Selection struct {
	Event       fleetscope.EventID
	IncludeIdle bool
	Range       fleetscope.Range
	// StartSecond is the profile's start second in ns (floor of the first
	// sample's timestamp); Range is relative to it.
	StartSecond int64
}

// Keep reports whether the selection keeps sample s.
func (q *Selection) Keep(d *fleetscope.Dict, s *fleetscope.Sample) bool {
	if s.Event != q.Event || (!q.IncludeIdle && d.Idle(s.Stack)) {
		return false
	}
	if q.Range == fleetscope.All {
		return true
	}
	if s.TimeNanos == fleetscope.NoTime {
		return false
	}
	return q.Range.Contains(s.TimeNanos - q.StartSecond)
}

// StartSecond is floor(t) for a timestamp t in ns, as ns.
func StartSecond(t int64) int64 {
	s := t / 1e9
	if t < 0 && t%1e9 != 0 {
		s--
	}
	return s * 1e9
}

// DefaultEvent picks the event with the most samples (the first such on a
// tie), given per-event sample counts.
func DefaultEvent(counts []int) fleetscope.EventID {
	best, n := 0, math.MinInt
	for i, c := range counts {
		if c > n {
			best, n = i, c
		}
	}
	return fleetscope.EventID(best)
}

// ResolveEvent finds an event by name: the exact name, or the name without
// perf's modifiers ("cpu-clock" for "cpu-clock:pppH").
func ResolveEvent(d *fleetscope.Dict, name string) (fleetscope.EventID, error) {
	if id, ok := d.EventID(name); ok {
		return id, nil
	}
	for i, e := range d.Events() {
		if rest, ok := strings.CutPrefix(e, name+":"); ok && isModifiers(rest) {
			return fleetscope.EventID(i), nil
		}
	}
	return 0, fleetscope.Errorf(fleetscope.EINVALID, "no event %q in this profile; it has: %s", name, strings.Join(d.Events(), ", "))
}

func isModifiers(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}
