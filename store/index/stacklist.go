package index

import (
	"encoding/binary"
	"fmt"
)

// A profile's stack list as stored (profile_stacks.seqs, migration 23):
// the sequence number of each of its stacks in the tenant's dictionary
// (stacks.seq), in the order its rows refer to them. Sequence numbers are
// handed out in order as stacks are first stored, so they are small and a
// profile's new stacks are consecutive: the list is their count as a
// uvarint, then each number less the one before (the first less 0),
// zigzag-encoded, as a uvarint. A list of the continuous benchmark's
// ~1,600 stacks takes about two bytes a stack instead of the eight of a
// 64-bit key.

// AppendStackList appends a stack list of sequence numbers.
func AppendStackList(b []byte, seqs []int64) []byte {
	b = binary.AppendUvarint(b, uint64(len(seqs)))
	prev := int64(0)
	for _, s := range seqs {
		b = binary.AppendVarint(b, s-prev)
		prev = s
	}
	return b
}

// ReadStackList decodes a stack list stored by AppendStackList.
func ReadStackList(b []byte) ([]int64, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) { // at least a byte a stack
		return nil, fmt.Errorf("index: a stack list of %d bytes: no count", len(b))
	}
	b = b[k:]
	out := make([]int64, n)
	prev := int64(0)
	for i := range out {
		d, k := binary.Varint(b)
		if k <= 0 {
			return nil, fmt.Errorf("index: a stack list cut at stack %d of %d", i, n)
		}
		prev += d
		out[i], b = prev, b[k:]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("index: a stack list of %d stacks with %d bytes more", n, len(b))
	}
	return out, nil
}
