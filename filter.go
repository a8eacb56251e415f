package fleetscope

import (
	"context"
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

// Filter bounds: a request names at most this many ids, a pattern is at
// most this long, and a pattern that is not just literal alternatives
// compiles to at most MaxPatternProgram instructions of Go's regexp
// machine. Matching costs the name's length times the program's size, and
// a repetition multiplies it: `[a-z_:]{1000}X`, 14 bytes, is a program of
// 1003 instructions, which took a minute over a dictionary of long names.
// Realistic patterns ("^_?_?[a-z]+_[a-z]+$", "(?i)tcp_.*send") take 10 to
// 40.
const (
	MaxFilterIDs      = 1024
	MaxFilterPattern  = 4096
	MaxPatternProgram = 500
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
	n := &nameMatcher{re: re, literals: literals(pattern)}
	if n.literals == nil { // matched by the regular expression: bound its program
		if size := programSize(pattern); size > MaxPatternProgram {
			return nil, Errorf(EINVALID, "%s pattern %q compiles to %d instructions, at most %d: use fewer or shorter repetitions ({n})",
				what, pattern, size, MaxPatternProgram)
		}
	}
	for _, l := range n.literals {
		n.masks = append(n.masks, byteMask(l))
	}
	return n, nil
}

// nameMatcher matches frame names against a pattern: by substring when
// the pattern is only literal text or alternatives of it (a function's
// name, "GC|malloc"), the usual case and many times faster, else by the
// regular expression.
type nameMatcher struct {
	re       *regexp.Regexp
	literals []string // the alternatives, when the pattern is just those
	masks    []uint64 // their byteMasks
}

// match reports whether the pattern matches name, whose byteMask is mask:
// a literal whose bytes are not all in the name cannot be in it, and most
// names are ruled out so, without a search.
func (n *nameMatcher) match(name string, mask uint64) bool {
	if n.literals == nil {
		return n.re.MatchString(name)
	}
	for i, l := range n.literals {
		if mask&n.masks[i] == n.masks[i] && strings.Contains(name, l) {
			return true
		}
	}
	return false
}

// cost is the work, in Checker units, of matching name: a frame, or a
// frame per 4 bytes a regular expression scans (a look every 16 KiB).
func (n *nameMatcher) cost(name string) int {
	if n.literals == nil {
		return 1 + len(name)/4
	}
	return 1
}

// byteMask summarises the bytes of s: bit b&63 is set for each byte b.
func byteMask(s string) uint64 {
	var m uint64
	for i := 0; i < len(s); i++ {
		m |= 1 << (s[i] & 63)
	}
	return m
}

// programSize is the number of instructions of the pattern's compiled
// program (regexp.Compile accepted it).
func programSize(pattern string) int {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return 0
	}
	prog, err := syntax.Compile(re.Simplify())
	if err != nil {
		return 0
	}
	return len(prog.Inst)
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
// when the filter has none), with x the dictionary's FrameIndex: each
// frame name is matched once (most ruled out by their byteMask), and only
// the stacks of matching frames are visited. It returns ctx.Err() as soon
// as it sees ctx done (looking every CheckEvery frames, or every 16 KiB of
// names a regular expression scanned).
func (m *Matcher) Stacks(ctx context.Context, d *Dict, x *FrameIndex) ([]bool, error) {
	if m.function == nil && m.exclude == nil {
		return nil, nil
	}
	keep := make([]bool, len(d.stacks))
	if m.function == nil {
		for i := range keep {
			keep[i] = true
		}
	}
	check := NewChecker(ctx)
	mark := func(n *nameMatcher, to bool) error {
		for f := range d.frames {
			if err := check.Tick(n.cost(d.frames[f].Name)); err != nil {
				return err
			}
			if n.match(d.frames[f].Name, x.masks[f]) {
				for _, st := range x.of(FrameID(f)) {
					keep[st] = to
				}
			}
		}
		return nil
	}
	if m.function != nil {
		if err := mark(m.function, true); err != nil {
			return nil, err
		}
	}
	if m.exclude != nil { // after the function's marks: exclusion wins
		if err := mark(m.exclude, false); err != nil {
			return nil, err
		}
	}
	return keep, nil
}

// FrameIndex is what function filters need of a dictionary, built once:
// its stacks inverted (for each frame, the stacks that hold it, each once
// however often it recurs there) and each frame name's byteMask.
type FrameIndex struct {
	off    []uint32 // frame f's stacks are stacks[off[f]:off[f+1]]
	stacks []StackID
	masks  []uint64
}

// NewFrameIndex builds d's FrameIndex; ctx.Err() if ctx is done before
// it is built.
func NewFrameIndex(ctx context.Context, d *Dict) (*FrameIndex, error) {
	x := &FrameIndex{off: make([]uint32, len(d.frames)+1), masks: make([]uint64, len(d.frames))}
	for f := range d.frames {
		x.masks[f] = byteMask(d.frames[f].Name)
	}
	last := make([]int32, len(d.frames)) // the stack that last counted the frame, +1
	check := NewChecker(ctx)
	count := func(visit func(f FrameID, st int)) error {
		clear(last)
		for i, st := range d.stacks {
			if err := check.Tick(int(st.n)); err != nil {
				return err
			}
			for _, f := range d.stackFrame[st.off : st.off+st.n] {
				if last[f] != int32(i+1) {
					last[f] = int32(i + 1)
					visit(f, i)
				}
			}
		}
		return nil
	}
	if err := count(func(f FrameID, _ int) { x.off[f+1]++ }); err != nil {
		return nil, err
	}
	for f := range d.frames {
		x.off[f+1] += x.off[f]
	}
	x.stacks = make([]StackID, x.off[len(d.frames)])
	next := slices.Clone(x.off[:len(d.frames)])
	if err := count(func(f FrameID, st int) {
		x.stacks[next[f]] = StackID(st)
		next[f]++
	}); err != nil {
		return nil, err
	}
	return x, nil
}

func (x *FrameIndex) of(f FrameID) []StackID { return x.stacks[x.off[f]:x.off[f+1]] }

// SizeBytes is the memory x holds.
func (x *FrameIndex) SizeBytes() int64 {
	return 64 + 4*int64(len(x.off)+len(x.stacks)) + 8*int64(len(x.masks))
}
