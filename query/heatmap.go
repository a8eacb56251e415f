package query

import (
	"context"
	"fmt"
	"slices"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/heatmap"
	"github.com/fleetscope/fleetscope/store/index"
)

// HeatmapRequest asks for one profile's heatmap.
type HeatmapRequest struct {
	ProfileID   string
	Event       string // "": the profile's default event
	Rows        int    // 0: fleetscope.DefaultRows
	IncludeIdle bool
	Filter      fleetscope.Filter
}

// Heatmap returns a profile's sub-second offset heatmap: at the stored row
// count it sums the stored cells; at any other it counts the stored
// samples. A profile spanning more than fleetscope.MaxColumns seconds gets
// several seconds per column. The answer is shared: do not modify it.
// Returns EINVALID for a profile without per-sample times, a bad row count
// or an unknown event.
func (s *Service) Heatmap(ctx context.Context, tenant int64, r HeatmapRequest) (*heatmap.Heatmap, error) {
	rows := r.Rows
	if rows == 0 {
		rows = fleetscope.DefaultRows
	}
	if err := fleetscope.CheckRows(rows); err != nil {
		return nil, err
	}
	info, ev, f, err := s.profileRequest(ctx, tenant, r.ProfileID, r.Event, r.Filter, true)
	if err != nil {
		return nil, err
	}
	s.warmFlame(tenant, info)
	return s.heatmaps.Load(ctx, heatmapKey{profileKey{tenant, info.ID}, ev, rows, r.IncludeIdle, f.key()}, func() (*heatmap.Heatmap, error) {
		return s.countHeatmap(ctx, tenant, r, info, ev, rows, f)
	})
}

// countHeatmap counts the heatmap r asks for, of event ev of info in rows
// rows, with the compiled filter f.
func (s *Service) countHeatmap(ctx context.Context, tenant int64, r HeatmapRequest, info *fleetscope.ProfileInfo, ev, rows int, f filter) (*heatmap.Heatmap, error) {
	seconds := info.DurationNanos/1e9 + 1
	perColumn := fleetscope.SecondsPerColumn(seconds)
	h := heatmap.New(info.Events[ev].Name, info.StartSecond, perColumn, int((seconds+perColumn-1)/perColumn), rows)
	if rows == index.Rows && f.m == nil {
		secs, err := s.storedCells(ctx, tenant, info, ev)
		if err != nil {
			return nil, err
		}
		for i := range secs {
			sec := &secs[i]
			if sec.Second < 0 || sec.Second >= seconds {
				return nil, fmt.Errorf("profile %s: stored second %d outside its span", info.ID, sec.Second)
			}
			h.AddCells(info.StartSecond+sec.Second, sec.Cells)
			if r.IncludeIdle {
				h.AddCells(info.StartSecond+sec.Second, sec.IdleCells)
			}
		}
	} else if f.spans == nil {
		if err := s.countCells(ctx, tenant, info, ev, r.IncludeIdle, f, h); err != nil {
			return nil, err
		}
	} else { // which samples count depends on their times and threads: decode them
		keep, spanSel, err := s.sampleFilter(ctx, tenant, info, f)
		if err != nil {
			return nil, err
		}
		err = s.samples(ctx, tenant, info, ev, 0, -1, func(d *fleetscope.Dict, batch []fleetscope.Sample) {
			for i := range batch {
				if (r.IncludeIdle || !d.Idle(batch[i].Stack)) && f.keepSample(keep, spanSel, &batch[i]) {
					h.AddN(batch[i].TimeNanos, weight(info, &batch[i]))
				}
			}
		})
		if err != nil {
			return nil, err
		}
	}
	h.Finish()
	return h, nil
}

// countCells counts an event's stored samples that idle and the filter
// (by function and thread, no spans) keep into h: at the stored row count
// from the profile's cached stackCells, else (or for a profile too large
// to cache them) from the stored rows without decoding samples.
func (s *Service) countCells(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, ev int, idle bool, f filter, h *heatmap.Heatmap) error {
	d, err := s.dict(ctx, tenant, info)
	if err != nil {
		return err
	}
	threads, err := s.keepThreads(ctx, tenant, info.ID, f)
	if err != nil {
		return err
	}
	keep, err := s.keepStacks(ctx, d, f)
	if err != nil {
		return err
	}
	if h.Rows == index.Rows {
		sc, err := s.stackCells(ctx, tenant, info, ev, d)
		if err != nil {
			return err
		}
		if sc != nil {
			if err := sc.count(h, d, info.StartSecond, keep, threads, idle); err != nil {
				return fleetscope.Wrap(err, fleetscope.EINTERNAL, "profile "+info.ID)
			}
			return nil
		}
	}
	if !idle {
		if keep == nil {
			keep = make([]bool, d.NumStacks())
			for i := range keep {
				keep[i] = true
			}
		} else {
			keep = slices.Clone(keep) // the cached answer stays as it is
		}
		for i := range keep {
			keep[i] = keep[i] && !d.Idle(fleetscope.StackID(i))
		}
	}
	secs, err := s.storedSeconds(ctx, tenant, info, ev, 0, -1)
	if err != nil {
		return err
	}
	c := index.Counter{UnitNanos: info.TimeUnitNanos, Timed: true, Period: info.Events[ev].Period,
		ByPeriod: info.Events[ev].Weighted, Threads: threads}
	for i := range secs {
		if i%secondsPerCheck == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		col := h.Column(info.StartSecond + secs[i].Second)
		if col == nil {
			return fmt.Errorf("profile %s: stored second %d outside its span", info.ID, secs[i].Second)
		}
		if err := c.Cells(&secs[i], h.Rows, keep, col); err != nil {
			return fleetscope.Wrap(err, fleetscope.EINTERNAL, "profile "+info.ID+": corrupt index row")
		}
	}
	return nil
}
