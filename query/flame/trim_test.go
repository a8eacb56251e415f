package flame_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/flame"
)

// randomGraph returns a dictionary of random stacks over a few frame names
// and random counts.
func randomGraph(r *rand.Rand, stacks int) (*fleetscope.Dict, []uint64) {
	d := fleetscope.NewDict()
	names := []string{"main", "a", "b", "c", "p", "zeta", "gc", "alloc"}
	values := make([]uint64, 0, stacks)
	for range stacks {
		depth := 1 + r.IntN(6)
		fs := []fleetscope.FrameID{d.Frame(fleetscope.Frame{Name: "app"})}
		for range depth {
			fs = append(fs, d.Frame(fleetscope.Frame{Name: names[r.IntN(len(names))]}))
		}
		id := d.Stack(fs)
		for int(id) >= len(values) {
			values = append(values, 0)
		}
		values[id] += uint64(r.IntN(50))
	}
	return d, values
}

// parents returns each node's parent in a pre-order flat tree (-1: root).
func parents(f *flame.Flat) []int {
	out := make([]int, len(f.Name))
	path := []int{}
	for i := range f.Name {
		path = append(path[:f.Depth[i]], i)
		out[i] = -1
		if i > 0 {
			out[i] = path[f.Depth[i]-1]
		}
	}
	return out
}

// paths maps each node of a flat tree to its path of names.
func paths(f *flame.Flat) []string {
	par := parents(f)
	out := make([]string, len(f.Name))
	for i := range f.Name {
		out[i] = f.Names[f.Name[i]]
		if par[i] >= 0 {
			out[i] = out[par[i]] + ";" + out[i]
		}
	}
	return out
}

// TestTruncate: for random trees and every bound, the truncated tree is
// well formed (children sorted and unique by name), keeps the root's total
// and every kept node's value, keeps exactly the largest nodes (none kept
// is smaller than one dropped, parents before children), maxNodes of them,
// and under each node that lost children one "other" holding exactly what
// was lost. A real frame named "other" under such a node goes into it.
func TestTruncate(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	for round := range 60 {
		d, values := randomGraph(r, 1+r.IntN(80))
		f := flame.FlatTree(d, flame.CountsOf(values), flame.Annotate{})
		full := paths(f)
		byPath := map[string]uint64{}
		for i, p := range full {
			byPath[p] = f.Value[i]
		}
		for _, maxNodes := range []int{1, 2, 3, 5, 10, 40, len(f.Name) - 2, len(f.Name) - 1, len(f.Name) + 5} {
			if maxNodes < 1 {
				continue
			}
			g := f.Truncate(maxNodes)
			what := fmt.Sprintf("round %d, %d nodes, max %d", round, len(f.Name), maxNodes)
			if err := g.Check(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if maxNodes >= len(f.Name)-1 {
				if g != f {
					t.Fatalf("%s: a tree within the bound changed", what)
				}
				continue
			}
			par := parents(g)
			gp := paths(g)
			real := 0
			for i := range g.Name {
				self := g.Value[i]
				var names []string
				for j := i + 1; j < len(g.Name) && g.Depth[j] > g.Depth[i]; j++ {
					if par[j] == i {
						self -= g.Value[j]
						names = append(names, g.Names[g.Name[j]])
					}
				}
				if int64(self) < 0 || !slices.IsSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
					t.Fatalf("%s: node %q: children %v, self %d", what, gp[i], names, int64(self))
				}
				if g.Names[g.Name[i]] != flame.Other {
					if g.Value[i] != byPath[gp[i]] {
						t.Fatalf("%s: node %q has %d, the full tree %d", what, gp[i], g.Value[i], byPath[gp[i]])
					}
					if i > 0 {
						real++
					}
					continue
				}
				// An "other": its parent's dropped children.
				var lost uint64
				fpar := parents(f)
				for j, p := range full {
					if fpar[j] >= 0 && full[fpar[j]] == gp[par[i]] && !slices.Contains(gp, p) {
						lost += f.Value[j]
					}
				}
				if lost != g.Value[i] || lost == 0 {
					t.Fatalf("%s: %q holds %d, its parent lost %d", what, gp[i], g.Value[i], lost)
				}
			}
			if g.Value[0] != f.Value[0] || real != maxNodes {
				t.Fatalf("%s: total %d (want %d), %d nodes kept", what, g.Value[0], f.Value[0], real)
			}
			var minKept, maxDropped uint64 = 1 << 63, 0
			for i, p := range full[1:] {
				if slices.Contains(gp, p) {
					minKept = min(minKept, f.Value[i+1])
				} else {
					maxDropped = max(maxDropped, f.Value[i+1])
				}
			}
			if minKept < maxDropped {
				t.Fatalf("%s: kept a node of %d, dropped one of %d", what, minKept, maxDropped)
			}
		}
	}
}

// TestTruncateOther: a real frame named "other" whose siblings are
// dropped is counted with them, so "other" stays one node.
func TestTruncateOther(t *testing.T) {
	d := fleetscope.NewDict()
	fr := func(names ...string) fleetscope.StackID {
		var fs []fleetscope.FrameID
		for _, n := range names {
			fs = append(fs, d.Frame(fleetscope.Frame{Name: n}))
		}
		return d.Stack(fs)
	}
	values := make([]uint64, 4)
	values[fr("app", "other", "x")] = 10
	values[fr("app", "a")] = 5
	values[fr("app", "b")] = 1
	values[fr("app", "zz")] = 4
	f := flame.FlatTree(d, flame.CountsOf(values), flame.Annotate{})
	// The 4 largest: app, other, other;x and a; b and zz are dropped, so
	// the real "other" joins them.
	got, _ := json.Marshal(f.Truncate(4).Tree())
	want := `{"name":"all","value":20,"children":[{"name":"app","value":20,"children":[{"name":"a","value":5,"children":[]},{"name":"other","value":15,"children":[]}]}]}`
	if string(got) != want {
		t.Fatalf("truncated to 4:\n%s\nwant\n%s", got, want)
	}
}

// TestMerge: merging the flame graphs of two sets of counts over one
// dictionary is the flame graph of their sum.
func TestMerge(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 30 {
		d, a := randomGraph(r, 60)
		b := make([]uint64, len(a))
		c := make([]uint64, len(a))
		for i := range a {
			b[i] = uint64(r.IntN(3)) * a[i]
			c[i] = uint64(r.IntN(2)) * uint64(r.IntN(20))
		}
		sum := make([]uint64, len(a))
		for i := range a {
			sum[i] = a[i] + b[i] + c[i]
		}
		fa := flame.FlatTree(d, flame.CountsOf(a), flame.Annotate{})
		fb := flame.FlatTree(d, flame.CountsOf(b), flame.Annotate{})
		fc := flame.FlatTree(d, flame.CountsOf(c), flame.Annotate{})
		got, _ := json.Marshal(flame.Merge(fa, fb, fc).Tree())
		want, _ := json.Marshal(flame.FlatTree(d, flame.CountsOf(sum), flame.Annotate{}).Tree())
		if string(got) != string(want) {
			t.Fatalf("merged:\n%s\nwant:\n%s", got, want)
		}
	}
	if m := flame.Merge(); m.Check() != nil || m.Value[0] != 0 {
		t.Fatalf("merge of nothing: %+v", m)
	}
}
