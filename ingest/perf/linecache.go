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
// with linear probing over 8-byte slots (an entry's number and 32 bits of
// its key's hash), the entries (hash, value, where the key lies) in the
// order they came, and the keys back to back in one arena. The slots stay
// small enough for the processor's cache, and growing rewrites only them;
// a Go map read its control word, its slot and the key's own allocation
// for each line, and was a third of the parse's time.
type lineCache[V any] struct {
	seed    maphash.Seed
	slots   []uint64 // a power of two long: 0 empty, else hash>>32<<32 | entry+1
	entries []lineEntry[V]
	keys    []byte // the keys, one after another
	scratch []tidyFrame
	// The table is emptied when it would hold more keys or key bytes than
	// these, so that hostile input (long, never-repeating lines) cannot
	// grow it without bound.
	maxLines, maxBytes int
}

type lineEntry[V any] struct {
	hash     uint64
	off, len uint32 // the key is keys[off : off+len]
	v        V
}

// A cache's bounds.
const (
	maxCachedLines = 1 << 18
	maxCachedBytes = 32 << 20
)

func newLineCache[V any]() *lineCache[V] {
	return &lineCache[V]{seed: maphash.MakeSeed(), slots: make([]uint64, 1<<12), maxLines: maxCachedLines, maxBytes: maxCachedBytes}
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
	tag := h >> 32 << 32
	mask := uint64(len(c.slots) - 1)
	for i := h & mask; c.slots[i] != 0; i = (i + 1) & mask {
		if s := c.slots[i]; s&^0xffffffff == tag {
			e := &c.entries[uint32(s)-1]
			if e.hash == h && bytes.Equal(c.keys[e.off:e.off+e.len], key) {
				return e.v, true
			}
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
	if len(c.entries) >= c.maxLines || len(c.keys)+len(key) > c.maxBytes {
		clear(c.slots)
		c.entries, c.keys = c.entries[:0], c.keys[:0]
	} else if 2*(len(c.entries)+1) > len(c.slots) {
		c.slots = make([]uint64, 2*len(c.slots))
		for n, e := range c.entries {
			c.place(e.hash, n)
		}
	}
	c.place(h, len(c.entries))
	c.entries = append(c.entries, lineEntry[V]{hash: h, off: uint32(len(c.keys)), len: uint32(len(key)), v: v})
	c.keys = append(c.keys, key...)
	return v, true
}

// place puts entry n, of hash h, in the first free slot from h's.
func (c *lineCache[V]) place(h uint64, n int) {
	mask := uint64(len(c.slots) - 1)
	i := h & mask
	for c.slots[i] != 0 {
		i = (i + 1) & mask
	}
	c.slots[i] = h>>32<<32 | uint64(n+1)
}
