package flame

import (
	"bufio"
	"io"
	"slices"
	"strconv"

	"github.com/fleetscope/fleetscope"
)

// The external tests' references: the simplest forms of what the package
// builds, for its faster forms (Layout.Flat, Layout.Lines) to be checked
// against.

// WriteFolded writes Folded's lines to w.
func WriteFolded(w io.Writer, d *fleetscope.Dict, c *Counts, a Annotate) error {
	folded := Folded(d, c, a)
	keys := make([]string, 0, len(folded))
	for k := range folded {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	bw := bufio.NewWriter(w)
	for _, k := range keys {
		bw.WriteString(k)
		bw.WriteByte(' ')
		bw.WriteString(strconv.FormatUint(folded[k], 10))
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// FlatTree merges the stacks into a tree rooted at "all", with children
// sorted by name; frames that print the same (with or without annotations)
// merge.
func FlatTree(d *fleetscope.Dict, c *Counts, a Annotate) *Flat {
	return NewLayout(d, a).Flat(c)
}

// Tree merges the stacks into a nested tree rooted at "all" (see FlatTree).
func Tree(d *fleetscope.Dict, c *Counts, a Annotate) *Node {
	return FlatTree(d, c, a).Tree()
}
