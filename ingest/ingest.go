// Package ingest turns uploaded bytes into stored profiles: it undoes
// compression, detects the format by content, hands the stream to that
// format's streaming parser (ingest/perf, ingest/pprof, ...), builds the
// profile's index (store/index) and stores the raw bytes (store/blob) and
// the index (through its Index interface, which store/postgres implements)
// so that a profile is stored whole or not at all. It speaks no transport
// and answers no queries; deletion and retention live in store/lifecycle.
package ingest

import (
	"bufio"
	"bytes"
	"fmt"
	"github.com/klauspost/compress/gzip"
	"io"

	"github.com/fleetscope/fleetscope"
)

// Decompress returns a reader of r's content with gzip undone, recognised by
// its magic bytes rather than a file name. Concatenated gzip members are read
// as one stream, as gzip(1) does.
func Decompress(r io.Reader) (io.Reader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(2)
	if err != nil && err != io.EOF {
		return nil, err
	}
	if !bytes.Equal(magic, []byte{0x1f, 0x8b}) {
		return br, nil
	}
	in := &counter{r: br}
	zr, err := gzip.NewReader(in)
	if err == io.ErrUnexpectedEOF {
		return nil, errTruncated(in.n)
	}
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return &ratioGuard{r: zr, in: in}, nil
}

// errTruncated is the error of gzip input that ends before its end.
func errTruncated(read int64) error {
	return fleetscope.Errorf(fleetscope.EINVALID, "truncated gzip: the compressed input ends early, after %d bytes (a partial copy or download?)", read)
}

// MaxRatio bounds how much larger than its compressed form an input may
// grow (past the first 64 MiB): real profiles compress 10-20 times, gzip
// bombs a thousand.
const MaxRatio = 200

type counter struct {
	r io.Reader
	n int64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

type ratioGuard struct {
	r   io.Reader
	in  *counter
	out int64
}

func (g *ratioGuard) Read(p []byte) (int, error) {
	n, err := g.r.Read(p)
	g.out += int64(n)
	if err == io.ErrUnexpectedEOF {
		err = errTruncated(g.in.n)
	}
	if g.out > 64<<20 && g.out > MaxRatio*g.in.n {
		return n, fleetscope.Errorf(fleetscope.ETOOLARGE, "decompresses more than %d times its size: refused as a gzip bomb", MaxRatio)
	}
	return n, err
}
