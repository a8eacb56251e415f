package main

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/export"
)

// flameFormats are flamegraph's --format values.
var flameFormats = []string{"folded", "json", "svg", "pprof", "speedscope"}

// exportOpts name and title an exported flame graph.
type exportOpts struct {
	subtitle        string
	valueType, unit string // what values count: "samples"/"count", or the event's period
}

// exportOptions describes a flame graph of request r over event for the
// export formats; where names the selection (a range, a fleet's window).
// A file and the stored profile made from it export the same bytes.
func exportOptions(r query.FlameRequest, event, where string) exportOpts {
	o := exportOpts{subtitle: strings.TrimSpace(event + " " + where), valueType: "samples", unit: "count"}
	if r.ByPeriod {
		o.valueType, o.unit = fleetscope.EventBase(event), "count"
		if b := o.valueType; b == "cpu-clock" || b == "task-clock" {
			o.unit = "nanoseconds"
		}
	}
	if !r.Filter.IsZero() {
		o.subtitle += ", filter " + r.Filter.Key()
	}
	return o
}

// rangeTitle names a range.
func rangeTitle(rg *fleetscope.Range) string {
	if rg == nil {
		return ""
	}
	bound := func(ns int64, open string) string {
		if ns == fleetscope.All.Start || ns == fleetscope.All.End {
			return open
		}
		return fleetscope.FormatSeconds(ns)
	}
	return fmt.Sprintf("[%s, %s)", bound(rg.Start, "start"), bound(rg.End, "end"))
}

// parseFolded reads folded text ("frame;frame;... count" lines) as stacks.
func parseFolded(folded []byte) ([]export.Stack, error) {
	var stacks []export.Stack
	for line := range bytes.Lines(folded) {
		line = bytes.TrimRight(line, "\n")
		if len(line) == 0 {
			continue
		}
		i := bytes.LastIndexByte(line, ' ')
		if i <= 0 {
			return nil, fmt.Errorf("folded line %q: no count", line)
		}
		v, err := strconv.ParseUint(string(line[i+1:]), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("folded line %q: %w", line, err)
		}
		stacks = append(stacks, export.Stack{Frames: strings.Split(string(line[:i]), ";"), Value: v})
	}
	return stacks, nil
}

// writeExport writes folded stacks as svg, pprof or speedscope.
func writeExport(w io.Writer, folded []byte, format string, o exportOpts) error {
	stacks, err := parseFolded(folded)
	if err != nil {
		return err
	}
	switch format {
	case "svg":
		return export.WriteSVG(w, stacks, export.SVGOptions{Subtitle: o.subtitle})
	case "pprof":
		return export.WritePprof(w, stacks, export.PprofOptions{SampleType: o.valueType, SampleUnit: o.unit})
	case "speedscope":
		unit := "none"
		if o.unit == "nanoseconds" {
			unit = o.unit
		}
		return export.WriteSpeedscope(w, stacks, export.SpeedscopeOptions{Name: o.subtitle, Unit: unit})
	}
	return usageError{fmt.Errorf("unknown format %q", format)}
}
