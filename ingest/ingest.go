// Package ingest turns uploaded bytes into profiles: it undoes compression,
// detects the format by content and hands the stream to that format's
// streaming parser (ingest/perf, ...). It owns no storage and no transport:
// callers decide where the raw bytes and the parsed samples go.
package ingest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
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
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return zr, nil
}
