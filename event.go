package fleetscope

import (
	"math"
	"strings"
)

// DefaultEvent is the event a heatmap or flame graph shows unless asked:
// the one with the most samples (the first such on a tie), given the
// samples per event.
func DefaultEvent(counts []int64) EventID {
	best, n := 0, int64(math.MinInt64)
	for i, c := range counts {
		if c > n {
			best, n = i, c
		}
	}
	return EventID(best)
}

// ResolveEvent finds an event by name among names (indexed by EventID):
// the exact name, or the name without perf's modifiers ("cpu-clock" for
// "cpu-clock:pppH"). Returns EINVALID, listing the events, if none matches.
func ResolveEvent(names []string, name string) (EventID, error) {
	for i, e := range names {
		if e == name {
			return EventID(i), nil
		}
	}
	for i, e := range names {
		if rest, ok := strings.CutPrefix(e, name+":"); ok && isModifiers(rest) {
			return EventID(i), nil
		}
	}
	return 0, Errorf(EINVALID, "no event %q in this profile; it has: %s", name, strings.Join(names, ", "))
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

// Selection chooses samples: one event, idle or not, and a half-open range
// of time relative to a profile's start second.
type Selection struct {
	Event       EventID
	IncludeIdle bool
	Range       Range
	// StartSecond is the profile's start second in ns (floor of the first
	// sample's timestamp); Range is relative to it.
	StartSecond int64
}

// Keep reports whether the selection keeps sample s.
func (q *Selection) Keep(d *Dict, s *Sample) bool {
	if s.Event != q.Event || (!q.IncludeIdle && d.Idle(s.Stack)) {
		return false
	}
	if q.Range == All {
		return true
	}
	if s.TimeNanos == NoTime {
		return false
	}
	return q.Range.Contains(s.TimeNanos - q.StartSecond)
}
