// Package blobtest is the contract every blob.Store must meet, as a test
// suite that each backend's tests run against a real instance:
//
//	func TestStore(t *testing.T) {
//		blobtest.Run(t, func(t *testing.T) blob.Store { ... })
//	}
//
// It uses only the blob.Store interface and knows nothing of any backend.
package blobtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/blob"
)

// LargeSize is the size of the object streamed by the large round trip.
const LargeSize = 64 << 20

// Run runs the contract against stores from open, which must return a new,
// empty store for each subtest (cleaned up by t).
func Run(t *testing.T, open func(t *testing.T) blob.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s blob.Store)
	}{
		{"RoundTrip", testRoundTrip},
		{"Stat", testStat},
		{"Overwrite", testOverwrite},
		{"Missing", testMissing},
		{"Delete", testDelete},
		{"List", testList},
		{"InvalidKeys", testInvalidKeys},
		{"ShortReader", testShortReader},
		{"Large", testLarge},
		{"File", testFile},
		{"Concurrent", testConcurrent},
		{"ReaderFails", testReaderFails},
		{"Cancelled", testCancelled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, open(t)) })
	}
}

func testRoundTrip(t *testing.T, s blob.Store) {
	for _, tc := range []struct {
		key  string
		data []byte
		size int64
	}{
		{"t1/known", []byte("known size"), 10},
		{"t1/unknown", []byte("unknown size"), -1},
		{"t1/empty", []byte{}, 0},
		{"t1/empty-unknown", []byte{}, -1},
		{"t1/deep/er/key.pprof", bytes.Repeat([]byte{0, 1, 2, 255}, 1000), 4000},
	} {
		put(t, s, tc.key, tc.data, tc.size)
		if got := get(t, s, tc.key); !bytes.Equal(got, tc.data) {
			t.Errorf("Get(%q) = %d bytes, want the %d put", tc.key, len(got), len(tc.data))
		}
	}
}

func testStat(t *testing.T, s blob.Store) {
	before := time.Now().Add(-time.Minute) // clocks of servers drift
	put(t, s, "t1/a", []byte("12345"), -1)
	info, err := s.Stat(t.Context(), "t1/a")
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if info.Key != "t1/a" || info.Size != 5 {
		t.Errorf("Stat = %+v, want key t1/a, size 5", info)
	}
	if info.Modified.Before(before) || info.Modified.After(time.Now().Add(time.Minute)) {
		t.Errorf("Stat: Modified = %v, want about now", info.Modified)
	}
}

func testOverwrite(t *testing.T, s blob.Store) {
	put(t, s, "t1/a", []byte("first version, longer"), -1)
	put(t, s, "t1/a", []byte("second"), 6)
	if got := string(get(t, s, "t1/a")); got != "second" {
		t.Errorf("Get after overwrite = %q, want %q", got, "second")
	}
	if info, err := s.Stat(t.Context(), "t1/a"); err != nil || info.Size != 6 {
		t.Errorf("Stat after overwrite = %+v, %v; want size 6", info, err)
	}
}

func testMissing(t *testing.T, s blob.Store) {
	put(t, s, "t1/other", []byte("x"), 1)
	for _, key := range []string{"t1/missing", "t2/missing", "t1", "t1/other/below"} {
		rc, err := s.Get(t.Context(), key)
		if err == nil {
			rc.Close()
		}
		wantCode(t, "Get("+key+")", err, fleetscope.ENOTFOUND)
		_, err = s.Stat(t.Context(), key)
		wantCode(t, "Stat("+key+")", err, fleetscope.ENOTFOUND)
	}
}

