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

// A stored blob, linked or copied, leaves the page cache once synced.
func TestPutEvictsStoredPages(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil || st.Type == unix.TMPFS_MAGIC {
		t.Skip("the temporary directory is in memory (tmpfs): its pages cannot leave")
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
	if n := resident(t, src); n == 0 {
		t.Skip("a file just written is not in the page cache here")
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
