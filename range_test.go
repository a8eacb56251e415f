package fleetscope

import (
	"math"
	"strings"
	"testing"
)

// TestFormatSecondsExtremes: the extreme readings print as numbers (the
// most negative one used to print "-*.00000000("), and a reading refused by
// CheckTime is named so.
func TestFormatSecondsExtremes(t *testing.T) {
	for ns, want := range map[int64]string{
		math.MinInt64: "-9223372036.854775808",
		math.MaxInt64: "9223372036.854775807",
		-1:            "-0.000000001",
		-1500000000:   "-1.500000",
		0:             "0.000000",
	} {
		if got := FormatSeconds(ns); got != want {
			t.Errorf("FormatSeconds(%d) = %q, want %q", ns, got, want)
		}
	}
	err := CheckTime(math.MinInt64)
	if ErrorCode(err) != EINVALID || !strings.Contains(err.Error(), "timestamp -9223372036.854775808 s is outside") {
		t.Errorf("CheckTime(MinInt64): %v", err)
	}
}
