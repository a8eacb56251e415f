package perf

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/corpus"
)

var benchData = sync.OnceValues(func() ([]byte, error) {
	f, err := os.Open(filepath.Join(corpus.Dir(), "bench/perf-mixed-60s.txt.gz"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	return io.ReadAll(zr)
})

func benchInput(b testing.TB) []byte {
	corpus.Path(b, "bench/perf-mixed-60s.txt.gz") // skips, or fails when required, without it
	data, err := benchData()
	if err != nil {
		b.Fatal(err)
	}
	if b, ok := b.(*testing.B); ok {
		b.SetBytes(int64(len(data)))
		b.ResetTimer()
	}
	return data
}

// BenchmarkCollapse folds the 74 MB benchmark profile (MB/s).
func BenchmarkCollapse(b *testing.B) {
	data := benchInput(b)
	for b.Loop() {
		if _, err := Collapse(bytes.NewReader(data), io.Discard, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParse parses the benchmark profile into samples (MB/s, samples/s).
func BenchmarkParse(b *testing.B) {
	data := benchInput(b)
	n := 0
	for b.Loop() {
		_, err := Parse(bytes.NewReader(data), func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
			n += len(batch)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "samples/s")
}
