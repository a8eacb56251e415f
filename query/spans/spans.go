// Package spans turns entry and return probe events (perf's uprobes
// "probe_X:F" and "probe_X:F__return") into spans per thread, summarises
// their latency, and selects the other samples taken inside chosen spans
// ("the flame graph of the slowest 5 % of requests").
//
// It owns: finding the entry/return pair among a profile's events, pairing
// the events thread by thread, the percentile definition, conditions such as
// "slower:p95", and the per-thread interval index that answers "was this
// sample taken inside a selected span?". It is pure: no I/O, no storage, no
// transport; callers parse profiles and hand it samples.
package spans

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/fleetscope/fleetscope"
)

// ReturnSuffix is what perf appends to a function's probe name for its
// return probe (perf probe -x BIN F%return names it F__return).
const ReturnSuffix = "__return"

// Pair names the events that open and close spans.
type Pair struct {
	Entry, Return         fleetscope.EventID
	EntryName, ReturnName string
}

// FindPair picks the entry and return events among events (a Dict's event
// names, indexed by EventID).
//
// With entry and ret both empty, it looks for the one pair of events named
// F and F__return (perf's uprobe naming; a trailing ":modifiers" such as
// ":u" is ignored when comparing). With names given, they win: a name
// matches an event exactly or with perf's modifiers after it; when only one
// is given, the other is derived by the F / F__return pattern.
//
// Returns EINVALID, listing the events, when no pair (or more than one, with
// no names given) is found.
func FindPair(events []string, entry, ret string) (Pair, error) {
	if entry == "" && ret == "" {
		return detectPair(events)
	}
	var (
		e, r fleetscope.EventID
		err  error
	)
	switch {
	case entry == "":
		if r, err = resolve(events, []string{ret}, "return"); err != nil {
			return Pair{}, err
		}
		names := entryNames(events[r])
		if len(names) == 0 {
			return Pair{}, fleetscope.Errorf(fleetscope.EINVALID, "return event %q does not end in %s: name its entry event with --entry", events[r], ReturnSuffix)
		}
		if e, err = resolve(events, names, "entry"); err != nil {
			return Pair{}, fmt.Errorf("%w (for return event %q; name the entry with --entry)", err, events[r])
		}
	case ret == "":
		if e, err = resolve(events, []string{entry}, "entry"); err != nil {
			return Pair{}, err
		}
		if r, err = resolve(events, returnNames(events[e]), "return"); err != nil {
			return Pair{}, fmt.Errorf("%w (for entry event %q; name the return with --return)", err, events[e])
		}
	default:
		if e, err = resolve(events, []string{entry}, "entry"); err != nil {
			return Pair{}, err
		}
		if r, err = resolve(events, []string{ret}, "return"); err != nil {
			return Pair{}, err
		}
	}
	if e == r {
		return Pair{}, fleetscope.Errorf(fleetscope.EINVALID, "entry and return are the same event %q", events[e])
	}
	return Pair{Entry: e, Return: r, EntryName: events[e], ReturnName: events[r]}, nil
}

// returnNames are the names F's return event may have: F__return, or with
// F's modifiers after the suffix (F:u gives F__return:u), or none.
func returnNames(entry string) []string {
	names := []string{entry + ReturnSuffix}
	if base, mods := splitModifiers(entry); mods != "" {
		names = append(names, base+ReturnSuffix+mods, base+ReturnSuffix)
	}
	return names
}

// entryNames are the names the entry of return event ret may have: ret
// without its __return suffix, keeping or dropping perf's modifiers.
func entryNames(ret string) []string {
	var names []string
	if f, ok := strings.CutSuffix(ret, ReturnSuffix); ok && f != "" {
		names = append(names, f)
	}
	if base, mods := splitModifiers(ret); mods != "" {
		if f, ok := strings.CutSuffix(base, ReturnSuffix); ok && f != "" {
			names = append(names, f+mods, f)
		}
	}
	return names
}

