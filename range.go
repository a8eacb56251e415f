package fleetscope

import (
	"math"
	"strings"
)

// Range is a half-open time range [Start, End) in nanoseconds relative to a
// profile's start second (see the heatmap).
type Range struct {
	Start, End int64
}

// All is the range that contains every sample.
var All = Range{Start: math.MinInt64, End: math.MaxInt64}

// Contains reports whether relative time t lies in [Start, End).
func (r Range) Contains(t int64) bool { return t >= r.Start && t < r.End }

// ParseSeconds parses a decimal number of seconds such as "12", "-0.5" or
// "3.140001" exactly, without going through a float: up to nine fractional
// digits (nanoseconds) are kept; more are rejected rather than rounded.
func ParseSeconds(s string) (int64, error) {
	orig := s
	neg := false
	if strings.HasPrefix(s, "-") || strings.HasPrefix(s, "+") {
		neg = s[0] == '-'
		s = s[1:]
	}
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || len(frac) > 9 {
		return 0, Errorf(EINVALID, "invalid time %q: want seconds like 12.345678", orig)
	}
	var sec int64
	for _, c := range whole {
		if c < '0' || c > '9' || sec > (math.MaxInt64/1_000_000_000-9)/10 {
			return 0, Errorf(EINVALID, "invalid time %q: want seconds like 12.345678", orig)
		}
		sec = sec*10 + int64(c-'0')
	}
	var ns int64
	for i := 0; i < 9; i++ {
		ns *= 10
		if i < len(frac) {
			c := frac[i]
			if c < '0' || c > '9' {
				return 0, Errorf(EINVALID, "invalid time %q: want seconds like 12.345678", orig)
			}
			ns += int64(c - '0')
		}
	}
	v := sec*1e9 + ns
	if neg {
		v = -v
	}
	return v, nil
}

// FormatSeconds prints ns as seconds with six decimals (microseconds) when
// that is exact, nine otherwise.
func FormatSeconds(ns int64) string {
	sign, abs := "", uint64(ns)
	if ns < 0 {
		sign, abs = "-", -abs // -MinInt64 in uint64 arithmetic: no overflow
	}
	sec, frac := abs/1e9, abs%1e9
	b := []byte(sign)
	b = appendInt(b, sec)
	b = append(b, '.')
	digits := 9
	if frac%1000 == 0 {
		frac /= 1000
		digits = 6
	}
	f := appendInt(nil, frac)
	for i := len(f); i < digits; i++ {
		b = append(b, '0')
	}
	return string(append(b, f...))
}

func appendInt(b []byte, v uint64) []byte {
	if v >= 10 {
		b = appendInt(b, v/10)
	}
	return append(b, byte('0'+v%10))
}
