package fleetscope

import "testing"

// TestRowBounds: row r of a second starts at offset ⌈r·1e9/rows⌉ ns, the
// bound the geometry states and the tests' cell ranges use: the offset
// there is in row r, the one before it in row r-1.
func TestRowBounds(t *testing.T) {
	for _, rows := range []int{1, 3, 7, DefaultRows, 333, MaxRows} {
		for r := range rows {
			lo := (int64(r)*1e9 + int64(rows) - 1) / int64(rows)
			if got := Row(lo, rows); got != r {
				t.Fatalf("rows %d: offset %d is in row %d, want %d", rows, lo, got, r)
			}
			if r > 0 {
				if got := Row(lo-1, rows); got != r-1 {
					t.Fatalf("rows %d: offset %d is in row %d, want %d", rows, lo-1, got, r-1)
				}
			}
		}
		if got := Row(1e9-1, rows); got != rows-1 {
			t.Fatalf("rows %d: the last offset is in row %d, want %d", rows, got, rows-1)
		}
	}
}