func detectPair(events []string) (Pair, error) {
	var found []Pair
	for r, name := range events {
		if e, n := lookup(events, entryNames(name)); n == 1 && e != r {
			found = append(found, Pair{Entry: fleetscope.EventID(e), Return: fleetscope.EventID(r), EntryName: events[e], ReturnName: name})
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return Pair{}, fleetscope.Errorf(fleetscope.EINVALID, "no entry/return event pair (F and F%s) among the events %s: name them with --entry and --return", ReturnSuffix, quoteAll(events))
	}
	var names []string
	for _, p := range found {
		names = append(names, p.EntryName+" / "+p.ReturnName)
	}
	return Pair{}, fleetscope.Errorf(fleetscope.EINVALID, "several entry/return event pairs (%s): choose one with --entry and --return", strings.Join(names, ", "))
}

// resolve finds the first of names among events (see lookup). Returns
// EINVALID, listing the events, when none is found or one is ambiguous.
func resolve(events []string, names []string, role string) (fleetscope.EventID, error) {
	switch i, n := lookup(events, names); {
	case n == 1:
		return fleetscope.EventID(i), nil
	case n > 1:
		return 0, fleetscope.Errorf(fleetscope.EINVALID, "%s event %s matches several of the events %s", role, quoteAll(names), quoteAll(events))
	}
	return 0, fleetscope.Errorf(fleetscope.EINVALID, "no %s event %s among the events %s", role, quoteAll(names), quoteAll(events))
}

// lookup finds the first of names among events: exactly, else as an event
// that is the name plus perf's modifiers ("probe_x:f" finds "probe_x:f:u").
// It returns the event's index and how many events matched that name (0:
// none of the names; more than 1: ambiguous, i is one of them).
func lookup(events []string, names []string) (i, n int) {
	for _, name := range names {
		if i := slices.Index(events, name); i >= 0 {
			return i, 1
		}
	}
	for _, name := range names {
		for j, e := range events {
			if base, mods := splitModifiers(e); mods != "" && base == name {
				i, n = j, n+1
			}
		}
		if n > 0 {
			return i, n
		}
	}
	return -1, 0
}

// splitModifiers splits what may be perf's event modifiers off a name:
// "probe_x:f:u" gives "probe_x:f" and ":u", "cpu-clock:pppH" gives
// "cpu-clock" and ":pppH". The part after the last colon counts when it is
// made of modifier letters only, so a probe on a function named like
// modifiers ("probe_x:Hub") splits too: callers try whole names first.
func splitModifiers(name string) (base, mods string) {
	i := strings.LastIndexByte(name, ':')
	if i <= 0 || i == len(name)-1 {
		return name, ""
	}
	for _, c := range name[i+1:] {
		if !strings.ContainsRune("ukhIGHpPSDWeb", c) {
			return name, ""
		}
	}
	return name[:i], name[i:]
}

func quoteAll(events []string) string {
	if len(events) == 0 {
		return "(none)"
	}
	q := make([]string, len(events))
	for i, e := range events {
		q[i] = `"` + e + `"`
	}
	return strings.Join(q, ", ")
}

// Span is one call: [StartNanos, EndNanos) on thread TID, from an entry
// event to the return event paired with it.
type Span struct {
	TID        int32
	StartNanos int64 // the entry's time: inside the span
	EndNanos   int64 // the return's time: just past the span
	Depth      int   // spans open beneath it on its thread when it began (0: outermost)
}

// DurationNanos is EndNanos - StartNanos.
func (s Span) DurationNanos() int64 { return s.EndNanos - s.StartNanos }

// Set is the spans of one profile, with what could not be paired. Build it
// with Match: percentiles and selections use an index Match makes.
type Set struct {
	Pair  Pair
	Spans []Span // by thread, then by start; an enclosing span before those it encloses
	// UnmatchedEntries counts entries never returned from (and entries
	// without a thread or a time); UnmatchedReturns counts returns without
	// an entry (and returns without a thread or a time).
	UnmatchedEntries, UnmatchedReturns int
	durations                          []int64 // ascending
}

// Unmatched is UnmatchedEntries + UnmatchedReturns.
func (s *Set) Unmatched() int { return s.UnmatchedEntries + s.UnmatchedReturns }

// Threads counts the threads with at least one span.
func (s *Set) Threads() int {
	n := 0
	for i, sp := range s.Spans {
		if i == 0 || sp.TID != s.Spans[i-1].TID {
			n++
		}
	}
	return n
}

// probe is one entry or return event, reduced to what pairing needs.
type probe struct {
	nanos int64
	depth int32 // frames in its stack; 0 when unknown
	ret   bool
}

// Match pairs p's entry and return events in samples (in file order; they
// need not be sorted by time) into spans, thread by thread.
//
// On each thread the events are taken in time order (file order among equal
// times) with a stack of open entries: a return closes the innermost open
// entry, so nested and recursive calls pair as they ran. A return with no
// open entry, and an entry still open at the end, count as unmatched, as do
// probe events without a thread id (TID < 0) or a time.
//
// Probe events get lost (in the corpus's uprobe recording about 2 % of
// entries and returns are missing; its header shows perf record -F put the
// probes in frequency mode too, sample_freq = 997). A lost return would
// leave its entry open, and a later return would pair with it into one
// bogus long span. So
// when d is not nil, the entries' call chains decide: a call nested in an
// open one has a deeper stack (the open function is among its callers), so
// an entry whose stack is not deeper than the innermost open entry's means
// that entry's return was lost; it is closed as unmatched. Profiles without
// call chains (one frame per stack) therefore cannot show recursion; pass a
// nil d to pair by time order alone.
func Match(samples []fleetscope.Sample, p Pair, d *fleetscope.Dict) *Set {
	set := &Set{Pair: p}
	threads := map[int32][]probe{} // each thread's probe events, in file order
	entries := 0
	for i := range samples {
		s := &samples[i]
		if s.Event != p.Entry && s.Event != p.Return {
			continue
		}
		ret := s.Event == p.Return
		if s.TID < 0 || s.TimeNanos == fleetscope.NoTime {
			if ret {
				set.UnmatchedReturns++
			} else {
				set.UnmatchedEntries++
			}
			continue
		}
		pr := probe{nanos: s.TimeNanos, ret: ret}
		if d != nil && int(s.Stack) < d.NumStacks() {
			pr.depth = int32(len(d.StackFrames(s.Stack)))
		}
		threads[s.TID] = append(threads[s.TID], pr)
		if !ret {
			entries++
		}
	}
	set.Spans = make([]Span, 0, entries)
	var open []probe // the thread's open entries, innermost last
	for _, tid := range slices.Sorted(maps.Keys(threads)) {
		probes := threads[tid]
		byTime := func(a, b probe) int { return cmp.Compare(a.nanos, b.nanos) }
		if !slices.IsSortedFunc(probes, byTime) { // perf script sorts by time; other inputs may not
			slices.SortStableFunc(probes, byTime)
		}
		open = open[:0]
		for _, pr := range probes {
			if !pr.ret {
				for d != nil && len(open) > 0 && open[len(open)-1].depth >= pr.depth {
					open = open[:len(open)-1]
					set.UnmatchedEntries++
				}
				open = append(open, pr)
				continue
			}
			if len(open) == 0 {
				set.UnmatchedReturns++
				continue
			}
			e := open[len(open)-1]
			open = open[:len(open)-1]
			set.Spans = append(set.Spans, Span{TID: tid, StartNanos: e.nanos, EndNanos: pr.nanos})
		}
		set.UnmatchedEntries += len(open)
	}
	set.index()
	return set
}

// index orders the spans, sets their depths and sorts their durations.
func (s *Set) index() {
	slices.SortFunc(s.Spans, func(a, b Span) int {
		return cmp.Or(cmp.Compare(a.TID, b.TID), cmp.Compare(a.StartNanos, b.StartNanos), cmp.Compare(b.EndNanos, a.EndNanos))
	})
	var ends []int64 // ends of the spans enclosing the current one
	s.durations = make([]int64, len(s.Spans))
	for i := range s.Spans {
		sp := &s.Spans[i]
		if i > 0 && sp.TID != s.Spans[i-1].TID {
			ends = ends[:0]
		}
		for len(ends) > 0 && ends[len(ends)-1] <= sp.StartNanos {
			ends = ends[:len(ends)-1]
		}
		sp.Depth = len(ends)
		ends = append(ends, sp.EndNanos)
		s.durations[i] = sp.DurationNanos()
	}
	slices.Sort(s.durations)
}
