package perf

import (
	"bytes"
	"hash/maphash"
)

// lineCache remembers what stack lines fold to, keyed by frameKey's key and
// whether the process is java (Java frames are tidied differently). Most
// lines repeat (the benchmark profile: 713,708 stack lines, 30,424 keys of
// 85 bytes on average), so most never reach matchFrame and tidy.
//
// It is a table of its own rather than a map[string]V: open addressing
// with linear probing, each slot holding the key's hash, where the key lies
// in one arena, and the value. A lookup reads one slot and compares one
// key; a Go map read its control word, then the slot, then the key's own
// allocation, and was a third of the parse's time.
type lineCache[V any] struct {
	seed    maphash.Seed
	slots   []lineSlot[V] // a power of two long; hash 0: empty
	used    int
	keys    []byte // the keys, one after another
	scratch []tidyFrame
	// The table is emptied when it would hold more keys or key bytes than
	// these, so that hostile input (long, never-repeating lines) cannot
	// grow it without bound.
	maxLines, maxBytes int
}

type lineSlot[V any] struct {
	hash     uint64
	off, len uint32 // the key is keys[off : off+len]
	v        V
}

// A cache's bounds (a slot is ~40 bytes, so the table stays under 64 MB).
const (
	maxCachedLines = 1 << 18
	maxCachedBytes = 32 << 20
)

func newLineCache[V any]() *lineCache[V] {
	return &lineCache[V]{seed: maphash.MakeSeed(), slots: make([]lineSlot[V], 1<<12), maxLines: maxCachedLines, maxBytes: maxCachedBytes}
}

// fold returns what line folds to, computing it with build from its tidied
// frames (skip: the line names a process, and contributes nothing). ok is
// false when line is not a stack line.
func (c *lineCache[V]) fold(line []byte, java bool, opts Options, annotate bool, build func(frames []tidyFrame, skip bool) V) (v V, ok bool) {
	key, ok := frameKey(line, opts.Addrs)
	if !ok {
		return v, false
	}
	h := maphash.Bytes(c.seed, key)
	if java {
		h = ^h // java lines fold differently: another key
	}
	h |= 1 // never 0, the empty slot's
	mask := uint64(len(c.slots) - 1)
	i := h & mask
	for ; c.slots[i].hash != 0; i = (i + 1) & mask {
		s := &c.slots[i]
		if s.hash == h && bytes.Equal(c.keys[s.off:s.off+s.len], key) {
			return s.v, true
		}
	}
	f, ok := matchFrame(line)
	if !ok {
		return v, false
	}
	frames, skip := tidy(f, java, opts, annotate, c.scratch[:0])
	c.scratch = frames
	v = build(frames, skip)
	if !f.keyed {
		return v, true
	}
	if c.used >= c.maxLines || len(c.keys)+len(key) > c.maxBytes {
		clear(c.slots)
		c.used, c.keys = 0, c.keys[:0]
	} else if 2*(c.used+1) > len(c.slots) {
		c.grow()
	}
	mask = uint64(len(c.slots) - 1)
	for i = h & mask; c.slots[i].hash != 0; i = (i + 1) & mask {
	}
	c.slots[i] = lineSlot[V]{hash: h, off: uint32(len(c.keys)), len: uint32(len(key)), v: v}
	c.keys = append(c.keys, key...)
	c.used++
	return v, true
}

// grow doubles the table, placing each slot by its kept hash.
func (c *lineCache[V]) grow() {
	old := c.slots
	c.slots = make([]lineSlot[V], 2*len(old))
	mask := uint64(len(c.slots) - 1)
	for _, s := range old {
		if s.hash == 0 {
			continue
		}
		i := s.hash & mask
		for c.slots[i].hash != 0 {
			i = (i + 1) & mask
		}
		c.slots[i] = s
	}
}
