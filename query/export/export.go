// Package export writes a flame graph, given as folded stacks, in the formats
// other tools read: a self-contained interactive SVG (plain and
// differential, in the manner of Brendan Gregg's flamegraph.pl), pprof
// (gzipped protobuf for `go tool pprof`), speedscope's JSON file format
// and difffolded text (difffolded.pl); one side's folded text is written
// from the flame graph itself (flame.Lines). It also ranks the functions
// that changed most between the two sides of a comparison (Top), and
// normalises and totals the sides (Normalize, DiffTotals).
//
// It owns the output formats only. It must not read profiles, select
// samples or touch storage: its input is a slice of Stack or DiffStack that
// the caller built, and its only I/O is the io.Writer it is handed. It
// imports nothing of the project but the domain's error type.
//
// Conventions shared by every writer: a stack's frames run from the root
// (the process name) to the leaf; values are sample counts or periods;
// stacks whose value is zero add nothing and are left out; identical stacks
// may appear more than once and add up. Errors caused by the input (a frame
// the format cannot represent, a value it cannot hold) are
// fleetscope.EINVALID; errors of the writer are returned wrapped.
package export

import (
	"context"
	"encoding/binary"
	"io"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/fleetscope/fleetscope"
)

// Stack is one folded stack: frames from the root (the process name) to the
// leaf, and its value.
type Stack struct {
	Frames []string
	Value  uint64
}

// DiffStack is one folded stack of a comparison: frames from the root to the
// leaf, its value in the baseline A and in the profile B compared with it.
type DiffStack struct {
	Frames []string
	A, B   uint64
}

// Total returns the sum of the stacks' values.
func Total(stacks []Stack) uint64 {
	var t uint64
	for _, s := range stacks {
		t += s.Value
	}
	return t
}

// DiffTotals returns the sums of the stacks' A and B values.
func DiffTotals(stacks []DiffStack) (a, b uint64) {
	for _, s := range stacks {
		a += s.A
		b += s.B
	}
	return a, b
}

// checkedDiffTotals sums A and B, reporting false on overflow.
func checkedDiffTotals(stacks []DiffStack) (a, b uint64, ok bool) {
	for _, s := range stacks {
		if s.A > math.MaxUint64-a || s.B > math.MaxUint64-b {
			return 0, 0, false
		}
		a += s.A
		b += s.B
	}
	return a, b, true
}

// Normalize merges identical stacks and scales A to B's total the way
// `difffolded.pl -n` does: when the totals differ, each merged stack's A
// becomes floor(A × totalB / totalA), computed exactly in integers (Perl's
// int() of the same product and quotient in doubles, without their rounding
// on very large counts). B is unchanged; because every stack is rounded
// down, the scaled A total can fall short of B's total by up to one sample
// per stack. With equal totals, or no A samples at all, A is unchanged. The
// result is sorted by frames (bytewise, root first) and keeps stacks whose
// scaled A is zero. Each side's values must add up to less than 2^64.
func Normalize(stacks []DiffStack) []DiffStack {
	merged := mergeDiff(stacks)
	normalizeMerged(merged)
	return merged
}

func normalizeMerged(merged []DiffStack) {
	ta, tb := DiffTotals(merged)
	if ta == tb || ta == 0 {
		return
	}
	for i := range merged {
		merged[i].A = scale(merged[i].A, tb, ta)
	}
}

// Scale returns floor(v × num / den) for v ≤ den, exactly: how Normalize
// scales a stack's A.
func Scale(v, num, den uint64) uint64 { return scale(v, num, den) }

// scale returns floor(v × num / den) for v ≤ den, exactly.
func scale(v, num, den uint64) uint64 {
	hi, lo := bits.Mul64(v, num)
	q, _ := bits.Div64(hi, lo, den) // hi < den because v ≤ den
	return q
}

// MergeDiff returns the distinct stacks of stacks with their A and B
// summed, sorted by frames (bytewise, root first).
func MergeDiff(stacks []DiffStack) []DiffStack { return mergeDiff(stacks) }

// mergeDiff returns the distinct stacks of stacks with their A and B
// summed, sorted by frames. Frames slices are shared with the input.
func mergeDiff(stacks []DiffStack) []DiffStack {
	byFrames := func(x, y DiffStack) int { return slices.Compare(x.Frames, y.Frames) }
	if distinctSorted(stacks, byFrames) { // a comparison's stacks come so
		return slices.Clone(stacks)
	}
	index := make(map[string]int, len(stacks))
	var out []DiffStack
	var key []byte
	for _, s := range stacks {
		key = stackKey(key[:0], s.Frames)
		if i, ok := index[string(key)]; ok {
			out[i].A += s.A
			out[i].B += s.B
			continue
		}
		index[string(key)] = len(out)
		out = append(out, s)
	}
	slices.SortFunc(out, byFrames)
	return out
}

