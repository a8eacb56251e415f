package query

import "github.com/fleetscope/fleetscope/query/export"

// FoldedStacks is FlameGraph.Stacks read from the folded lines, and
// DictStacks Diff.Stacks read from the dictionary, for tests of the tree
// walks.
func (g *FlameGraph) FoldedStacks() []export.Stack { return g.foldedStacks() }
func (d *Diff) DictStacks() []export.DiffStack     { return d.dictStacks() }

// DiffOfContext is DiffOf with a context.
var DiffOfContext = diffOf

// SetMaxTimelineSamples lowers the speedscope export's sample limit until
// the returned function restores it.
func SetMaxTimelineSamples(n int) (restore func()) {
	old := maxTimelineSamples
	maxTimelineSamples = n
	return func() { maxTimelineSamples = old }
}

// SetHourHosts lowers how many hosts' hour is counted at once until the
// returned function restores it.
func SetHourHosts(n int) (restore func()) {
	old := hourHosts
	hourHosts = n
	return func() { hourHosts = old }
}
