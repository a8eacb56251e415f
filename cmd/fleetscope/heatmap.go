package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/api"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/heatmap"
)

func heatmapCmd() *cobra.Command {
	var (
		r           query.HeatmapRequest
		asJSON      bool
		inputFormat string
		fleet       fleetFlags
		filter      filterFlags
		by          string
		top         int
	)
	c := &cobra.Command{
		Use:   "heatmap [--rows N] [--include-idle] [--event E] [--function RE] [--pid N]... [--by cpu|thread|process] [--json] (FILE | --profile ID | --app APP [--host H]... [--label k=v]... --from T [--to T])",
		Short: "Print a profile's or a fleet's sub-second offset heatmap, or its samples per CPU, thread or process",
		Args:  args(0, 1),
		RunE: func(c *cobra.Command, a []string) error {
			if err := fleetscope.CheckRows(r.Rows); err != nil {
				return usageError{err}
			}
			var err error
			if r.Filter, err = filter.filter(); err != nil {
				return err
			}
			if by != "" {
				if fleet.set() {
					return usageError{fmt.Errorf("--by is for a file or --profile (a fleet's hosts: the dashboard's host strip)")}
				}
				if err := fileOrProfile(a, r.ProfileID); err != nil {
					return err
				}
				sr := query.SeriesRequest{ProfileID: r.ProfileID, Event: r.Event, IncludeIdle: r.IncludeIdle, Filter: r.Filter, By: by, Top: top}
				return heatmapSeries(c, a, inputFormat, sr, asJSON)
			}
			if fleet.set() {
				if len(a) > 0 || r.ProfileID != "" {
					return usageError{fmt.Errorf("give FILE, --profile ID or a fleet (--app ...), not several")}
				}
				return fleetHeatmap(c, &fleet, r, asJSON)
			}
			if err := fileOrProfile(a, r.ProfileID); err != nil {
				return err
			}
			var h *heatmap.Heatmap
			if r.ProfileID != "" {
				var err error
				if h, err = remoteHeatmap(c, r); err != nil {
					return err
				}
			} else {
				l, err := openLocal(a, inputFormat)
				if err != nil {
					return err
				}
				r.ProfileID = l.id
				if h, err = l.q.Heatmap(c.Context(), 0, r); err != nil {
					return err
				}
			}
			return printHeatmap(h, asJSON)
		},
	}
	f := c.Flags()
	f.IntVar(&r.Rows, "rows", fleetscope.DefaultRows, "rows per column (offset buckets within a second)")
	f.BoolVar(&r.IncludeIdle, "include-idle", false, "count the kernel's idle samples too")
	f.StringVar(&r.Event, "event", "", "event to show (default: the one with the most samples)")
	f.BoolVar(&asJSON, "json", false, `print {"startSecond","secondsPerColumn","rows","columns","maxCount","total"} as JSON`)
	f.StringVar(&inputFormat, "input-format", "", "input format, instead of detecting it by content")
	f.StringVar(&r.ProfileID, "profile", "", "a stored profile's id: ask the server (FLEETSCOPE_URL, FLEETSCOPE_API_KEY)")
	f.StringVar(&by, "by", "", `samples per column by "cpu", "thread" (pid/tid) or "process" (pid), as series`)
	f.IntVar(&top, "top", query.DefaultSeries, "with --by: the largest series to show, the rest summed as \"other\"")
	fleet.register(c)
	filter.register(c)
	setEnvironment(c, clientEnvHelp(" (read scope)")+"\n                       (for --profile and fleet queries)")
	return c
}

