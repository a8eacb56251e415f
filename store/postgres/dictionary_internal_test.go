package postgres

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
)

// The content checks are FNV-1a of the content, as hash/fnv computes it.
func TestChecksAreFNV1a(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 1000 {
		f := fleetscope.Frame{Name: strings.Repeat("xé", rng.IntN(100)), Kind: fleetscope.FrameKind(i % 3)}
		h := fnv.New64a()
		h.Write([]byte{byte(f.Kind)})
		h.Write([]byte(f.Name))
		if got, want := frameCheck(f), h.Sum64(); got != want {
			t.Fatalf("frameCheck(%q) = %x, want %x", f.Name, got, want)
		}
		frames := make([]int64, rng.IntN(50))
		h = fnv.New64a()
		for j := range frames {
			frames[j] = int64(rng.Uint64())
			h.Write(binary.LittleEndian.AppendUint64(nil, uint64(frames[j])))
		}
		idle := i%2 == 0
		if idle {
			h.Write([]byte{1})
		}
		if got, want := stackCheck(frames, idle), h.Sum64(); got != want {
			t.Fatalf("stackCheck(%d frames, idle %v) = %x, want %x", len(frames), idle, got, want)
		}
	}
}

// TestEachInt8 reads bigint[] in Postgres's binary form: empty, one
// dimension, and the forms it refuses (two dimensions, a NULL element,
// another element type, a length that does not match).
func TestEachInt8(t *testing.T) {
	arr := func(ndim, oid uint32, n int, elems ...[]byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, ndim)
		b = binary.BigEndian.AppendUint32(b, 0)
		b = binary.BigEndian.AppendUint32(b, oid)
		for range ndim {
			b = binary.BigEndian.AppendUint32(b, uint32(n))
			b = binary.BigEndian.AppendUint32(b, 1)
		}
		for _, e := range elems {
			b = append(b, e...)
		}
		return b
	}
	elem := func(v int64) []byte {
		return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(nil, 8), uint64(v))
	}
	null := binary.BigEndian.AppendUint32(nil, 0xffffffff)
	read := func(b []byte) ([]int64, error) {
		var got []int64
		err := eachInt8(b, func(v int64) { got = append(got, v) })
		return got, err
	}
	if got, err := read(arr(0, 20, 0)); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v %v", got, err)
	}
	if got, err := read(arr(1, 20, 3, elem(7), elem(-1), elem(1<<62))); err != nil || !slices.Equal(got, []int64{7, -1, 1 << 62}) {
		t.Fatalf("three elements: %v %v", got, err)
	}
	for name, b := range map[string][]byte{
		"two dimensions": arr(2, 20, 1, elem(1)),
		"a NULL":         arr(1, 20, 2, elem(1), null),
		"int4":           arr(1, 23, 1, elem(1)),
		"short":          arr(1, 20, 2, elem(1)),
		"long":           arr(1, 20, 1, elem(1), elem(2)),
		"truncated":      arr(1, 20, 1, elem(1))[:25],
		"no header":      {0, 0, 0, 1},
	} {
		if got, err := read(b); err == nil {
			t.Errorf("%s: read %v, want an error", name, got)
		}
	}
}
