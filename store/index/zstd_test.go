package index_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/fleetscope/fleetscope/store/index"
)

// TestZstdRows: a busy row's columns are stored compressed and read back
// byte for byte; a quiet row's are not compressed; damaged frames, and
// frames that claim more than the row's samples could take, are refused.
func TestZstdRows(t *testing.T) {
	busy := index.Second{Samples: 950}
	for i := range 950 {
		busy.Offsets = binary.AppendUvarint(busy.Offsets, uint64(4412+i%7*67))
		busy.Stacks = binary.AppendUvarint(busy.Stacks, uint64(i*i%1500))
	}
	offsets, stacks, ok := index.Zstd(&busy)
	if !ok || len(offsets)+len(stacks) >= len(busy.Offsets)+len(busy.Stacks) {
		t.Fatalf("a busy row: compressed %v, %d bytes of %d", ok, len(offsets)+len(stacks), len(busy.Offsets)+len(busy.Stacks))
	}
	read := index.Second{Samples: busy.Samples, Offsets: offsets, Stacks: stacks}
	if err := read.Unzstd(); err != nil || !bytes.Equal(read.Offsets, busy.Offsets) || !bytes.Equal(read.Stacks, busy.Stacks) {
		t.Fatalf("read back: %v", err)
	}
	inner := index.Second{Samples: busy.Samples, Stacks: stacks} // read without its offsets
	if err := inner.Unzstd(); err != nil || inner.Offsets != nil || !bytes.Equal(inner.Stacks, busy.Stacks) {
		t.Fatalf("a row read without offsets: %v", err)
	}
	short := index.Second{Samples: 300, Offsets: []byte{5, 0, 0}, Stacks: busy.Stacks[:600]} // a frame of 3 bytes says no size
	if offsets, stacks, ok := index.Zstd(&short); !ok {
		t.Fatal("a row of 300 samples at one time was not compressed")
	} else if read := (index.Second{Samples: 300, Offsets: offsets, Stacks: stacks}); read.Unzstd() != nil || !bytes.Equal(read.Offsets, short.Offsets) || !bytes.Equal(read.Stacks, short.Stacks) {
		t.Fatal("a row of 300 samples at one time: not read back")
	}
	quiet := index.Second{Samples: 3, Offsets: []byte{1, 255, 2, 3}, Stacks: []byte{0, 1, 2}}
	if _, _, ok := index.Zstd(&quiet); ok {
		t.Fatal("a quiet row was compressed")
	}
	for name, bad := range map[string]index.Second{
		"not a frame":           {Samples: 950, Offsets: busy.Offsets},
		"truncated":             {Samples: 950, Offsets: offsets[:len(offsets)/2]},
		"more than its samples": {Samples: 10, Offsets: offsets},
		"empty":                 {Samples: 950, Stacks: []byte{}},
	} {
		if err := bad.Unzstd(); err == nil {
			t.Errorf("%s: read", name)
		}
	}
}
