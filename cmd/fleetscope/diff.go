package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope/api"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/export"
	"github.com/fleetscope/fleetscope/query/spans"
)

// A side of diff: FILE, profile:ID, or
// fleet:app=A[,host=H]...[,label=k=v]...,from=T[,to=T]; --a-shift and
// --b-shift move a fleet side's window earlier.
const (
	profilePrefix = "profile:"
	fleetPrefix   = "fleet:"
)

func diffCmd() *cobra.Command {
	var (
		aStart, aEnd, bStart, bEnd string
		aSpans, bSpans             string
		aShift, bShift             string
		event, format, inputFormat string
		idle, normalize            bool
		aOutside, bOutside         bool
		top                        int
		filter                     filterFlags
	)
	c := &cobra.Command{
		Use:   "diff [--a-start S] [--a-end E] [--b-start S] [--b-end E] [--a-outside] [--b-outside] [--a-spans C] [--b-spans C] [--a-shift D] [--b-shift D] [--event E] [--include-idle] [--normalize] [--format folded|json|svg] A [B]",
		Short: "Compare two flame graphs stack by stack: B against the baseline A",
		Long: `Compare two flame graphs stack by stack: B against the baseline A.

A and B are each a profile file (FILE), a stored profile (profile:ID), or a
fleet selection (fleet:app=APP[,host=H]...[,label=k=v|k!=v]...,from=T[,to=T],
T as for heatmap --from); given A alone, B is the same selection as A.
--a-start/--a-end and --b-start/--b-end pick a range [S, E) of a file or
stored profile, in seconds from its start second. The same FILE on both
sides is read once. --a-outside (--b-outside) makes that side the samples
outside its range: "this range against the rest of the profile" is
  fleetscope diff --a-start S --a-end E --a-outside --b-start S --b-end E FILE

--format folded prints difffolded.pl's format: one line per stack in either
side, "stack countA countB", sorted bytewise; column 2 equals flamegraph
--format folded of A's selection and column 3 that of B's. --normalize scales
A to B's total as difffolded.pl -n does. --format svg draws Brendan Gregg's
differential flame graph (B's shape; red grew, blue shrank); --format json
prints the totals, the stacks and the functions that changed most (--top).

--a-spans and --b-spans condition each side on spans (as --in-spans does):
"slow requests against the rest" of one recording is
  fleetscope diff --a-spans faster:p95 --b-spans slower:p95 FILE FILE

--a-shift D (--b-shift D) moves a fleet side's window D earlier, to exactly
[from-D, to-D); D is a positive whole duration in w (7 days), d (24 hours),
h, m, s, ms, us and ns, like 24h, 1d, 1w or 1h30m. "The last hour against
the same hour yesterday" (yesterday the baseline A; red grew since) is
  fleetscope diff --a-shift 1d fleet:app=checkout,from=1h`,
		Args: args(1, 2),
		RunE: func(c *cobra.Command, a []string) error {
			if !slices.Contains([]string{"folded", "json", "svg"}, format) {
				return usageError{fmt.Errorf("unknown --format %q (folded, json, svg)", format)}
			}
			f, err := filter.filter()
			if err != nil {
				return err
			}
			base := query.FlameRequest{Event: event, IncludeIdle: idle, Filter: f}
			files := map[string]*localProfile{}
			now := time.Now() // one now for both sides: relative windows then shift exactly
			side := func(arg, start, end, cond, shiftFlag string, outside bool, flag string) (*query.FlameGraph, error) {
				shift, err := parseShift(shiftFlag)
				if err != nil {
					return nil, usageError{fmt.Errorf("%s %w", flag, err)}
				}
				if shift != 0 && !strings.HasPrefix(arg, fleetPrefix) {
					return nil, usageError{fmt.Errorf("%s moves a fleet side's window (fleet:...,from=T,to=T), and %q is not one", flag, arg)}
				}
				rg, err := parseRange(start, end)
				if err != nil {
					return nil, err
				}
				if outside && rg == nil {
					return nil, usageError{errors.New("--a-outside/--b-outside leave out a range: give its --a-start/--a-end or --b-start/--b-end")}
				}
				r := base
				r.Range, r.Outside = rg, outside
				if cond != "" {
					if _, err := spans.ParseCondition(cond); err != nil {
						return nil, usageError{err}
					}
					r.Filter.InSpans = cond
				}
				return diffSideGraph(c, arg, r, inputFormat, files, now, shift)
			}
			if len(a) == 1 {
				a = append(a, a[0])
			}
			ga, err := side(a[0], aStart, aEnd, aSpans, aShift, aOutside, "--a-shift")
			if err != nil {
				return fmt.Errorf("A: %w", err)
			}
			gb, err := side(a[1], bStart, bEnd, bSpans, bShift, bOutside, "--b-shift")
			if err != nil {
				return fmt.Errorf("B: %w", err)
			}
			d := query.DiffOf(ga, gb)
			w := bufio.NewWriterSize(os.Stdout, 1<<20)
			switch format {
			case "folded":
				err = export.WriteDiffFolded(w, d.Stacks(), normalize)
			case "svg":
				err = export.WriteDiffSVG(w, d.Stacks(), export.SVGOptions{Subtitle: fmt.Sprintf("A %s, B %s", sideName(a[0], aShift), sideName(a[1], bShift)), Normalize: normalize})
			case "json":
				err = writeDiffJSON(w, d, normalize, top)
			}
			if err != nil {
				return err
			}
			return w.Flush()
		},
	}
	fl := c.Flags()
	fl.StringVar(&aStart, "a-start", "", "A's range start, seconds from its start second (inclusive)")
	fl.StringVar(&aEnd, "a-end", "", "A's range end (exclusive)")
	fl.StringVar(&bStart, "b-start", "", "B's range start (inclusive)")
	fl.StringVar(&bEnd, "b-end", "", "B's range end (exclusive)")
	fl.BoolVar(&aOutside, "a-outside", false, "A is the samples outside its range (the rest of the profile)")
	fl.BoolVar(&bOutside, "b-outside", false, "B is the samples outside its range")
	fl.StringVar(&aSpans, "a-spans", "", `A's span condition, as --in-spans ("faster:p95")`)
	fl.StringVar(&bSpans, "b-spans", "", `B's span condition ("slower:p95")`)
	fl.StringVar(&aShift, "a-shift", "", "move fleet side A's window this much earlier: [from-D, to-D), D like 24h, 1d, 1w")
	fl.StringVar(&bShift, "b-shift", "", "move fleet side B's window this much earlier")
	fl.StringVar(&event, "event", "", "event to compare (default: each side's event with the most samples)")
	fl.BoolVar(&idle, "include-idle", false, "include the kernel's idle samples")
	fl.BoolVar(&normalize, "normalize", false, "scale A to B's total (difffolded.pl -n)")
	fl.StringVar(&format, "format", "folded", "output format: folded, json or svg")
	fl.IntVar(&top, "top", 20, "with --format json: the functions that changed most, by self and by total")
	fl.StringVar(&inputFormat, "input-format", "", "input format of FILE sides, instead of detecting it by content")
	filter.register(c)
	return c
}