// heatmapSeries prints a profile's samples per CPU, thread or process and
// column: JSON {"startSecond","secondsPerColumn","series":[{"key","name",
// "total","columns"}]}, or a table of each series' total and columns.
func heatmapSeries(c *cobra.Command, a []string, inputFormat string, r query.SeriesRequest, asJSON bool) error {
	var set *query.SeriesSet
	if r.ProfileID != "" {
		cl, err := newClient()
		if err != nil {
			return err
		}
		by := map[string]fsv1.SeriesKey{query.ByCPU: fsv1.SeriesKey_SERIES_KEY_CPU, query.ByThread: fsv1.SeriesKey_SERIES_KEY_THREAD,
			query.ByProcess: fsv1.SeriesKey_SERIES_KEY_PROCESS}[r.By]
		if by == fsv1.SeriesKey_SERIES_KEY_UNSPECIFIED {
			return usageError{fmt.Errorf("--by %q: cpu, thread or process", r.By)}
		}
		res, err := cl.query.GetHeatmapSeries(c.Context(), connect.NewRequest(&fsv1.GetHeatmapSeriesRequest{ProfileId: r.ProfileID,
			Event: r.Event, IncludeIdle: r.IncludeIdle, Filter: api.FilterProto(r.Filter), By: by, Top: int32(r.Top)}))
		if err != nil {
			return remoteErr(err)
		}
		m := res.Msg
		set = &query.SeriesSet{Event: m.GetEvent(), StartSecond: m.GetStartSecond(), SecondsPerColumn: m.GetSecondsPerColumn(), Series: []query.Series{}}
		for _, sr := range m.GetSeries() {
			cols := sr.GetColumns()
			if cols == nil {
				cols = []int64{}
			}
			set.Series = append(set.Series, query.Series{Key: sr.GetKey(), Name: sr.GetName(), Total: sr.GetTotal(), Columns: cols})
		}
	} else {
		l, err := openLocal(a, inputFormat)
		if err != nil {
			return err
		}
		r.ProfileID = l.id
		if set, err = l.q.HeatmapSeries(c.Context(), 0, r); err != nil {
			return err
		}
	}
	w := bufio.NewWriter(os.Stdout)
	if asJSON {
		if err := json.NewEncoder(w).Encode(set); err != nil {
			return err
		}
		return w.Flush()
	}
	fmt.Fprintf(w, "event %s, start second %d, %d s a column; samples per %s:\n", set.Event, set.StartSecond, set.SecondsPerColumn, r.By)
	for _, sr := range set.Series {
		label := sr.Key
		if sr.Name != "" {
			label += " " + sr.Name
		}
		fmt.Fprintf(w, "%-28s %10d |", label, sr.Total)
		var peak int64
		for _, n := range sr.Columns {
			peak = max(peak, n)
		}
		for _, n := range sr.Columns {
			w.WriteByte(shades[shade(n, peak)])
		}
		fmt.Fprintln(w)
	}
	return w.Flush()
}

// fleetJSON is a fleet heatmap as printed with --json.
type fleetJSON struct {
	*heatmap.Heatmap
	Profiles int32            `json:"profiles"`
	LeftOut  map[string]int32 `json:"leftOut,omitempty"`
}

// fleetHeatmap asks the server for a fleet's heatmap.
func fleetHeatmap(c *cobra.Command, ff *fleetFlags, r query.HeatmapRequest, asJSON bool) error {
	sel, err := ff.selection(r.Event, r.IncludeIdle, r.Filter, time.Now())
	if err != nil {
		return err
	}
	cl, err := newClient()
	if err != nil {
		return err
	}
	res, err := cl.fleet.GetFleetHeatmap(c.Context(), connect.NewRequest(&fsv1.GetFleetHeatmapRequest{Selection: sel, Rows: int32(r.Rows)}))
	if err != nil {
		return remoteErr(err)
	}
	m := res.Msg
	h := &heatmap.Heatmap{Event: m.GetAccounting().GetEvent(), StartSecond: m.GetStartSecond(), SecondsPerColumn: m.GetSecondsPerColumn(),
		Rows: int(m.GetRows()), MaxCount: m.GetMaxCount(), Total: m.GetTotal(), Columns: make([][]int64, len(m.GetColumns()))}
	for i, col := range m.GetColumns() {
		h.Columns[i] = col.GetCounts()
	}
	var empty error
	if h.Total == 0 {
		empty = cl.emptyFleet(c.Context(), sel, m.GetAccounting())
	}
	w := bufio.NewWriter(os.Stdout)
	if asJSON { // valid JSON even when empty: a script reads it, and the exit status
		if err := json.NewEncoder(w).Encode(fleetJSON{Heatmap: h, Profiles: m.GetAccounting().GetProfiles(), LeftOut: m.GetAccounting().GetLeftOut()}); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		return empty
	}
	if empty != nil { // nothing to draw
		return empty
	}
	h, note := fitHeatmap(h, terminalWidth())
	renderHeatmap(w, h, note)
	fmt.Fprintf(w, "%d profiles of %s, from %s%s\n", m.GetAccounting().GetProfiles(), sel.GetApp(),
		time.Unix(h.StartSecond, 0).UTC().Format(time.RFC3339), leftOut(m.GetAccounting()))
	return w.Flush()
}

