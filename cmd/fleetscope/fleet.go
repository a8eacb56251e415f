package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/api"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// fleetFlags are the flags that select a fleet (heatmap and flamegraph
// with --app): the app, hosts, labels and a wall-clock window.
type fleetFlags struct {
	app, from, to string
	hosts, labels []string
}

func (f *fleetFlags) register(c *cobra.Command) {
	fl := c.Flags()
	fl.StringVar(&f.app, "app", "", "fleet: every profile of this app, in wall-clock time (asks the server)")
	fl.StringArrayVar(&f.hosts, "host", nil, "fleet: only this `HOST` (repeatable: any of them)")
	fl.StringArrayVar(&f.labels, "label", nil, "fleet: a label that must match, `k=v` or k!=v (repeatable)")
	fl.StringVar(&f.from, "from", "", "fleet: window start (inclusive): RFC 3339, unix seconds, or a duration ago like 10m")
	fl.StringVar(&f.to, "to", "", "fleet: window end (exclusive), as --from; default now")
}

// set reports whether any fleet flag was given.
func (f *fleetFlags) set() bool {
	return f.app != "" || f.from != "" || f.to != "" || len(f.hosts) > 0 || len(f.labels) > 0
}

// selection builds the selection, checking the flags.
func (f *fleetFlags) selection(event string, idle bool, filter fleetscope.Filter, now time.Time) (*fsv1.FleetSelection, error) {
	if f.app == "" {
		return nil, usageError{fmt.Errorf("a fleet query needs --app (and --from)")}
	}
	if f.from == "" {
		return nil, usageError{fmt.Errorf("a fleet query needs --from")}
	}
	from, err := parseInstant(f.from, now)
	if err != nil {
		return nil, usageError{fmt.Errorf("--from: %w", err)}
	}
	to := now
	if f.to != "" {
		if to, err = parseInstant(f.to, now); err != nil {
			return nil, usageError{fmt.Errorf("--to: %w", err)}
		}
	}
	sel := &fsv1.FleetSelection{App: f.app, Hosts: f.hosts, Event: event, IncludeIdle: idle, Filter: api.FilterProto(filter),
		From: timestamppb.New(from), To: timestamppb.New(to)}
	for _, kv := range f.labels {
		m := &fsv1.LabelMatcher{}
		k, v, ok := strings.Cut(kv, "=")
		if ok && strings.HasSuffix(k, "!") {
			k, m.NotEqual = strings.TrimSuffix(k, "!"), true
		}
		if !ok || k == "" {
			return nil, usageError{fmt.Errorf("--label %q: want k=v or k!=v", kv)}
		}
		m.Name, m.Value = k, v
		sel.Labels = append(sel.Labels, m)
	}
	return sel, nil
}

// parseInstant reads an instant exactly: RFC 3339 with an optional
// fraction (2026-11-23T10:00:00.25Z), unix seconds with up to nine
// decimals (1795000012.34), or a duration before now (10m, 1h30m, 2d).
func parseInstant(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if s != "" && (s[0] >= '0' && s[0] <= '9') && !strings.ContainsAny(s, "hmsdµu") {
		ns, err := fleetscope.ParseSeconds(s)
		if err != nil {
			return time.Time{}, err
		}
		return time.Unix(0, ns), nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		var n int
		if _, err := fmt.Sscanf(days, "%d", &n); err == nil && fmt.Sprint(n) == days && n >= 0 {
			return now.Add(-time.Duration(n) * 24 * time.Hour), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2026-11-23T10:00:00.25Z), unix seconds (1795000012.34) or a duration ago (10m)", s)
}
