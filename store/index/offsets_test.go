package index

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/fleetscope/fleetscope"
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
		// first 5, w 0, smallest step 10: the steps less it in no bits
		{"steady", []uint64{5, 15, 25, 35}, []byte{5, 0, 10}},
		// steps 10, 10, 11, 13 less 10: 0, 0, 1, 3 in 2 bits, least first
		{"uneven", []uint64{5, 15, 25, 36, 49}, []byte{5, 2, 10, 0b11010000}},
		// steps 1 and 2^29: packed, 2 × 29 bits (9 bytes with the smallest
		// step); as uvarints, 6 bytes
		{"one long gap: uvarint steps", []uint64{0, 1, 1 + 1<<29}, []byte{0, 255, 1, 0x80, 0x80, 0x80, 0x80, 0x02}},
		// steps of 2^20 and 2^20 + 1, 2, 3: packed, the smallest in 3
		// bytes and 0, 1, 2, 3 in 2 bits each; as uvarints, 4 × 3 bytes
		{"wide steady steps", []uint64{7, 7 + 1<<20, 7 + 2<<20 + 1, 7 + 3<<20 + 3, 7 + 4<<20 + 6}, []byte{7, 2, 0x80, 0x80, 0x40, 0xe4}},
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

// TestCompressedRowKeepsSteps: a row large enough for Postgres to
// compress its columns keeps its offsets as uvarint steps (which compress
// further than packed bits); a small one packs them.
func TestCompressedRowKeepsSteps(t *testing.T) {
	for _, n := range []int{47, 950} {
		b := NewBuilder()
		var batch []fleetscope.Sample
		for i := range n {
			batch = append(batch, fleetscope.Sample{TimeNanos: 1795000000e9 + int64(i)*(1e9/int64(n)) + int64(i%7)*1000,
				Stack: fleetscope.StackID(i % 300), Period: 1, CPU: -1, PID: -1, TID: -1})
		}
		if err := b.Add(batch); err != nil {
			t.Fatal(err)
		}
		ix, err := b.Build(func(fleetscope.StackID) bool { return false }, []string{"cpu"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := &ix.Seconds[0]
		_, k := binary.Uvarint(s.Offsets) // the first offset
		steps := s.Offsets[k] == varintSteps
		if big := len(s.Offsets)+len(s.Stacks) > compressedRow; steps != big {
			t.Errorf("%d samples, %d bytes of offsets and stacks: uvarint steps %v, want %v", n, len(s.Offsets)+len(s.Stacks), steps, big)
		}
		if n == 950 && !steps {
			t.Errorf("950 samples: offsets packed, want uvarint steps")
		}
	}
}
