package ingest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// spoolWith makes dir with two partial uploads in it, and a lock file
// (not locked) unless legacy: a spool made before spools were locked.
func spoolWith(t *testing.T, dir string, legacy bool) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"fleetscope-upload-1", "fleetscope-upload-2"} {
		os.WriteFile(filepath.Join(dir, f), []byte("partial upload"), 0o600)
	}
	if !legacy {
		os.WriteFile(filepath.Join(dir, spoolLock), nil, 0o600)
	}
}

// TestPrepareSpoolRemovesTheDeadsResidue: a spool directory is its
// server's while the server holds its lock, whatever its process id says.
// At start, every spool whose lock can be taken is removed, even one named
// after a live process (a pid reused, or a killed server not yet reaped);
// one whose lock is held is kept; a spool without a lock file (an older
// server's) is judged by its pid.
func TestPrepareSpoolRemovesTheDeadsResidue(t *testing.T) {
	parent := t.TempDir()
	exited := func() string { // a process that has exited: its pid is free
		cmd := exec.Command("true")
		if err := cmd.Run(); err != nil {
			t.Fatal(err)
		}
		return strconv.Itoa(cmd.Process.Pid)
	}
	dead := filepath.Join(parent, spoolPrefix+exited())
	unlocked := filepath.Join(parent, spoolPrefix+"1") // init never exits, but holds no lock here
	locked := filepath.Join(parent, spoolPrefix+"999999999")
	legacyLive := filepath.Join(parent, spoolPrefix+strconv.Itoa(os.Getppid()))
	legacyDead := filepath.Join(parent, spoolPrefix+exited())
	mine := filepath.Join(parent, spoolPrefix+strconv.Itoa(os.Getpid()))
	for _, d := range []string{dead, unlocked, locked, mine} {
		spoolWith(t, d, false)
	}
	for _, d := range []string{legacyLive, legacyDead} {
		spoolWith(t, d, true)
	}
	// Another server's lock, held here by an open file of the test.
	lf, err := os.OpenFile(filepath.Join(locked, spoolLock), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}

	if stale, err := CleanSpools(parent, false); err != nil || len(stale) != 4 {
		t.Errorf("CleanSpools without remove: %v %v, want the 4 stale spools", stale, err)
	}
	dir, removed, err := PrepareSpool(parent)
	if err != nil {
		t.Fatal(err)
	}
	if dir != mine || removed != 8 {
		t.Errorf("spool %s, %d files removed; want %s and 8 (the dead server's, the unlocked one's, the old server's and our earlier life's)", dir, removed, mine)
	}
	for _, d := range []string{dead, unlocked, legacyDead} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", d, err)
		}
	}
	if files, _ := os.ReadDir(locked); len(files) != 3 {
		t.Errorf("a locked spool lost files: %d left", len(files))
	}
	if files, _ := os.ReadDir(legacyLive); len(files) != 2 {
		t.Errorf("a live older server's spool lost files: %d left", len(files))
	}
	if files, _ := os.ReadDir(mine); len(files) != 1 || files[0].Name() != spoolLock {
		t.Errorf("our spool starts with %v, want only its lock", files)
	}
	// Ours is locked now: another process's start (a second CleanSpools
	// through another open file) keeps it, and so does a second call here.
	if f, ok, err := lockSpool(mine); ok || err != nil {
		f.Close()
		t.Errorf("our spool's lock could be taken (%v)", err)
	}
	if again, _, err := PrepareSpool(parent); err != nil || again != mine {
		t.Errorf("PrepareSpool again: %s %v", again, err)
	}
	if _, err := os.Stat(locked); err != nil {
		t.Errorf("the locked spool went: %v", err)
	}
}

// TestSpoolOfAKilledServerIsRemoved: a server killed with SIGKILL and not
// yet reaped (its pid still answers kill(pid, 0), as it does for a moment
// after kill -9) leaves a spool the next start removes: the kernel dropped
// its lock when it died.
func TestSpoolOfAKilledServerIsRemoved(t *testing.T) {
	if parent := os.Getenv("FLEETSCOPE_SPOOL_HELPER"); parent != "" {
		dir, _, err := PrepareSpool(parent)
		if err != nil {
			os.Exit(2)
		}
		os.WriteFile(filepath.Join(dir, "fleetscope-upload-1"), []byte("partial upload"), 0o600)
		os.Stdout.WriteString(dir + "\n")
		io.Copy(io.Discard, os.Stdin) // until killed
		os.Exit(0)
	}
	parent := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestSpoolOfAKilledServerIsRemoved$")
	cmd.Env = append(os.Environ(), "FLEETSCOPE_SPOOL_HELPER="+parent)
	stdin, _ := cmd.StdinPipe()
	defer stdin.Close()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the helper server: %v", err)
	}
	dir := strings.TrimSpace(line)
	// While it runs, its spool is kept.
	if stale, err := CleanSpools(parent, false); err != nil || len(stale) != 0 {
		t.Errorf("a running server's spool is stale: %v %v", stale, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// Wait for its death without reaping it: it stays a zombie, its pid
	// alive to kill(pid, 0).
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	if !alive(cmd.Process.Pid) {
		t.Fatal("the killed server's pid is not alive before it is reaped: the test proves nothing")
	}
	stale, err := CleanSpools(parent, true)
	if err != nil || len(stale) != 1 || stale[0].Dir != dir || stale[0].Files != 1 {
		t.Fatalf("CleanSpools after kill -9: %v %v, want %s with 1 file", stale, err, dir)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the killed server's spool is still there: %v", err)
	}
}
