package query

import (
	"context"

	"github.com/fleetscope/fleetscope"

	"github.com/fleetscope/fleetscope/store/index"
)

// Rollups. A fleet's heatmap, host strip, timeline and series read the
// cells stored in absolute time: per profile and unix second
// (fleet_seconds), and summed per profile and ten unix seconds
// (fleet_tens) and per profile and unix minute (fleet_minutes). Columns of
// 5 s or more are widened to whole tens of seconds, and columns of half a
// minute or more to whole minutes (at 1,000 columns: windows of more than
// 4,000 s, about 1.1 hours, and more than 29,000 s, about 8 hours). Then the minutes wholly inside the part
// of the window counted whole come from the minute rows, a row per
// profile-minute instead of sixty, the whole tens of seconds in the rest
// from the 10-s rows, and only the seconds at its edges from the second
// rows: the sum is the same, cell for cell.

// Columns this wide or wider are widened to whole rollup slots: to tens of
// seconds from tenColumnsFrom, to minutes from minuteColumnsFrom.
const (
	tenColumnsFrom    = 5
	minuteColumnsFrom = 30
)

// rollupWidths are the widths of the stored rollups, widest first.
var rollupWidths = []int64{index.Minutes, index.Tens}

// grid is a fleet's columns over the seconds [first, end): at least minSPC
// seconds a column, more if the window needs it. Columns of half a minute
// or more are widened to whole minutes, and columns of 5 to 29 seconds to
// whole tens of seconds, aligned in unix time (start a multiple of the
// column width), so that the rollups serve them (a 9-hour window: 540
// columns of a minute read about 30 times fewer rows than 982 columns of
// 33 s; a 6-hour window: 720 columns of 30 s read about 9 times fewer
// than 982 columns of 22 s); narrower ones start at first.
func (f *fleet) grid(minSPC int64) (start, spc int64, columns int) {
	spc = max(fleetscope.SecondsPerColumn(f.end-f.first), minSPC, 1)
	start = f.first
	var w int64
	switch {
	case spc >= minuteColumnsFrom:
		w = index.Minutes
	case spc >= tenColumnsFrom:
		w = index.Tens
	}
	if w > 0 {
		spc = (spc + w - 1) / w * w
		start = index.FloorTo(f.first, spc)
	}
	return start, spc, int((f.end - start + spc - 1) / spc)
}

// Served says which stored rows an answer read: seconds, tens of seconds
// and minutes; stack buckets read (Buckets) and counted from the seconds
// because none was stored for the profiles selected (BucketsCounted;
// fleet_buckets.go); hour and day rollups read (Hours, Days) and counted
// because none was stored at the version of the host's samples
// (RollupsCounted; fleet_long.go).
type Served struct {
	Seconds, Tens, Minutes  int
	Buckets, BucketsCounted int
	Hours, Days             int
	RollupsCounted          int
	// RawFiles are the profiles whose samples were read from their raw
	// files: past their tenant's sample tier (cold.go).
	RawFiles int
	// WholeProfiles are the profiles counted from their stack totals,
	// every sample inside the window, rather than from their rows.
	WholeProfiles int
}

// sum adds what o counts (parts of one answer).
func (s *Served) sum(o Served) {
	s.Seconds, s.Tens, s.Minutes = s.Seconds+o.Seconds, s.Tens+o.Tens, s.Minutes+o.Minutes
	s.Buckets, s.BucketsCounted = s.Buckets+o.Buckets, s.BucketsCounted+o.BucketsCounted
	s.Hours, s.Days, s.RollupsCounted = s.Hours+o.Hours, s.Days+o.Days, s.RollupsCounted+o.RollupsCounted
	s.RawFiles, s.WholeProfiles = s.RawFiles+o.RawFiles, s.WholeProfiles+o.WholeProfiles
}

// add counts n rows read of width seconds (1: the seconds).
func (s *Served) add(width int64, n int) {
	switch width {
	case index.Minutes:
		s.Minutes += n
	case index.Tens:
		s.Tens += n
	default:
		s.Seconds += n
	}
}

// span is the unix seconds [from, to) read from the rows of width seconds
// (1: the seconds; else a rollup, from and to multiples of width).
type span struct{ width, from, to int64 }

// spans cuts the seconds [from, to) into what each kind of row reads for
// columns of spc seconds: the slots of the widest rollup that divides spc
// wholly inside both [from, to) and [wholeFrom, wholeTo), if any, then the
// rest on either side the same way with the narrower ones, and the
// seconds left at the edges. Without rollups (Options.NoRollups), the
// seconds alone.
func (s *Service) spans(from, to, wholeFrom, wholeTo, spc int64) []span {
	if from >= to {
		return nil
	}
	if !s.noRollups {
		for _, w := range rollupWidths {
			if spc%w != 0 {
				continue
			}
			a, b := -index.FloorTo(-max(from, wholeFrom), w), index.FloorTo(min(to, wholeTo), w)
			if a < b {
				out := append(s.spans(from, a, wholeFrom, wholeTo, spc), span{w, a, b})
				return append(out, s.spans(b, to, wholeFrom, wholeTo, spc)...)
			}
		}
	}
	return []span{{1, from, to}}
}

// storedRows reads the stored rows of the fleet's app for the unix seconds
// [from, to) and hands them to fn: with cells, of event only (base name;
// "" every event), else every event's totals. For columns of spc seconds,
// the rollup slots wholly inside both [from, to) and [wholeFrom, wholeTo)
// come from the rollups (each row's Second its slot's first; spans), the
// rest from the second rows. fn may not keep a row's cells.
func (s *Service) storedRows(ctx context.Context, tenant int64, f *fleet, event string, from, to, wholeFrom, wholeTo, spc int64, withCells bool, fn func(*index.FleetRow) error) (Served, error) {
	var served Served
	for _, sp := range s.spans(from, to, wholeFrom, wholeTo, spc) {
		n := 0
		err := s.src.FleetRows(ctx, tenant, f.sel.App, event, sp.width, sp.from, sp.to, withCells, func(r *index.FleetRow) error {
			if n++; n%rowsPerCheck == 0 && ctx.Err() != nil {
				return ctx.Err()
			}
			return fn(r)
		})
		if err != nil {
			return Served{}, err
		}
		served.add(sp.width, n)
	}
	return served, nil
}

// rowsPerCheck is how many stored rows storedRows hands on between two
// looks at its context.
const rowsPerCheck = 1024

// storedTotals collects storedRows' totals (no cells): what the host
// strip, the timeline and the series of a listed selection sum.
func (s *Service) storedTotals(ctx context.Context, tenant int64, f *fleet, event string, from, to, wholeFrom, wholeTo, spc int64) ([]index.FleetRow, Served, error) {
	var out []index.FleetRow
	served, err := s.storedRows(ctx, tenant, f, event, from, to, wholeFrom, wholeTo, spc, false, func(r *index.FleetRow) error {
		out = append(out, *r)
		return nil
	})
	return out, served, err
}
