package index

import (
	"encoding/binary"
	"fmt"
	"math"
)

// AppendCells appends a row's heatmap cells as the index stores them:
// nothing when every cell is zero, else a bitmap of the cells that are not
// (bit i of byte i/8 for cell i) followed by each such cell's count as a
// uvarint, in row order (a cell's 32 bits as they are: a sum that wrapped
// comes back as it was stored). A second of ~47 samples over 50 cells
// takes about 40 bytes instead of 200 as fixed int32s, and an idle column
// none.
//
// Rows written before this encoding hold the cells as len(cells) big-endian
// int32s (migrations 00008 and 00014), which ReadCells still reads. An encoding that
// happens to have that length gets a zero byte appended, so the two can
// never be confused.
func AppendCells(b []byte, cells []int32) []byte {
	start := len(b)
	mapLen := (len(cells) + 7) / 8
	for i, c := range cells {
		if c != 0 {
			if len(b) == start { // the first cell that is not zero: the bitmap
				b = append(b, make([]byte, mapLen)...)
			}
			b[start+i/8] |= 1 << (i % 8)
		}
	}
	if len(b) == start {
		return b
	}
	for _, c := range cells {
		if c != 0 {
			b = binary.AppendUvarint(b, uint64(uint32(c)))
		}
	}
	if len(b)-start == 4*len(cells) {
		b = append(b, 0)
	}
	return b
}

// ReadCells decodes cells stored by AppendCells (or as fixed big-endian
// int32s) into dst, which has a cell per heatmap row.
func ReadCells(dst []int32, b []byte) error {
	clear(dst)
	switch n := len(b); {
	case n == 0:
		return nil
	case n == 4*len(dst):
		for i := range dst {
			dst[i] = int32(binary.BigEndian.Uint32(b[4*i:]))
		}
		return nil
	}
	mapLen := (len(dst) + 7) / 8
	if len(b) < mapLen {
		return fmt.Errorf("heatmap cells: %d bytes, shorter than the bitmap of %d cells", len(b), len(dst))
	}
	rest := b[mapLen:]
	for i := range dst {
		if b[i/8]&(1<<(i%8)) == 0 {
			continue
		}
		v, k := binary.Uvarint(rest)
		if k <= 0 || v == 0 || v > math.MaxUint32 {
			return fmt.Errorf("heatmap cells: cell %d is not a count", i)
		}
		dst[i], rest = int32(uint32(v)), rest[k:]
	}
	for i := len(dst); i < 8*mapLen; i++ { // bits past the last cell
		if b[i/8]&(1<<(i%8)) != 0 {
			return fmt.Errorf("heatmap cells: a bit set past cell %d", len(dst)-1)
		}
	}
	if len(rest) == 0 || len(rest) == 1 && rest[0] == 0 && len(b) == 4*len(dst)+1 {
		return nil
	}
	return fmt.Errorf("heatmap cells: %d bytes left over", len(rest))
}
