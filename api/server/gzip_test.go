package server

import (
	"bytes"
	stdgzip "compress/gzip"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// jsonLike is text like a flame graph answer: repetitive, with numbers.
func jsonLike(n int, seed uint64) []byte {
	rng := rand.New(rand.NewPCG(seed, 1))
	b := []byte(`{"tree":{"names":["all","runtime.mallocgc","main.handle"],"name":[`)
	for len(b) < n {
		b = strconv.AppendUint(b, uint64(rng.IntN(20000)), 10)
		b = append(b, ',')
	}
	return b[:n]
}

func gunzip(t *testing.T, z []byte) []byte {
	t.Helper()
	br := bytes.NewReader(z)
	r, err := stdgzip.NewReader(br)
	if err != nil {
		t.Fatal(err)
	}
	r.Multistream(false) // one member, nothing after it
	out, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	if br.Len() > 0 {
		t.Fatalf("%d bytes after the gzip member", br.Len())
	}
	return out
}

// TestParallelGzip: whatever the sizes and writes, the output is one gzip
// member holding the input (read by the standard library), about as small
// as one writer's, and a reset writer starts afresh.
func TestParallelGzip(t *testing.T) {
	random := make([]byte, 3<<20)
	for i := range random {
		random[i] = byte(rand.Uint32())
	}
	z := &parallelGzip{}
	for _, n := range []int{0, 1, 100, gzipPiece - 1, gzipPiece, 2*gzipPiece + 7, gzipGathered + 1, 3<<20 + 5} {
		for _, data := range [][]byte{jsonLike(n, uint64(n)), random[:min(n, len(random))]} {
			for _, writes := range []int{1, 3, 1000} {
				t.Run(fmt.Sprintf("%d bytes in %d writes", len(data), writes), func(t *testing.T) {
					var out bytes.Buffer
					z.Reset(&out)
					step := max(1, len(data)/writes)
					for off := 0; off < len(data); off += step {
						if _, err := z.Write(data[off:min(off+step, len(data))]); err != nil {
							t.Fatal(err)
						}
					}
					if err := z.Close(); err != nil {
						t.Fatal(err)
					}
					if got := gunzip(t, out.Bytes()); !bytes.Equal(got, data) {
						t.Fatalf("read back %d bytes, want the %d written", len(got), len(data))
					}
					var one bytes.Buffer
					w, _ := gzip.NewWriterLevel(&one, gzip.BestSpeed)
					w.Write(data)
					w.Close()
					if out.Len() > one.Len()+one.Len()/20+64 {
						t.Errorf("%d bytes compressed, one writer's %d", out.Len(), one.Len())
					}
				})
			}
		}
	}
}

// BenchmarkGzip compresses a whole-profile-sized JSON answer: one writer,
// and in pieces.
func BenchmarkGzip(b *testing.B) {
	data := jsonLike(1750_000, 9)
	b.Run("one", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		w, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed)
		for b.Loop() {
			w.Reset(io.Discard)
			w.Write(data)
			w.Close()
		}
	})
	b.Run("pieces", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		z := &parallelGzip{}
		for b.Loop() {
			z.Reset(io.Discard)
			z.Write(data)
			z.Close()
		}
	})
}
