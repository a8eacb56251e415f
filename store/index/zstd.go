package index

import (
	"github.com/klauspost/compress/zstd"
)

// A row's offsets and stacks may be stored as zstd frames (seconds.zstd,
// migration 24), each column its own frame so that a heatmap reads the
// offsets alone. At ~950 samples a second zstd stores the stack indexes
// in about 1.5 bytes a sample and the offsets in 0.7, where Postgres' own
// compression (pglz, on rows over ~2 kB only) leaves 1.8 and 0.9: the
// fleet benchmark's per-sample rows take 8.0 MB per host-hour instead of
// 9.6 (docs/architecture.md, "The index"). Rows are compressed only when
// that saves bytes (a quiet second's few samples do not), and are read
// back plain (Second.Unzstd), so nothing past the store sees it.

var (
	encoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression),
		zstd.WithEncoderCRC(false), zstd.WithZeroFrames(true), zstd.WithWindowSize(1<<17))
	decoder, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxColumn))
)

// maxColumn bounds a decompressed column whatever its row's sample count
// says (a row of 2^28 bytes of uvarints is millions of samples a second).
const maxColumn = 1 << 28

// zstdSaves is the least saving, in bytes, for which a row is stored
// compressed: less is not worth a decompression at every read.
const zstdSaves = 32

// zstdFrom is the size of offsets and stacks from which a row is tried:
// smaller rows (a quiet second's: 150 bytes at ~47 samples a second)
// hardly compress, and trying cost an upload of 60 such rows 0.3 ms.
const zstdFrom = 512

// Zstd returns row s's offsets and stacks compressed, and ok when that
// saves at least zstdSaves bytes (else the row is stored as it is).
func Zstd(s *Second) (offsets, stacks []byte, ok bool) {
	if len(s.Offsets)+len(s.Stacks) < zstdFrom {
		return nil, nil, false
	}
	offsets = encoder.EncodeAll(s.Offsets, nil)
	stacks = encoder.EncodeAll(s.Stacks, nil)
	return offsets, stacks, len(offsets)+len(stacks)+zstdSaves <= len(s.Offsets)+len(s.Stacks)
}

// Unzstd decompresses the offsets and stacks of a row stored compressed,
// in place (a column read as NULL stays nil). A column that is not a zstd
// frame, or decompresses to more than its samples could take, is corrupt.
func (s *Second) Unzstd() error {
	bound := 16 + 10*int64(s.Samples) // a uvarint a sample, a header
	for _, col := range []*[]byte{&s.Offsets, &s.Stacks} {
		if *col == nil {
			continue
		}
		var h zstd.Header // (a frame of a few bytes says no size)
		if err := h.Decode(*col); err != nil || h.HasFCS && h.FrameContentSize > uint64(bound) {
			return errCorrupt
		}
		b, err := decoder.DecodeAll(*col, make([]byte, 0, h.FrameContentSize))
		if err != nil || int64(len(b)) > bound || h.HasFCS && uint64(len(b)) != h.FrameContentSize {
			return errCorrupt
		}
		*col = b
	}
	return nil
}
