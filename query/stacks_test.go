package query

import (
	"slices"
	"testing"

	"github.com/fleetscope/fleetscope/query/export"
	"github.com/fleetscope/fleetscope/query/flame"
)

// TestTreeStacks: a tree's stacks in pre-order, a node's own before its
// children's; a name holding ';', siblings out of name order, or a second
// root leave it to the folded lines.
func TestTreeStacks(t *testing.T) {
	// root 10: a 7 (self 2): b 3 (self 1): c 2; d 2; e 3
	names := []string{"", "a", "b", "c", "d", "e"}
	f := &flame.Flat{Names: names, Name: []uint32{0, 1, 2, 3, 4, 5}, Value: []uint64{10, 7, 3, 2, 2, 3}, Depth: []uint32{0, 1, 2, 3, 2, 1}}
	got, ok := treeStacks(f)
	want := []export.Stack{{Frames: []string{"a"}, Value: 2}, {Frames: []string{"a", "b"}, Value: 1}, {Frames: []string{"a", "b", "c"}, Value: 2}, {Frames: []string{"a", "d"}, Value: 2}, {Frames: []string{"e"}, Value: 3}}
	if !ok || !slices.EqualFunc(got, want, func(a, b export.Stack) bool { return a.Value == b.Value && slices.Equal(a.Frames, b.Frames) }) {
		t.Fatalf("treeStacks = %v, %v; want %v", got, ok, want)
	}
	got[0].Frames = append(got[0].Frames, "x") // each stack's frames end where it does
	if got[1].Frames[1] != "b" {
		t.Fatal("a stack's frames run into the next stack's")
	}
	for _, bad := range []*flame.Flat{
		{Names: []string{"", "a;b"}, Name: []uint32{0, 1}, Value: []uint64{1, 1}, Depth: []uint32{0, 1}},
		{Names: []string{"", "b", "a"}, Name: []uint32{0, 1, 2}, Value: []uint64{2, 1, 1}, Depth: []uint32{0, 1, 1}},
		{Names: []string{"", "a"}, Name: []uint32{0, 1, 0}, Value: []uint64{1, 1, 1}, Depth: []uint32{0, 1, 0}},
		{Names: []string{"", "a"}, Name: []uint32{0, 1}, Value: []uint64{1, 1}, Depth: []uint32{0, 2}},
	} {
		if _, ok := treeStacks(bad); ok {
			t.Errorf("treeStacks took %+v", bad)
		}
	}
}

// TestTreeDiffStacks: a comparison's stacks, each side's own value, a
// stack on one side only kept.
func TestTreeDiffStacks(t *testing.T) {
	// root: a (A 5 self 1, B 2 self 2): b (A 4, B 0); c (A 0, B 3)
	f := &flame.DiffFlat{Names: []string{"", "a", "b", "c"}, Name: []uint32{0, 1, 2, 3}, A: []uint64{5, 5, 4, 0}, B: []uint64{5, 2, 0, 3}, Depth: []uint32{0, 1, 2, 1}}
	got, ok := treeDiffStacks(f)
	want := []export.DiffStack{{Frames: []string{"a"}, A: 1, B: 2}, {Frames: []string{"a", "b"}, A: 4}, {Frames: []string{"c"}, B: 3}}
	if !ok || !slices.EqualFunc(got, want, func(a, b export.DiffStack) bool { return a.A == b.A && a.B == b.B && slices.Equal(a.Frames, b.Frames) }) {
		t.Fatalf("treeDiffStacks = %v, %v; want %v", got, ok, want)
	}
	f.Name[3] = 1 // two siblings named a
	if _, ok := treeDiffStacks(f); ok {
		t.Fatal("treeDiffStacks took siblings of one name")
	}
}