func testDelete(t *testing.T, s blob.Store) {
	if err := s.Delete(t.Context(), "t1/missing"); err != nil {
		t.Errorf("Delete of a missing key: %v", err)
	}
	put(t, s, "t1/a", []byte("x"), 1)
	put(t, s, "t1/b", []byte("y"), 1)
	if err := s.Delete(t.Context(), "t1/a"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	_, err := s.Stat(t.Context(), "t1/a")
	wantCode(t, "Stat after Delete", err, fleetscope.ENOTFOUND)
	if err := s.Delete(t.Context(), "t1/a"); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	if got := string(get(t, s, "t1/b")); got != "y" {
		t.Errorf("Get of the other key = %q, want %q", got, "y")
	}
}

func testList(t *testing.T, s blob.Store) {
	all := []string{"a/1", "a/2", "a/sub/3", "ab/4", "b/5", "top"}
	for _, k := range all {
		put(t, s, k, []byte(k), -1)
	}
	for _, tc := range []struct {
		prefix string
		want   []string
	}{
		{"", all},
		{"a/", []string{"a/1", "a/2", "a/sub/3"}},
		{"a", []string{"a/1", "a/2", "a/sub/3", "ab/4"}},
		{"a/s", []string{"a/sub/3"}},
		{"b/", []string{"b/5"}},
		{"c/", nil},
		{"top/", nil},
		{"a/1/", nil},
	} {
		var got []string
		err := s.List(t.Context(), tc.prefix, func(info blob.Info) error {
			if info.Size != int64(len(info.Key)) {
				t.Errorf("List(%q): %s has size %d, want %d", tc.prefix, info.Key, info.Size, len(info.Key))
			}
			got = append(got, info.Key)
			return nil
		})
		if err != nil {
			t.Errorf("List(%q): %v", tc.prefix, err)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("List(%q) = %q, want %q", tc.prefix, got, tc.want)
		}
	}

	stop := errors.New("stop")
	n := 0
	err := s.List(t.Context(), "", func(blob.Info) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("List with fn failing: err %v after %d calls, want %v after 1", err, n, stop)
	}
	err = s.List(t.Context(), "../", func(blob.Info) error { return nil })
	wantCode(t, `List("../")`, err, fleetscope.EINVALID)
}

func testInvalidKeys(t *testing.T, s blob.Store) {
	ctx := t.Context()
	for _, key := range []string{
		"", "/abs", "/", "a/", "a//b", "..", "../a", "a/../b", "a/..", ".", "./a", "a/./b",
		`a\b`, "a\x00b", "a\nb", "a\tb", "a\x7fb", "bad\xffutf8", strings.Repeat("k", blob.MaxKeyLen+1),
	} {
		wantCode(t, "Put("+key+")", s.Put(ctx, key, strings.NewReader("x"), 1), fleetscope.EINVALID)
		_, err := s.Get(ctx, key)
		wantCode(t, "Get("+key+")", err, fleetscope.EINVALID)
		_, err = s.Stat(ctx, key)
		wantCode(t, "Stat("+key+")", err, fleetscope.EINVALID)
		wantCode(t, "Delete("+key+")", s.Delete(ctx, key), fleetscope.EINVALID)
	}
	wantKeys(t, s)
}

// testShortReader declares more bytes than the reader has.
func testShortReader(t *testing.T, s blob.Store) {
	if err := s.Put(t.Context(), "t1/short", strings.NewReader("only 12 byte"), 20); err == nil {
		t.Error("Put of 12 bytes declared as 20 succeeded")
	}
	wantKeys(t, s)
}

// testLarge streams objects larger than any buffer a store should hold,
// from a reader that generates them.
func testLarge(t *testing.T, s blob.Store) {
	for _, size := range []int64{-1, LargeSize + 1} {
		n := int64(LargeSize)
		if size >= 0 {
			n = size
		}
		h := sha256.New()
		if err := s.Put(t.Context(), "t1/large", io.TeeReader(generate(1, n), h), size); err != nil {
			t.Fatalf("Put of %d bytes (size %d): %v", n, size, err)
		}
		want := h.Sum(nil)
		if info, err := s.Stat(t.Context(), "t1/large"); err != nil || info.Size != n {
			t.Errorf("Stat = %+v, %v; want size %d", info, err, n)
		}
		rc, err := s.Get(t.Context(), "t1/large")
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		h.Reset()
		got, err := io.Copy(h, rc)
		rc.Close()
		if err != nil || got != n || !bytes.Equal(h.Sum(nil), want) {
			t.Errorf("Get read %d bytes (err %v), sha256 equal: %v; want %d bytes, equal", got, err, bytes.Equal(h.Sum(nil), want), n)
		}
	}
}

// testFile puts from a file of known size, as a caller that spooled an
// upload to disk does (some backends read such files in parallel).
func testFile(t *testing.T, s blob.Store) {
	const size = 40<<20 + 3
	f, err := os.Create(filepath.Join(t.TempDir(), "upload"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(io.MultiWriter(f, h), generate(6, size)); err != nil {
		t.Fatal(err)
	}
	want := h.Sum(nil)
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "t1/file", f, size); err != nil {
		t.Fatalf("Put: %v", err)
	}
	h.Reset()
	rc, err := s.Get(t.Context(), "t1/file")
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	defer rc.Close()
	if n, err := io.Copy(h, rc); err != nil || n != size || !bytes.Equal(h.Sum(nil), want) {
		t.Errorf("Get read %d bytes (err %v); want %d with the same sha256", n, err, size)
	}
}

// testConcurrent puts the same bytes under one key from several
// goroutines at once, as re-uploads of one file do, and other keys
// alongside.
func testConcurrent(t *testing.T, s blob.Store) {
	data := bytes.Repeat([]byte("same bytes "), 1000)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		key := "t1/same"
		if i%2 == 1 {
			key = fmt.Sprintf("t1/other-%d", i)
		}
		wg.Go(func() { errs <- s.Put(t.Context(), key, bytes.NewReader(data), -1) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("Put: %v", err)
		}
	}
	if got := get(t, s, "t1/same"); !bytes.Equal(got, data) {
		t.Errorf("Get = %d bytes, want the %d put", len(got), len(data))
	}
	wantKeys(t, s, "t1/other-1", "t1/other-3", "t1/other-5", "t1/other-7", "t1/same")
}

var errBroken = errors.New("reader broke")

// testReaderFails has the reader fail after some MiB, into a fresh key and
// over an existing one.
func testReaderFails(t *testing.T, s blob.Store) {
	for _, size := range []int64{-1, 40 << 20} {
		r := io.MultiReader(generate(2, 20<<20), failing{errBroken})
		err := s.Put(t.Context(), "t1/fresh", r, size)
		if !errors.Is(err, errBroken) {
			t.Errorf("Put (size %d) with a reader failing = %v, want %v", size, err, errBroken)
		}
		wantKeys(t, s)
	}

	put(t, s, "t1/old", []byte("old"), 3)
	r := io.MultiReader(generate(3, 20<<20), failing{errBroken})
	if err := s.Put(t.Context(), "t1/old", r, -1); err == nil {
		t.Error("overwriting Put with a reader failing succeeded")
	}
	if got := string(get(t, s, "t1/old")); got != "old" {
		t.Errorf("after a failed overwrite, Get = %q, want %q", got, "old")
	}
	wantKeys(t, s, "t1/old")
}

// testCancelled cancels the context before and during Put.
func testCancelled(t *testing.T, s blob.Store) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Put(ctx, "t1/before", strings.NewReader("x"), 1); err == nil {
		t.Error("Put with a cancelled context succeeded")
	}
	if err := s.Put(ctx, "t1/before-unknown", strings.NewReader("x"), -1); err == nil {
		t.Error("Put of unknown size with a cancelled context succeeded")
	}
	wantKeys(t, s)

	for _, size := range []int64{-1, 40 << 20} {
		ctx, cancel := context.WithCancel(t.Context())
		r := io.MultiReader(generate(4, 20<<20), onRead(cancel), generate(5, 20<<20))
		if err := s.Put(ctx, "t1/during", r, size); err == nil {
			t.Errorf("Put (size %d) cancelled while streaming succeeded", size)
		}
		wantKeys(t, s)
	}
}

func put(t *testing.T, s blob.Store, key string, data []byte, size int64) {
	t.Helper()
	if err := s.Put(t.Context(), key, bytes.NewReader(data), size); err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
}

func get(t *testing.T, s blob.Store, key string) []byte {
	t.Helper()
	rc, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("Get(%q): read: %v", key, err)
	}
	return data
}

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if got := fleetscope.ErrorCode(err); err == nil || got != code {
		t.Errorf("%s: error %v (code %s), want code %s", what, err, got, code)
	}
}

// wantKeys checks that the store holds exactly keys: nothing under keys
// whose Put failed, no temporary files.
func wantKeys(t *testing.T, s blob.Store, keys ...string) {
	t.Helper()
	var got []string
	err := s.List(t.Context(), "", func(info blob.Info) error {
		got = append(got, info.Key)
		return nil
	})
	if err != nil {
		t.Errorf("List: %v", err)
	}
	slices.Sort(got)
	if !slices.Equal(got, keys) {
		t.Errorf("List = %q, want %q", got, keys)
	}
}

// generate returns a reader of n pseudo-random bytes made on the fly.
func generate(seed byte, n int64) io.Reader {
	return io.LimitReader(rand.NewChaCha8([32]byte{seed}), n)
}

// failing is a reader that fails with err.
type failing struct{ err error }

func (f failing) Read([]byte) (int, error) { return 0, f.err }

// onRead calls its function when read, then reads as empty.
type onRead func()

func (f onRead) Read([]byte) (int, error) {
	f()
	return 0, io.EOF
}
