package spans

import "math"

// PercentileNanos returns the p-th percentile (0 <= p <= 100) of the spans'
// durations, or 0 when there are none.
//
// The definition is the lower value at the (n-1)·p/100 position of the
// sorted durations: d[floor((n-1)·p/100)], 0-based (numpy's
// percentile(..., method="lower")). It is always a measured duration, never
// an interpolation, and it reproduces the reference latencies of the
// uprobe corpus file exactly; the textbook nearest rank, d[ceil(n·p/100)-1],
// can be one rank higher (4,174 µs instead of 4,159 µs for its p99).
func (s *Set) PercentileNanos(p float64) int64 {
	return percentile(s.durations, percentMillionths(p))
}

// percentMillionths is p percent in millionths of a percent, so that
// p99.9 of 1001 values is exactly index 999 (no float rounding).
func percentMillionths(p float64) int64 {
	return int64(math.Round(min(max(p, 0), 100) * 1e6))
}

// percentile applies PercentileNanos' definition to ascending durations,
// with p in millionths of a percent.
func percentile(sorted []int64, p int64) int64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[int64(len(sorted)-1)*p/100_000_000]
}

// Latency is a set's usual percentiles, in ns.
type Latency struct {
	P50, P90, P95, P99 int64
}

// Latency returns the p50, p90, p95 and p99 of the spans' durations (see
// PercentileNanos); all zero when there are no spans.
func (s *Set) Latency() Latency {
	return Latency{
		P50: s.PercentileNanos(50),
		P90: s.PercentileNanos(90),
		P95: s.PercentileNanos(95),
		P99: s.PercentileNanos(99),
	}
}

// MaxNanos is the longest span's duration, 0 when there are none.
func (s *Set) MaxNanos() int64 {
	if len(s.durations) == 0 {
		return 0
	}
	return s.durations[len(s.durations)-1]
}

// Bucket counts the spans whose duration lies in [LoNanos, HiNanos).
type Bucket struct {
	LoNanos, HiNanos int64
	Count            int
}

// Histogram counts the spans' durations in power-of-two microsecond
// buckets, [0, 1 µs), [1, 2 µs), [2, 4 µs), ..., from the shortest
// span's bucket to the longest's (empty buckets between included). Nil
// when there are no spans.
func (s *Set) Histogram() []Bucket {
	if len(s.durations) == 0 {
		return nil
	}
	lo, hi := bucketOf(s.durations[0])
	out := []Bucket{{LoNanos: lo, HiNanos: hi}}
	for _, d := range s.durations {
		for d >= out[len(out)-1].HiNanos {
			next := out[len(out)-1].HiNanos
			out = append(out, Bucket{LoNanos: next, HiNanos: 2 * next})
		}
		out[len(out)-1].Count++
	}
	return out
}

// bucketOf returns the power-of-two microsecond bucket holding d ns.
func bucketOf(d int64) (lo, hi int64) {
	if d < 1000 {
		return 0, 1000
	}
	lo = 1000
	for lo*2 <= d {
		lo *= 2
	}
	return lo, 2 * lo
}
