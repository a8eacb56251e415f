package spans

import "github.com/fleetscope/fleetscope"

// Filter returns the spans that pass c, in the set's order.
func (s *Set) Filter(c Condition) []Span {
	keep := c.keeper(s)
	var out []Span
	for _, sp := range s.Spans {
		if keep(sp.DurationNanos()) {
			out = append(out, sp)
		}
	}
	return out
}

// Selector keeps the samples taken inside spans that pass a condition. It
// is immutable once built: Keep may be called from several goroutines.
//
// A sample belongs to the outermost span open on its thread at its time
// (the request, not the helper call nested in it): it is kept when that
// span passes the condition. For slower:T this is exactly "a selected span
// was open" (a span is never shorter than one it encloses); for faster:T it
// makes the selection the complement of slower:T's among the samples inside
// spans, nested or not. Spans are half-open: a sample at a span's entry
// time is inside it, one at its return time is not.
type Selector struct {
	pair      Pair
	threshold int64
	spans     int
	threads   map[int32]*intervals
}

// intervals are one thread's selected outermost spans: disjoint, by start.
type intervals struct {
	starts, ends []int64
}

// Select indexes the outermost spans that pass c, per thread, for Keep.
func (s *Set) Select(c Condition) *Selector {
	sel := &Selector{pair: s.Pair, threshold: c.ThresholdNanos(s), threads: map[int32]*intervals{}}
	keep := c.keeper(s)
	for _, sp := range s.Spans {
		if sp.Depth != 0 || !keep(sp.DurationNanos()) {
			continue
		}
		sel.spans++
		if sp.EndNanos == sp.StartNanos {
			continue // holds no sample
		}
		iv := sel.threads[sp.TID]
		if iv == nil {
			iv = &intervals{}
			sel.threads[sp.TID] = iv
		}
		iv.starts = append(iv.starts, sp.StartNanos)
		iv.ends = append(iv.ends, sp.EndNanos)
	}
	return sel
}

// ThresholdNanos is the condition's threshold as resolved for this set.
func (sel *Selector) ThresholdNanos() int64 { return sel.threshold }

// Spans counts the outermost spans selected.
func (sel *Selector) Spans() int { return sel.spans }

// Keep reports whether s was taken inside a selected span on its thread.
// The pair's own probe events are never kept, nor samples without a time
// or a thread; other events are (combine with an event filter to keep only
// the sampling event).
func (sel *Selector) Keep(s *fleetscope.Sample) bool {
	if s.Event == sel.pair.Entry || s.Event == sel.pair.Return || s.TimeNanos == fleetscope.NoTime {
		return false
	}
	iv := sel.threads[s.TID]
	if iv == nil {
		return false
	}
	// i: the number of spans starting at or before the sample.
	t := s.TimeNanos
	lo, hi := 0, len(iv.starts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if iv.starts[m] <= t {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo > 0 && t < iv.ends[lo-1]
}
