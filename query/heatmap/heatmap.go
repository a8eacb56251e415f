// Package heatmap builds FlameScope's sub-second offset heatmap: column i is
// the second [startSecond+i, startSecond+i+1), row r (0 at the bottom) counts
// the samples whose offset within their second lies in [r/rows, (r+1)/rows).
// Counting is exact integer arithmetic on nanosecond timestamps.
package heatmap

import (
	"fmt"

	"github.com/fleetscope/fleetscope"
)

// DefaultRows gives 20 ms cells at one second per column.
const DefaultRows = 50

// MaxRows bounds the rows a heatmap may have.
const MaxRows = 1000

// Heatmap is one event's heatmap. Columns[i][r] is the count of cell (i, r).
type Heatmap struct {
	Event       string    `json:"event"`
	StartSecond int64     `json:"startSecond"`
	Rows        int       `json:"rows"`
	Columns     [][]int64 `json:"columns"`
	MaxCount    int64     `json:"maxCount"`
	Total       int64     `json:"total"`
}

// CheckRows validates a rows option.
func CheckRows(rows int) error {
	if rows < 1 || rows > MaxRows {
		return fleetscope.Errorf(fleetscope.EINVALID, "rows must be between 1 and %d, not %d", MaxRows, rows)
	}
	return nil
}

// Row returns the row of a timestamp's offset within its second.
func Row(offsetNanos int64, rows int) int {
	return int(offsetNanos * int64(rows) / 1e9)
}

// CellRange returns the half-open range of relative time, in ns, that cell
// (col, row) covers: exactly the offsets Row puts in row.
func CellRange(col, row, rows int) fleetscope.Range {
	lo := ceilDiv(int64(row)*1e9, int64(rows))
	hi := ceilDiv(int64(row+1)*1e9, int64(rows))
	base := int64(col) * 1e9
	return fleetscope.Range{Start: base + lo, End: base + hi}
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// Builder counts samples into per-event heatmaps. Add samples with Add, in
// any order, then read each event's heatmap with Heatmap.
type Builder struct {
	rows        int
	includeIdle bool
	events      []*grid
}

// grid holds one event's counts by absolute second.
type grid struct {
	first int64 // absolute second of cols[0]
	cols  [][]int64
	n     int64
}

// NewBuilder returns a Builder for heatmaps with rows rows.
func NewBuilder(rows int, includeIdle bool) (*Builder, error) {
	if err := CheckRows(rows); err != nil {
		return nil, err
	}
	return &Builder{rows: rows, includeIdle: includeIdle}, nil
}

// Add counts a batch of samples. Samples without a timestamp are skipped.
func (b *Builder) Add(d *fleetscope.Dict, batch []fleetscope.Sample) {
	for i := range batch {
		s := &batch[i]
		if s.TimeNanos == fleetscope.NoTime || (!b.includeIdle && d.Idle(s.Stack)) {
			continue
		}
		for int(s.Event) >= len(b.events) {
			b.events = append(b.events, nil)
		}
		g := b.events[s.Event]
		if g == nil {
			g = &grid{first: floorSec(s.TimeNanos)}
			b.events[s.Event] = g
		}
		sec := floorSec(s.TimeNanos)
		g.add(sec, Row(s.TimeNanos-sec*1e9, b.rows), b.rows)
	}
}

func floorSec(t int64) int64 {
	s := t / 1e9
	if t < 0 && t%1e9 != 0 {
		s--
	}
	return s
}

func (g *grid) add(sec int64, row, rows int) {
	if sec < g.first {
		pre := make([][]int64, g.first-sec, int(g.first-sec)+len(g.cols))
		g.cols = append(pre, g.cols...)
		g.first = sec
	}
	i := int(sec - g.first)
	for i >= len(g.cols) {
		g.cols = append(g.cols, nil)
	}
	if g.cols[i] == nil {
		g.cols[i] = make([]int64, rows)
	}
	g.cols[i][row]++
	g.n++
}

// Count returns how many samples of event were counted.
func (b *Builder) Count(event fleetscope.EventID) int64 {
	if int(event) >= len(b.events) || b.events[event] == nil {
		return 0
	}
	return b.events[event].n
}

// Heatmap returns event's heatmap over the seconds [startSecond,
// lastSecond], both absolute. Every column has Rows entries.
func (b *Builder) Heatmap(event fleetscope.EventID, name string, startSecond, lastSecond int64) (*Heatmap, error) {
	if lastSecond < startSecond {
		return nil, fmt.Errorf("heatmap: last second %d before start second %d", lastSecond, startSecond)
	}
	h := &Heatmap{Event: name, StartSecond: startSecond, Rows: b.rows, Columns: make([][]int64, lastSecond-startSecond+1)}
	var g *grid
	if int(event) < len(b.events) {
		g = b.events[event]
	}
	for i := range h.Columns {
		col := make([]int64, b.rows)
		if g != nil {
			if j := startSecond + int64(i) - g.first; j >= 0 && j < int64(len(g.cols)) && g.cols[j] != nil {
				copy(col, g.cols[j])
			}
		}
		for _, c := range col {
			h.Total += c
			h.MaxCount = max(h.MaxCount, c)
		}
		h.Columns[i] = col
	}
	return h, nil
}
