package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/perf"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/flame"
	"github.com/spf13/cobra"
)

func collapseCmd() *cobra.Command {
	var opts perf.Options
	var all bool
	var inputFormat string
	c := &cobra.Command{
		Use:   "collapse [--pid] [--tid] [--kernel] [--jit] [--all] [--addrs] [--input-format NAME] [FILE|-]",
		Short: "Fold a profile into stacks: perf script output byte for byte as stackcollapse-perf.pl, other formats whole",
		Args:  args(0, 1),
		RunE: func(c *cobra.Command, a []string) error {
			if all {
				opts.Kernel, opts.JIT = true, true
			}
			var format ingest.Format
			if inputFormat != "" {
				var err error
				if format, err = ingest.Lookup(inputFormat); err != nil {
					return usageError{err}
				}
			}
			r, done, err := openInput(a)
			if err != nil {
				return err
			}
			defer done()
			if format.Name == "" {
				// Detect by content; what no format claims goes to the perf
				// path, which folds what it can as stackcollapse-perf.pl does.
				br := bufio.NewReaderSize(r, ingest.HeadSize)
				head, _ := br.Peek(ingest.HeadSize)
				if ingest.IsPerfData(head) {
					return ingest.ErrPerfData
				}
				if f, err := ingest.Detect(head); err == nil {
					format = f
				}
				r = br
			}
			w := bufio.NewWriterSize(os.Stdout, 1<<20)
			if format.Name != "" && format.Name != "perf" {
				if opts.PID || opts.TID || opts.Addrs {
					return usageError{fmt.Errorf("--pid, --tid and --addrs apply to perf script input; this is %s", format.Name)}
				}
				name := inputFormat
				if name == "" {
					name = format.Name
				}
				if err := wholeProfile(c, r, name, opts, w); err != nil {
					return err
				}
				return w.Flush()
			}
			st, err := perf.Collapse(r, w, opts)
			if err != nil {
				return err
			}
			if st.Filtered {
				fmt.Fprintf(os.Stderr, "fleetscope: kept only events of type %s (as stackcollapse-perf.pl does)\n", st.Event)
			}
			if st.Unrecognized > 0 {
				fmt.Fprintf(os.Stderr, "fleetscope: warning: %d unrecognized lines, the first at line %d\n", st.Unrecognized, st.FirstBadLine)
			}
			return w.Flush()
		},
	}
	f := c.Flags()
	f.BoolVar(&opts.PID, "pid", false, "include the PID with process names")
	f.BoolVar(&opts.TID, "tid", false, "include the PID and TID with process names")
	f.BoolVar(&opts.Kernel, "kernel", false, "annotate kernel functions with _[k]")
	f.BoolVar(&opts.JIT, "jit", false, "annotate JIT functions with _[j]")
	f.BoolVar(&all, "all", false, "all annotations (--kernel --jit)")
	f.BoolVar(&opts.Addrs, "addrs", false, "include raw addresses where symbols cannot be found")
	f.StringVar(&opts.EventFilter, "event-filter", "", "keep only this event (default: the first event seen; other formats: the one with the most samples)")
	f.StringVar(&inputFormat, "input-format", "", "input format, instead of detecting it by content (see docs/formats.md)")
	return c
}

// wholeProfile folds a whole profile of a format other than perf: one event
// (--event-filter, or the one with the most samples), idle samples
// included, values weighted by period as stackcollapse-perf.pl weights
// them, sorted as it sorts.
func wholeProfile(c *cobra.Command, r io.Reader, inputFormat string, opts perf.Options, w io.Writer) error {
	l, err := newLocal(r, inputFormat)
	if err != nil {
		return err
	}
	g, err := l.q.FlameGraph(c.Context(), 0, query.FlameRequest{ProfileID: l.id, Event: opts.EventFilter, IncludeIdle: true, ByPeriod: true,
		Annotate: flame.Annotate{Kernel: opts.Kernel, JIT: opts.JIT}})
	if err != nil {
		return err
	}
	if events := g.Dict.Events(); len(events) > 1 {
		fmt.Fprintf(os.Stderr, "fleetscope: kept only event %s (of %s; --event-filter picks another)\n", g.Event, strings.Join(events, ", "))
	}
	return g.WriteFolded(w)
}
