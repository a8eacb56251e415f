package query_test

import "github.com/fleetscope/fleetscope"

// cellRange is the half-open range of relative time, in ns, that heatmap
// cell (col, row) covers: the offsets fleetscope.Row puts in row, within
// second col (the domain package's geometry).
func cellRange(col, row, rows int) fleetscope.Range {
	lo := (int64(row)*1e9 + int64(rows) - 1) / int64(rows)
	hi := (int64(row+1)*1e9 + int64(rows) - 1) / int64(rows)
	base := int64(col) * 1e9
	return fleetscope.Range{Start: base + lo, End: base + hi}
}