// diffSideGraph answers one side's flame graph: a file here, a stored
// profile or a fleet from the server (its folded lines).
// A fleet side's relative times count back from now, and its window is
// moved shift earlier.
func diffSideGraph(c *cobra.Command, arg string, r query.FlameRequest, inputFormat string, files map[string]*localProfile, now time.Time, shift time.Duration) (*query.FlameGraph, error) {
	switch {
	case strings.HasPrefix(arg, profilePrefix):
		cl, err := newClient()
		if err != nil {
			return nil, err
		}
		req := &fsv1.GetFlameGraphRequest{ProfileId: strings.TrimPrefix(arg, profilePrefix), Event: r.Event, IncludeIdle: r.IncludeIdle,
			Filter: api.FilterProto(r.Filter), Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED_LINES, Outside: r.Outside}
		if r.Range != nil {
			req.StartNanos, req.EndNanos = &r.Range.Start, &r.Range.End
		}
		res, err := cl.query.GetFlameGraph(c.Context(), connect.NewRequest(req))
		if err != nil {
			return nil, remoteErr(err)
		}
		return linesGraph(res.Msg)
	case strings.HasPrefix(arg, fleetPrefix):
		if r.Range != nil {
			return nil, usageError{fmt.Errorf("a fleet side takes from= and to= (wall clock), not --a-start/--b-start")}
		}
		sel, err := parseFleetSide(strings.TrimPrefix(arg, fleetPrefix), r, now)
		if err != nil {
			return nil, err
		}
		shiftWindow(sel, shift)
		cl, err := newClient()
		if err != nil {
			return nil, err
		}
		res, err := cl.fleet.GetFleetFlameGraph(c.Context(), connect.NewRequest(&fsv1.GetFleetFlameGraphRequest{Selection: sel,
			Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED_LINES}))
		if err != nil {
			return nil, remoteErr(err)
		}
		return linesGraph(res.Msg.GetFlameGraph())
	}
	l, ok := files[arg]
	if !ok {
		var err error
		if l, err = openLocal([]string{arg}, inputFormat); err != nil {
			return nil, err
		}
		files[arg] = l
	}
	r.ProfileID = l.id
	return l.q.FlameGraph(c.Context(), 0, r)
}

