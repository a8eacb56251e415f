package index

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// A ten's seconds: the wall seconds of one profile and event within one
// unix slot of Tens seconds, stored in the slot's fleet_tens row
// (migration 22) rather than in a row each: a row's key, header and index
// entries cost more than its cells at tens of samples a second. Each
// second that has a row, ascending: a byte, the second less the slot's
// first (0 to Tens-1), then its busy cells and its idle cells, each as a
// uvarint length and AppendCells' bytes. A second's Samples and Idle are
// not stored: they are its cells' sums (int32, wrapping, as WallSeconds
// counts them).

// AppendTenSeconds appends the packed seconds of the slot starting at ten:
// secs are of one event, inside the slot, ascending.
func AppendTenSeconds(b []byte, ten int64, secs []WallSecond) ([]byte, error) {
	last := int64(-1)
	for i := range secs {
		s := &secs[i]
		off := s.Second - ten
		if off < 0 || off >= Tens || off <= last || s.Event != secs[0].Event {
			return b, fmt.Errorf("index: second %d of event %q does not follow in the ten seconds from %d", s.Second, s.Event, ten)
		}
		if s.Samples != cellSum(s.Cells) || s.Idle != cellSum(s.IdleCells) {
			return b, fmt.Errorf("index: second %d: %d busy and %d idle samples, not its cells' sums", s.Second, s.Samples, s.Idle)
		}
		last = off
		b = append(b, byte(off))
		b = appendLenCells(b, s.Cells)
		b = appendLenCells(b, s.IdleCells)
	}
	return b, nil
}

func appendLenCells(b []byte, cells []int32) []byte {
	n := len(b)
	b = AppendCells(append(b, 0), cells) // room for a one-byte length: the usual case
	size := len(b) - n - 1
	if size < 0x80 {
		b[n] = byte(size)
		return b
	}
	cellBytes := slices.Clone(b[n+1:])
	return append(binary.AppendUvarint(b[:n], uint64(size)), cellBytes...)
}

// cellSum is the sum of cells as a row counts it: 32 bits, wrapping.
func cellSum(cells []int32) int32 {
	var n int32
	for _, c := range cells {
		n += c
	}
	return n
}

// EachTenSecond decodes the seconds packed for the slot starting at ten,
// calling fn with each in turn in w: its Second, Samples, Idle and cells,
// decoded into w.Cells and w.IdleCells (Rows long each, reused for every
// second). w.Event is left as it is.
func EachTenSecond(b []byte, ten int64, w *WallSecond, fn func() error) error {
	last := -1
	for len(b) > 0 {
		off := int(b[0])
		if off >= Tens || off <= last {
			return fmt.Errorf("index: a ten's seconds: second %d after %d", off, last)
		}
		last, b = off, b[1:]
		var err error
		if b, err = readLenCells(w.Cells, b); err != nil {
			return fmt.Errorf("index: a ten's seconds: second %d: %w", off, err)
		}
		if b, err = readLenCells(w.IdleCells, b); err != nil {
			return fmt.Errorf("index: a ten's seconds: second %d: idle %w", off, err)
		}
		w.Second, w.Samples, w.Idle = ten+int64(off), cellSum(w.Cells), cellSum(w.IdleCells)
		if err := fn(); err != nil {
			return err
		}
	}
	return nil
}

func readLenCells(dst []int32, b []byte) ([]byte, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)-k) {
		return nil, fmt.Errorf("cells of %d bytes in %d", n, len(b)-max(k, 0))
	}
	b = b[k:]
	return b[n:], ReadCells(dst, b[:n])
}

// RollupTens is Rollup(secs, Tens) with each slot's own seconds packed
// (AppendTenSeconds) beside it: what a profile's fleet_tens rows hold.
// secs are WallSeconds' (one row per event and second, sorted by event,
// then second); seconds out of that order are an error.
func RollupTens(secs []WallSecond) (tens []WallSecond, packed [][]byte, err error) {
	tens = Rollup(secs, Tens)
	packed = make([][]byte, len(tens))
	i := 0
	for t := range tens {
		j := i
		for j < len(secs) && secs[j].Event == tens[t].Event && secs[j].Second < tens[t].Second+Tens {
			j++
		}
		if packed[t], err = AppendTenSeconds([]byte{}, tens[t].Second, secs[i:j]); err != nil {
			return nil, nil, err
		}
		i = j
	}
	if i != len(secs) {
		return nil, nil, fmt.Errorf("index: %d wall seconds outside their tens", len(secs)-i)
	}
	return tens, packed, nil
}
