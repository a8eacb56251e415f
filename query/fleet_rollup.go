package query

import (
	"context"

	"github.com/fleetscope/fleetscope"

	"github.com/fleetscope/fleetscope/store/index"
)

// Rollups. A fleet's heatmap, host strip, timeline and series read the
// cells stored in absolute time: per profile and unix second
// (fleet_seconds), and summed per profile and unix minute (fleet_minutes).
// When a column is whole minutes (columns of half a minute or more are
// widened to whole minutes: a window of about 8.3 hours and more at 1,000
// columns), the minutes wholly inside
// the part of the window counted whole come from the minute rows, a row per
// profile-minute instead of sixty, and only the seconds at its edges from
// the second rows: the sum is the same, cell for cell.

// minuteColumnsFrom is the narrowest column widened to whole minutes.
const minuteColumnsFrom = 30

// floorTo rounds t down to a multiple of n (t may be negative).
func floorTo(t, n int64) int64 {
	q := t / n
	if t%n != 0 && t < 0 {
		q--
	}
	return q * n
}

// grid is a fleet's columns over the seconds [first, end): at least minSPC
// seconds a column, more if the window needs it. Columns of half a minute
// or more are widened to whole minutes, aligned in unix time (start a
// multiple of the column width), so that the minute rows serve them (a
// 9-hour window: 540 columns of a minute read about 30 times fewer rows
// than 982 columns of 33 s); narrower ones start at first.
func (f *fleet) grid(minSPC int64) (start, spc int64, columns int) {
	spc = max(fleetscope.SecondsPerColumn(f.end-f.first), minSPC, 1)
	start = f.first
	if spc >= minuteColumnsFrom {
		spc = (spc + 59) / 60 * 60
		start = floorTo(f.first, spc)
	}
	return start, spc, int((f.end - start + spc - 1) / spc)
}

// Served says which stored rows an answer read: seconds, and minutes;
// stack buckets read (Buckets) and counted from the seconds because none
// was stored for the profiles selected (BucketsCounted; fleet_buckets.go).
type Served struct {
	Seconds, Minutes        int
	Buckets, BucketsCounted int
}

// storedRows reads the stored rows of the fleet's app for the unix seconds
// [from, to): with cells, of event only (base name; "" every event), else
// every event's totals. With minutes, the minutes wholly inside both
// [from, to) and [wholeFrom, wholeTo) come from the minute rows (each row's
// Second its minute's first), the rest from the second rows.
func (s *Service) storedRows(ctx context.Context, tenant int64, f *fleet, event string, from, to, wholeFrom, wholeTo int64, minutes, withCells bool) ([]index.FleetRow, Served, error) {
	seconds := func(from, to int64) ([]index.FleetRow, error) {
		if from >= to {
			return nil, nil
		}
		if withCells {
			return s.src.FleetCells(ctx, tenant, f.sel.App, event, from, to)
		}
		return s.src.FleetTotals(ctx, tenant, f.sel.App, from, to)
	}
	m0, m1, byMinute := minuteSpan(from, to, wholeFrom, wholeTo, minutes)
	if !byMinute {
		rows, err := seconds(from, to)
		return rows, Served{Seconds: len(rows)}, err
	}
	rows, err := seconds(from, m0)
	if err != nil {
		return nil, Served{}, err
	}
	mins, err := s.src.FleetMinutes(ctx, tenant, f.sel.App, event, m0, m1, withCells)
	if err != nil {
		return nil, Served{}, err
	}
	tail, err := seconds(m1, to)
	if err != nil {
		return nil, Served{}, err
	}
	served := Served{Seconds: len(rows) + len(tail), Minutes: len(mins)}
	return append(append(rows, mins...), tail...), served, nil
}

// minuteSpan is the minutes [m0, m1) (unix seconds, multiples of 60) of
// the seconds [from, to) read from the minute rows: those wholly inside
// both it and [wholeFrom, wholeTo), when minutes allows and there are any.
func minuteSpan(from, to, wholeFrom, wholeTo int64, minutes bool) (m0, m1 int64, ok bool) {
	m0, m1 = -floorTo(-max(from, wholeFrom), 60), floorTo(min(to, wholeTo), 60)
	return m0, m1, minutes && m0 < m1
}
