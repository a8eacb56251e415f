// Package heatmap counts samples into FlameScope's sub-second offset
// heatmap, with the geometry of the domain package (fleetscope.Row):
// column i covers the secondsPerColumn seconds from
// startSecond + i·secondsPerColumn; row r (0 at the bottom) counts the
// samples whose offset within their second lies in [r/rows, (r+1)/rows).
// Its size is fixed when it is made, whatever the samples added. It is
// pure: no I/O.
package heatmap

import "github.com/fleetscope/fleetscope"

// Heatmap is one event's heatmap. Columns[i][r] is the count of cell (i, r).
type Heatmap struct {
	Event            string    `json:"event"`
	StartSecond      int64     `json:"startSecond"`
	SecondsPerColumn int64     `json:"secondsPerColumn"`
	Rows             int       `json:"rows"`
	Columns          [][]int64 `json:"columns"`
	MaxCount         int64     `json:"maxCount"`
	Total            int64     `json:"total"`
}

// New returns an empty heatmap of the given shape; rows must satisfy
// fleetscope.CheckRows and columns be at most fleetscope.MaxColumns (the
// caller's bound).
func New(event string, startSecond, secondsPerColumn int64, columns, rows int) *Heatmap {
	h := &Heatmap{Event: event, StartSecond: startSecond, SecondsPerColumn: max(secondsPerColumn, 1), Rows: rows,
		Columns: make([][]int64, columns)}
	cells := make([]int64, columns*rows) // one allocation
	for i := range h.Columns {
		h.Columns[i] = cells[i*rows : (i+1)*rows : (i+1)*rows]
	}
	return h
}

// column returns the column of absolute second sec, or -1 outside.
func (h *Heatmap) column(sec int64) int {
	if sec < h.StartSecond {
		return -1
	}
	i := (sec - h.StartSecond) / h.SecondsPerColumn
	if i >= int64(len(h.Columns)) {
		return -1
	}
	return int(i)
}

// Add counts one sample at timeNanos (absolute, on the profile clock);
// samples outside the heatmap's seconds are not counted.
func (h *Heatmap) Add(timeNanos int64) { h.AddN(timeNanos, 1) }

// AddN counts n samples at timeNanos.
func (h *Heatmap) AddN(timeNanos, n int64) {
	sec := fleetscope.FloorSecond(timeNanos)
	if i := h.column(sec); i >= 0 {
		h.Columns[i][fleetscope.Row(timeNanos-sec*1e9, h.Rows)] += n
	}
}

// AddCells adds a second's precomputed cells (len(cells) == Rows).
func (h *Heatmap) AddCells(sec int64, cells []int32) {
	if i := h.column(sec); i >= 0 {
		col := h.Columns[i]
		for r, c := range cells[:h.Rows] {
			col[r] += int64(c)
		}
	}
}

// Column returns the cells of absolute second sec's column (nil outside
// the heatmap), to count into.
func (h *Heatmap) Column(sec int64) []int64 {
	if i := h.column(sec); i >= 0 {
		return h.Columns[i]
	}
	return nil
}

// Finish computes Total and MaxCount.
func (h *Heatmap) Finish() *Heatmap {
	h.Total, h.MaxCount = 0, 0
	for _, col := range h.Columns {
		for _, c := range col {
			h.Total += c
			h.MaxCount = max(h.MaxCount, c)
		}
	}
	return h
}

// Slice returns the heatmap of columns [from, to) alone (clamped to the
// heatmap), totals recomputed; the columns are shared with h.
func (h *Heatmap) Slice(from, to int) *Heatmap {
	from, to = max(from, 0), min(to, len(h.Columns))
	to = max(to, from)
	out := *h
	out.StartSecond = h.StartSecond + int64(from)*h.SecondsPerColumn
	out.Columns = h.Columns[from:to]
	return out.Finish()
}

// SizeBytes estimates the memory the heatmap holds.
func (h *Heatmap) SizeBytes() int64 {
	return int64(len(h.Columns))*(24+8*int64(h.Rows)) + 128 + int64(len(h.Event))
}
