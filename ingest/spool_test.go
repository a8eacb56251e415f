package ingest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
)

// TestPrepareSpoolRemovesTheDeadsResidue: files a killed server left in its
// spool are removed at the next start; a live server's spool is kept.
func TestPrepareSpoolRemovesTheDeadsResidue(t *testing.T) {
	parent := t.TempDir()
	// A process that has exited: its pid is free.
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(parent, spoolPrefix+strconv.Itoa(cmd.Process.Pid))
	live := filepath.Join(parent, spoolPrefix+"1") // init never exits
	mine := filepath.Join(parent, spoolPrefix+strconv.Itoa(os.Getpid()))
	for _, d := range []string{dead, live, mine} {
		os.MkdirAll(d, 0o700)
		for _, f := range []string{"fleetscope-upload-1", "fleetscope-upload-2"} {
			os.WriteFile(filepath.Join(d, f), []byte("partial upload"), 0o600)
		}
	}
	dir, removed, err := PrepareSpool(parent)
	if err != nil {
		t.Fatal(err)
	}
	if dir != mine || removed != 4 {
		t.Fatalf("spool %s, %d files removed; want %s and 4 (the dead server's and our earlier life's)", dir, removed, mine)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Errorf("the dead server's spool is still there: %v", err)
	}
	if files, _ := os.ReadDir(live); len(files) != 2 {
		t.Errorf("a live server's spool lost files: %d left", len(files))
	}
	if files, _ := os.ReadDir(mine); len(files) != 0 {
		t.Errorf("our spool starts with %d files", len(files))
	}
}
