package ingest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// spoolPrefix names a server process's spool directory: the prefix and its
// process id (for people reading the directory; ownership is the lock).
const spoolPrefix = "fleetscope-spool-"

// spoolLock is the file in each spool directory that its server holds an
// exclusive flock(2) on for as long as it runs. The kernel drops the lock
// when the process dies, however it dies (kill -9 included), at once: a
// directory whose lock can be taken has no owner.
const spoolLock = ".lock"

// held are the spool locks this process holds, by directory: open for the
// process's lifetime.
var held struct {
	sync.Mutex
	files map[string]*os.File
}

// PrepareSpool makes this process's upload spool directory under parent
// ("" = os.TempDir()), locks it, and removes what earlier processes left
// there (CleanSpools): a server killed mid-upload cannot clean up after
// itself. It returns the directory and how many files it removed. Servers
// sharing parent keep each other's spools: each holds its own lock.
func PrepareSpool(parent string) (dir string, removed int, err error) {
	if parent == "" {
		parent = os.TempDir()
	}
	stale, err := CleanSpools(parent, true)
	if err != nil {
		return "", 0, err
	}
	for _, s := range stale {
		removed += s.Files
	}
	dir = filepath.Join(parent, spoolPrefix+strconv.Itoa(os.Getpid()))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", removed, fmt.Errorf("spool: %w", err)
	}
	held.Lock()
	defer held.Unlock()
	if held.files[dir] != nil {
		return dir, removed, nil // locked by an earlier call
	}
	// The lock file appears locked (made under another name, locked, then
	// renamed): another server's CleanSpools never finds it unlocked.
	tmp, err := os.CreateTemp(dir, spoolLock+"-*")
	if err != nil {
		return "", removed, fmt.Errorf("spool: %w", err)
	}
	if err := syscall.Flock(int(tmp.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", removed, fmt.Errorf("spool: lock: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, spoolLock)); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return "", removed, fmt.Errorf("spool: %w", err)
	}
	f := tmp
	if held.files == nil {
		held.files = map[string]*os.File{}
	}
	held.files[dir] = f
	return dir, removed, nil
}

// StaleSpool is a spool directory no server owns, and how many files it
// holds (uploads cut off by the death of their server).
type StaleSpool struct {
	Dir   string
	Files int
}

// CleanSpools finds the spool directories under parent ("" = os.TempDir())
// that no running process owns: those whose lock can be taken, or, for a
// directory without a lock file (made by an older server, or by one that
// has not locked it yet), whose process id is not alive. With remove, it
// removes them. A running server's spool is never touched, so it is safe
// while servers run (fleetscope check --fix).
func CleanSpools(parent string, remove bool) ([]StaleSpool, error) {
	if parent == "" {
		parent = os.TempDir()
	}
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil, fmt.Errorf("spool %s: %w", parent, err)
	}
	var stale []StaleSpool
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), spoolPrefix) {
			continue
		}
		dir := filepath.Join(parent, e.Name())
		held.Lock()
		mine := held.files[dir] != nil
		held.Unlock()
		if mine {
			continue
		}
		var lock *os.File
		if _, err := os.Lstat(filepath.Join(dir, spoolLock)); err == nil {
			f, ok, err := lockSpool(dir)
			if err != nil || !ok {
				continue // owned (or unreadable: left alone)
			}
			lock = f
		} else {
			pid, err := strconv.Atoi(strings.TrimPrefix(e.Name(), spoolPrefix))
			// Our own pid's directory is an earlier life's (a container's
			// server is pid 1 every time): nothing of ours is in flight yet.
			if err != nil || pid != os.Getpid() && alive(pid) {
				continue
			}
		}
		files, _ := os.ReadDir(dir)
		n := 0
		for _, f := range files {
			if !strings.HasPrefix(f.Name(), spoolLock) {
				n++
			}
		}
		if !remove || os.RemoveAll(dir) == nil {
			stale = append(stale, StaleSpool{Dir: dir, Files: n})
		}
		if lock != nil {
			lock.Close() // after the removal: no one could take it over in between
		}
	}
	return stale, nil
}

// lockSpool opens dir's lock file and tries to take its exclusive lock
// without waiting. ok is false when another open file holds it (in this
// process or another); the file is returned open, holding the lock, when
// ok.
func lockSpool(dir string) (f *os.File, ok bool, err error) {
	f, err = os.OpenFile(filepath.Join(dir, spoolLock), os.O_RDWR, 0)
	if err != nil {
		return nil, false, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return f, true, nil
}

// alive reports whether a process with pid exists (ours or not).
func alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
