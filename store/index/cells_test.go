package index

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCellsRoundTrip encodes random rows of cells, sparse and dense, small
// and large counts, and the all-zero row, and reads them back; rows in the
// fixed encoding of earlier versions are read too, and a compact encoding
// that would have the fixed one's length is told apart.
func TestCellsRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(cells []int32) {
		t.Helper()
		b := AppendCells(nil, cells)
		if len(b) == 4*len(cells) {
			t.Fatalf("%v: encoded to the fixed encoding's length", cells)
		}
		got := make([]int32, len(cells))
		for i := range got {
			got[i] = -1 // ReadCells must clear
		}
		if err := ReadCells(got, b); err != nil {
			t.Fatalf("%v: %v", cells, err)
		}
		if !slices.Equal(got, cells) {
			t.Fatalf("read %v, wrote %v", got, cells)
		}
		var fixed []byte
		for _, c := range cells {
			fixed = binary.BigEndian.AppendUint32(fixed, uint32(c))
		}
		if err := ReadCells(got, fixed); err != nil || !slices.Equal(got, cells) {
			t.Fatalf("fixed encoding: read %v (%v), want %v", got, err, cells)
		}
	}
	check(make([]int32, Rows))
	for range 5000 {
		cells := make([]int32, Rows)
		density, top := rng.Float64(), []int32{1, 3, 200, 1 << 20, 1<<31 - 1, -1}[rng.IntN(6)]
		for i := range cells {
			if rng.Float64() < density {
				if top < 0 { // weights summed past int32 wrap: every bit pattern round-trips
					cells[i] = int32(rng.Uint32() | 1)
				} else {
					cells[i] = 1 + rng.Int32N(top)
				}
			}
		}
		check(cells)
	}
	// Counts whose uvarints add up to exactly 4*Rows bytes: 7 bytes of
	// bitmap, then 48 cells of 4 bytes and one of 1, or alike.
	cells := make([]int32, Rows)
	for i := range 48 {
		cells[i] = 1 << 21 // 4-byte uvarint
	}
	cells[48], cells[49] = 1, 1 // 7 + 192 + 2 = 201: not the edge
	check(cells)
	cells[49] = 0 // 7 + 192 + 1 = 200: the edge
	if b := AppendCells(nil, cells); len(b) != 4*Rows+1 {
		t.Fatalf("at the fixed length: %d bytes, want the pad byte", len(b))
	}
	check(cells)
	sparse := make([]int32, Rows)
	sparse[3], sparse[40] = 2, 1
	if n := len(AppendCells(nil, sparse)); n != 9 {
		t.Fatalf("two small cells: %d bytes, want 9", n)
	}
}

// TestCellsRefuseDamage: bytes that are not an encoding are an error,
// never cells.
func TestCellsRefuseDamage(t *testing.T) {
	dst := make([]int32, Rows)
	good := AppendCells(nil, append([]int32{5, 0, 7}, make([]int32, Rows-3)...))
	for _, b := range [][]byte{
		good[:len(good)-1],            // a count missing
		append(slices.Clone(good), 1), // a byte left over
		{1, 0, 0, 0, 0, 0, 0, 0},      // a set bit with a zero count
		{0, 0, 0, 0, 0, 0, 0x04, 1},   // bit 50 set: past the last cell
		{1},                           // shorter than the bitmap
		{1, 0, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x10}, // past 32 bits
	} {
		if err := ReadCells(dst, b); err == nil {
			t.Errorf("% x: read as %v", b, dst)
		}
	}
}
