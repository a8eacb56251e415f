package postgres

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
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
