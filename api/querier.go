package api

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"connectrpc.com/connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/flame"
)

// querierHandler serves the part of Pyroscope's QuerierService that
// Grafana's Pyroscope data source calls, from the query service's fleets.
type querierHandler struct {
	querierv1connect.UnimplementedQuerierServiceHandler
	q   *query.Service
	now func() time.Time
}

// NewQuerier returns the handler of Pyroscope's query API,
// querier.v1.QuerierService, as far as Grafana's Pyroscope data source
// uses it: ProfileTypes, LabelNames, LabelValues, Series,
// SelectMergeStacktraces (a flame graph) and SelectSeries (a timeline).
// The other procedures answer Unimplemented.
//
// A Pyroscope series is a fleetscope label set with a profile type:
// service_name is the app; hostname (or host, or instance, in selectors)
// is the host; the profile type (typeOf: an event) sets __profile_type__,
// __name__, __type__, __unit__, __period_type__ and __period_unit__; every
// other label is a profile's own label. A stored label named like one of
// those is out of reach. Label selectors (parseSelector) become fleet
// selections, one per app they can match (at most maxSelectApps); regular
// expressions and conditions on the host are resolved against the label
// sets of the window. Answers are the fleet's: flame graphs count exactly
// the samples of [start, end) (unix milliseconds, half-open), untruncated
// unless max_nodes is given, and series count exactly what the flame graph
// of the same request counts. Every answer carries the profiles it counted
// and left out in the headers Fleetscope-Profiles and Fleetscope-Left-Out.
//
// The caller's key (Bearer, or Basic auth's password) needs the read scope
// and chooses the tenant.
func NewQuerier(q *query.Service) querierv1connect.QuerierServiceHandler {
	return &querierHandler{q: q, now: time.Now}
}

const (
	// hostName is the label a series' host is listed under.
	hostName = "hostname"
	// maxSelectApps bounds the apps one Select call merges.
	maxSelectApps = 64
	// defaultListWindow is how far back listing calls look without start.
	defaultListWindow = 24 * time.Hour
)

// msToNanos converts unix milliseconds to nanoseconds; EINVALID outside
// the accepted time range.
func msToNanos(ms int64, what string) (int64, error) {
	if ms < 0 || ms > fleetscope.MaxTimeNanos/1e6 {
		return 0, fleetscope.Errorf(fleetscope.EINVALID, "%s %d: unix milliseconds between 1970 and 2100", what, ms)
	}
	return ms * 1e6, nil
}

// selectWindow reads a Select call's window [start, end), unix ms, both
// needed. Returns EINVALID for a missing or empty window, or one longer
// than a fleet selection's.
func selectWindow(start, end int64) (from, to int64, err error) {
	if start == 0 || end == 0 {
		return 0, 0, fleetscope.Errorf(fleetscope.EINVALID, "start and end (unix milliseconds) are needed: the window [start, end)")
	}
	return window(start, end)
}

// listWindow reads a listing call's window [start, end), unix ms: a
// missing end is now, a missing start defaultListWindow before the end.
func (h *querierHandler) listWindow(start, end int64) (from, to int64, err error) {
	if end == 0 {
		end = h.now().UnixMilli()
	}
	if start == 0 {
		start = end - defaultListWindow.Milliseconds()
	}
	return window(start, end)
}

func window(start, end int64) (from, to int64, err error) {
	if from, err = msToNanos(start, "start"); err != nil {
		return 0, 0, err
	}
	if to, err = msToNanos(end, "end"); err != nil {
		return 0, 0, err
	}
	check := fleetscope.FleetSelection{App: "any", From: from, To: to}
	return from, to, check.Check()
}

// labelSeries is one of Pyroscope's series: a label set with a profile type.
type labelSeries struct {
	set *fleetscope.LabelSet
	pt  profileType
}

// label returns a series' value of a label and whether it has the label.
func (s labelSeries) label(name string) (string, bool) {
	switch {
	case name == "service_name":
		return s.set.App, true
	case slices.Contains(hostLabels, name):
		return s.set.Host, s.set.Host != ""
	case slices.Contains(typeLabels, name):
		return s.pt.label(name), true
	}
	v, ok := s.set.Labels[name]
	return v, ok
}

// reserved reports whether a label name addresses the app, the host or
// the profile type rather than a profile's own labels.
func reserved(name string) bool {
	return name == "service_name" || slices.Contains(hostLabels, name) || slices.Contains(typeLabels, name)
}

