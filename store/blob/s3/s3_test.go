package s3

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/blob"
	"github.com/fleetscope/fleetscope/store/blob/blobtest"
	"github.com/fleetscope/fleetscope/store/blob/miniotest"
)

func TestStore(t *testing.T) {
	srv := miniotest.Start(t)
	n := 0
	blobtest.Run(t, func(t *testing.T) blob.Store {
		n++
		s := &recorder{Store: open(t, srv, fmt.Sprintf("contract-%d", n))}
		t.Cleanup(func() { wantNoUploads(t, s.Store, s.keys...) })
		return s
	})
}

// recorder remembers the valid keys given to Put.
type recorder struct {
	*Store
	mu   sync.Mutex
	keys []string
}

func (r *recorder) Put(ctx context.Context, key string, rd io.Reader, size int64) error {
	if blob.CheckKey(key) == nil {
		r.mu.Lock()
		r.keys = append(r.keys, key)
		r.mu.Unlock()
	}
	return r.Store.Put(ctx, key, rd, size)
}

func open(t *testing.T, srv *miniotest.Server, bucket string) *Store {
	t.Helper()
	s, err := blob.Open(t.Context(), srv.URL(bucket), srv.AccessKey, srv.SecretKey)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return s.(*Store)
}

// wantNoUploads checks that no multipart upload of keys is left: failed
// Puts aborted theirs. (MinIO lists uploads of one key at a time only.)
func wantNoUploads(t *testing.T, s *Store, keys ...string) {
	t.Helper()
	for _, key := range slices.Compact(slices.Sorted(slices.Values(keys))) {
		if n := uploads(t, s, key); n > 0 {
			t.Errorf("%d multipart uploads of %q left behind", n, key)
		}
	}
}

func uploads(t *testing.T, s *Store, key string) int {
	t.Helper()
	n := 0
	for u := range s.client.ListIncompleteUploads(context.Background(), s.bucket, key, false) {
		if u.Err != nil {
			t.Errorf("ListIncompleteUploads(%q): %v", key, u.Err)
		}
		n++
	}
	return n
}

func TestOpenCreatesBucket(t *testing.T) {
	srv := miniotest.Start(t)
	client, err := minio.New(srv.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(srv.AccessKey, srv.SecretKey, "")})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := client.BucketExists(t.Context(), "fresh"); ok || err != nil {
		t.Fatalf("BucketExists before Open = %v, %v; want false", ok, err)
	}
	open(t, srv, "fresh")
	if ok, err := client.BucketExists(t.Context(), "fresh"); !ok || err != nil {
		t.Fatalf("BucketExists after Open = %v, %v; want true", ok, err)
	}
	s := open(t, srv, "fresh") // it exists now
	if err := s.Put(t.Context(), "k", io.LimitReader(rand.NewChaCha8([32]byte{}), 10), 10); err != nil {
		t.Fatal(err)
	}
}

func TestOpenWrongCredentials(t *testing.T) {
	srv := miniotest.Start(t)
	_, err := blob.Open(t.Context(), srv.URL("wrong-creds"), srv.AccessKey, "wrong-secret")
	if err == nil {
		t.Fatal("Open with a wrong secret key succeeded")
	}
	if code := fleetscope.ErrorCode(err); code != fleetscope.EINTERNAL {
		t.Errorf("Open with a wrong secret key = %v (code %s), want EINTERNAL", err, code)
	}
}

// TestPutServerDies stops MinIO while a large Put of unknown size streams:
// Put must fail promptly, leave nothing under the key, and work again once
// the server is back.
func TestPutServerDies(t *testing.T) {
	srv := miniotest.Start(t)
	s := open(t, srv, "dies")
	const key = "tenant/big"
	gen := rand.NewChaCha8([32]byte{9})
	r := io.MultiReader(io.LimitReader(gen, 40<<20), stopper(srv.Stop), io.LimitReader(gen, 40<<20))

	// Put must fail because the server went away, not hang: a deadline far
	// beyond any retry schedule tells the two apart without timing it.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	err := s.Put(ctx, key, r, -1)
	t.Logf("Put with the server stopped after 40 MiB: %v", err)
	if err == nil {
		t.Fatal("Put succeeded with the server stopped")
	}
	if ctx.Err() != nil {
		t.Fatalf("Put did not fail when the server stopped; it ran into the test's deadline: %v", err)
	}

	srv.Restart()
	_, err = s.Stat(t.Context(), key)
	if code := fleetscope.ErrorCode(err); code != fleetscope.ENOTFOUND {
		t.Fatalf("Stat after the failed Put = %v (code %s), want ENOTFOUND", err, code)
	}
	// The abort could not reach the dead server; MinIO expires such uploads
	// itself (after 24h by default), S3 needs a lifecycle rule.
	t.Logf("multipart uploads left after the restart: %d", uploads(t, s, key))

	h := sha256.New()
	const size = 80 << 20
	if err := s.Put(t.Context(), key, io.TeeReader(io.LimitReader(rand.NewChaCha8([32]byte{10}), size), h), -1); err != nil {
		t.Fatalf("Put after the restart: %v", err)
	}
	want := h.Sum(nil)
	rc, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	h.Reset()
	if n, err := io.Copy(h, rc); err != nil || n != size || string(h.Sum(nil)) != string(want) {
		t.Errorf("Get after the restart: %d bytes, %v; want %d bytes with the same sha256", n, err, size)
	}
}

// stopper calls stop when read, then reads as empty.
type stopper func()

func (f stopper) Read([]byte) (int, error) {
	f()
	return 0, io.EOF
}
