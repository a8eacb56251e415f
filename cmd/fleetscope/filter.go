package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/spans"
)

// filterFlags are the sample filters of heatmap, flamegraph and diff:
// --function, --exclude-function, --pid, --tid, --cpu.
type filterFlags struct{ f fleetscope.Filter }

func (ff *filterFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&ff.f.Function, "function", "", "keep samples with a frame matching this RE2 pattern (the process name included)")
	fl.StringVar(&ff.f.ExcludeFunction, "exclude-function", "", "drop samples with a frame matching this RE2 pattern")
	fl.Int32SliceVar(&ff.f.PIDs, "pid", nil, "keep samples of process `PID` (repeatable; any of)")
	fl.Int32SliceVar(&ff.f.TIDs, "tid", nil, "keep samples of thread `TID` (repeatable; any of)")
	fl.Int32SliceVar(&ff.f.CPUs, "cpu", nil, "keep samples taken on `CPU` (repeatable; any of)")
	fl.StringVar(&ff.f.InSpans, "in-spans", "", `keep samples taken inside spans passing a condition: "slower:p95", "faster:p95", "slower:2ms" (see spans)`)
	fl.StringVar(&ff.f.SpanEntry, "span-entry", "", "with --in-spans: the entry probe event (default: found by perf's F / F__return naming)")
	fl.StringVar(&ff.f.SpanReturn, "span-return", "", "with --in-spans: the return probe event")
}

// filter returns the filter, checked (a usage error when malformed).
func (ff *filterFlags) filter() (fleetscope.Filter, error) {
	if _, err := ff.f.Compile(); err != nil {
		return ff.f, usageError{err}
	}
	if ff.f.InSpans != "" {
		if _, err := spans.ParseCondition(ff.f.InSpans); err != nil {
			return ff.f, usageError{fmt.Errorf("--in-spans: %w", err)}
		}
	}
	return ff.f, nil
}
