package server

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/flate"
)

// parallelGzip writes gzip at its fastest level, compressing a large
// answer in pieces on all cores: the pieces are deflate streams flushed to
// a byte boundary, which concatenate into one stream (each piece without
// the one before as its dictionary: a few percent larger). Gzip was a third
// of a whole-profile JSON flame graph's CPU, and an answer waits for it.
// Small answers are compressed in one piece on the caller's goroutine.
// Whatever the pieces, the output is one ordinary gzip member.
type parallelGzip struct {
	w       io.Writer
	pending []byte // small writes, gathered
	crc     uint32
	size    uint32
	started bool
	err     error
}

const (
	gzipPiece     = 128 << 10 // smallest piece worth a goroutine
	gzipGathered  = 1 << 20   // compress gathered small writes past this
	gzipFinalTail = "\x03\x00"
)

var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, flate.BestSpeed)
	return w
}}

func (z *parallelGzip) Reset(w io.Writer) {
	*z = parallelGzip{w: w, pending: z.pending[:0]}
}

func (z *parallelGzip) Write(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	if len(z.pending) > 0 || len(p) < gzipPiece {
		z.pending = append(z.pending, p...)
		if len(z.pending) >= gzipGathered {
			z.compress(z.pending)
			z.pending = z.pending[:0]
		}
		return len(p), z.err
	}
	z.compress(p)
	return len(p), z.err
}

func (z *parallelGzip) Close() error {
	if z.err != nil {
		return z.err
	}
	if len(z.pending) > 0 || !z.started {
		z.compress(z.pending)
		z.pending = z.pending[:0]
	}
	var trailer [8]byte
	binary.LittleEndian.PutUint32(trailer[:4], z.crc)
	binary.LittleEndian.PutUint32(trailer[4:], z.size)
	z.write(append([]byte(gzipFinalTail), trailer[:]...))
	return z.err
}

// compress writes p as deflate blocks ending on a byte boundary, not final.
func (z *parallelGzip) compress(p []byte) {
	if !z.started {
		z.started = true
		z.write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 0xff}) // gzip, deflate, fastest, OS unknown
	}
	// The first piece on this goroutine, after the checksum; the others
	// meanwhile on their own.
	pieces := max(1, min(runtime.GOMAXPROCS(0), len(p)/gzipPiece))
	outs := make([]bytes.Buffer, pieces)
	each := (len(p) + pieces - 1) / pieces
	var wg sync.WaitGroup
	for i := 1; i < pieces; i++ {
		wg.Go(func() { z.deflate(&outs[i], p[i*each:min((i+1)*each, len(p))]) })
	}
	z.crc = crc32.Update(z.crc, crc32.IEEETable, p)
	z.size += uint32(len(p))
	z.deflate(&outs[0], p[:min(each, len(p))])
	wg.Wait()
	for i := range outs {
		z.write(outs[i].Bytes())
	}
}

func (z *parallelGzip) deflate(out *bytes.Buffer, p []byte) {
	fw := flateWriters.Get().(*flate.Writer)
	fw.Reset(out)
	fw.Write(p) // into a bytes.Buffer: cannot fail
	fw.Flush()
	fw.Reset(io.Discard) // not holding out while pooled
	flateWriters.Put(fw)
}

func (z *parallelGzip) write(b []byte) {
	if z.err == nil {
		_, z.err = z.w.Write(b)
	}
}
