package ingest

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing f's bytes [off, off+n)
// to disk, without waiting: the blob store's fsync of the stored file (the
// spool itself, hard-linked) then finds little left to write.
func startWriteback(f *os.File, off, n int64) {
	unix.SyncFileRange(int(f.Fd()), off, n, unix.SYNC_FILE_RANGE_WRITE)
}
