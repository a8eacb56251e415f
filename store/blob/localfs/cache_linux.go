package localfs

import (
	"os"

	"golang.org/x/sys/unix"
)

// evict drops a synced file's pages from the page cache. A stored blob is
// read again rarely (an export, a re-parse), and on the machines measured,
// pages kept made the next upload's writes take fresh memory: 125 ms of
// write calls per 74 MB profile instead of 25.
func evict(f *os.File) {
	unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED)
}
