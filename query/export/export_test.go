package export

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/fleetscope/fleetscope"
)

// For the external tests: folded text of one side (the server writes it
// from flame.Lines) with the same checks as the writers here, and every
// function's self and total values computed from the stacks directly,
// the reference for Top's input (the server reads them off the merged
// tree, query.Changes).

// WriteFolded writes the stacks as stackcollapse's folded text: one line
// "frame;frame;...;leaf value" per distinct stack (identical stacks are
// summed, zero-valued ones left out), sorted bytewise by the stack text, as
// stackcollapse-perf.pl sorts them.
//
// Returns EINVALID for a stack without frames or with a frame that holds ';'
// or a newline, which the format cannot represent, and for values that add
// up past a uint64.
func WriteFolded(w io.Writer, stacks []Stack) error {
	if err := checkFolded(len(stacks), func(i int) []string { return stacks[i].Frames }); err != nil {
		return err
	}
	if _, ok := checkedTotal(stacks, math.MaxUint64); !ok {
		return fleetscope.Errorf(fleetscope.EINVALID, "folded: the stacks' values add up to more than a uint64 holds")
	}
	merged := mergeStacks(stacks)
	lines := make([]foldedLine, len(merged))
	for i, s := range merged {
		lines[i] = foldedLine{stack: joinFrames(s.Frames), a: s.Value}
	}
	sortLines(lines)
	bw := bufio.NewWriter(w)
	var buf []byte
	for _, l := range lines {
		buf = append(buf[:0], l.stack...)
		buf = append(buf, ' ')
		buf = strconv.AppendUint(buf, l.a, 10)
		buf = append(buf, '\n')
		bw.Write(buf) // the error is kept by bw and returned by Flush
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write folded: %w", err)
	}
	return nil
}

// Functions returns every function of the stacks with its self and total
// samples in A and B, sorted by name. To compare profiles of different
// lengths, normalise the stacks first (Normalize).
func Functions(stacks []DiffStack) []FunctionDiff {
	index := make(map[string]int)
	var fns []FunctionDiff
	var lastStack []int // per function: the last stack counted in its total
	for si, s := range stacks {
		if s.A == 0 && s.B == 0 {
			continue
		}
		for j, name := range s.Frames {
			i, ok := index[name]
			if !ok {
				i = len(fns)
				index[name] = i
				fns = append(fns, FunctionDiff{Name: name})
				lastStack = append(lastStack, -1)
			}
			if lastStack[i] != si {
				lastStack[i] = si
				fns[i].TotalA += s.A
				fns[i].TotalB += s.B
			}
			if j == len(s.Frames)-1 {
				fns[i].SelfA += s.A
				fns[i].SelfB += s.B
			}
		}
	}
	slices.SortFunc(fns, func(x, y FunctionDiff) int { return strings.Compare(x.Name, y.Name) })
	return fns
}
