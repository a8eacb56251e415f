package query

import (
	"cmp"
	"context"
	"math"
	"slices"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/heatmap"
	"github.com/fleetscope/fleetscope/store/index"
)

// FleetHeatmap is a fleet's heatmap and what it counts.
type FleetHeatmap struct {
	*heatmap.Heatmap
	Accounting
}

// FleetHeatmap returns the sub-second offset heatmap of a fleet selection
// in absolute time: column i covers the SecondsPerColumn unix seconds from
// StartSecond + i·SecondsPerColumn, over the whole seconds the window
// touches; row r counts the samples whose offset within their second lies
// in [r/rows, (r+1)/rows), summed over every timed profile of the
// selection. It sums the cells stored at ingest when rows divides 50, and
// decodes the samples otherwise.
func (s *Service) FleetHeatmap(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, rows int, minSPC int64) (*FleetHeatmap, error) {
	if rows == 0 {
		rows = fleetscope.DefaultRows
	}
	if err := fleetscope.CheckRows(rows); err != nil {
		return nil, err
	}
	stored := index.Rows%rows == 0 && sel.Filter.IsZero() // the stored cells add up to the answer
	var f *fleet
	var err error
	if ct, ok := s.src.(ColumnTotals); ok && stored && len(sel.Labels) == 0 {
		f, err = s.countProfiles(ctx, tenant, sel, ct)
	} else {
		f, err = s.selectProfiles(ctx, tenant, sel)
	}
	if err != nil {
		return nil, err
	}
	start, spc, columns := f.grid(minSPC)
	if f.event == "" {
		if e, ok := f.onlyEvent(); ok {
			f.event = e // its rows alone are read
		} else if err := s.chooseEvent(ctx, tenant, f, spc, f.first, f.end, false); err != nil {
			return nil, err
		}
	}
	h := heatmap.New(f.event, start, spc, columns, rows)
	if stored {
		// The event's cells, summed into the columns a row at a time:
		// memory is the answer's, however many rows the window holds.
		keep := f.rowFilter()
		per := index.Rows / rows
		buf := make([]int32, rows)
		if f.served, err = s.storedRows(ctx, tenant, f, f.event, f.first, f.end, f.first, f.end, spc, true, func(c *index.FleetRow) error {
			if !keep(c) || c.Event != f.event {
				return nil
			}
			clear(buf)
			for r := range index.Rows {
				buf[r/per] += c.Cells[r]
				if sel.IncludeIdle {
					buf[r/per] += c.IdleCells[r]
				}
			}
			h.AddCells(c.Second, buf)
			return nil
		}); err != nil {
			return nil, err
		}
	} else {
		err := s.fleetSamples(ctx, tenant, f, f.first*1e9, f.end*1e9, true, func(p *fleetscope.ProfileInfo, d *fleetscope.Dict, _ []int64, batch []fleetscope.Sample, keep func(*fleetscope.Sample) bool) {
			for i := range batch {
				if smp := &batch[i]; keep(smp) && p.Timed && (sel.IncludeIdle || !d.Idle(smp.Stack)) {
					h.AddN(smp.TimeNanos+p.WallShiftNanos, weight(p, smp))
				}
			}
		})
		if err != nil {
			return nil, err
		}
	}
	h.Finish()
	return &FleetHeatmap{Heatmap: h, Accounting: f.accounting(false)}, nil
}

// HostSeries is one host's samples per column.
type HostSeries struct {
	Host    string
	Total   int64
	Columns []int64
}

// FleetHosts is the host strip: samples per (host, column), hosts by total
// (largest first, then by name).
type FleetHosts struct {
	StartSecond      int64
	SecondsPerColumn int64
	Hosts            []HostSeries
	Accounting
}

// FleetTimeline is samples per column, for windows of hours to days.
type FleetTimeline struct {
	StartSecond      int64
	SecondsPerColumn int64
	Totals           []int64
	Accounting
}

