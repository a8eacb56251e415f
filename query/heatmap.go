package query

import (
	"context"
	"fmt"

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
	key := heatmapKey{profileKey{tenant, info.ID}, ev, rows, r.IncludeIdle, f.key()}
	if h, ok := s.heatmaps.Get(key); ok {
		return h, nil
	}
	seconds := info.DurationNanos/1e9 + 1
	perColumn := fleetscope.SecondsPerColumn(seconds)
	h := heatmap.New(info.Events[ev].Name, info.StartSecond, perColumn, int((seconds+perColumn-1)/perColumn), rows)
	if rows == index.Rows && f.m == nil {
		secs, err := s.src.Cells(ctx, tenant, info.ID, ev)
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
	} else {
		var keep []bool
		spanSel, err := s.selector(ctx, tenant, info, f)
		if err != nil {
			return nil, err
		}
		err = s.samples(ctx, tenant, info, ev, 0, -1, func(d *fleetscope.Dict, batch []fleetscope.Sample) {
			if keep == nil {
				keep = s.keepStacks(d, f)
			}
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
	s.heatmaps.Put(key, h)
	return h, nil
}
