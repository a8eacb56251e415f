package spans

import (
	"strings"

	"github.com/fleetscope/fleetscope"
)

// Condition chooses spans by duration against a threshold that is either a
// fixed duration or a percentile of the set's durations (see
// PercentileNanos):
//
//	slower:T  duration > T
//	faster:T  duration <= T
//
// The two are complements: for the same T, every span is in exactly one of
// slower:T and faster:T (so faster:p95 holds the spans at the p95 itself).
// "slower:A,faster:B" is a band: both must hold (A < duration <= B; the
// dashboard's latency band). Make one with ParseCondition (the zero
// Condition is faster:p0).
type Condition struct {
	slower bool
	pct    int64 // the percentile in millionths of a percent; -1 for a fixed threshold
	nanos  int64 // the fixed threshold
	text   string
	also   *Condition // a band's other bound
}

const conditionForms = "want slower:T, faster:T or a band slower:T,faster:T, T a percentile (p95, p99.9) or a duration (2ms, 500us, 1.5s; units ns, us, µs, ms, s)"

// ParseCondition reads "slower:p95", "faster:p99.9", "slower:2ms",
// "faster:750us", "slower:1.5s" and the like. Durations are read exactly
// (decimal, to the nanosecond); a percentile lies in [0, 100] with at most
// six decimals. Returns EINVALID for anything else.
func ParseCondition(s string) (Condition, error) {
	one, other, band := strings.Cut(s, ",")
	c, err := parseBound(one)
	if err != nil || !band {
		return c, err
	}
	c2, err := parseBound(other)
	if err != nil {
		return Condition{}, err
	}
	if c2.slower == c.slower {
		return Condition{}, fleetscope.Errorf(fleetscope.EINVALID, "condition %q: a band is one slower: and one faster: bound; %s", s, conditionForms)
	}
	c.also, c.text = &c2, s
	return c, nil
}

// parseBound reads one bound, slower:T or faster:T.
func parseBound(s string) (Condition, error) {
	dir, t, ok := strings.Cut(s, ":")
	c := Condition{pct: -1, text: s}
	switch {
	case !ok:
		return Condition{}, fleetscope.Errorf(fleetscope.EINVALID, "condition %q: %s", s, conditionForms)
	case dir == "slower":
		c.slower = true
	case dir == "faster":
	default:
		return Condition{}, fleetscope.Errorf(fleetscope.EINVALID, "condition %q: %q is neither slower nor faster; %s", s, dir, conditionForms)
	}
	if p, ok := strings.CutPrefix(t, "p"); ok {
		v, ok := decimal(p, 1e6)
		if !ok || v > 100*1e6 {
			return Condition{}, fleetscope.Errorf(fleetscope.EINVALID, "condition %q: percentile %q is not a number from 0 to 100 (at most 6 decimals)", s, p)
		}
		c.pct = v
		return c, nil
	}
	num, unit := splitUnit(t)
	scale, ok := units[unit]
	if !ok {
		return Condition{}, fleetscope.Errorf(fleetscope.EINVALID, "condition %q: %q needs a unit; %s", s, t, conditionForms)
	}
	if c.nanos, ok = decimal(num, scale); !ok {
		return Condition{}, fleetscope.Errorf(fleetscope.EINVALID, "condition %q: %q is not a duration to the nanosecond; %s", s, t, conditionForms)
	}
	return c, nil
}

// units are the durations' units in ns.
var units = map[string]int64{"ns": 1, "us": 1e3, "µs": 1e3, "μs": 1e3, "ms": 1e6, "s": 1e9}

// splitUnit splits "2.5ms" into "2.5" and "ms".
func splitUnit(t string) (num, unit string) {
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.') {
		i++
	}
	return t[:i], t[i:]
}

// decimal reads digits[.digits] times scale exactly; false when s is not
// such a number, has more precision than scale allows, or overflows.
func decimal(s string, scale int64) (int64, bool) {
	ip, fp, dot := strings.Cut(s, ".")
	if ip == "" || dot && fp == "" || !allDigits(ip) || !allDigits(fp) || len(ip) > 12 {
		return 0, false
	}
	var v int64
	for _, c := range ip {
		v = v*10 + int64(c-'0')
	}
	if v > (1<<62)/scale {
		return 0, false
	}
	v *= scale
	unit := scale
	for _, c := range fp {
		if unit%10 != 0 {
			if c != '0' {
				return 0, false // finer than scale's unit
			}
			continue
		}
		unit /= 10
		v += int64(c-'0') * unit
	}
	return v, true
}

func allDigits(s string) bool {
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// String returns the condition as it was written.
func (c Condition) String() string { return c.text }

// ThresholdNanos resolves the threshold against set: the fixed duration,
// or the percentile of the set's durations.
func (c Condition) ThresholdNanos(set *Set) int64 {
	if c.pct < 0 {
		return c.nanos
	}
	return percentile(set.durations, c.pct)
}

// keeper resolves the condition's thresholds against set and returns
// whether a span of duration d passes.
func (c Condition) keeper(set *Set) func(d int64) bool {
	t := c.ThresholdNanos(set)
	if c.also == nil {
		return func(d int64) bool { return (d > t) == c.slower }
	}
	t2 := c.also.ThresholdNanos(set)
	return func(d int64) bool { return (d > t) == c.slower && (d > t2) == c.also.slower }
}
