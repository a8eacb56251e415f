package localfs_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/blob"
	"github.com/fleetscope/fleetscope/store/blob/blobtest"
	"github.com/fleetscope/fleetscope/store/blob/localfs"
)

func TestStore(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		return newStore(t, t.TempDir())
	})
}

func newStore(t *testing.T, dir string) *localfs.Store {
	t.Helper()
	s, err := localfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestFailedPutLeavesNoFiles checks the disk, not just List: a failed Put
// removes its temporary file.
func TestFailedPutLeavesNoFiles(t *testing.T) {
	dir := t.TempDir()
	s := newStore(t, dir)
	broken := io.MultiReader(strings.NewReader("some bytes"), failing{})
	if err := s.Put(t.Context(), "t/a", broken, -1); err == nil {
		t.Error("Put with a failing reader succeeded")
	}
	if err := s.Put(t.Context(), "t/b", strings.NewReader("short"), 10); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
		t.Errorf("Put of 5 bytes declared as 10 = %v, want EINVALID", err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Put(ctx, "t/c", strings.NewReader("x"), 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a cancelled context = %v, want %v", err, context.Canceled)
	}
	filepath.WalkDir(dir, func(name string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			t.Errorf("file left behind: %s", name)
		}
		return err
	})
}

// TestTempFilesHidden: a temporary file left by a crash is not listed, and
// keys cannot name one.
func TestTempFilesHidden(t *testing.T) {
	dir := t.TempDir()
	s := newStore(t, dir)
	if err := s.Put(t.Context(), "t/a", strings.NewReader("a"), 1); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t", ".fleetscope-tmp-123"), []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	var keys []string
	if err := s.List(t.Context(), "", func(i blob.Info) error { keys = append(keys, i.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 1 || keys[0] != "t/a" {
		t.Errorf("List = %q, want [t/a]", keys)
	}
	_, err := s.Stat(t.Context(), "t/.fleetscope-tmp-123")
	if fleetscope.ErrorCode(err) != fleetscope.EINVALID {
		t.Errorf("Stat of a temporary file = %v, want EINVALID", err)
	}
}

// TestLayout: keys are files under the directory, '/' makes subdirectories.
func TestLayout(t *testing.T) {
	dir := t.TempDir()
	s := newStore(t, dir)
	if err := s.Put(t.Context(), "tenant/abc", strings.NewReader("data"), -1); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "tenant", "abc")); err != nil || string(b) != "data" {
		t.Errorf("file = %q, %v; want %q", b, err, "data")
	}
}

// TestConflict: a key cannot also be a directory of keys.
func TestConflict(t *testing.T) {
	s := newStore(t, t.TempDir())
	ctx := t.Context()
	for _, k := range []string{"a", "c/d"} {
		if err := s.Put(ctx, k, strings.NewReader("x"), 1); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range []string{"a/b", "c"} {
		if err := s.Put(ctx, k, strings.NewReader("x"), 1); fleetscope.ErrorCode(err) != fleetscope.ECONFLICT {
			t.Errorf("Put(%q) = %v, want ECONFLICT", k, err)
		}
	}
	if err := s.Delete(ctx, "c"); err != nil {
		t.Errorf("Delete of a directory of keys = %v, want nil", err)
	}
	if _, err := s.Stat(ctx, "c/d"); err != nil {
		t.Errorf("Stat(c/d) after Delete(c) = %v", err)
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	for _, tc := range []struct{ url, file string }{
		{"file://" + filepath.Join(dir, "abs"), filepath.Join(dir, "abs", "t", "k")},
		{"file://./rel/blobs", filepath.Join(dir, "rel", "blobs", "t", "k")},
	} {
		s, err := blob.Open(t.Context(), tc.url, "", "")
		if err != nil {
			t.Fatalf("Open(%q): %v", tc.url, err)
		}
		if err := s.Put(t.Context(), "t/k", strings.NewReader("v"), 1); err != nil {
			t.Fatalf("Open(%q): Put: %v", tc.url, err)
		}
		if _, err := os.Stat(tc.file); err != nil {
			t.Errorf("Open(%q): %v", tc.url, err)
		}
	}
}

type failing struct{}

func (failing) Read([]byte) (int, error) { return 0, errors.New("broken") }

// TestPartials: a temporary file left by a crash mid-Put is found once
// older than the cut-off and removed on request; finished objects are not
// partials.
func TestPartials(t *testing.T) {
	dir := t.TempDir()
	s, err := localfs.New(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Put(t.Context(), "7/done", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(dir, "7", ".fleetscope-tmp-123") // what Put writes first
	if err := os.WriteFile(left, []byte("half"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * time.Hour)
	if err := os.Chtimes(left, old, old); err != nil {
		t.Fatal(err)
	}
	var found []blob.Info
	collect := func(i blob.Info) error { found = append(found, i); return nil }
	if err := s.Partials(t.Context(), old.Add(-time.Minute), false, collect); err != nil || len(found) != 0 {
		t.Fatalf("cut-off before the write: %v, %v; want none", found, err)
	}
	if err := s.Partials(t.Context(), time.Now().Add(-time.Hour), true, collect); err != nil || len(found) != 1 || found[0].Size != 4 {
		t.Fatalf("cut-off an hour ago: %+v, %v; want the 4-byte temporary file", found, err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("partial not removed: %v", err)
	}
	if _, err := s.Stat(t.Context(), "7/done"); err != nil {
		t.Fatalf("a finished object went with the partials: %v", err)
	}
}

// TestPutFromFile: a file read from its start is stored by a hard link
// (the same inode, when on the same file system); removing the file
// afterwards leaves the blob whole. A file read from elsewhere, or of
// another size than declared, is copied or refused as any reader is.
func TestPutFromFile(t *testing.T) {
	dir := t.TempDir()
	s := newStore(t, dir)
	src := filepath.Join(dir, "..", filepath.Base(dir)+"-spool")
	t.Cleanup(func() { os.Remove(src) })
	content := strings.Repeat("spooled bytes\n", 1000)
	if err := os.WriteFile(src, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() *os.File {
		f, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	read := func(key string) string {
		rc, err := s.Get(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		b, _ := io.ReadAll(rc)
		return string(b)
	}

	if err := s.Put(t.Context(), "t/linked", open(), int64(len(content))); err != nil {
		t.Fatal(err)
	}
	a, _ := os.Stat(src)
	b, _ := os.Stat(filepath.Join(dir, "t", "linked"))
	if !os.SameFile(a, b) {
		t.Error("a file from its start on the same file system was copied, not linked")
	}

	f := open()
	f.Seek(5, io.SeekStart)
	if err := s.Put(t.Context(), "t/rest", f, int64(len(content)-5)); err != nil {
		t.Fatal(err)
	}
	if got := read("t/rest"); got != content[5:] {
		t.Errorf("a file read from offset 5 stored %d bytes, want the %d after the offset", len(got), len(content)-5)
	}
	if err := s.Put(t.Context(), "t/wrong", open(), 3); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
		t.Errorf("Put of a %d-byte file declared as 3 bytes = %v, want EINVALID", len(content), err)
	}
	if _, err := s.Get(t.Context(), "t/wrong"); fleetscope.ErrorCode(err) != fleetscope.ENOTFOUND {
		t.Errorf("a refused Put left a blob: %v", err)
	}

	os.Remove(src)
	if got := read("t/linked"); got != content {
		t.Errorf("after the file was removed the blob holds %d bytes, want %d", len(got), len(content))
	}
}
