package ingest

import (
	"strings"
	"testing"
)

// TestValidStream: 1-100 of A-Z a-z 0-9 . _ -, nothing else.
func TestValidStream(t *testing.T) {
	for s, want := range map[string]bool{
		"host-1.cpu_A": true, strings.Repeat("a", 100): true, "0": true,
		"": false, strings.Repeat("a", 101): false, "a b": false, "a/b": false, "é": false, "a\n": false, "a;b": false,
	} {
		if got := validStream(s); got != want {
			t.Errorf("validStream(%q) = %v, want %v", s, got, want)
		}
	}
}