// FleetHosts returns the selection's samples per host and column (the same
// columns as its heatmap), from the stored totals.
func (s *Service) FleetHosts(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, minSPC int64) (*FleetHosts, error) {
	f, start, spc, columns, totals, err := s.fleetColumns(ctx, tenant, sel, minSPC)
	if err != nil {
		return nil, err
	}
	byHost := map[string]*HostSeries{}
	for _, c := range totals {
		hs := byHost[c.Host]
		if hs == nil {
			hs = &HostSeries{Host: c.Host, Columns: make([]int64, columns)}
			byHost[c.Host] = hs
		}
		n := c.Samples
		if sel.IncludeIdle {
			n += c.Idle
		}
		hs.Columns[c.Column] += n
		hs.Total += n
	}
	out := &FleetHosts{StartSecond: start, SecondsPerColumn: spc, Accounting: f.accounting(false)}
	for _, hs := range byHost {
		out.Hosts = append(out.Hosts, *hs)
	}
	slices.SortFunc(out.Hosts, func(a, b HostSeries) int {
		if c := cmp.Compare(b.Total, a.Total); c != 0 {
			return c
		}
		return cmp.Compare(a.Host, b.Host)
	})
	return out, nil
}

// FleetTimeline returns the selection's samples per column (the heatmap's
// columns), from the stored totals.
func (s *Service) FleetTimeline(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, minSPC int64) (*FleetTimeline, error) {
	f, start, spc, columns, totals, err := s.fleetColumns(ctx, tenant, sel, minSPC)
	if err != nil {
		return nil, err
	}
	out := &FleetTimeline{StartSecond: start, SecondsPerColumn: spc, Totals: make([]int64, columns), Accounting: f.accounting(false)}
	for _, c := range totals {
		n := c.Samples
		if sel.IncludeIdle {
			n += c.Idle
		}
		out.Totals[c.Column] += n
	}
	return out, nil
}

// ColumnTotals sums stored totals and counts profiles in the store
// itself. A Source that can serves host strips, timelines and heatmaps
// from it when every stored row of the window belongs to the selection (no
// label conditions, no function or thread filter): the profiles are
// counted rather than listed, and the strip's and timeline's rows, summed
// by host and column, never leave the database one by one.
type ColumnTotals interface {
	// FleetCounts counts the tenant's profiles of app on any of hosts
	// (none: all) overlapping the window [from, to) (unix ns), as
	// FleetProfiles selects them.
	FleetCounts(ctx context.Context, tenant int64, app string, hosts []string, from, to int64) (fleetscope.FleetCounts, error)
	// FleetColumnTotals returns the stored totals of app's event (base
	// name) on any of hosts (none: all) summed by host and column of spc
	// seconds from start: of the unix seconds [from, to) (width 1), or of
	// the slots of width seconds starting in [from, to) (a rollup:
	// index.Tens, index.Minutes); and how many stored rows the sums hold.
	FleetColumnTotals(ctx context.Context, tenant int64, app, event string, hosts []string, width, from, to, start, spc int64) ([]index.ColumnTotal, int, error)
}

// fleetColumns resolves a selection, lays out its columns and sums its
// event's stored totals by host and column: in the store where it can
// (ColumnTotals), else from the rows of fleetTotals.
func (s *Service) fleetColumns(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, minSPC int64) (f *fleet, start, spc int64, columns int, totals []index.ColumnTotal, err error) {
	ct, ok := s.src.(ColumnTotals)
	if !ok || len(sel.Labels) > 0 || !sel.Filter.IsZero() {
		f, start, spc, columns, rows, err := s.fleetTotals(ctx, tenant, sel, minSPC, false)
		if err != nil {
			return nil, 0, 0, 0, nil, err
		}
		totals = make([]index.ColumnTotal, len(rows))
		for i, r := range rows {
			totals[i] = index.ColumnTotal{Host: r.Host, Column: (r.Second - start) / spc, Samples: int64(r.Samples), Idle: int64(r.Idle)}
		}
		return f, start, spc, columns, totals, nil
	}
	if f, err = s.countProfiles(ctx, tenant, sel, ct); err != nil {
		return nil, 0, 0, 0, nil, err
	}
	start, spc, columns = f.grid(minSPC)
	if f.event == "" {
		if err := s.chooseEvent(ctx, tenant, f, spc, f.first, f.end, false); err != nil {
			return nil, 0, 0, 0, nil, err
		}
	}
	if f.event == "" || f.numTimed() == 0 {
		return f, start, spc, columns, nil, nil
	}
	var served Served
	for _, sp := range s.spans(f.first, f.end, f.first, f.end, spc) {
		t, n, err := ct.FleetColumnTotals(ctx, tenant, sel.App, f.event, sel.Hosts, sp.width, sp.from, sp.to, start, spc)
		if err != nil {
			return nil, 0, 0, 0, nil, err
		}
		totals = append(totals, t...)
		served.add(sp.width, n)
	}
	f.served = served
	return f, start, spc, columns, totals, nil
}

