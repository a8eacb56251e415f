package query

import "github.com/fleetscope/fleetscope/query/export"

// FoldedStacks is FlameGraph.Stacks read from the folded lines, for tests
// of the tree walk.
func (g *FlameGraph) FoldedStacks() []export.Stack { return g.foldedStacks() }
