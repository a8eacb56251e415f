package ingest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// spoolPrefix names a server process's spool directory: the prefix and its
// process id.
const spoolPrefix = "fleetscope-spool-"

// PrepareSpool makes this process's upload spool directory under parent
// ("" = os.TempDir()) and removes what earlier processes left there: the
// spool directories of processes that are gone (a server killed mid-upload
// cannot clean up after itself), and an earlier one of this process id. It returns the directory and how many
// files it removed. Servers sharing parent keep each other's spools.
func PrepareSpool(parent string) (dir string, removed int, err error) {
	if parent == "" {
		parent = os.TempDir()
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return "", 0, fmt.Errorf("spool %s: %w", parent, err)
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), spoolPrefix))
		// Our own pid's directory is an earlier life's (a container's
		// server is pid 1 every time): nothing of ours is in flight yet.
		if !e.IsDir() || !strings.HasPrefix(e.Name(), spoolPrefix) || err != nil || pid != os.Getpid() && alive(pid) {
			continue
		}
		old := filepath.Join(parent, e.Name())
		files, _ := os.ReadDir(old)
		if err := os.RemoveAll(old); err == nil {
			removed += len(files)
		}
	}
	dir = filepath.Join(parent, spoolPrefix+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", removed, fmt.Errorf("spool: %w", err)
	}
	return dir, removed, nil
}

// alive reports whether a process with pid exists (ours or not).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