// fleetTotals resolves a selection, lays out its columns and reads its
// event's stored totals: by the minute and by ten seconds where the
// columns are whole minutes or tens of seconds (storedRows), except, with
// exactEdges, a slot holding the window's partial first or last second
// (the caller counts those from the samples).
func (s *Service) fleetTotals(ctx context.Context, tenant int64, sel fleetscope.FleetSelection, minSPC int64, exactEdges bool) (f *fleet, start, spc int64, columns int, rows []index.FleetRow, err error) {
	if f, err = s.selectProfiles(ctx, tenant, sel); err != nil {
		return nil, 0, 0, 0, nil, err
	}
	start, spc, columns = f.grid(minSPC)
	wholeFrom, wholeTo := f.first, f.end
	if exactEdges {
		wholeFrom, wholeTo = -fleetscope.FloorSecond(-sel.From), fleetscope.FloorSecond(sel.To)
	}
	if f.filter.m != nil {
		if f.event == "" {
			if err := s.chooseEvent(ctx, tenant, f, spc, wholeFrom, wholeTo, false); err != nil {
				return nil, 0, 0, 0, nil, err
			}
		}
		rows, err := s.filteredTotals(ctx, tenant, f)
		return f, start, spc, columns, rows, err
	}
	if f.event == "" {
		if err := s.chooseEvent(ctx, tenant, f, spc, wholeFrom, wholeTo, true); err != nil {
			return nil, 0, 0, 0, nil, err
		}
	}
	all := f.totals
	if all == nil && f.event != "" {
		if all, f.served, err = s.storedTotals(ctx, tenant, f, f.event, f.first, f.end, wholeFrom, wholeTo, spc); err != nil {
			return nil, 0, 0, 0, nil, err
		}
	}
	ids := f.ids()
	rows = all[:0]
	for _, r := range all {
		if ids[r.ProfileID] && r.Event == f.event {
			rows = append(rows, r)
		}
	}
	return f, start, spc, columns, rows, nil
}

// filteredTotals counts, from the stored samples, what a filtered
// selection has per profile and unix second (the stored totals count
// every sample).
func (s *Service) filteredTotals(ctx context.Context, tenant int64, f *fleet) ([]index.FleetRow, error) {
	type key struct {
		id     string
		second int64
	}
	rows := map[key]*index.FleetRow{}
	err := s.fleetSamples(ctx, tenant, f, f.first*1e9, f.end*1e9, true, func(p *fleetscope.ProfileInfo, d *fleetscope.Dict, _ []int64, batch []fleetscope.Sample, keep func(*fleetscope.Sample) bool) {
		for i := range batch {
			smp := &batch[i]
			if !p.Timed || !keep(smp) {
				continue
			}
			sec := fleetscope.FloorSecond(smp.TimeNanos + p.WallShiftNanos)
			r := rows[key{p.ID, sec}]
			if r == nil {
				r = &index.FleetRow{ProfileID: p.ID, Host: p.Host, WallSecond: index.WallSecond{Event: f.event, Second: sec}}
				rows[key{p.ID, sec}] = r
			}
			n := int32(min(weight(p, smp), math.MaxInt32))
			if d.Idle(smp.Stack) {
				r.Idle += n
			} else {
				r.Samples += n
			}
		}
	})
	if err != nil {
		return nil, err
	}
	out := make([]index.FleetRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	return out, nil
}
