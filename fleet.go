package fleetscope

import (
	"regexp"
	"strconv"
	"strings"
	"time"
)

// A fleet is every profile of one app, placed in wall-clock time: a sample
// taken at t on its profile's clock happened at t + WallShiftNanos, unix
// nanoseconds. Fleet heatmaps are FlameScope's heatmap in that time,
// summed over the selected profiles.

// LabelMatch is one label condition of a fleet selection: the label equals
// Value, or (Not) does not (a profile without the label matches Not).
// With Regexp set, Value is not used: the label's value, "" for a profile
// without it, matches Regexp (or, with Not, does not), as Prometheus reads
// `=~` and `!~`; the caller anchors the expression (^(?:...)$) if the
// whole value must match.
type LabelMatch struct {
	Name, Value string
	Not         bool
	Regexp      *regexp.Regexp
}

// Matches reports whether a profile's labels satisfy m.
func (m LabelMatch) Matches(labels map[string]string) bool {
	v, ok := labels[m.Name]
	if m.Regexp != nil {
		return m.Regexp.MatchString(v) != m.Not
	}
	if m.Not {
		return !ok || v != m.Value
	}
	return ok && v == m.Value
}

// Exact reports whether m is an equality a store can look up by value
// (k=v): neither negated nor a regular expression.
func (m LabelMatch) Exact() bool { return !m.Not && m.Regexp == nil }

// LabelSet is one distinct (app, host, labels) of a tenant's profiles in a
// window, with the events (base names, sorted) its profiles there have.
type LabelSet struct {
	App, Host string
	Labels    map[string]string
	Events    []string
}

// FleetSelection chooses samples across an app's profiles: the app, any of
// the hosts (none: all), labels that must all match, the half-open window
// [From, To) in unix nanoseconds, one event (by name, perf's modifiers
// optional; "": the event most samples of the selection have), idle
// samples or not, and the samples a Filter keeps.
type FleetSelection struct {
	App         string
	Hosts       []string
	Labels      []LabelMatch
	From, To    int64
	Event       string
	IncludeIdle bool
	Filter      Filter
}

// MaxFleetWindow bounds a fleet selection's window: 31 days.
const MaxFleetWindow = 31 * 24 * time.Hour

// Check validates a selection: an app, a non-empty window of at most
// MaxFleetWindow within the accepted time range, well-formed labels.
// Returns EINVALID saying what is wrong.
func (s *FleetSelection) Check() error {
	if s.App == "" {
		return Errorf(EINVALID, "a fleet selection needs an app")
	}
	if s.To <= s.From {
		return Errorf(EINVALID, "the window [%s, %s) is empty: its end must come after its start", formatUnix(s.From), formatUnix(s.To))
	}
	if s.From < 0 || s.To > MaxTimeNanos {
		return Errorf(EINVALID, "the window [%s, %s) lies outside 1970 to 2100", formatUnix(s.From), formatUnix(s.To))
	}
	if time.Duration(s.To-s.From) > MaxFleetWindow {
		return Errorf(EINVALID, "the window is %s long; at most %s", FormatLength(time.Duration(s.To-s.From)), FormatLength(MaxFleetWindow))
	}
	if len(s.Hosts) > 1000 || len(s.Labels) > 64 {
		return Errorf(EINVALID, "at most 1000 hosts and 64 label conditions")
	}
	for _, l := range s.Labels {
		if l.Name == "" {
			return Errorf(EINVALID, "a label condition needs a name")
		}
	}
	return nil
}

// FormatLength writes a length of time for people, in days, hours,
// minutes and seconds, the zero ones left out: "31 days", "33 days 8 h",
// "2 h 0.5 s", "0 s".
func FormatLength(d time.Duration) string {
	var parts []string
	if d < 0 {
		return "-" + FormatLength(-d)
	}
	if days := d / (24 * time.Hour); days > 0 {
		unit := " days"
		if days == 1 {
			unit = " day"
		}
		parts = append(parts, strconv.FormatInt(int64(days), 10)+unit)
	}
	for _, u := range []struct {
		size time.Duration
		name string
		mod  time.Duration
	}{{time.Hour, " h", 24}, {time.Minute, " min", 60}} {
		if n := d / u.size % u.mod; n > 0 {
			parts = append(parts, strconv.FormatInt(int64(n), 10)+u.name)
		}
	}
	if sec := d % time.Minute; sec > 0 || len(parts) == 0 {
		parts = append(parts, strconv.FormatFloat(sec.Seconds(), 'f', -1, 64)+" s")
	}
	return strings.Join(parts, " ")
}

func formatUnix(ns int64) string { return time.Unix(0, ns).UTC().Format(time.RFC3339Nano) }

// EventBase is an event's name without perf's modifiers ("cpu-clock" for
// "cpu-clock:pppH"): the name fleet queries group events by.
func EventBase(name string) string {
	if i := strings.LastIndexByte(name, ':'); i > 0 && isModifiers(name[i+1:]) {
		return name[:i]
	}
	return name
}

// WallSpan returns the absolute time a profile covers, in unix ns: from its
// first second's start to its last sample (timed), or its recorded span.
func WallSpan(p *ProfileInfo) (start, end int64) {
	if p.Timed {
		start = p.StartSecond*1e9 + p.WallShiftNanos
		return start, start + p.DurationNanos
	}
	start = p.StartTime.UnixNano()
	return start, start + p.DurationNanos
}

// FleetCounts summarizes the profiles of a fleet window without listing
// them (an answer from stored totals needs no more): the timed and
// untimed ones, the live-stream segments among the timed ones and their
// distinct streams (LiveSegment), and every event name they have.
type FleetCounts struct {
	Timed, Untimed            int
	LiveSegments, LiveStreams int
	Events                    []string
}
