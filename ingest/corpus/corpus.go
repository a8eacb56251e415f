// Package corpus finds the shared test material for tests and benchmarks:
// the profile corpus with its reference outputs, the benchmark file and the
// tools (planted.py, scale.py), kept in ../shared beside the repository (or
// where FLEETSCOPE_SHARED points). A test that needs a missing file is
// skipped saying so, or fails when FLEETSCOPE_TEST_REQUIRE=1 (as in CI), so
// a clone without ../shared still runs every other test. Only tests and
// benchmarks import it.
package corpus

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// Dir returns the shared directory: FLEETSCOPE_SHARED if set, else
// ../shared beside the repository.
func Dir() string {
	if d := os.Getenv("FLEETSCOPE_SHARED"); d != "" {
		return d
	}
	_, file, _, _ := runtime.Caller(0) // <repo>/ingest/corpus/corpus.go
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "shared")
}

// Required reports whether missing shared material fails tests instead of
// skipping them (FLEETSCOPE_TEST_REQUIRE=1).
func Required() bool { return os.Getenv("FLEETSCOPE_TEST_REQUIRE") == "1" }

// missing skips t, or fails it under FLEETSCOPE_TEST_REQUIRE=1.
func missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf(format, args...)
	}
	t.Skipf(format+" (skipped; FLEETSCOPE_TEST_REQUIRE=1 makes this a failure)", args...)
}

// Path returns the path of a shared file, given relative to the shared
// directory ("corpus/perf/x.txt"), skipping or failing t when it is absent.
func Path(t testing.TB, rel string) string {
	t.Helper()
	p := filepath.Join(Dir(), rel)
	if _, err := os.Stat(p); err != nil {
		missing(t, "shared file %s: %v", rel, err)
	}
	return p
}

// Glob returns the shared files matching pattern (relative to the shared
// directory), skipping or failing t when there are fewer than min.
func Glob(t testing.TB, pattern string, min int) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(Dir(), pattern))
	if err != nil || len(files) < min {
		missing(t, "shared files %s: %d found, want at least %d", pattern, len(files), min)
	}
	return files
}

// Read returns a shared file's bytes, skipping or failing t when it is
// absent.
func Read(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
