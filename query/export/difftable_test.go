package export_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fleetscope/fleetscope/query/export"
)

var tableStacks = []export.DiffStack{
	dst("app;main;parse;lex", 10, 30),
	dst("app;main;eval;lex", 5, 5),
	dst("app;main;eval", 20, 10),
	dst("app;main;main;rec", 0, 4), // main recurses: counted once
	dst("app;gc", 1, 3),
	dst("app;idle", 0, 0), // in neither
}

func TestFunctions(t *testing.T) {
	got := export.Functions(tableStacks)
	want := []export.FunctionDiff{
		{Name: "app", TotalA: 36, TotalB: 52},
		{Name: "eval", SelfA: 20, SelfB: 10, TotalA: 25, TotalB: 15},
		{Name: "gc", SelfA: 1, SelfB: 3, TotalA: 1, TotalB: 3},
		{Name: "lex", SelfA: 15, SelfB: 35, TotalA: 15, TotalB: 35},
		{Name: "main", TotalA: 35, TotalB: 49},
		{Name: "parse", TotalA: 10, TotalB: 30},
		{Name: "rec", SelfB: 4, TotalB: 4},
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	eval := got[1]
	if eval.SelfDelta() != -10 || eval.TotalDelta() != -10 || eval.SelfChange() != -0.5 || eval.TotalChange() != -0.4 {
		t.Errorf("eval: deltas %d %d, changes %v %v", eval.SelfDelta(), eval.TotalDelta(), eval.SelfChange(), eval.TotalChange())
	}
	if rec := got[6]; !math.IsInf(rec.SelfChange(), 1) {
		t.Errorf("a new leaf's self change is %v, want +Inf", rec.SelfChange())
	}
	if app := got[0]; app.SelfChange() != 0 {
		t.Errorf("a leaf on neither side changes by %v, want 0", app.SelfChange())
	}
}

func TestTop(t *testing.T) {
	fns := export.Functions(tableStacks)
	for _, c := range []struct {
		by   export.Ranking
		n    int
		want []string
	}{
		// |self delta|: lex 20, eval 10, rec 4, gc 2; no self change elsewhere.
		{export.BySelf, 0, []string{"lex", "eval", "rec", "gc"}},
		{export.BySelf, 2, []string{"lex", "eval"}},
		// |total delta|: lex and parse 20 (by name), app 16, main 14, eval 10, rec 4, gc 2.
		{export.ByTotal, 0, []string{"lex", "parse", "app", "main", "eval", "rec", "gc"}},
		// |self change|: rec new, gc +200%, lex +133%, eval -50%.
		{export.BySelfChange, 0, []string{"rec", "gc", "lex", "eval"}},
		// |total change|: rec new; parse and gc +200% (parse's 20 beats
		// gc's 2); lex +133%; app +44%; main +40% and eval -40% (main's 14
		// beats eval's 10).
		{export.ByTotalChange, 0, []string{"rec", "parse", "gc", "lex", "app", "main", "eval"}},
		{export.ByTotalChange, 100, []string{"rec", "parse", "gc", "lex", "app", "main", "eval"}},
	} {
		var got []string
		for _, f := range export.Top(fns, c.by, c.n) {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Top(%d, %d) = %q, want %q", c.by, c.n, got, c.want)
		}
	}
	// The input is left as it was.
	if !slices.Equal(fns, export.Functions(tableStacks)) {
		t.Error("Top reordered its input")
	}
}

// TestTopNormalized compares a profile twice as long: normalised, only the
// real change remains.
func TestTopNormalized(t *testing.T) {
	stacks := []export.DiffStack{dst("app;a", 10, 20), dst("app;b", 10, 40)}
	// totalA 20, totalB 60: A scales by 3 to a 30, b 30.
	var got []string
	for _, f := range export.Top(export.Functions(export.Normalize(stacks)), export.BySelf, 0) {
		got = append(got, f.Name)
	}
	if want := []string{"a", "b"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	fns := export.Functions(export.Normalize(stacks)) // a, app, b
	if fns[0].SelfDelta() != -10 || fns[2].SelfDelta() != 10 || fns[1].TotalDelta() != 0 {
		t.Errorf("normalised: %+v, want a -10, b +10, app unchanged", fns)
	}
}

// TestTopSelectsTheFirstOfTheOrder: Top(n) is the first n of the full
// ranking, for every ranking, with many ties on the counts (names, as
// Functions gives them, are distinct).
func TestTopSelectsTheFirstOfTheOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	var fns []export.FunctionDiff
	for i := range 2000 {
		fns = append(fns, export.FunctionDiff{Name: fmt.Sprintf("f%d", (i*7919)%2000),
			SelfA: uint64(r.IntN(5)), SelfB: uint64(r.IntN(5)), TotalA: uint64(r.IntN(9)), TotalB: uint64(r.IntN(9))})
	}
	for _, by := range []export.Ranking{export.BySelf, export.ByTotal, export.BySelfChange, export.ByTotalChange} {
		all := export.Top(fns, by, 0)
		for _, n := range []int{1, 5, 20, 500} {
			if got := export.Top(fns, by, n); !slices.Equal(got, all[:n]) {
				t.Fatalf("ranking %v: Top(%d) is not the first %d of the full order", by, n, n)
			}
		}
	}
}
