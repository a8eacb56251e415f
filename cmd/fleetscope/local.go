package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/perf"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/flame"
	"github.com/fleetscope/fleetscope/query/heatmap"
	"github.com/spf13/cobra"
)

// openRaw opens FILE, or standard input for "-" or no argument.
func openRaw(a []string) (io.Reader, func(), error) {
	if len(a) == 0 || a[0] == "-" {
		return os.Stdin, func() {}, nil
	}
	f, err := os.Open(a[0])
	if err != nil {
		return nil, nil, err
	}
	return f, func() { f.Close() }, nil
}

// openInput opens FILE, or standard input for "-" or no argument, with
// compression undone by content.
func openInput(a []string) (io.Reader, func(), error) {
	var f *os.File
	if len(a) == 0 || a[0] == "-" {
		f = os.Stdin
	} else {
		var err error
		if f, err = os.Open(a[0]); err != nil {
			return nil, nil, err
		}
	}
	r, err := ingest.Decompress(f)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return r, func() { f.Close() }, nil
}

func warn(p *fleetscope.Profile) {
	for _, w := range p.Warnings {
		fmt.Fprintf(os.Stderr, "fleetscope: warning: %s\n", w)
	}
}

func collapseCmd() *cobra.Command {
	var opts perf.Options
	var all bool
	var inputFormat string
	// wholeProfile folds a whole profile of a format other than perf: one
	// event (--event-filter, or the one with the most samples), idle samples
	// included, values weighted by period as stackcollapse-perf.pl weights
	// them, sorted as it sorts.
	wholeProfile := func(r io.Reader, format ingest.Format, w io.Writer) error {
		var (
			byEvent []*flame.Counts
			samples []int
		)
		p, err := format.Parse(r, func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
			for _, s := range batch {
				for int(s.Event) >= len(byEvent) {
					byEvent = append(byEvent, &flame.Counts{})
					samples = append(samples, 0)
				}
				byEvent[s.Event].AddStack(s.Stack, s.Period)
				samples[s.Event]++
			}
			return nil
		})
		if err != nil {
			return err
		}
		warn(p)
		var ev fleetscope.EventID
		if opts.EventFilter != "" {
			if ev, err = query.ResolveEvent(p.Dict, opts.EventFilter); err != nil {
				return err
			}
		} else {
			ev = query.DefaultEvent(samples)
		}
		if events := p.Dict.Events(); len(events) > 1 {
			fmt.Fprintf(os.Stderr, "fleetscope: kept only event %s (of %s; --event-filter picks another)\n", events[ev], strings.Join(events, ", "))
		}
		counts := &flame.Counts{}
		if int(ev) < len(byEvent) {
			counts = byEvent[ev]
		}
		return flame.WriteFolded(w, p.Dict, counts, flame.Annotate{Kernel: opts.Kernel, JIT: opts.JIT})
	}
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
				if err := wholeProfile(r, format, w); err != nil {
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

// loaded is a profile file parsed in one streaming pass: the profile, the
// samples per event, and whatever the caller's sink kept.
type loaded struct {
	p      *fleetscope.Profile
	counts []int // samples per event
}

// load parses FILE (or standard input), handing every batch of samples to
// sink as it is parsed; no sample text stays in memory.
func load(a []string, inputFormat string, sink func(d *fleetscope.Dict, batch []fleetscope.Sample)) (*loaded, error) {
	if inputFormat != "" {
		if _, err := ingest.Lookup(inputFormat); err != nil {
			return nil, usageError{err}
		}
	}
	r, done, err := openRaw(a)
	if err != nil {
		return nil, err
	}
	defer done()
	l := &loaded{}
	l.p, err = ingest.Parse(r, inputFormat, 0, func(p *fleetscope.Profile, batch []fleetscope.Sample) error {
		for _, s := range batch {
			for int(s.Event) >= len(l.counts) {
				l.counts = append(l.counts, 0)
			}
			l.counts[s.Event]++
		}
		sink(p.Dict, batch)
		return nil
	})
	if err != nil {
		return nil, err
	}
	warn(l.p)
	return l, nil
}

// event resolves --event, or picks the event with the most samples.
func (l *loaded) event(name string) (fleetscope.EventID, error) {
	if name == "" {
		return query.DefaultEvent(l.counts), nil
	}
	return query.ResolveEvent(l.p.Dict, name)
}

func (l *loaded) timed() error {
	if l.p.Untimed == l.p.Samples {
		return fleetscope.Errorf(fleetscope.EINVALID, "this profile has no per-sample timestamps: no heatmap or time range (a whole-profile flame graph works)")
	}
	return nil
}

// compact keeps what a range query needs of each sample, 24 bytes apiece,
// in fixed-size blocks so growing never copies.
type compact struct {
	blocks [][]record
}

type record struct {
	nanos  int64
	period uint64
	stack  fleetscope.StackID
	event  fleetscope.EventID
}

const blockLen = 1 << 16

func (c *compact) add(_ *fleetscope.Dict, batch []fleetscope.Sample) {
	for _, s := range batch {
		if n := len(c.blocks); n == 0 || len(c.blocks[n-1]) == blockLen {
			c.blocks = append(c.blocks, make([]record, 0, blockLen))
		}
		b := &c.blocks[len(c.blocks)-1]
		*b = append(*b, record{nanos: s.TimeNanos, period: s.Period, stack: s.Stack, event: s.Event})
	}
}

// each replays the kept samples in batches.
func (c *compact) each(fn func(batch []fleetscope.Sample)) {
	batch := make([]fleetscope.Sample, 0, 4096)
	for _, b := range c.blocks {
		for _, r := range b {
			batch = append(batch, fleetscope.Sample{TimeNanos: r.nanos, Period: r.period, Stack: r.stack, Event: r.event})
			if len(batch) == cap(batch) {
				fn(batch)
				batch = batch[:0]
			}
		}
	}
	fn(batch)
}

func heatmapCmd() *cobra.Command {
	var (
		rows        int
		includeIdle bool
		event       string
		asJSON      bool
		inputFormat string
		profile     string
	)
	c := &cobra.Command{
		Use:   "heatmap [--rows N] [--include-idle] [--event E] [--json] (FILE | --profile ID)",
		Short: "Print a profile's sub-second offset heatmap",
		Args:  args(0, 1),
		RunE: func(c *cobra.Command, a []string) error {
			if err := heatmap.CheckRows(rows); err != nil {
				return usageError{err}
			}
			if err := fileOrProfile(a, profile); err != nil {
				return err
			}
			if profile != "" {
				h, err := remoteHeatmap(c, profile, event, rows, includeIdle)
				if err != nil {
					return err
				}
				return printHeatmap(h, asJSON)
			}
			b, _ := heatmap.NewBuilder(rows, includeIdle)
			l, err := load(a, inputFormat, b.Add)
			if err != nil {
				return err
			}
			if err := l.timed(); err != nil {
				return err
			}
			ev, err := l.event(event)
			if err != nil {
				return err
			}
			start := query.StartSecond(l.p.MinNanos) / 1e9
			last := query.StartSecond(l.p.MaxNanos) / 1e9
			h, err := b.Heatmap(ev, l.p.Dict.Events()[ev], start, last)
			if err != nil {
				return err
			}
			return printHeatmap(h, asJSON)
		},
	}
	f := c.Flags()
	f.IntVar(&rows, "rows", heatmap.DefaultRows, "rows per column (offset buckets within a second)")
	f.BoolVar(&includeIdle, "include-idle", false, "count the kernel's idle samples too")
	f.StringVar(&event, "event", "", "event to show (default: the one with the most samples)")
	f.BoolVar(&asJSON, "json", false, `print {"startSecond","rows","columns","maxCount"} as JSON`)
	f.StringVar(&inputFormat, "input-format", "", "input format, instead of detecting it by content")
	f.StringVar(&profile, "profile", "", "a stored profile's id: ask the server (FLEETSCOPE_URL, FLEETSCOPE_API_KEY)")
	return c
}

// fileOrProfile checks that exactly one of FILE and --profile was given.
func fileOrProfile(a []string, profile string) error {
	if (len(a) == 1) == (profile != "") {
		return usageError{errors.New("give either FILE or --profile ID")}
	}
	return nil
}

func printHeatmap(h *heatmap.Heatmap, asJSON bool) error {
	w := bufio.NewWriter(os.Stdout)
	if asJSON {
		if err := json.NewEncoder(w).Encode(h); err != nil {
			return err
		}
	} else {
		renderHeatmap(w, h)
	}
	return w.Flush()
}

// renderHeatmap draws the heatmap for a terminal: one character per cell,
// the top row first, darker characters for higher counts.
func renderHeatmap(w io.Writer, h *heatmap.Heatmap) {
	const shades = " .:-=+*#%@"
	fmt.Fprintf(w, "event %s, start second %d, %d columns x %d rows, %d samples, max %d per cell\n",
		h.Event, h.StartSecond, len(h.Columns), h.Rows, h.Total, h.MaxCount)
	for r := h.Rows - 1; r >= 0; r-- {
		ms := r * 1000 / h.Rows
		fmt.Fprintf(w, "%4dms |", ms)
		for _, col := range h.Columns {
			c := col[r]
			i := 0
			if c > 0 {
				i = 1 + int((c-1)*int64(len(shades)-2)/max(h.MaxCount, 1))
			}
			w.Write([]byte{shades[i]})
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "       +%s\n        ", strings.Repeat("-", len(h.Columns)))
	for i := 0; i < len(h.Columns); i += 10 {
		label := fmt.Sprintf("%ds", i)
		fmt.Fprintf(w, "%-10s", label)
	}
	fmt.Fprintln(w)
}

func flamegraphCmd() *cobra.Command {
	var (
		start, end  string
		includeIdle bool
		event       string
		format      string
		inputFormat string
		byPeriod    bool
		ann         flame.Annotate
		profile     string
	)
	c := &cobra.Command{
		Use:   "flamegraph [--start S] [--end E] [--include-idle] [--event E] [--format folded|json] (FILE | --profile ID)",
		Short: "Print the flame graph of a time range [S, E) of a profile",
		Args:  args(0, 1),
		RunE: func(c *cobra.Command, a []string) error {
			sel := query.Selection{IncludeIdle: includeIdle, Range: fleetscope.All}
			var err error
			if start != "" {
				if sel.Range.Start, err = fleetscope.ParseSeconds(start); err != nil {
					return usageError{fmt.Errorf("--start: %w", err)}
				}
			}
			if end != "" {
				if sel.Range.End, err = fleetscope.ParseSeconds(end); err != nil {
					return usageError{fmt.Errorf("--end: %w", err)}
				}
			}
			if format != "folded" && format != "json" {
				return usageError{fmt.Errorf("unknown --format %q (folded, json)", format)}
			}
			if err := fileOrProfile(a, profile); err != nil {
				return err
			}
			if profile != "" {
				req := &fsv1.GetFlameGraphRequest{ProfileId: profile, Event: event, IncludeIdle: includeIdle,
					WeightByPeriod: byPeriod, AnnotateKernel: ann.Kernel, AnnotateJit: ann.JIT}
				if start != "" {
					req.StartNanos = &sel.Range.Start
				}
				if end != "" {
					req.EndNanos = &sel.Range.End
				}
				return remoteFlame(c, os.Stdout, req, format)
			}
			// The range is relative to the start second, known only at the
			// end of input: keep a compact copy of the samples meanwhile.
			var kept compact
			l, err := load(a, inputFormat, kept.add)
			if err != nil {
				return err
			}
			if sel.Range != fleetscope.All {
				if err := l.timed(); err != nil {
					return err
				}
				sel.StartSecond = query.StartSecond(l.p.MinNanos)
			}
			if sel.Event, err = l.event(event); err != nil {
				return err
			}
			var counts flame.Counts
			kept.each(func(batch []fleetscope.Sample) { counts.Add(l.p.Dict, &sel, batch, byPeriod) })
			if format == "json" {
				return flame.WriteJSON(os.Stdout, flame.Tree(l.p.Dict, &counts, ann))
			}
			return flame.WriteFolded(os.Stdout, l.p.Dict, &counts, ann)
		},
	}
	f := c.Flags()
	f.StringVar(&start, "start", "", "range start, seconds relative to the start second (inclusive)")
	f.StringVar(&end, "end", "", "range end, seconds relative to the start second (exclusive)")
	f.BoolVar(&includeIdle, "include-idle", false, "include the kernel's idle samples")
	f.StringVar(&event, "event", "", "event to show (default: the one with the most samples)")
	f.StringVar(&format, "format", "folded", "output format: folded or json")
	f.StringVar(&inputFormat, "input-format", "", "input format, instead of detecting it by content")
	f.BoolVar(&byPeriod, "period", false, "weight samples by their period instead of counting them")
	f.BoolVar(&ann.Kernel, "kernel", false, "annotate kernel functions with _[k]")
	f.BoolVar(&ann.JIT, "jit", false, "annotate JIT functions with _[j]")
	f.StringVar(&profile, "profile", "", "a stored profile's id: ask the server (FLEETSCOPE_URL, FLEETSCOPE_API_KEY)")
	return c
}
