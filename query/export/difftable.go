package export

import (
	"cmp"
	"container/heap"
	"math"
	"slices"
	"strings"
)

// FunctionDiff is one function's samples on both sides of a comparison.
// A function is a frame name; the process names at the roots count as
// functions too.
type FunctionDiff struct {
	Name string
	// SelfA and SelfB count the samples whose leaf is the function.
	SelfA, SelfB uint64
	// TotalA and TotalB count the samples with the function anywhere on
	// the stack, once per sample however often it recurs.
	TotalA, TotalB uint64
}

// SelfDelta returns SelfB − SelfA.
func (f FunctionDiff) SelfDelta() int64 { return int64(f.SelfB) - int64(f.SelfA) }

// TotalDelta returns TotalB − TotalA.
func (f FunctionDiff) TotalDelta() int64 { return int64(f.TotalB) - int64(f.TotalA) }

// SelfChange returns the relative change of the self samples,
// (SelfB − SelfA) / SelfA: 0.5 for +50%, −1 for gone; +Inf for a function
// that is new as a leaf, 0 when it is a leaf on neither side.
func (f FunctionDiff) SelfChange() float64 { return relChange(f.SelfA, f.SelfB) }

// TotalChange returns the relative change of the total samples,
// (TotalB − TotalA) / TotalA, with SelfChange's conventions.
func (f FunctionDiff) TotalChange() float64 { return relChange(f.TotalA, f.TotalB) }

func relChange(a, b uint64) float64 {
	if a == 0 {
		if b == 0 {
			return 0
		}
		return math.Inf(1)
	}
	return (float64(b) - float64(a)) / float64(a)
}

// Ranking orders a diff table.
type Ranking int

// The rankings, each by the size of a change whatever its sign.
const (
	// BySelf ranks by |SelfDelta|.
	BySelf Ranking = iota
	// ByTotal ranks by |TotalDelta|.
	ByTotal
	// BySelfChange ranks by |SelfChange| (new leaves first), then by
	// |SelfDelta|. Small counts swing most: filter them out first if they
	// are noise.
	BySelfChange
	// ByTotalChange ranks by |TotalChange|, then by |TotalDelta|.
	ByTotalChange
)

// Top returns the n functions of fns that changed most by r (all of them
// when n ≤ 0), largest change first; ties go to the larger absolute change,
// then to the name in bytewise order, so the order is deterministic.
// Functions whose ranked values did not change are left out. fns is not
// modified.
func Top(fns []FunctionDiff, r Ranking, n int) []FunctionDiff {
	type keyed struct {
		f   FunctionDiff
		rel float64 // |relative change|, for the relative rankings
		abs uint64  // |absolute change|
	}
	ks := make([]keyed, 0, len(fns))
	for _, f := range fns {
		var k keyed
		switch r {
		case BySelf, BySelfChange:
			k = keyed{f: f, rel: math.Abs(f.SelfChange()), abs: absDiff(f.SelfB, f.SelfA)}
		default:
			k = keyed{f: f, rel: math.Abs(f.TotalChange()), abs: absDiff(f.TotalB, f.TotalA)}
		}
		if k.abs == 0 {
			continue
		}
		ks = append(ks, k)
	}
	relative := r == BySelfChange || r == ByTotalChange
	less := func(x, y *keyed) int {
		if relative {
			if c := cmp.Compare(y.rel, x.rel); c != 0 {
				return c
			}
		}
		if c := cmp.Compare(y.abs, x.abs); c != 0 {
			return c
		}
		return strings.Compare(x.f.Name, y.f.Name)
	}
	// The n first of a total order: keep the best n seen in a heap whose
	// root is the worst of them (n log n instead of sorting them all).
	idx := make([]int, 0, len(ks))
	if n > 0 && len(ks) > n {
		h := &worstFirst{less: func(i, j int) bool { return less(&ks[i], &ks[j]) > 0 }}
		for i := range ks {
			if h.Len() < n {
				heap.Push(h, i)
			} else if less(&ks[i], &ks[h.idx[0]]) < 0 {
				h.idx[0] = i
				heap.Fix(h, 0)
			}
		}
		idx = append(idx, h.idx...)
	} else {
		for i := range ks {
			idx = append(idx, i)
		}
	}
	slices.SortFunc(idx, func(i, j int) int { return less(&ks[i], &ks[j]) })
	out := make([]FunctionDiff, len(idx))
	for i, j := range idx {
		out[i] = ks[j].f
	}
	return out
}

// worstFirst is a heap of indexes whose root is the worst by less.
type worstFirst struct {
	idx  []int
	less func(i, j int) bool // i ranks after j
}

func (h *worstFirst) Len() int           { return len(h.idx) }
func (h *worstFirst) Less(i, j int) bool { return h.less(h.idx[i], h.idx[j]) }
func (h *worstFirst) Swap(i, j int)      { h.idx[i], h.idx[j] = h.idx[j], h.idx[i] }
func (h *worstFirst) Push(x any)         { h.idx = append(h.idx, x.(int)) }
func (h *worstFirst) Pop() any {
	x := h.idx[len(h.idx)-1]
	h.idx = h.idx[:len(h.idx)-1]
	return x
}
