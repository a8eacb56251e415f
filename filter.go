package fleetscope

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
)

// Filter narrows the samples a heatmap or flame graph counts, beyond event,
// idle and range: by function (a frame of the sample's stack, the root
// process frame included, matches Function; no frame matches
// ExcludeFunction; both RE2, unanchored, against the frame's name) and by
// where it ran (any of PIDs, any of TIDs, any of CPUs; an empty list: any).
// The zero Filter keeps every sample. Heatmap cells and flame graph totals
// agree under any filter, as without one.
type Filter struct {
	Function        string
	ExcludeFunction string
	PIDs, TIDs      []int32
	CPUs            []int32
	// InSpans keeps the samples taken inside the spans (entry/return probe
	// pairs, per thread) that pass a condition such as "slower:p95" or
	// "faster:2ms"; SpanEntry and SpanReturn name the probe events ("":
	// found by perf's F / F__return naming). One profile at a time.
	InSpans               string
	SpanEntry, SpanReturn string
}

// Filter bounds: a request names at most this many ids, and a pattern is
// at most this long.
const (
	MaxFilterIDs     = 1024
	MaxFilterPattern = 4096
)

// IsZero reports whether f keeps every sample.
func (f *Filter) IsZero() bool {
	return f.Function == "" && f.ExcludeFunction == "" && len(f.PIDs) == 0 && len(f.TIDs) == 0 && len(f.CPUs) == 0 && f.InSpans == ""
}

// BySpans reports whether f keeps samples by the spans they fall in.
func (f *Filter) BySpans() bool { return f.InSpans != "" }

// ByThread reports whether f looks at where samples ran.
func (f *Filter) ByThread() bool { return len(f.PIDs) > 0 || len(f.TIDs) > 0 || len(f.CPUs) > 0 }

// ByFunction reports whether f looks at stacks.
func (f *Filter) ByFunction() bool { return f.Function != "" || f.ExcludeFunction != "" }

// Key is a canonical form of f, for caches: filters that keep the same
// samples by the same rules have the same key.
func (f *Filter) Key() string {
	if f.IsZero() {
		return ""
	}
	ids := func(v []int32) string {
		v = slices.Compact(slices.Sorted(slices.Values(v)))
		return strings.Trim(fmt.Sprint(v), "[]")
	}
	return fmt.Sprintf("%q %q %s|%s|%s %q %q %q", f.Function, f.ExcludeFunction, ids(f.PIDs), ids(f.TIDs), ids(f.CPUs), f.InSpans, f.SpanEntry, f.SpanReturn)
}

// Compile checks f and returns its matcher; EINVALID says what is wrong.
func (f *Filter) Compile() (*Matcher, error) {
	if f.InSpans == "" && (f.SpanEntry != "" || f.SpanReturn != "") {
		return nil, Errorf(EINVALID, "span entry and return events name the spans of an in-spans condition: give the condition too")
	}
	if len(f.PIDs)+len(f.TIDs)+len(f.CPUs) > MaxFilterIDs {
		return nil, Errorf(EINVALID, "at most %d process, thread and CPU ids in a filter", MaxFilterIDs)
	}
	m := &Matcher{pids: idSet(f.PIDs), tids: idSet(f.TIDs), cpus: idSet(f.CPUs)}
	var err error
	if m.function, err = compile("function", f.Function); err != nil {
		return nil, err
	}
	if m.exclude, err = compile("exclude-function", f.ExcludeFunction); err != nil {
		return nil, err
	}
	return m, nil
}

func compile(what, pattern string) (*nameMatcher, error) {
	if pattern == "" {
		return nil, nil
	}
	if len(pattern) > MaxFilterPattern {
		return nil, Errorf(EINVALID, "%s pattern: %d bytes, at most %d", what, len(pattern), MaxFilterPattern)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, Errorf(EINVALID, "%s pattern %q: %v", what, pattern, err)
	}
	return &nameMatcher{re: re, literals: literals(pattern)}, nil
}

// nameMatcher matches frame names against a pattern: by substring when
// the pattern is only literal text or alternatives of it (a function's
// name, "GC|malloc"), the usual case and many times faster, else by the
// regular expression.
type nameMatcher struct {
	re       *regexp.Regexp
	literals []string // the alternatives, when the pattern is just those
}

func (n *nameMatcher) match(name string) bool {
	if n.literals == nil {
		return n.re.MatchString(name)
	}
	for _, l := range n.literals {
		if strings.Contains(name, l) {
			return true
		}
	}
	return false
}

// literals returns the texts a pattern is an alternation of (nil when it
// is anything else: classes, repeats, anchors, flags).
func literals(pattern string) []string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil
	}
	lit := func(r *syntax.Regexp) (string, bool) {
		return string(r.Rune), r.Op == syntax.OpLiteral && r.Flags&syntax.FoldCase == 0 && len(r.Rune) > 0
	}
	if s, ok := lit(re); ok {
		return []string{s}
	}
	if re.Op != syntax.OpAlternate {
		return nil
	}
	out := make([]string, 0, len(re.Sub))
	for _, sub := range re.Sub {
		s, ok := lit(sub)
		if !ok {
			return nil
		}
		out = append(out, s)
	}
	return out
}

func idSet(ids []int32) map[int32]bool {
	if len(ids) == 0 {
		return nil
	}
	m := make(map[int32]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

// Matcher is a compiled Filter.
type Matcher struct {
	function, exclude *nameMatcher
	pids, tids, cpus  map[int32]bool
}

// KeepThread reports whether a sample that ran on t passes the filter's
// process, thread and CPU lists.
func (m *Matcher) KeepThread(t Thread) bool {
	return (m.pids == nil || m.pids[t.PID]) && (m.tids == nil || m.tids[t.TID]) && (m.cpus == nil || m.cpus[t.CPU])
}

// Threads returns which of threads pass (nil when the filter keeps every
// thread).
func (m *Matcher) Threads(threads []Thread) []bool {
	if m.pids == nil && m.tids == nil && m.cpus == nil {
		return nil
	}
	keep := make([]bool, len(threads))
	for i, t := range threads {
		keep[i] = m.KeepThread(t)
	}
	return keep
}

// Stacks returns which of d's stacks pass the function conditions (nil
// when the filter has none). Each frame is matched once.
func (m *Matcher) Stacks(d *Dict) []bool {
	if m.function == nil && m.exclude == nil {
		return nil
	}
	const (
		unknown = iota
		no
		yes
	)
	in, out := make([]uint8, d.NumFrames()), make([]uint8, d.NumFrames())
	match := func(nm *nameMatcher, memo []uint8, f FrameID) bool {
		if memo[f] == unknown {
			memo[f] = no
			if nm.match(d.FrameAt(f).Name) {
				memo[f] = yes
			}
		}
		return memo[f] == yes
	}
	keep := make([]bool, d.NumStacks())
	for i := range keep {
		frames := d.StackFrames(StackID(i))
		ok := m.function == nil
		for _, f := range frames {
			if m.function != nil && !ok && match(m.function, in, f) {
				ok = true
			}
			if m.exclude != nil && match(m.exclude, out, f) {
				ok = false
				break
			}
		}
		keep[i] = ok
	}
	return keep
}
