package postgres

import "testing"

// Migrate holds migrateLock while distribute takes distributeLock on
// another connection: the same key would have it wait for itself.
func TestLockKeysDiffer(t *testing.T) {
	if migrateLock == int64(distributeLock) {
		t.Fatal("migrateLock and distributeLock are the same advisory lock")
	}
}