// labels returns a series' labels sorted by name: service_name, hostname
// if it has a host, its own labels, and the profile type's.
func (s labelSeries) labels() []*typesv1.LabelPair {
	out := []*typesv1.LabelPair{{Name: "service_name", Value: s.set.App}}
	if s.set.Host != "" {
		out = append(out, &typesv1.LabelPair{Name: hostName, Value: s.set.Host})
	}
	for k, v := range s.set.Labels {
		if !reserved(k) {
			out = append(out, &typesv1.LabelPair{Name: k, Value: v})
		}
	}
	for _, k := range typeLabels {
		out = append(out, &typesv1.LabelPair{Name: k, Value: s.pt.label(k)})
	}
	slices.SortFunc(out, func(a, b *typesv1.LabelPair) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// selects reports whether a series meets every condition (a label it
// lacks has the value "").
func (s labelSeries) selects(ms []matcher) bool {
	for _, m := range ms {
		v, _ := s.label(m.name)
		if !m.matches(v) {
			return false
		}
	}
	return true
}

// listSeries returns the series of the window that meet any of the
// selectors (none: every series).
func (h *querierHandler) listSeries(ctx context.Context, tenant int64, selectors []string, from, to int64) ([]labelSeries, error) {
	var sets [][]matcher
	for _, s := range selectors {
		ms, err := parseSelector(s)
		if err != nil {
			return nil, err
		}
		sets = append(sets, ms)
	}
	if len(sets) == 0 {
		sets = [][]matcher{nil}
	}
	app := ""
	if len(sets) == 1 {
		app = exactApp(sets[0])
	}
	lss, err := h.q.LabelSets(ctx, tenant, app, from, to)
	if err != nil {
		return nil, err
	}
	var out []labelSeries
	for i := range lss {
		for _, e := range lss[i].Events {
			s := labelSeries{set: &lss[i], pt: typeOf(e)}
			if slices.ContainsFunc(sets, s.selects) {
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// exactApp returns the app a selector names with service_name="app", if
// it does.
func exactApp(ms []matcher) string {
	for _, m := range ms {
		if m.name == "service_name" && m.op == opEqual && m.value != "" {
			return m.value
		}
	}
	return ""
}

// ProfileTypes lists the profile types of the events the tenant's
// profiles in the window have (sorted by id).
func (h *querierHandler) ProfileTypes(ctx context.Context, req *connect.Request[querierv1.ProfileTypesRequest]) (*connect.Response[querierv1.ProfileTypesResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	from, to, err := h.listWindow(req.Msg.GetStart(), req.Msg.GetEnd())
	if err != nil {
		return nil, err
	}
	sets, err := h.q.LabelSets(ctx, p.TenantID, "", from, to)
	if err != nil {
		return nil, err
	}
	byID := map[string]profileType{}
	for _, ls := range sets {
		for _, e := range ls.Events {
			t := typeOf(e)
			byID[t.ID()] = t
		}
	}
	out := &querierv1.ProfileTypesResponse{ProfileTypes: []*typesv1.ProfileType{}}
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		out.ProfileTypes = append(out.ProfileTypes, byID[id].proto())
	}
	return connect.NewResponse(out), nil
}

// LabelNames lists the label names of the series in the window that meet
// any of the matchers, sorted.
func (h *querierHandler) LabelNames(ctx context.Context, req *connect.Request[typesv1.LabelNamesRequest]) (*connect.Response[typesv1.LabelNamesResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	from, to, err := h.listWindow(req.Msg.GetStart(), req.Msg.GetEnd())
	if err != nil {
		return nil, err
	}
	ss, err := h.listSeries(ctx, p.TenantID, req.Msg.GetMatchers(), from, to)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, s := range ss {
		for _, l := range s.labels() {
			names[l.Name] = true
		}
	}
	return connect.NewResponse(&typesv1.LabelNamesResponse{Names: slices.Sorted(maps.Keys(names))}), nil
}

// LabelValues lists the values of one label among the series in the
// window that meet any of the matchers, sorted (series without it, or with
// it empty, add nothing). hostname, host and instance all list hosts.
func (h *querierHandler) LabelValues(ctx context.Context, req *connect.Request[typesv1.LabelValuesRequest]) (*connect.Response[typesv1.LabelValuesResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	name := req.Msg.GetName()
	if name == "" {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "a label name is needed")
	}
	from, to, err := h.listWindow(req.Msg.GetStart(), req.Msg.GetEnd())
	if err != nil {
		return nil, err
	}
	ss, err := h.listSeries(ctx, p.TenantID, req.Msg.GetMatchers(), from, to)
	if err != nil {
		return nil, err
	}
	values := map[string]bool{}
	for _, s := range ss {
		if v, ok := s.label(name); ok && v != "" {
			values[v] = true
		}
	}
	return connect.NewResponse(&typesv1.LabelValuesResponse{Names: slices.Sorted(maps.Keys(values))}), nil
}

// Series lists the distinct label sets of the series in the window that
// meet any of the matchers (with label_names, only those labels), each
// sorted by name, in order.
func (h *querierHandler) Series(ctx context.Context, req *connect.Request[querierv1.SeriesRequest]) (*connect.Response[querierv1.SeriesResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	from, to, err := h.listWindow(req.Msg.GetStart(), req.Msg.GetEnd())
	if err != nil {
		return nil, err
	}
	ss, err := h.listSeries(ctx, p.TenantID, req.Msg.GetMatchers(), from, to)
	if err != nil {
		return nil, err
	}
	only := slices.Clone(req.Msg.GetLabelNames())
	if slices.ContainsFunc(only, func(n string) bool { return slices.Contains(hostLabels, n) }) {
		only = append(only, hostName) // the host is listed as hostname
	}
	byKey := map[string]*typesv1.Labels{}
	for _, s := range ss {
		ls := s.labels()
		if len(only) > 0 {
			ls = slices.DeleteFunc(ls, func(l *typesv1.LabelPair) bool { return !slices.Contains(only, l.Name) })
		}
		byKey[labelsKey(ls)] = &typesv1.Labels{Labels: ls}
	}
	out := &querierv1.SeriesResponse{LabelsSet: []*typesv1.Labels{}}
	for _, k := range slices.Sorted(maps.Keys(byKey)) {
		out.LabelsSet = append(out.LabelsSet, byKey[k])
	}
	return connect.NewResponse(out), nil
}

// labelsKey is a sorted label list as one string (names and values are
// text without NUL).
func labelsKey(ls []*typesv1.LabelPair) string {
	var b strings.Builder
	for _, l := range ls {
		b.WriteString(l.Name)
		b.WriteByte(0)
		b.WriteString(l.Value)
		b.WriteByte(0)
	}
	return b.String()
}

// labelMatch turns a condition on a profile's own label into a fleet
// label condition with Prometheus' meaning (a missing label is "").
func labelMatch(m matcher) fleetscope.LabelMatch {
	empty := func() *fleetscope.LabelMatch {
		return &fleetscope.LabelMatch{Name: m.name, Regexp: emptyValue}
	}
	switch {
	case m.op == opEqual && m.value == "":
		return *empty()
	case m.op == opNotEqual && m.value == "":
		l := empty()
		l.Not = true
		return *l
	case m.op == opEqual:
		return fleetscope.LabelMatch{Name: m.name, Value: m.value}
	case m.op == opNotEqual:
		return fleetscope.LabelMatch{Name: m.name, Value: m.value, Not: true}
	}
	return fleetscope.LabelMatch{Name: m.name, Regexp: m.re, Not: m.op == opNotRegexp}
}

// selections turns a label selector into fleet selections of the window
// and event, one per app it can match (none if it can match nothing).
// The usual selector names one app, and at most one host, exactly; any
// other is resolved against the label sets of the window: the apps, and
// with conditions on the host the hosts, whose label sets meet it.
// Returns EINVALID for a bad selector, ETOOLARGE for more than
// maxSelectApps apps.
func (h *querierHandler) selections(ctx context.Context, tenant int64, selector, event string, pt profileType, from, to int64) ([]fleetscope.FleetSelection, error) {
	ms, err := parseSelector(selector)
	if err != nil {
		return nil, err
	}
	var apps, hosts []matcher
	base := fleetscope.FleetSelection{From: from, To: to, Event: event}
	for _, m := range ms {
		switch {
		case m.name == "service_name":
			apps = append(apps, m)
		case slices.Contains(hostLabels, m.name):
			hosts = append(hosts, m)
		case slices.Contains(typeLabels, m.name):
			if !m.matches(pt.label(m.name)) {
				return nil, nil
			}
		default:
			base.Labels = append(base.Labels, labelMatch(m))
		}
	}
	if len(apps) == 1 && apps[0].op == opEqual && (len(hosts) == 0 || len(hosts) == 1 && hosts[0].op == opEqual) {
		if apps[0].value == "" {
			return nil, nil // every profile has an app
		}
		base.App = apps[0].value
		if len(hosts) == 1 {
			base.Hosts = []string{hosts[0].value}
		}
		return []fleetscope.FleetSelection{base}, nil
	}
	sets, err := h.q.LabelSets(ctx, tenant, exactApp(apps), from, to)
	if err != nil {
		return nil, err
	}
	byApp := map[string][]string{}
	for i := range sets {
		ls := &sets[i]
		if slices.Contains(ls.Events, event) && allMatch(apps, ls.App) && allMatch(hosts, ls.Host) &&
			!slices.ContainsFunc(base.Labels, func(l fleetscope.LabelMatch) bool { return !l.Matches(ls.Labels) }) {
			byApp[ls.App] = append(byApp[ls.App], ls.Host)
		}
	}
	if len(byApp) > maxSelectApps {
		return nil, fleetscope.Errorf(fleetscope.ETOOLARGE, "the selector matches %d apps; at most %d: narrow it with service_name", len(byApp), maxSelectApps)
	}
	var out []fleetscope.FleetSelection
	for _, app := range slices.Sorted(maps.Keys(byApp)) {
		sel := base
		sel.App = app
		if len(hosts) > 0 {
			sel.Hosts = slices.Compact(slices.Sorted(slices.Values(byApp[app])))
		}
		out = append(out, sel)
	}
	return out, nil
}

// emptyValue matches the empty value: {k=""} is "k is missing or empty".
var emptyValue = regexp.MustCompile("^(?:)$")

func allMatch(ms []matcher, v string) bool {
	for _, m := range ms {
		if !m.matches(v) {
			return false
		}
	}
	return true
}

// tally sums what fleet answers counted and left out.
type tally struct {
	profiles int
	leftOut  map[string]int
}

func (t *tally) add(a query.Accounting) {
	t.profiles += a.Profiles
	for k, v := range a.LeftOut {
		if t.leftOut == nil {
			t.leftOut = map[string]int{}
		}
		t.leftOut[k] += v
	}
}

// header says what an answer counted: Fleetscope-Profiles (a number) and
// Fleetscope-Left-Out (a JSON object of reasons and counts).
func (t *tally) header(h http.Header) {
	h.Set("Fleetscope-Profiles", strconv.Itoa(t.profiles))
	if t.leftOut == nil {
		t.leftOut = map[string]int{}
	}
	b, _ := json.Marshal(t.leftOut)
	h.Set("Fleetscope-Left-Out", string(b))
}

// SelectMergeStacktraces returns the merged flame graph of the selection
// in Pyroscope's flame graph format: every sample of the profile type's
// event in [start, end) of the matching profiles, exactly, idle samples
// left out (fleetscope's default); untruncated unless max_nodes > 0, then
// the max_nodes largest nodes and an "other" node under each node that
// lost children. Only the flame graph format is served; stack trace,
// profile id, span and trace selectors are refused (EINVALID) rather than
// ignored.
func (h *querierHandler) SelectMergeStacktraces(ctx context.Context, req *connect.Request[querierv1.SelectMergeStacktracesRequest]) (*connect.Response[querierv1.SelectMergeStacktracesResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	switch {
	case m.GetFormat() != querierv1.ProfileFormat_PROFILE_FORMAT_UNSPECIFIED && m.GetFormat() != querierv1.ProfileFormat_PROFILE_FORMAT_FLAMEGRAPH:
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "format %s: fleetscope answers in the flame graph format only", m.GetFormat())
	case len(m.GetStackTraceSelector().GetCallSite()) > 0 || m.GetStackTraceSelector().GetGoPgo() != nil:
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "stack trace selectors are not supported")
	case len(m.GetProfileIdSelector()) > 0 || len(m.GetSpanSelector()) > 0 || len(m.GetTraceIdSelector()) > 0:
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "profile id, span and trace selectors are not supported")
	case m.GetAsync() != nil:
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "asynchronous queries are not supported")
	}
	event, pt, err := eventOf(m.GetProfileTypeID())
	if err != nil {
		return nil, err
	}
	from, to, err := selectWindow(m.GetStart(), m.GetEnd())
	if err != nil {
		return nil, err
	}
	sels, err := h.selections(ctx, p.TenantID, m.GetLabelSelector(), event, pt, from, to)
	if err != nil {
		return nil, err
	}
	var t tally
	var flats []*flame.Flat
	for _, sel := range sels {
		g, err := h.q.FleetFlameGraph(ctx, p.TenantID, sel, query.FleetFlameOptions{})
		if err != nil {
			return nil, err
		}
		t.add(g.Accounting)
		flats = append(flats, g.Flat())
	}
	f := flame.Merge(flats...).Truncate(int(min(max(m.GetMaxNodes(), 0), math.MaxInt32)))
	res := connect.NewResponse(&querierv1.SelectMergeStacktracesResponse{Flamegraph: flamebearer(f)})
	t.header(res.Header())
	return res, nil
}

// flamebearer encodes a flame graph as Pyroscope's FlameGraph: the root
// named "total", then level by level each node as four numbers: its x
// offset from the end of the node before it on its level, its value, its
// self value and the index of its name. Children lie from their parent's
// start, in name order.
func flamebearer(f *flame.Flat) *querierv1.FlameGraph {
	out := &querierv1.FlameGraph{Names: []string{"total"}}
	nameIdx := map[uint32]int64{}
	n := len(f.Name)
	x := make([]int64, n)      // absolute start of each node
	cursor := make([]int64, n) // where a node's next child starts
	self := make([]int64, n)
	path := make([]int, 0, 64)
	var ends []int64 // by level: the end of its last node
	for i := range n {
		d := int(f.Depth[i])
		path = append(path[:d], i)
		v := int64(f.Value[i])
		self[i] = v
		if i > 0 {
			p := path[d-1]
			x[i] = cursor[p]
			cursor[p] += v
			self[p] -= v
		}
		cursor[i] = x[i]
	}
	for i := range n {
		d := int(f.Depth[i])
		if d == len(out.Levels) {
			out.Levels = append(out.Levels, &querierv1.Level{})
			ends = append(ends, 0)
		}
		name := int64(0)
		if i > 0 {
			var ok bool
			if name, ok = nameIdx[f.Name[i]]; !ok {
				name = int64(len(out.Names))
				nameIdx[f.Name[i]] = name
				out.Names = append(out.Names, f.Names[f.Name[i]])
			}
		}
		lv := out.Levels[d]
		lv.Values = append(lv.Values, x[i]-ends[d], int64(f.Value[i]), self[i], name)
		ends[d] = x[i] + int64(f.Value[i])
		out.MaxSelf = max(out.MaxSelf, self[i])
	}
	out.Total = int64(f.Value[0])
	return out
}

// MaxSeriesPoints bounds the points of one SelectSeries answer, over all
// its series: 100 series of 1,000 points (a full Grafana panel), or 1,000
// series of 100.
const MaxSeriesPoints = 100_000

// checkSeriesPoints returns ETOOLARGE when n series of columns points
// each (columns of spc seconds) are more than MaxSeriesPoints, saying how
// to ask for fewer: the selector, group_by, limit or a wider step.
func checkSeriesPoints(n, columns int, spc int64) error {
	points := int64(n) * int64(columns)
	if points <= MaxSeriesPoints {
		return nil
	}
	how := "narrow the selector or group by fewer labels"
	if most := MaxSeriesPoints / columns; most > 0 {
		how += fmt.Sprintf(", set a limit of at most %d series", most)
	}
	if fit := MaxSeriesPoints / n; fit >= 2 {
		// Columns of step seconds, laid out from a whole minute's start,
		// may need one more column than the window's length makes.
		step := (int64(columns)*spc + int64(fit) - 2) / int64(fit-1)
		how += fmt.Sprintf(", or widen the step to at least %d s", step)
	}
	return fleetscope.Errorf(fleetscope.ETOOLARGE, "the answer would hold %d series of %d points (%d points), more than %d (the server's limit): %s",
		n, columns, points, MaxSeriesPoints, how)
}

// SelectSeries returns the selection's samples over time: one point per
// column of at least step seconds (whole seconds, from the start's
// second), counting exactly what SelectMergeStacktraces counts for the
// same request (query.FleetSeries), so the points sum to its total. With
// group_by, a series per distinct value of those labels (a label a
// profile lacks is left out of its series' labels); with limit, the limit
// series with the largest totals. Series whose points are all zero are
// left out; an answer of more than MaxSeriesPoints points (series times
// points) is refused, ETOOLARGE, saying how to ask for fewer. Only sums
// are served.
func (h *querierHandler) SelectSeries(ctx context.Context, req *connect.Request[querierv1.SelectSeriesRequest]) (*connect.Response[querierv1.SelectSeriesResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	switch {
	case m.Aggregation != nil && m.GetAggregation() != typesv1.TimeSeriesAggregationType_TIME_SERIES_AGGREGATION_TYPE_SUM:
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "aggregation %s: fleetscope sums", m.GetAggregation())
	case len(m.GetStackTraceSelector().GetCallSite()) > 0 || m.GetStackTraceSelector().GetGoPgo() != nil:
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "stack trace selectors are not supported")
	case math.IsNaN(m.GetStep()) || m.GetStep() < 0 || m.GetStep() > fleetscope.MaxFleetWindow.Seconds():
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "step %v: seconds, at most %s", m.GetStep(), fleetscope.MaxFleetWindow)
	}
	event, pt, err := eventOf(m.GetProfileTypeID())
	if err != nil {
		return nil, err
	}
	from, to, err := selectWindow(m.GetStart(), m.GetEnd())
	if err != nil {
		return nil, err
	}
	sels, err := h.selections(ctx, p.TenantID, m.GetLabelSelector(), event, pt, from, to)
	if err != nil {
		return nil, err
	}
	groupBy := m.GetGroupBy()
	groupLabels := map[string][]*typesv1.LabelPair{}
	key := func(info *fleetscope.ProfileInfo) string {
		s := labelSeries{set: &fleetscope.LabelSet{App: info.App, Host: info.Host, Labels: info.Labels}, pt: pt}
		var ls []*typesv1.LabelPair
		for _, name := range groupBy {
			if v, ok := s.label(name); ok && !slices.ContainsFunc(ls, func(l *typesv1.LabelPair) bool { return l.Name == name }) {
				ls = append(ls, &typesv1.LabelPair{Name: name, Value: v})
			}
		}
		slices.SortFunc(ls, func(a, b *typesv1.LabelPair) int { return cmp.Compare(a.Name, b.Name) })
		k := labelsKey(ls)
		groupLabels[k] = ls
		return k
	}
	var t tally
	var start, spc int64
	totals := map[string][]int64{}
	sums := map[string]int64{}
	for _, sel := range sels {
		s, err := h.q.FleetSeries(ctx, p.TenantID, sel, int64(math.Ceil(m.GetStep())), key)
		if err != nil {
			return nil, err
		}
		t.add(s.Accounting)
		start, spc = s.StartSecond, s.SecondsPerColumn // the same for every app: the window's
		for _, g := range s.Groups {
			cols := totals[g.Key]
			if cols == nil {
				cols = make([]int64, len(g.Columns))
				totals[g.Key] = cols
			}
			for i, n := range g.Columns {
				cols[i] += n
			}
			sums[g.Key] += g.Total
		}
	}
	// Series whose points are all zero say nothing: left out.
	keys := slices.DeleteFunc(slices.Sorted(maps.Keys(totals)), func(k string) bool {
		return !slices.ContainsFunc(totals[k], func(n int64) bool { return n != 0 })
	})
	if lim := m.GetLimit(); lim > 0 && int64(len(keys)) > lim {
		byTotal := slices.Clone(keys)
		slices.SortStableFunc(byTotal, func(a, b string) int { return cmp.Compare(sums[b], sums[a]) })
		keys = slices.DeleteFunc(keys, func(k string) bool { return !slices.Contains(byTotal[:lim], k) })
	}
	if len(keys) > 0 {
		if err := checkSeriesPoints(len(keys), len(totals[keys[0]]), spc); err != nil {
			return nil, err
		}
	}
	out := &querierv1.SelectSeriesResponse{Series: []*typesv1.Series{}}
	for _, k := range keys {
		s := &typesv1.Series{Labels: groupLabels[k]}
		for i, n := range totals[k] {
			s.Points = append(s.Points, &typesv1.Point{Value: float64(n), Timestamp: (start + int64(i)*spc) * 1000})
		}
		out.Series = append(out.Series, s)
	}
	res := connect.NewResponse(out)
	t.header(res.Header())
	return res, nil
}
