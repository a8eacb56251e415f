package index

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
)

// The keys are stored: they must stay the digests of their definition,
// written part by part to a sha256.New().
func TestKeysAreTheirDefinition(t *testing.T) {
	streamed := func(parts ...[]byte) int64 {
		h := sha256.New()
		for _, p := range parts {
			h.Write(p)
		}
		return int64(binary.LittleEndian.Uint64(h.Sum(nil)))
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var k Keyer // reused: a long key must not leak into a shorter one
	for i := range 2000 {
		name := strings.Repeat(string(rune('a'+i%26)), rng.IntN(300))
		f := fleetscope.Frame{Name: name, Kind: fleetscope.FrameKind(rng.IntN(4))}
		want := streamed([]byte{byte(f.Kind)}, []byte(f.Name))
		if got := k.Frame(f); got != want {
			t.Fatalf("frame %q: key %d, want %d", name, got, want)
		}
		if got := frameKey(f); got != want {
			t.Fatalf("frame %q, fresh Keyer: key %d, want %d", name, got, want)
		}
		frames := make([]int64, rng.IntN(200))
		var parts [][]byte
		for j := range frames {
			frames[j] = int64(rng.Uint64())
			parts = append(parts, binary.LittleEndian.AppendUint64(nil, uint64(frames[j])))
		}
		want = streamed(parts...)
		if got := k.Stack(frames); got != want {
			t.Fatalf("stack of %d frames: key %d, want %d", len(frames), got, want)
		}
		if got := stackKey(frames); got != want {
			t.Fatalf("stack of %d frames, fresh Keyer: key %d, want %d", len(frames), got, want)
		}
	}
}

// frameKey and stackKey key with a fresh Keyer (no buffer left from an
// earlier key).
func frameKey(f fleetscope.Frame) int64 {
	var k Keyer
	return k.Frame(f)
}

func stackKey(frames []int64) int64 {
	var k Keyer
	return k.Stack(frames)
}

// TestDigestCoversEveryField: changing any field of any row, or the
// event a row belongs to, changes a profile's digest; the same rows give
// the same digest.
func TestDigestCoversEveryField(t *testing.T) {
	rows := func() [][]Second {
		return [][]Second{{{Second: 1, Samples: 2, Cells: []int32{1, 1}, IdleCells: []int32{0, 0}, Offsets: []byte{1, 2}, Stacks: []byte{0, 1}, Periods: []byte{5}, Threads: []byte{0}}}, {}}
	}
	base := Digest(rows())
	if Digest(rows()) != base {
		t.Fatal("the same rows, another digest")
	}
	for name, change := range map[string]func(r [][]Second){
		"second":     func(r [][]Second) { r[0][0].Second++ },
		"samples":    func(r [][]Second) { r[0][0].Samples++ },
		"cells":      func(r [][]Second) { r[0][0].Cells[1]++ },
		"idle cells": func(r [][]Second) { r[0][0].IdleCells[0]++ },
		"offsets":    func(r [][]Second) { r[0][0].Offsets[1]++ },
		"stacks":     func(r [][]Second) { r[0][0].Stacks = append(r[0][0].Stacks, 0) },
		"periods":    func(r [][]Second) { r[0][0].Periods = nil },
		"threads":    func(r [][]Second) { r[0][0].Threads[0]++ },
		"event":      func(r [][]Second) { r[0], r[1] = r[1], r[0] },
		"boundary":   func(r [][]Second) { r[0][0].Offsets, r[0][0].Stacks = []byte{1}, []byte{2, 0, 1} },
	} {
		r := rows()
		change(r)
		if Digest(r) == base {
			t.Errorf("%s changed, the digest did not", name)
		}
	}
}
