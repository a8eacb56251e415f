package main

import (
	"bufio"
	"errors"
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
	"github.com/fleetscope/fleetscope/query/flame"
)

func flamegraphCmd() *cobra.Command {
	var (
		r           query.FlameRequest
		start, end  string
		format      string
		inputFormat string
		fleet       fleetFlags
		filter      filterFlags
	)
	c := &cobra.Command{
		Use:   "flamegraph [--start S] [--end E] [--outside] [--include-idle] [--event E] [--function RE] [--pid N]... [--format folded|json|svg|pprof|speedscope] (FILE | --profile ID | --app APP [--host H]... [--label k=v]... --from T [--to T])",
		Short: "Print the flame graph of a time range [S, E) of a profile, or of a fleet's window [from, to)",
		Args:  args(0, 1),
		RunE: func(c *cobra.Command, a []string) error {
			if !slices.Contains(flameFormats, format) {
				return usageError{fmt.Errorf("unknown --format %q (%s)", format, strings.Join(flameFormats, ", "))}
			}
			var err error
			if r.Filter, err = filter.filter(); err != nil {
				return err
			}
			if fleet.set() {
				if len(a) > 0 || r.ProfileID != "" || start != "" || end != "" {
					return usageError{fmt.Errorf("a fleet flame graph takes --from and --to (wall clock), not FILE, --profile, --start or --end")}
				}
				return fleetFlame(c, &fleet, r, format)
			}
			rg, err := parseRange(start, end)
			if err != nil {
				return err
			}
			r.Range = rg
			if r.Outside && rg == nil {
				return usageError{errors.New("--outside leaves out a range: give its --start and --end")}
			}
			if err := fileOrProfile(a, r.ProfileID); err != nil {
				return err
			}
			w, flush := flameOut(format)
			if r.ProfileID != "" {
				err = remoteFlame(c, w, r, format)
			} else {
				err = localFlame(c, w, a, inputFormat, r, format)
			}
			if err != nil {
				return err
			}
			return flush()
		},
	}
	f := c.Flags()
	f.StringVar(&start, "start", "", "range start, seconds relative to the start second (inclusive)")
	f.StringVar(&end, "end", "", "range end, seconds relative to the start second (exclusive)")
	f.BoolVar(&r.Outside, "outside", false, "the samples outside [--start, --end) instead: the rest of the profile")
	f.BoolVar(&r.IncludeIdle, "include-idle", false, "include the kernel's idle samples")
	f.StringVar(&r.Event, "event", "", "event to show (default: the one with the most samples)")
	f.StringVar(&format, "format", "folded", "output format: "+strings.Join(flameFormats, ", "))
	f.StringVar(&inputFormat, "input-format", "", "input format, instead of detecting it by content")
	f.BoolVar(&r.ByPeriod, "period", false, "weight samples by their period instead of counting them")
	f.BoolVar(&r.Annotate.Kernel, "kernel", false, "annotate kernel functions with _[k]")
	f.BoolVar(&r.Annotate.JIT, "jit", false, "annotate JIT functions with _[j]")
	f.StringVar(&r.ProfileID, "profile", "", "a stored profile's id: ask the server (FLEETSCOPE_URL, FLEETSCOPE_API_KEY)")
	fleet.register(c)
	filter.register(c)
	setEnvironment(c, clientEnvHelp(" (read scope)")+"\n                       (for --profile and fleet queries)")
	return c
}

// fleetFlame asks the server for a fleet's merged flame graph.
func fleetFlame(c *cobra.Command, ff *fleetFlags, r query.FlameRequest, format string) error {
	sel, err := ff.selection(r.Event, r.IncludeIdle, r.Filter, time.Now())
	if err != nil {
		return err
	}
	cl, err := newClient()
	if err != nil {
		return err
	}
	req := &fsv1.GetFleetFlameGraphRequest{Selection: sel, WeightByPeriod: r.ByPeriod, AnnotateKernel: r.Annotate.Kernel,
		AnnotateJit: r.Annotate.JIT, Format: formatProto(format)}
	res, err := cl.fleet.GetFleetFlameGraph(c.Context(), connect.NewRequest(req))
	if err != nil {
		return remoteErr(err)
	}
	w, flush := flameOut(format)
	if err := writeFlame(w, res.Msg.GetFlameGraph(), format); err != nil {
		return err
	}
	if err := flush(); err != nil {
		return err
	}
	if res.Msg.GetFlameGraph().GetTotal() == 0 { // written all the same: an empty document is still one
		return cl.emptyFleet(c.Context(), sel, res.Msg.GetAccounting())
	}
	return nil
}