// leftOut describes the profiles an answer left out.
func leftOut(a *fsv1.Accounting) string {
	var parts []string
	for reason, n := range a.GetLeftOut() {
		parts = append(parts, fmt.Sprintf("%d left out (%s)", n, reason))
	}
	if len(parts) == 0 {
		return ""
	}
	slices.Sort(parts)
	return "; " + strings.Join(parts, "; ")
}

// remoteHeatmap fetches a stored profile's heatmap.
func remoteHeatmap(c *cobra.Command, r query.HeatmapRequest) (*heatmap.Heatmap, error) {
	cl, err := newClient()
	if err != nil {
		return nil, err
	}
	res, err := cl.query.GetHeatmap(c.Context(), connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: r.ProfileID, Event: r.Event,
		Rows: int32(r.Rows), IncludeIdle: r.IncludeIdle, Filter: api.FilterProto(r.Filter)}))
	if err != nil {
		return nil, remoteErr(err)
	}
	return heatmapFromProto(res.Msg), nil
}

func heatmapFromProto(m *fsv1.GetHeatmapResponse) *heatmap.Heatmap {
	h := &heatmap.Heatmap{Event: m.GetEvent(), StartSecond: m.GetStartSecond(), SecondsPerColumn: max(m.GetSecondsPerColumn(), 1),
		Rows: int(m.GetRows()), MaxCount: m.GetMaxCount(), Total: m.GetTotal(), Columns: make([][]int64, len(m.GetColumns()))}
	for i, col := range m.GetColumns() {
		h.Columns[i] = col.GetCounts()
	}
	return h
}

func printHeatmap(h *heatmap.Heatmap, asJSON bool) error {
	w := bufio.NewWriter(os.Stdout)
	if asJSON {
		if err := json.NewEncoder(w).Encode(h); err != nil {
			return err
		}
	} else {
		renderFitted(w, h)
	}
	return w.Flush()
}

// renderFitted draws a heatmap fitted to the terminal (fitHeatmap).
func renderFitted(w io.Writer, h *heatmap.Heatmap) {
	h, note := fitHeatmap(h, terminalWidth())
	renderHeatmap(w, h, note)
}

// shades are the terminal heatmap's characters, from empty to the most.
const shades = " .:-=+*#%@"

// levels is how many characters stand for non-zero counts.
const levels = int64(len(shades) - 1)

// shade returns the index in shades of a count: 0 for none, else one of
// levels equal steps up to maxCount.
func shade(c, maxCount int64) int {
	if c <= 0 {
		return 0
	}
	return 1 + int((c-1)*levels/max(maxCount, 1))
}

// shadeRange returns the counts that shade maps to level i (1..levels),
// lo > hi when none: the legend.
func shadeRange(i int, maxCount int64) (lo, hi int64) {
	m, l := max(maxCount, 1), int64(i)
	return ceilDiv((l-1)*m, levels) + 1, min(ceilDiv(l*m, levels), m)
}

func ceilDiv(a, b int64) int64 { return (a + b - 1) / b }

// renderHeatmap draws the heatmap for a terminal: one character per cell,
// the top row first, denser characters for higher counts, and a legend;
// note, if any, is a line after the first.
func renderHeatmap(w io.Writer, h *heatmap.Heatmap, note string) {
	fmt.Fprintf(w, "event %s, start second %d, %d columns of %d s x %d rows, %d samples, max %d per cell\n",
		h.Event, h.StartSecond, len(h.Columns), h.SecondsPerColumn, h.Rows, h.Total, h.MaxCount)
	if note != "" {
		fmt.Fprintln(w, note)
	}
	for r := h.Rows - 1; r >= 0; r-- {
		fmt.Fprintf(w, "%4dms |", r*1000/h.Rows)
		for _, col := range h.Columns {
			w.Write([]byte{shades[shade(col[r], h.MaxCount)]})
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "       +%s\n        ", strings.Repeat("-", len(h.Columns)))
	for i := 0; i < len(h.Columns); i += 10 {
		fmt.Fprintf(w, "%-10s", fmt.Sprintf("%ds", int64(i)*h.SecondsPerColumn))
	}
	fmt.Fprintln(w)
	var legend []string
	for i := 1; i <= int(levels); i++ {
		lo, hi := shadeRange(i, h.MaxCount)
		switch {
		case lo > hi:
		case lo == hi:
			legend = append(legend, fmt.Sprintf("'%c' %d", shades[i], lo))
		default:
			legend = append(legend, fmt.Sprintf("'%c' %d-%d", shades[i], lo, hi))
		}
	}
	fmt.Fprintf(w, "samples per cell: ' ' 0  %s\n", strings.Join(legend, "  "))
}
