package export

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetscope/fleetscope"
)

// WriteDiffFolded writes the stacks as difffolded.pl's output: one line
// "frame;...;leaf countA countB" per distinct stack present in either side
// (a nonzero A or B before any normalisation), sorted bytewise by the stack
// text (difffolded.pl prints in Perl's hash order; sorting makes the output
// reproducible). With normalize, A is scaled to B's total as
// `difffolded.pl -n` scales it (see Normalize).
//
// Returns EINVALID for a stack without frames or with a frame that holds ';'
// or a newline, and for values that add up past a uint64.
func WriteDiffFolded(w io.Writer, stacks []DiffStack, normalize bool) error {
	if err := checkFolded(len(stacks), func(i int) []string { return stacks[i].Frames }); err != nil {
		return err
	}
	if _, _, ok := checkedDiffTotals(stacks); !ok {
		return fleetscope.Errorf(fleetscope.EINVALID, "difffolded: the values of A or B add up to more than a uint64 holds")
	}
	merged := slices.DeleteFunc(mergeDiff(stacks), func(s DiffStack) bool { return s.A == 0 && s.B == 0 })
	if normalize {
		normalizeMerged(merged)
	}
	lines := make([]foldedLine, len(merged))
	size := 0
	for i, s := range merged {
		lines[i] = foldedLine{stack: joinFrames(s.Frames), a: s.A, b: s.B}
		size += len(lines[i].stack) + 3 + digits(s.A) + digits(s.B)
	}
	sortLines(lines)
	if g, ok := w.(interface{ Grow(int) }); ok { // a buffer: sized once, not by doubling
		g.Grow(size)
	}
	bw := bufio.NewWriter(w)
	var buf []byte
	for _, l := range lines {
		buf = append(buf[:0], l.stack...)
		buf = append(buf, ' ')
		buf = strconv.AppendUint(buf, l.a, 10)
		buf = append(buf, ' ')
		buf = strconv.AppendUint(buf, l.b, 10)
		buf = append(buf, '\n')
		bw.Write(buf) // the error is kept by bw and returned by Flush
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write difffolded: %w", err)
	}
	return nil
}

// digits is the length of v in decimal.
func digits(v uint64) int {
	n := 1
	for ; v >= 10; v /= 10 {
		n++
	}
	return n
}

type foldedLine struct {
	stack string
	a, b  uint64
}

func sortLines(lines []foldedLine) {
	slices.SortFunc(lines, func(x, y foldedLine) int { return strings.Compare(x.stack, y.stack) })
}

// checkFolded returns EINVALID for the first of n stacks that folded text
// cannot represent.
func checkFolded(n int, frames func(int) []string) error {
	for i := range n {
		fs := frames(i)
		if len(fs) == 0 {
			return fleetscope.Errorf(fleetscope.EINVALID, "folded: stack %d has no frames", i)
		}
		for j, f := range fs {
			if strings.ContainsAny(f, ";\n") {
				return fleetscope.Errorf(fleetscope.EINVALID, "folded: stack %d frame %d %q holds ';' or a newline, which folded text cannot represent", i, j, f)
			}
		}
	}
	return nil
}