// flameOut is standard output for a flame graph in format, and what
// finishes it: buffered but for folded lines, which come in large writes
// of their own (copying them through a buffer cost 3 of the whole
// benchmark flame graph's 20 ms).
func flameOut(format string) (io.Writer, func() error) {
	if format == "folded" {
		return os.Stdout, func() error { return nil }
	}
	bw := bufio.NewWriterSize(os.Stdout, 1<<20)
	return bw, bw.Flush
}

// writeFlame writes a flame graph the server sent as the local command
// would.
func writeFlame(w io.Writer, m *fsv1.GetFlameGraphResponse, format string) error {
	switch format {
	case "json":
		t := m.GetTree()
		flat := &flame.Flat{Names: t.GetNames(), Name: t.GetName(), Value: t.GetValue(), Depth: t.GetDepth()}
		if err := flat.Check(); err != nil {
			return fmt.Errorf("server sent a malformed flame graph: %w", err)
		}
		return flame.WriteJSON(w, flat.Tree())
	case "folded":
		l := m.GetLines()
		if l == nil {
			return errNoLines
		}
		if err := api.Lines(l).WriteFolded(w); err != nil {
			if errors.Is(err, flame.ErrMalformed) {
				return fmt.Errorf("the server sent malformed folded lines: %w", err)
			}
			return err
		}
		return nil
	}
	_, err := w.Write(m.GetExport())
	return err
}

// errNoLines is the error of a folded answer without folded lines.
var errNoLines = errors.New("the server sent no folded lines: a server older than this command? (--format json works with it)")

// parseRange reads --start and --end (exact decimal seconds); nil when
// neither is given.
func parseRange(start, end string) (*fleetscope.Range, error) {
	if start == "" && end == "" {
		return nil, nil
	}
	rg := fleetscope.All
	var err error
	if start != "" {
		if rg.Start, err = fleetscope.ParseSeconds(start); err != nil {
			return nil, usageError{fmt.Errorf("--start: %w", err)}
		}
	}
	if end != "" {
		if rg.End, err = fleetscope.ParseSeconds(end); err != nil {
			return nil, usageError{fmt.Errorf("--end: %w", err)}
		}
	}
	return &rg, nil
}

// localFlame answers for a local file.
func localFlame(c *cobra.Command, w io.Writer, a []string, inputFormat string, r query.FlameRequest, format string) error {
	l, err := openLocal(a, inputFormat)
	if err != nil {
		return err
	}
	r.ProfileID = l.id
	g, err := l.q.FlameGraph(c.Context(), 0, r)
	if err != nil {
		return err
	}
	switch format {
	case "json":
		return flame.WriteJSON(w, g.Flat().Tree())
	case "folded":
		return g.WriteFolded(w)
	}
	return g.Export(w, format, query.RangeTitle(r.Range), r.ByPeriod)
}

// remoteFlame fetches a stored profile's flame graph and writes it as the
// local command would.
func remoteFlame(c *cobra.Command, w io.Writer, r query.FlameRequest, format string) error {
	cl, err := newClient()
	if err != nil {
		return err
	}
	req := &fsv1.GetFlameGraphRequest{ProfileId: r.ProfileID, Event: r.Event, IncludeIdle: r.IncludeIdle, Filter: api.FilterProto(r.Filter),
		WeightByPeriod: r.ByPeriod, AnnotateKernel: r.Annotate.Kernel, AnnotateJit: r.Annotate.JIT,
		Format: formatProto(format), Outside: r.Outside}
	if r.Range != nil {
		req.StartNanos, req.EndNanos = &r.Range.Start, &r.Range.End
	}
	res, err := cl.query.GetFlameGraph(c.Context(), connect.NewRequest(req))
	if err != nil {
		return remoteErr(err)
	}
	return writeFlame(w, res.Msg, format)
}