// linesGraph is the flame graph of the server's folded lines.
func linesGraph(m *fsv1.GetFlameGraphResponse) (*query.FlameGraph, error) {
	l := m.GetLines()
	if l == nil {
		return nil, errNoLines
	}
	return query.LinesGraph(m.GetEvent(), api.Lines(l))
}

// parseFleetSide reads "app=A,host=H,label=k=v,from=T,to=T".
func parseFleetSide(spec string, r query.FlameRequest, now time.Time) (*fsv1.FleetSelection, error) {
	var ff fleetFlags
	for _, kv := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, usageError{fmt.Errorf("fleet side %q: want key=value pairs (app, host, label, from, to)", kv)}
		}
		switch k {
		case "app":
			ff.app = v
		case "host":
			ff.hosts = append(ff.hosts, v)
		case "label":
			ff.labels = append(ff.labels, v)
		case "from":
			ff.from = v
		case "to":
			ff.to = v
		default:
			return nil, usageError{fmt.Errorf("fleet side: unknown key %q (app, host, label, from, to)", k)}
		}
	}
	return ff.selection(r.Event, r.IncludeIdle, r.Filter, now)
}

// shiftWindow moves a selection's window shift earlier: [from-shift,
// to-shift), to the nanosecond.
func shiftWindow(sel *fsv1.FleetSelection, shift time.Duration) {
	if shift == 0 {
		return
	}
	sel.From = timestamppb.New(sel.GetFrom().AsTime().Add(-shift))
	sel.To = timestamppb.New(sel.GetTo().AsTime().Add(-shift))
}

// sideName names a side in the SVG's subtitle, with its shift.
func sideName(arg, shift string) string {
	if shift == "" {
		return arg
	}
	return arg + " " + shift + " earlier"
}

// shiftUnits are parseShift's units, in nanoseconds, the two-letter ones
// first (ms before m and s).
var shiftUnits = []struct {
	name string
	ns   int64
}{
	{"ns", 1}, {"us", 1e3}, {"µs", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"m", 60e9}, {"h", 3600e9},
	{"d", 24 * 3600e9}, {"w", 7 * 24 * 3600e9},
}

