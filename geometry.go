package fleetscope

import (
	"math"
	"time"
)

// The heatmap's geometry (FlameScope's sub-second offset heatmap): column i
// is the second [startSecond+i, startSecond+i+1); row r (0 at the bottom)
// holds the samples whose offset within their second lies in
// [r/rows, (r+1)/rows). All of it is exact integer arithmetic on
// nanosecond timestamps, so a cell's range holds exactly the samples the
// cell counts: cell (col, row) covers the half-open relative times
// [col·1e9 + ⌈row·1e9/rows⌉, col·1e9 + ⌈(row+1)·1e9/rows⌉) ns, exactly the
// offsets Row puts in row within second col (the dashboard's cellRange
// selects it; the tests check the counts against it).

// DefaultRows gives 20 ms cells at one second per column.
const DefaultRows = 50

// MaxRows bounds the rows a heatmap may have.
const MaxRows = 1000

// CheckRows validates a row count.
func CheckRows(rows int) error {
	if rows < 1 || rows > MaxRows {
		return Errorf(EINVALID, "rows must be between 1 and %d, not %d", MaxRows, rows)
	}
	return nil
}

// FloorSecond returns floor(t / 1e9) for a timestamp t in ns: the second
// that holds t, also for negative times.
func FloorSecond(t int64) int64 {
	s := t / 1e9
	if t < 0 && t%1e9 != 0 {
		s--
	}
	return s
}

// Row returns the row of an offset within its second, 0 <= offsetNanos < 1e9.
func Row(offsetNanos int64, rows int) int {
	return int(offsetNanos * int64(rows) / 1e9)
}

// MaxColumns bounds a heatmap's columns: a longer span is drawn with
// several seconds per column, so an answer's size is bounded by what is
// shown, never by how far apart the data's timestamps lie.
const MaxColumns = 1000

// SecondsPerColumn returns how many seconds one column of a heatmap over n
// seconds covers: 1 up to MaxColumns seconds, else the fewest whole seconds
// that keep the columns at or under MaxColumns.
func SecondsPerColumn(n int64) int64 {
	if n <= MaxColumns {
		return 1
	}
	return (n + MaxColumns - 1) / MaxColumns
}

// Timestamps. A profile clock (boot-relative or epoch) reads from 0 up to
// MaxTimeNanos, 2100-01-01 00:00 UTC as epoch time: anything else (negative,
// far future, not a number) is refused as input, never wrapped, clamped or
// stored as "untimed".
const MaxTimeNanos = 4102444800 * 1e9

// BadTime marks a sample whose profiler wrote a timestamp outside the
// accepted range; parsers set it, and indexing refuses the profile.
const BadTime = math.MaxInt64

// CheckTime returns EINVALID for a timestamp outside [0, MaxTimeNanos].
func CheckTime(ns int64) error {
	if ns < 0 || ns > MaxTimeNanos {
		return Errorf(EINVALID, "timestamp %s is outside the accepted range [0, %d] s (up to the year 2100)", FormatTime(ns), int64(MaxTimeNanos/1e9))
	}
	return nil
}

// FormatTime prints a sample timestamp in seconds for messages.
func FormatTime(ns int64) string {
	if ns == BadTime {
		return "(out of range)"
	}
	return FormatSeconds(ns) + " s"
}

// MinWallTime and MaxWallTime bound the absolute times a profile may be
// placed at (by its epoch clock, an anchor or a span).
var (
	MinWallTime = time.Unix(0, 0)
	MaxWallTime = time.Unix(MaxTimeNanos/1e9, 0)
)

// CheckWallTime returns EINVALID, naming what, for an absolute time outside
// [MinWallTime, MaxWallTime].
func CheckWallTime(t time.Time, what string) error {
	if t.Before(MinWallTime) || t.After(MaxWallTime) {
		return Errorf(EINVALID, "%s %s is outside the accepted range 1970-01-01 to 2100-01-01", what, t.UTC().Format(time.RFC3339Nano))
	}
	return nil
}
