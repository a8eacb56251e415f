package ingest_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/corpus"
)

// TestDecompressRefusesBombs: a stream that inflates a thousandfold is cut
// off with ETOOLARGE; a real profile (13x) passes.
func TestDecompressRefusesBombs(t *testing.T) {
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zero := make([]byte, 1<<20)
	for range 200 {
		zw.Write(zero)
	}
	zw.Close()
	r, err := ingest.Decompress(&bomb)
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, r)
	if fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE || n > 100<<20 {
		t.Fatalf("bomb: read %d bytes, err %v; want ETOOLARGE early", n, err)
	}
	f, err := os.Open(corpus.Path(t, "bench/perf-mixed-60s.txt.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r, err = ingest.Decompress(f)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.Copy(io.Discard, r); err != nil || n != 73865110 {
		t.Fatalf("benchmark file: %d bytes, %v", n, err)
	}
}