// parseShift reads --a-shift or --b-shift exactly: whole numbers with units,
// one or more (1d, 24h, 1w, 1h30m, 86400s, 1d1ns); a day is 24 hours and a
// week 7 days. Empty is no shift; zero, a sign, a fraction, an unknown unit
// or more than about 292 years is an error.
func parseShift(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	bad := func(why string) (time.Duration, error) {
		return 0, fmt.Errorf("%q: %s; want a positive duration of whole numbers with units w, d, h, m, s, ms, us, ns (24h, 1d, 1w, 1h30m)", s, why)
	}
	if s[0] == '-' {
		return bad("negative (a shift moves a window earlier; to compare with a later window, shift the other side)")
	}
	var total int64
	for rest := s; rest != ""; {
		i := 0
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 0 {
			return bad(fmt.Sprintf("%q is not a whole number", rest))
		}
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil {
			return bad("too long")
		}
		rest = rest[i:]
		unit := int64(0)
		for _, u := range shiftUnits {
			if strings.HasPrefix(rest, u.name) {
				unit, rest = u.ns, rest[len(u.name):]
				break
			}
		}
		if unit == 0 {
			if n == 0 && total == 0 && rest == "" {
				return bad("zero (both sides would be the same window)")
			}
			if rest != "" && rest[0] == '.' {
				return bad("a fraction (write 1h30m, not 1.5h)")
			}
			if rest == "" {
				return bad("a number without a unit")
			}
			return bad(fmt.Sprintf("unknown unit at %q", rest))
		}
		if n > (math.MaxInt64-total)/unit {
			return bad("too long")
		}
		total += n * unit
	}
	if total == 0 {
		return bad("zero (both sides would be the same window)")
	}
	return time.Duration(total), nil
}

// diffJSON is diff --format json.
type diffJSON struct {
	EventA         string           `json:"eventA"`
	EventB         string           `json:"eventB"`
	TotalA         uint64           `json:"totalA"`
	TotalB         uint64           `json:"totalB"`
	Normalized     bool             `json:"normalized"`
	Stacks         []diffStackJSON  `json:"stacks"`
	ChangesBySelf  []functionChange `json:"changesBySelf"`
	ChangesByTotal []functionChange `json:"changesByTotal"`
}

type diffStackJSON struct {
	Stack string `json:"stack"`
	A     uint64 `json:"a"`
	B     uint64 `json:"b"`
}

type functionChange struct {
	Name   string `json:"name"`
	SelfA  uint64 `json:"selfA"`
	SelfB  uint64 `json:"selfB"`
	TotalA uint64 `json:"totalA"`
	TotalB uint64 `json:"totalB"`
}

func writeDiffJSON(w *bufio.Writer, d *query.Diff, normalize bool, top int) error {
	if top < 1 || top > 1000 {
		return usageError{fmt.Errorf("--top %d: between 1 and 1000", top)}
	}
	stacks := d.Stacks()
	if normalize {
		stacks = export.Normalize(stacks)
	}
	t := d.Tree(normalize)
	out := diffJSON{EventA: d.EventA, EventB: d.EventB, TotalA: t.A[0], TotalB: t.B[0], Normalized: normalize, Stacks: []diffStackJSON{}}
	for _, s := range stacks {
		if s.A != 0 || s.B != 0 {
			out.Stacks = append(out.Stacks, diffStackJSON{strings.Join(s.Frames, ";"), s.A, s.B})
		}
	}
	slices.SortFunc(out.Stacks, func(x, y diffStackJSON) int { return strings.Compare(x.Stack, y.Stack) })
	bySelf, byTotal := query.Changes(t, top)
	conv := func(fns []export.FunctionDiff) []functionChange {
		cs := make([]functionChange, len(fns))
		for i, f := range fns {
			cs[i] = functionChange{f.Name, f.SelfA, f.SelfB, f.TotalA, f.TotalB}
		}
		return cs
	}
	out.ChangesBySelf, out.ChangesByTotal = conv(bySelf), conv(byTotal)
	return json.NewEncoder(w).Encode(out)
}
