package index

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestPackedOffsets: the layout offsets.go documents, read back by the
// same reader as rows of uvarint steps.
func TestPackedOffsets(t *testing.T) {
	for _, c := range []struct {
		name string
		us   []uint64
		want []byte
	}{
		{"one sample", []uint64{300}, []byte{0xac, 0x02}},
		{"steady: steps less the smallest in no bits", []uint64{5, 15, 25, 35}, []byte{5, 10, 0}},
		// steps 10, 10, 11, 13 less 10: 0, 0, 1, 3 in 2 bits, least first
		{"uneven", []uint64{5, 15, 25, 36, 49}, []byte{5, 10, 2, 0b11010000}},
		// steps 1 and 2^29 less 1: 0 in bits 0-28, 2^29-1 in bits 29-57
		{"a wide step", []uint64{0, 1, 1 + 1<<29}, []byte{0, 1, 29, 0, 0, 0, 0xe0, 0xff, 0xff, 0xff, 0x03}},
	} {
		got := appendPacked(nil, c.us)
		if !bytes.Equal(got, c.want) {
			t.Errorf("%s: %x, want %x", c.name, got, c.want)
		}
		for _, varint := range []bool{false, true} {
			s := &Second{Samples: int32(len(c.us)), Offsets: got, VarintOffsets: varint}
			if varint {
				s.Offsets = nil
				prev := uint64(0)
				for _, u := range c.us {
					s.Offsets = binary.AppendUvarint(s.Offsets, u-prev)
					prev = u
				}
			}
			o := offsetsOf(s)
			for i, want := range c.us {
				if u, ok := o.next(); !ok || u != want {
					t.Fatalf("%s (uvarint %v): offset %d read %d (ok %v), want %d", c.name, varint, i, u, ok, want)
				}
			}
		}
	}
}

// TestPackedOffsetsSize: a second of perf's 99-Hz sampling in whole
// microseconds, steps of 10,101 µs give or take a few: packed, under half
// a byte a sample; as uvarint steps, 2 bytes.
func TestPackedOffsetsSize(t *testing.T) {
	var us []uint64
	for i := range uint64(99) {
		us = append(us, 1234+i*10101+i*7%5)
	}
	packed := len(appendPacked(nil, us))
	var varint []byte
	prev := uint64(0)
	for _, u := range us {
		varint = binary.AppendUvarint(varint, u-prev)
		prev = u
	}
	if packed >= len(varint)/2 {
		t.Fatalf("packed %d bytes, as uvarints %d: want under half", packed, len(varint))
	}
	t.Logf("99 steady samples: packed %d bytes, uvarint steps %d", packed, len(varint))
}
