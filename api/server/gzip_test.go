package server

import (
	"bytes"
	stdgzip "compress/gzip"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/klauspost/compress/gzip"
	"google.golang.org/protobuf/types/known/emptypb"
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

// TestGzipBodyStopsAtTheLimit: a gzip request body that inflates far past
// the handler's message limit (a bomb: 64 MiB of zeros in 64 KiB) is
// refused as too large after inflating one byte past the limit, not to its
// end to report its size; a body within the limit is read whole.
func TestGzipBodyStopsAtTheLimit(t *testing.T) {
	const limit = 1 << 20
	var z bytes.Buffer
	zw := stdgzip.NewWriter(&z)
	msg := append([]byte{0x0a}, binary.AppendUvarint(nil, 64<<20)...) // field 1, 64 MiB of bytes
	zw.Write(msg)
	zw.Write(make([]byte, 64<<20))
	zw.Close()

	// The decompressor alone: limit+1 bytes, then an error.
	d := fastGzipDecompressor(limit)
	if err := d.Reset(bytes.NewReader(z.Bytes())); err != nil {
		t.Fatal(err)
	}
	n, err := io.Copy(io.Discard, d)
	if n != limit+1 || err == nil {
		t.Errorf("inflated %d bytes, %v; want %d and an error", n, err, limit+1)
	}

	// Through a Connect handler with the server's options.
	h := connect.NewUnaryHandler("/test.v1.Test/Call", func(context.Context, *connect.Request[emptypb.Empty]) (*connect.Response[emptypb.Empty], error) {
		return connect.NewResponse(&emptypb.Empty{}), nil
	}, connect.WithReadMaxBytes(limit), fastGzip(limit))
	srv := httptest.NewServer(h)
	defer srv.Close()
	post := func(body []byte) (int, string) {
		req, _ := http.NewRequest("POST", srv.URL+"/test.v1.Test/Call", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/proto")
		req.Header.Set("Content-Encoding", "gzip")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	status, body := post(z.Bytes())
	if status == http.StatusOK || !strings.Contains(body, "resource_exhausted") || !strings.Contains(body, "not inflated further") {
		t.Errorf("a 64 MiB gzip bomb: %d %s; want resource_exhausted, not inflated further", status, body)
	}
	var small bytes.Buffer
	zw = stdgzip.NewWriter(&small)
	zw.Write([]byte{0x0a, 0x80, 0x80, 0x02}) // field 1, 32 KiB
	zw.Write(make([]byte, 32<<10))
	zw.Close()
	if status, body := post(small.Bytes()); status != http.StatusOK {
		t.Errorf("a gzip body within the limit: %d %s", status, body)
	}
}

// fastGzipDecompressor is the decompressor fastGzip(limit) gives handlers.
func fastGzipDecompressor(limit int) connect.Decompressor {
	return &boundedGunzip{max: int64(limit) + 1}
}
