package query

import (
	"slices"

	"github.com/fleetscope/fleetscope/query/export"
	"github.com/fleetscope/fleetscope/query/flame"
)

// The export formats take a flame graph's stacks sorted by frames. A
// merged tree built here lists them in that order already: in pre-order,
// one root first, siblings in name order. These read them off it.

// treeStacks lists the stacks of f with their own values (nonzero) in
// pre-order. False when a name holds ';' (the folded lines read it as more
// frames) or the tree is not in stack order (not a tree built here).
func treeStacks(f *flame.Flat) ([]export.Stack, bool) {
	if f.NameHoldsSemicolon() || !stackOrder(f.Names, f.Name, f.Depth) {
		return nil, false
	}
	self := selfValues(f.Depth, f.Value)
	return offTree(f.Names, f.Name, f.Depth, func(i int) bool { return self[i] != 0 },
		func(frames []string, i int) export.Stack { return export.Stack{Frames: frames, Value: self[i]} }), true
}

// treeDiffStacks lists the stacks of a comparison's tree with their own
// values on either side (not both zero) in pre-order; false when the tree
// is not in stack order.
func treeDiffStacks(f *flame.DiffFlat) ([]export.DiffStack, bool) {
	if !stackOrder(f.Names, f.Name, f.Depth) {
		return nil, false
	}
	a, b := selfValues(f.Depth, f.A), selfValues(f.Depth, f.B)
	return offTree(f.Names, f.Name, f.Depth, func(i int) bool { return a[i] != 0 || b[i] != 0 },
		func(frames []string, i int) export.DiffStack {
			return export.DiffStack{Frames: frames, A: a[i], B: b[i]}
		}), true
}

// stackOrder reports whether a flat tree's pre-order is its stacks' order
// by frames: one root, first; each node at most one deeper than the one
// before; siblings in strictly increasing name order.
func stackOrder(names []string, name, depth []uint32) bool {
	last := make([]int, 0, 64) // last[d]: the latest node at depth d
	for i := range name {
		dep := int(depth[i])
		if dep > len(last) || (i > 0) != (dep > 0) {
			return false
		}
		if dep > 0 && len(last) > dep && names[name[last[dep]]] >= names[name[i]] {
			return false
		}
		last = append(last[:dep], i)
	}
	return true
}

// selfValues is each node's value less its children's (a tree in stack
// order).
func selfValues(depth []uint32, value []uint64) []uint64 {
	self := slices.Clone(value)
	last := make([]int, 0, 64)
	for i := range depth {
		dep := int(depth[i])
		if dep > 0 {
			self[last[dep-1]] -= value[i]
		}
		last = append(last[:dep], i)
	}
	return self
}

// offTree makes a stack of each node but the root that keep takes, in
// pre-order; the stacks' frames are slices of one array.
func offTree[T any](names []string, name, depth []uint32, keep func(int) bool, make1 func(frames []string, i int) T) []T {
	stacks, frames := 0, 0
	for i := 1; i < len(name); i++ {
		if keep(i) {
			stacks++
			frames += int(depth[i])
		}
	}
	out := make([]T, 0, stacks)
	all := make([]string, 0, frames)
	path := make([]string, 0, 64)
	for i := 1; i < len(name); i++ {
		path = append(path[:depth[i]-1], names[name[i]])
		if keep(i) {
			at := len(all)
			all = append(all, path...)
			out = append(out, make1(all[at:len(all):len(all)], i))
		}
	}
	return out
}
