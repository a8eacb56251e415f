package flame_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/ctxtest"
	"github.com/fleetscope/fleetscope/query/flame"
)

// bigLayoutDict is a synthetic profile of 20,000 frames and 40,000 stacks,
// 2 to 40 frames deep, sharing prefixes as real stacks do.
func bigLayoutDict() *fleetscope.Dict {
	d := fleetscope.NewDict()
	frames := make([]fleetscope.FrameID, 20000)
	for i := range frames {
		frames[i] = d.Frame(fleetscope.Frame{Name: fmt.Sprintf("pkg%d.func%d", i%97, i)})
	}
	x := uint64(88172645463325252)
	next := func(n int) int { // xorshift: the same profile every run
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		return int(x % uint64(n))
	}
	var stack []fleetscope.FrameID
	for range 40000 {
		stack = stack[:min(len(stack), next(20))]
		for len(stack) < 2+next(39) {
			stack = append(stack, frames[next(len(frames))])
		}
		d.Stack(stack)
	}
	return d
}

// TestLayoutStopsWhenCanceled: a layout build looks at its context inside
// its loops (names, stacks, the sorts' comparisons, the text order) and,
// canceled, returns context.Canceled and no layout at its next look,
// wherever in the build the cancel falls; not canceled, it builds the
// layout NewLayout builds.
func TestLayoutStopsWhenCanceled(t *testing.T) {
	d := bigLayoutDict()
	counts := &flame.Counts{}
	for i := range d.NumStacks() {
		counts.AddStack(fleetscope.StackID(i), uint64(1+i%7))
	}
	whole := ctxtest.CancelAfter(math.MaxInt)
	l, err := flame.NewLayoutContext(whole, d, flame.Annotate{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := l.Flat(counts), flame.NewLayout(d, flame.Annotate{}).Flat(counts); !slices.Equal(got.Value, want.Value) || !slices.Equal(got.Name, want.Name) || !slices.Equal(got.Names, want.Names) {
		t.Fatal("the layout built with a context differs from NewLayout's")
	}
	// Some 40,000 stacks of ~20 frames, sorted twice: hundreds of looks.
	looks := whole.Calls()
	if looks < 200 {
		t.Fatalf("a whole build looked at its context %d times, want hundreds (every %d units of work)", looks, fleetscope.CheckEvery)
	}
	// Done from its n-th look, wherever that falls (the names, the sorts,
	// the text order): the build stops at that look.
	for _, n := range []int{1, 2, looks / 4, looks / 2, 3 * looks / 4, looks} {
		ctx := ctxtest.CancelAfter(n)
		l, err := flame.NewLayoutContext(ctx, d, flame.Annotate{})
		if !errors.Is(err, context.Canceled) || l != nil {
			t.Fatalf("done from look %d of %d: %v, layout %v; want context.Canceled and none", n, looks, err, l != nil)
		}
		if ctx.Calls() != n {
			t.Fatalf("done from look %d of %d: it looked %d times, want it to stop at that look", n, looks, ctx.Calls())
		}
	}
}
