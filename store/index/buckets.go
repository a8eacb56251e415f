package index

import (
	"encoding/binary"
	"errors"
	"slices"
)

// BucketSeconds is the width of a stack bucket: ten minutes, aligned in
// unix time. A day of one host is 144 buckets; a window's edges outside
// whole buckets are at most twenty minutes a host of per-second rows.
const BucketSeconds = 600

// StackBucket is one host's samples of one event (base name) in the unix
// seconds [Bucket, Bucket+BucketSeconds), counted by tenant stack key over
// the profiles the Profiles hash names (see query's stack buckets): a
// merged flame graph over hours reads a row per host and bucket instead of
// its 600 seconds of samples of every profile.
type StackBucket struct {
	Host     string
	Bucket   int64    // unix second of its start, a multiple of BucketSeconds
	Profiles [32]byte // names the profiles counted (their ids and clock shifts)
	// Version names what an hour or day rollup counted (see Version); 0
	// for a ten-minute bucket, which Profiles names.
	Version int64
	// Keys are the stacks with samples, sorted; Counts and Weights are by
	// Keys: each sample as 1 (as its period for a weighted event), and as
	// its period.
	Keys            []int64
	Counts, Weights []uint64
}

// Rollup widths: a host's stack counts by the hour and by the day (query's
// fleet_long.go), beside the ten-minute buckets.
const (
	HourSeconds = 3600
	DaySeconds  = 86400
)

// Version is the version of a host's samples in a span of unix time (an
// hour, or the sum over a day's hours): it grows with every change to
// them, so a rollup counted at a version serves while it is the same.
type Version struct {
	Host    string
	Bucket  int64 // unix second of the span's start
	Version int64
}

// SumStacks adds the stacks of b to a's (both sorted by key), into a.
func SumStacks(a *StackBucket, b *StackBucket) {
	if len(b.Keys) == 0 {
		return
	}
	if len(a.Keys) == 0 {
		a.Keys, a.Counts, a.Weights = slices.Clone(b.Keys), slices.Clone(b.Counts), slices.Clone(b.Weights)
		return
	}
	n := len(a.Keys) + len(b.Keys)
	keys, counts, weights := make([]int64, 0, n), make([]uint64, 0, n), make([]uint64, 0, n)
	i, j := 0, 0
	for i < len(a.Keys) || j < len(b.Keys) {
		switch {
		case j == len(b.Keys) || i < len(a.Keys) && a.Keys[i] < b.Keys[j]:
			keys, counts, weights = append(keys, a.Keys[i]), append(counts, a.Counts[i]), append(weights, a.Weights[i])
			i++
		case i == len(a.Keys) || b.Keys[j] < a.Keys[i]:
			keys, counts, weights = append(keys, b.Keys[j]), append(counts, b.Counts[j]), append(weights, b.Weights[j])
			j++
		default:
			keys, counts, weights = append(keys, a.Keys[i]), append(counts, a.Counts[i]+b.Counts[j]), append(weights, a.Weights[i]+b.Weights[j])
			i, j = i+1, j+1
		}
	}
	a.Keys, a.Counts, a.Weights = keys, counts, weights
}

// EncodeStacks packs a bucket's stacks: their number, then each stack as
// its key (8 bytes, little-endian), count and weight (uvarints).
func EncodeStacks(b *StackBucket) []byte {
	out := binary.AppendUvarint(make([]byte, 0, 4+12*len(b.Keys)), uint64(len(b.Keys)))
	for i, k := range b.Keys {
		out = binary.LittleEndian.AppendUint64(out, uint64(k))
		out = binary.AppendUvarint(binary.AppendUvarint(out, b.Counts[i]), b.Weights[i])
	}
	return out
}

// DecodeStacks unpacks what EncodeStacks packed into b; a corrupt or
// unsorted encoding is an error.
func DecodeStacks(data []byte, b *StackBucket) error {
	n, w := binary.Uvarint(data)
	if w <= 0 || n > uint64(len(data)) { // at least a byte a stack
		return errCorruptBucket
	}
	data = data[w:]
	b.Keys, b.Counts, b.Weights = make([]int64, n), make([]uint64, n), make([]uint64, n)
	for i := range n {
		if len(data) < 8 {
			return errCorruptBucket
		}
		b.Keys[i] = int64(binary.LittleEndian.Uint64(data))
		data = data[8:]
		for _, v := range []*uint64{&b.Counts[i], &b.Weights[i]} {
			if *v, w = binary.Uvarint(data); w <= 0 {
				return errCorruptBucket
			}
			data = data[w:]
		}
	}
	if len(data) != 0 || !slices.IsSorted(b.Keys) {
		return errCorruptBucket
	}
	return nil
}

var errCorruptBucket = errors.New("index: corrupt stack bucket")
