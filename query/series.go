package query

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/fleetscope/fleetscope"
)

// Series keys: what one series of a SeriesSet stands for.
const (
	ByCPU     = "cpu"
	ByThread  = "thread"
	ByProcess = "process"
)

// Keys of series that are not one CPU, thread or process.
const (
	SeriesUnknown = "unknown" // the profiler did not record it
	SeriesOther   = "other"   // the series past the top ones, summed
)

// DefaultSeries and MaxSeries bound how many series an answer holds.
const (
	DefaultSeries = 50
	MaxSeries     = 1000
)

// SeriesRequest asks for a profile's samples per CPU, thread or process
// and heatmap column: the heatmap's thread axis.
type SeriesRequest struct {
	ProfileID   string
	Event       string
	IncludeIdle bool
	Filter      fleetscope.Filter
	By          string // ByCPU, ByThread or ByProcess
	Top         int    // 0: DefaultSeries
}

// Series is one key's samples per column.
type Series struct {
	Key     string  `json:"key"`
	Name    string  `json:"name,omitempty"` // the process name of its first sample
	Total   int64   `json:"total"`
	Columns []int64 `json:"columns"`
}

// SeriesSet is samples per (key, column), the columns of the profile's
// heatmap; for every column the series sum to the heatmap's column total
// (same event, idle rule and filter). Series come largest first (then by
// key); past the top ones the rest are summed as SeriesOther.
type SeriesSet struct {
	Event            string   `json:"event"`
	StartSecond      int64    `json:"startSecond"`
	SecondsPerColumn int64    `json:"secondsPerColumn"`
	Series           []Series `json:"series"`
}

// HeatmapSeries returns a profile's samples per CPU, thread or process and
// column, counted from its stored samples. Returns EINVALID for an
// untimed profile, an unknown key or event, or a bad filter.
func (s *Service) HeatmapSeries(ctx context.Context, tenant int64, r SeriesRequest) (*SeriesSet, error) {
	keyOf, err := seriesKey(r.By)
	if err != nil {
		return nil, err
	}
	top := r.Top
	if top == 0 {
		top = DefaultSeries
	}
	if top < 1 || top > MaxSeries {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "top %d: between 1 and %d (0: %d)", r.Top, MaxSeries, DefaultSeries)
	}
	info, ev, f, err := s.profileRequest(ctx, tenant, r.ProfileID, r.Event, r.Filter, true)
	if err != nil {
		return nil, err
	}
	seconds := info.DurationNanos/1e9 + 1
	spc := fleetscope.SecondsPerColumn(seconds)
	columns := int((seconds + spc - 1) / spc)
	byKey := map[string]*Series{}
	keep, spanSel, err := s.sampleFilter(ctx, tenant, info, f)
	if err != nil {
		return nil, err
	}
	err = s.samples(ctx, tenant, info, ev, 0, -1, func(d *fleetscope.Dict, batch []fleetscope.Sample) {
		for i := range batch {
			smp := &batch[i]
			if !r.IncludeIdle && d.Idle(smp.Stack) || !f.keepSample(keep, spanSel, smp) {
				continue
			}
			k := keyOf(smp.Thread())
			sr := byKey[k]
			if sr == nil {
				sr = &Series{Key: k, Columns: make([]int64, columns)}
				if fs := d.StackFrames(smp.Stack); len(fs) > 0 && k != SeriesUnknown && r.By != ByCPU {
					sr.Name = d.FrameAt(fs[0]).Name
				}
				byKey[k] = sr
			}
			n := weight(info, smp)
			col := (fleetscope.FloorSecond(smp.TimeNanos) - info.StartSecond) / spc
			if col < 0 || col >= int64(columns) {
				continue // outside the profile's span: cannot be (a corrupt row)
			}
			sr.Columns[col] += n
			sr.Total += n
		}
	})
	if err != nil {
		return nil, err
	}
	all := make([]Series, 0, len(byKey))
	for _, sr := range byKey {
		all = append(all, *sr)
	}
	slices.SortFunc(all, func(a, b Series) int {
		if c := cmp.Compare(b.Total, a.Total); c != 0 {
			return c
		}
		return cmp.Compare(a.Key, b.Key)
	})
	if len(all) > top {
		other := Series{Key: SeriesOther, Columns: make([]int64, columns)}
		for _, sr := range all[top:] {
			for i, c := range sr.Columns {
				other.Columns[i] += c
			}
			other.Total += sr.Total
		}
		all = append(all[:top], other)
	}
	return &SeriesSet{Event: info.Events[ev].Name, StartSecond: info.StartSecond, SecondsPerColumn: spc, Series: all}, nil
}

// seriesKey returns the function naming a sample's series.
func seriesKey(by string) (func(fleetscope.Thread) string, error) {
	id := func(v int32) string {
		if v < 0 {
			return SeriesUnknown
		}
		return strconv.Itoa(int(v))
	}
	switch by {
	case ByCPU:
		return func(t fleetscope.Thread) string { return id(t.CPU) }, nil
	case ByProcess:
		return func(t fleetscope.Thread) string { return id(t.PID) }, nil
	case ByThread:
		return func(t fleetscope.Thread) string {
			if t.PID < 0 && t.TID < 0 {
				return SeriesUnknown
			}
			return fmt.Sprintf("%s/%s", id(t.PID), id(t.TID))
		}, nil
	}
	return nil, fleetscope.Errorf(fleetscope.EINVALID, "series by %q: by cpu, thread or process", by)
}
