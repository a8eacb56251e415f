package localfs

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// resident counts the pages of the file at path in the page cache.
func resident(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, _ := f.Stat()
	m, err := unix.Mmap(int(f.Fd()), 0, int(fi.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	return len(vec) - bytes.Count(vec, []byte{0})
}

// diskDir returns a new directory, removed when the test ends, on a
// filesystem backed by a disk, whose pages can leave the page cache: the
// test's temporary directory unless that is in memory (tmpfs, ramfs, as
// TMPDIR often is), else one under /var/tmp or the user's cache directory.
// It returns "" when none of them is on a disk.
func diskDir(t *testing.T) string {
	t.Helper()
	candidates := []string{t.TempDir(), "/var/tmp"}
	if d, err := os.UserCacheDir(); err == nil {
		candidates = append(candidates, d)
	}
	for i, c := range candidates {
		var st unix.Statfs_t
		if err := unix.Statfs(c, &st); err != nil || st.Type == unix.TMPFS_MAGIC || st.Type == unix.RAMFS_MAGIC {
			continue
		}
		if i == 0 {
			return c
		}
		dir, err := os.MkdirTemp(c, "fleetscope-localfs-test-")
		if err != nil {
			continue
		}
		t.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return ""
}

// A stored blob, linked or copied, leaves the page cache once synced. The
// test needs a directory on a disk and a page cache that keeps what is
// written or read; where there is neither, it cannot apply and skips, even
// under FLEETSCOPE_TEST_REQUIRE=1 (nothing there could show eviction).
func TestPutEvictsStoredPages(t *testing.T) {
	dir := diskDir(t)
	if dir == "" {
		t.Skip("no directory on a disk (the temporary directory, /var/tmp and the cache directory are in memory): pages cannot leave")
	}
	s, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(dir, "spool")
	content := bytes.Repeat([]byte("spooled bytes\n"), 300_000) // 4 MB
	if err := os.WriteFile(src, content, 0o600); err != nil {
		t.Fatal(err)
	}
	if resident(t, src) == 0 { // written back already: reading brings the pages in
		if _, err := os.ReadFile(src); err != nil {
			t.Fatal(err)
		}
		if resident(t, src) == 0 {
			t.Skip("this filesystem keeps no pages of a file written and read (no page cache to leave)")
		}
	}
	for _, key := range []string{"linked", "copied"} {
		var r io.Reader = bytes.NewReader(content)
		if key == "linked" {
			f, err := os.Open(src)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r = f
		}
		if err := s.Put(t.Context(), key, r, int64(len(content))); err != nil {
			t.Fatal(err)
		}
		if n := resident(t, filepath.Join(dir, key)); n > 0 {
			t.Errorf("%s blob: %d pages still in the page cache after Put", key, n)
		}
	}
}
