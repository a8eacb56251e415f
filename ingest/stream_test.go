package ingest_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/store/blob"
	"github.com/fleetscope/fleetscope/store/blob/localfs"
	"github.com/fleetscope/fleetscope/store/postgres/pgtest"
)

// TestStreamFailureIsNotBadInput: when the client's stream breaks in the
// middle of an upload, Ingest returns that failure (the parser saw a cut
// input, but the input was not bad), and stores nothing.
func TestStreamFailureIsNotBadInput(t *testing.T) {
	spool := t.TempDir()
	s, p := service(t, spool)
	reset := errors.New("connection reset by peer")
	half := perfSample("app", "100.000001", "main", "f") + "app 1 [000] 100.5"
	_, _, err := s.Ingest(context.Background(), p, ingest.Meta{App: "a"}, io.MultiReader(strings.NewReader(half), iotest.ErrReader(reset)))
	if !errors.Is(err, reset) || fleetscope.ErrorCode(err) == fleetscope.EINVALID {
		t.Fatalf("Ingest of a broken stream: %v (code %s), want the stream's error", err, fleetscope.ErrorCode(err))
	}
	if files, _ := os.ReadDir(spool); len(files) != 0 {
		t.Errorf("spool holds %d files after the failed upload", len(files))
	}
	stored := 0
	s.Blobs.List(context.Background(), "", func(blob.Info) error { stored++; return nil })
	if stored != 0 {
		t.Errorf("%d blobs stored by the failed upload", stored)
	}
}

// TestStoredBytesAreAllThatWasSent: the stored file, its size and its
// hash cover every byte sent, also where the format's parser is done
// before the end (a V8 profile's JSON followed by a megabyte of blank
// lines, past what the JSON decoder reads ahead).
func TestStoredBytesAreAllThatWasSent(t *testing.T) {
	profile, err := os.ReadFile(corpus.Path(t, "corpus/cpuprofile/node20-phases.cpuprofile"))
	if err != nil {
		t.Fatal(err)
	}
	body := append(bytes.Clone(profile), bytes.Repeat([]byte("\n"), 1<<20)...)
	s, p := service(t, t.TempDir())
	info, _, err := s.Ingest(context.Background(), p, ingest.Meta{App: "a"}, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%x", sha256.Sum256(body)); info.SHA256 != want || info.SizeBytes != int64(len(body)) {
		t.Errorf("stored %d bytes, sha256 %s; sent %d, sha256 %s", info.SizeBytes, info.SHA256, len(body), want)
	}
	rc, err := s.Blobs.Get(context.Background(), info.BlobKey)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if stored, _ := io.ReadAll(rc); !bytes.Equal(stored, body) {
		t.Errorf("the stored file is %d bytes, not the %d sent", len(stored), len(body))
	}
}

// service is an ingest service on a fresh database (real Postgres) and a
// blob directory, spooling to spool, and a principal of a tenant of it.
func service(t *testing.T, spool string) (*ingest.Service, fleetscope.Principal) {
	blobs, err := localfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	db := pgtest.New(t)
	tenant, err := db.CreateTenant(context.Background(), "t", false)
	if err != nil {
		t.Fatal(err)
	}
	return &ingest.Service{DB: db, Blobs: blobs, TempDir: spool}, fleetscope.Principal{TenantID: tenant, Scopes: []string{fleetscope.ScopeIngest}}
}