// distinctSorted reports whether each element of s sorts strictly after
// the one before.
func distinctSorted[T any](s []T, cmp func(x, y T) int) bool {
	for i := 1; i < len(s); i++ {
		if cmp(s[i-1], s[i]) >= 0 {
			return false
		}
	}
	return true
}

// mergeStacks returns the distinct stacks of stacks with a nonzero value,
// values summed, sorted by frames. Frames slices are shared with the input.
func mergeStacks(stacks []Stack) []Stack {
	index := make(map[string]int, len(stacks))
	var out []Stack
	var key []byte
	for _, s := range stacks {
		if s.Value == 0 {
			continue
		}
		key = stackKey(key[:0], s.Frames)
		if i, ok := index[string(key)]; ok {
			out[i].Value += s.Value
			continue
		}
		index[string(key)] = len(out)
		out = append(out, s)
	}
	slices.SortFunc(out, func(x, y Stack) int { return slices.Compare(x.Frames, y.Frames) })
	return out
}

// stackKey appends an unambiguous encoding of frames to b: each frame's
// length, then its bytes (frames may hold any byte, ';' included).
func stackKey(b []byte, frames []string) []byte {
	for _, f := range frames {
		b = binary.AppendUvarint(b, uint64(len(f)))
		b = append(b, f...)
	}
	return b
}

// sortedStacks returns the stacks with a nonzero value, sorted by frames
// (bytewise, root first; a stack sorts before the stacks it is a prefix of),
// without merging duplicates. The input is not modified.
func sortedStacks(stacks []Stack) []Stack {
	out := make([]Stack, 0, len(stacks))
	for _, s := range stacks {
		if s.Value != 0 {
			out = append(out, s)
		}
	}
	byFrames := func(x, y Stack) int { return slices.Compare(x.Frames, y.Frames) }
	if !slices.IsSortedFunc(out, byFrames) { // a flame graph's stacks come sorted
		slices.SortStableFunc(out, byFrames)
	}
	return out
}

// checkedTotal returns the sum of the values, or false if it overflows
// max.
func checkedTotal(stacks []Stack, max uint64) (uint64, bool) {
	var t uint64
	for _, s := range stacks {
		if s.Value > max-t {
			return 0, false
		}
		t += s.Value
	}
	return t, true
}

// maxExactFloat is 2^53: every integer up to it is exact in a float64, so
// in JavaScript's numbers.
const maxExactFloat = 1 << 53

// joinFrames returns the frames joined by ';' as stackcollapse writes them.
func joinFrames(frames []string) string { return strings.Join(frames, ";") }

// Formats Write knows.
const (
	FormatSVG        = "svg"
	FormatPprof      = "pprof"
	FormatSpeedscope = "speedscope"
)

// Options describe a flame graph for Write: a subtitle (the selection)
// and what its values count ("samples"/"count" by default; an event and
// its unit when they are periods).
type Options struct {
	Subtitle               string
	SampleType, SampleUnit string
}

// Write writes stacks in format (FormatSVG, FormatPprof or
// FormatSpeedscope); EINVALID for another format.
func Write(w io.Writer, format string, stacks []Stack, o Options) error {
	return WriteContext(context.Background(), w, format, stacks, o)
}

// WriteContext is Write, stopping with ctx.Err() once ctx is done: pprof
// while it builds its profile, every format as soon as it writes (w
// fails with ctx.Err() then).
func WriteContext(ctx context.Context, w io.Writer, format string, stacks []Stack, o Options) error {
	w = ctxWriter{ctx, w}
	switch format {
	case FormatSVG:
		return WriteSVG(w, stacks, SVGOptions{Subtitle: o.Subtitle})
	case FormatPprof:
		return writePprof(ctx, w, stacks, PprofOptions{SampleType: o.SampleType, SampleUnit: o.SampleUnit})
	case FormatSpeedscope:
		unit := "none"
		if o.SampleUnit == "nanoseconds" {
			unit = o.SampleUnit
		}
		return WriteSpeedscope(w, stacks, SpeedscopeOptions{Name: o.Subtitle, Unit: unit})
	}
	return fleetscope.Errorf(fleetscope.EINVALID, "export format %q: svg, pprof or speedscope", format)
}

// ctxWriter is a writer that fails with ctx.Err() once ctx is done.
type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}
