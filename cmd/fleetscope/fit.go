package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/term"

	"github.com/fleetscope/fleetscope/query/heatmap"
)

// A heatmap drawn on a terminal fits it: empty columns at either end are
// left out, and the rest merged, k adjacent columns into one, until they
// fit the terminal's width. --json is untouched: it has every column.

// defaultWidth is the width of the drawing when the terminal's is unknown
// (standard output is not a terminal and COLUMNS is not set).
const defaultWidth = 100

// gutter is the width of a drawn row before its cells: "%4dms |".
const gutter = 8

// terminalWidth is $COLUMNS, else standard output's width if it is a
// terminal, else defaultWidth.
func terminalWidth() int {
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil && w > 0 {
		return w
	}
	return defaultWidth
}

// fitHeatmap returns h for a drawing width characters wide, and a line
// saying what it changed ("" when nothing): its empty columns at either
// end left out, the rest merged by the least factor that fits.
func fitHeatmap(h *heatmap.Heatmap, width int) (*heatmap.Heatmap, string) {
	cells := max(width-gutter, 10)
	empty := func(col []int64) bool {
		for _, n := range col {
			if n != 0 {
				return false
			}
		}
		return true
	}
	lead, trail := 0, 0
	for lead < len(h.Columns) && empty(h.Columns[lead]) {
		lead++
	}
	if lead == len(h.Columns) { // nothing at all: nothing to trim
		lead = 0
	}
	for trail < len(h.Columns)-lead && empty(h.Columns[len(h.Columns)-1-trail]) {
		trail++
	}
	cols := h.Columns[lead : len(h.Columns)-trail]
	k := (len(cols) + cells - 1) / cells
	if lead == 0 && trail == 0 && k <= 1 {
		return h, ""
	}
	k = max(k, 1)
	out := &heatmap.Heatmap{Event: h.Event, StartSecond: h.StartSecond + int64(lead)*h.SecondsPerColumn,
		SecondsPerColumn: h.SecondsPerColumn * int64(k), Rows: h.Rows, Total: h.Total}
	for i := 0; i < len(cols); i += k {
		merged := make([]int64, h.Rows)
		for _, col := range cols[i:min(i+k, len(cols))] {
			for r, n := range col {
				merged[r] += n
			}
		}
		for _, n := range merged {
			out.MaxCount = max(out.MaxCount, n)
		}
		out.Columns = append(out.Columns, merged)
	}
	var said []string
	if lead > 0 || trail > 0 {
		said = append(said, fmt.Sprintf("left out %d empty columns of %d s before the samples and %d after", lead, h.SecondsPerColumn, trail))
	}
	if k > 1 {
		said = append(said, fmt.Sprintf("merged %d columns of %d s into each to fit %d characters (COLUMNS sets the width)", k, h.SecondsPerColumn, width))
	}
	return out, "(" + strings.Join(said, "; ") + "; --json has every column)"
}
