package fleetscope

import (
	"strings"
	"testing"
	"time"
)

// TestFleetWindowTooLong: the error of a window past the bound gives both
// lengths in days, hours, minutes and seconds, not in Go's hours ("744h0m0s").
func TestFleetWindowTooLong(t *testing.T) {
	from := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	s := FleetSelection{App: "a", From: from, To: from + int64(800*time.Hour)}
	err := s.Check()
	if err == nil || !strings.Contains(err.Error(), "the window is 33 days 8 h long; at most 31 days") {
		t.Fatalf("800 h window: %v", err)
	}
	for d, want := range map[time.Duration]string{
		0: "0 s", 500 * time.Millisecond: "0.5 s", 24 * time.Hour: "1 day", 31*24*time.Hour + time.Second: "31 days 1 s",
		90 * time.Minute: "1 h 30 min", 2*time.Hour + 1500*time.Millisecond: "2 h 1.5 s",
	} {
		if got := FormatLength(d); got != want {
			t.Errorf("FormatLength(%v) = %q, want %q", d, got, want)
		}
	}
}
