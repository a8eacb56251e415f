package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/pprof/profile"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope/api"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/ingest/corpus"
)

// basicAuth sends the key as Basic auth's password, as Grafana's HTTP
// client does when a data source is set up with basic auth.
type basicAuth struct{ key string }

func (b basicAuth) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.SetBasicAuth("grafana", b.key)
	return http.DefaultTransport.RoundTrip(r)
}

// grafana is the pyroscope module's generated query client, as Grafana's
// Pyroscope data source builds it (http client, data source URL).
func (s *service) grafana(key string) querierv1connect.QuerierServiceClient {
	return querierv1connect.NewQuerierServiceClient(&http.Client{Transport: basicAuth{key}}, s.url)
}

// unflame reads a Pyroscope flame graph back into folded stacks (each
// node's self value on its path, the root "total" left out), checking as
// Grafana's reader does that every node lies inside a parent, and that
// values add up: a node's value is its self value plus its children's.
func unflame(t *testing.T, fg *querierv1.FlameGraph) (folded map[string]int64, nodes map[string]int64) {
	t.Helper()
	type node struct {
		path              string
		start, end, child int64
		self              int64
	}
	folded, nodes = map[string]int64{}, map[string]int64{}
	var above []*node
	for li, lv := range fg.GetLevels() {
		vs := lv.GetValues()
		var here []*node
		end, p := int64(0), 0
		for i := 0; i+3 < len(vs); i += 4 {
			n := &node{start: end + vs[i], self: vs[i+2]}
			n.end = n.start + vs[i+1]
			name := fg.GetNames()[vs[i+3]]
			if li > 0 {
				for p < len(above) && !(n.start >= above[p].start && n.end <= above[p].end) {
					p++
				}
				if p == len(above) {
					t.Fatalf("flame graph: %q at level %d lies in no parent", name, li)
				}
				above[p].child += vs[i+1]
				n.path = strings.TrimPrefix(above[p].path+";"+name, ";")
				nodes[n.path] = vs[i+1]
			}
			if vs[i+2] > 0 && li > 0 {
				folded[n.path] += vs[i+2]
			}
			end = n.end
			here = append(here, n)
		}
		for _, a := range above {
			if a.end-a.start != a.self+a.child {
				t.Fatalf("flame graph: %q has %d, self %d and children %d", a.path, a.end-a.start, a.self, a.child)
			}
		}
		above = here
	}
	return folded, nodes
}

// parseFolded reads fleetscope's folded output.
func parseFolded(s string) map[string]int64 {
	out := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			var n int64
			fmt.Sscan(line[i+1:], &n)
			out[line[:i]] += n
		}
	}
	return out
}

// TestGrafanaQuerier: Grafana's Pyroscope data source, through the
// pyroscope module's generated client with Basic auth, lists exactly what
// was uploaded (profile types, label names and values, series) and gets
// the answers fleetscope's own API gives for the same selection: the flame
// graph's stacks are the merged folded output and its total the fleet flame
// graph's, for label conditions of every kind and millisecond windows;
// series sum to the flame graph and, over whole seconds, are the fleet
// timeline; max_nodes keeps the total and reports the rest as "other";
// bad selectors and requests are InvalidArgument.
func TestGrafanaQuerier(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	for i, h := range []struct{ host, env string }{{"h1", "prod"}, {"h2", "prod"}, {"h3", "dev"}} {
		s.upload(plant(t, "--seed", fmt.Sprint(71+i), "--seconds", fmt.Sprint(8-2*i), "--epoch"), "--host", h.host, "--label", "env="+h.env, "--label", fmt.Sprintf("version=%d", 1+i%2))
	}
	s.mustCLI("upload", "--app", "shop", "--host", "s1", "--label", "env=prod", plant(t, "--seed", "74", "--seconds", "5", "--epoch"))
	// An untimed (pprof) profile of app test on host pp, spanning [1, 4) s.
	req, _ := http.NewRequest("POST", s.url+"/ingest?name=test{host=pp}&from=1795000001&until=1795000004&format=pprof",
		strings.NewReader(string(corpus.Read(t, "corpus/pprof/go-sha-sort.cpu.pprof"))))
	req.Header.Set("Authorization", "Bearer "+s.key)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != 200 {
		t.Fatalf("pprof upload: %v %v", res, err)
	}
	g := s.grafana(s.key)
	fleet := s.as(s.key).fleet
	const ms = int64(1795000000000)
	start, end := ms, ms+10_000

	// What was uploaded, listed.
	pts, err := g.ProfileTypes(ctx, connect.NewRequest(&querierv1.ProfileTypesRequest{Start: start, End: end}))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, pt := range pts.Msg.GetProfileTypes() {
		ids = append(ids, pt.GetID())
		if pt.GetID() != strings.Join([]string{pt.GetName(), pt.GetSampleType(), pt.GetSampleUnit(), pt.GetPeriodType(), pt.GetPeriodUnit()}, ":") {
			t.Errorf("profile type %+v: id and parts disagree", pt)
		}
	}
	const cpuClock = "fleetscope:cpu-clock:count:cpu-clock:count"
	if want := []string{cpuClock, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "process_cpu:samples:count:cpu:nanoseconds"}; !slices.Equal(ids, want) {
		t.Fatalf("profile types %q, want %q", ids, want)
	}
	if none, err := g.ProfileTypes(ctx, connect.NewRequest(&querierv1.ProfileTypesRequest{Start: end + 100_000, End: end + 200_000})); err != nil || len(none.Msg.GetProfileTypes()) != 0 {
		t.Fatalf("profile types of an empty window: %v %v", none, err)
	}
	typeLabels := []string{"__name__", "__period_type__", "__period_unit__", "__profile_type__", "__type__", "__unit__"}
	names := func(sel ...string) []string {
		t.Helper()
		res, err := g.LabelNames(ctx, connect.NewRequest(&typesv1.LabelNamesRequest{Matchers: sel, Start: start, End: end}))
		if err != nil {
			t.Fatal(err)
		}
		return res.Msg.GetNames()
	}
	if got, want := names(), append(slices.Clone(typeLabels), "env", "hostname", "service_name", "version"); !slices.Equal(got, want) {
		t.Errorf("label names %q, want %q", got, want)
	}
	if got, want := names(`{service_name="test", hostname="pp"}`), append(slices.Clone(typeLabels), "hostname", "service_name"); !slices.Equal(got, want) {
		t.Errorf("label names of the pprof host %q, want %q", got, want)
	}
	values := func(name string, sel ...string) []string {
		t.Helper()
		res, err := g.LabelValues(ctx, connect.NewRequest(&typesv1.LabelValuesRequest{Name: name, Matchers: sel, Start: start, End: end}))
		if err != nil {
			t.Fatal(err)
		}
		return res.Msg.GetNames()
	}
	for _, c := range []struct {
		name string
		sel  []string
		want []string
	}{
		{"service_name", nil, []string{"shop", "test"}},
		{"hostname", nil, []string{"h1", "h2", "h3", "pp", "s1"}},
		{"instance", []string{`{service_name="test"}`}, []string{"h1", "h2", "h3", "pp"}},
		{"env", []string{`{service_name="test"}`}, []string{"dev", "prod"}},
		{"env", []string{`{service_name="test", version="2"}`}, []string{"prod"}},
		{"service_name", []string{`{env="prod"}`}, []string{"shop", "test"}},
		{"hostname", []string{`{env!="prod"}`}, []string{"h3", "pp"}},
		{"hostname", []string{`{__profile_type__="process_cpu:cpu:nanoseconds:cpu:nanoseconds"}`}, []string{"pp"}},
		{"hostname", []string{`{__name__="fleetscope", env=~"d.*"}`, `{hostname="s1"}`}, []string{"h3", "s1"}},
		{"__unit__", nil, []string{"count", "nanoseconds"}},
		{"version", []string{`{service_name="shop"}`}, nil},
	} {
		if got := values(c.name, c.sel...); !slices.Equal(got, c.want) {
			t.Errorf("values of %s %q: %q, want %q", c.name, c.sel, got, c.want)
		}
	}
	ser, err := g.Series(ctx, connect.NewRequest(&querierv1.SeriesRequest{Matchers: []string{`{service_name="test"}`}, LabelNames: []string{"service_name", "host", "env", "__profile_type__"}, Start: start, End: end}))
	if err != nil {
		t.Fatal(err)
	}
	var sets []string
	for _, ls := range ser.Msg.GetLabelsSet() {
		var kv []string
		for _, l := range ls.GetLabels() {
			kv = append(kv, l.GetName()+"="+l.GetValue())
		}
		sets = append(sets, strings.Join(kv, ","))
	}
	want := []string{
		"__profile_type__=" + cpuClock + ",env=dev,hostname=h3,service_name=test",
		"__profile_type__=" + cpuClock + ",env=prod,hostname=h1,service_name=test",
		"__profile_type__=" + cpuClock + ",env=prod,hostname=h2,service_name=test",
		"__profile_type__=process_cpu:cpu:nanoseconds:cpu:nanoseconds,hostname=pp,service_name=test",
		"__profile_type__=process_cpu:samples:count:cpu:nanoseconds,hostname=pp,service_name=test",
	}
	slices.Sort(sets)
	if !slices.Equal(sets, want) {
		t.Errorf("series:\n%s\nwant:\n%s", strings.Join(sets, "\n"), strings.Join(want, "\n"))
	}

	// Flame graphs and series: the answers of fleetscope's own API.
	type ref struct {
		app    string
		hosts  []string
		labels []*fsv1.LabelMatcher
	}
	cases := []struct {
		selector string
		refs     []ref // the fleet selections it stands for, summed
	}{
		{`{service_name="test"}`, []ref{{app: "test"}}},
		{`{service_name="test", env="prod"}`, []ref{{app: "test", labels: []*fsv1.LabelMatcher{{Name: "env", Value: "prod"}}}}},
		{`{service_name="test", env!="prod"}`, []ref{{app: "test", labels: []*fsv1.LabelMatcher{{Name: "env", Value: "prod", NotEqual: true}}}}},
		{`{service_name="test", hostname="h2"}`, []ref{{app: "test", hosts: []string{"h2"}}}},
		{`{service_name="test", host=~"h[13]"}`, []ref{{app: "test", hosts: []string{"h1", "h3"}}}},
		{`{service_name="test", instance!~"h1|pp"}`, []ref{{app: "test", hosts: []string{"h2", "h3"}}}},
		// pp has no env (so "" does not match) and no version (so != "2" does).
		{`{service_name="test", env=~"prod|dev", version!="2"}`, []ref{{app: "test", hosts: []string{"h1", "h3"}}}},
		{`{service_name="test", env=~"prod|"}`, []ref{{app: "test", hosts: []string{"h1", "h2", "pp"}}}},
		{`{}`, []ref{{app: "shop"}, {app: "test"}}},
		{`{service_name=~"s.*|t.*", env="prod"}`, []ref{{app: "shop", labels: []*fsv1.LabelMatcher{{Name: "env", Value: "prod"}}}, {app: "test", labels: []*fsv1.LabelMatcher{{Name: "env", Value: "prod"}}}}},
		{`{service_name="nothing"}`, nil},
		{`{service_name="test", env="staging"}`, []ref{{app: "test", labels: []*fsv1.LabelMatcher{{Name: "env", Value: "staging"}}}}},
		{`{service_name="test", __name__="memory"}`, nil},
	}
	windows := [][2]int64{{start, end}, {ms + 2_123, ms + 7_891}, {ms + 999, ms + 1_001}, {ms + 500, ms + 9_500}}
	checked := 0
	for _, c := range cases {
		for _, w := range windows {
			for _, ev := range []string{cpuClock, "process_cpu:samples:count:cpu:nanoseconds"} {
				what := fmt.Sprintf("%s [%d, %d) %s", c.selector, w[0]-ms, w[1]-ms, ev)
				event := map[string]string{cpuClock: "cpu-clock"}[ev]
				if event == "" {
					event = "samples"
				}
				// fleetscope's own answer, summed over the apps.
				wantFolded := map[string]int64{}
				var wantTotal int64
				wantCols := map[int64]int64{}
				for _, r := range c.refs {
					sel := &fsv1.FleetSelection{App: r.app, Hosts: r.hosts, Labels: r.labels, Event: event,
						From: timestamppb.New(time.UnixMilli(w[0])), To: timestamppb.New(time.UnixMilli(w[1]))}
					fg, err := fleet.GetFleetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFleetFlameGraphRequest{Selection: sel, Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED}))
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					for k, v := range parseFolded(fg.Msg.GetFlameGraph().GetFolded()) {
						wantFolded[k] += v
					}
					wantTotal += int64(fg.Msg.GetFlameGraph().GetTotal())
					if (w[0]%1000 == 0 && w[1]%1000 == 0) && event == "cpu-clock" {
						tl, err := fleet.GetFleetTimeline(ctx, connect.NewRequest(&fsv1.GetFleetTimelineRequest{Selection: sel}))
						if err != nil {
							t.Fatal(err)
						}
						for i, n := range tl.Msg.GetTotals() {
							wantCols[(tl.Msg.GetStartSecond()+int64(i)*tl.Msg.GetSecondsPerColumn())*1000] += n
						}
					}
				}
				res, err := g.SelectMergeStacktraces(ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{
					ProfileTypeID: ev, LabelSelector: c.selector, Start: w[0], End: w[1]}))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				folded, _ := unflame(t, res.Msg.GetFlamegraph())
				if res.Msg.GetFlamegraph().GetTotal() != wantTotal || !maps.Equal(folded, wantFolded) {
					t.Fatalf("%s: flame graph total %d (%d stacks), fleetscope's %d (%d stacks)", what, res.Msg.GetFlamegraph().GetTotal(), len(folded), wantTotal, len(wantFolded))
				}
				sr, err := g.SelectSeries(ctx, connect.NewRequest(&querierv1.SelectSeriesRequest{
					ProfileTypeID: ev, LabelSelector: c.selector, Start: w[0], End: w[1], Step: 1}))
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				var sum int64
				cols := map[int64]int64{}
				for _, se := range sr.Msg.GetSeries() {
					if len(se.GetLabels()) != 0 {
						t.Fatalf("%s: a series without group_by has labels %v", what, se.GetLabels())
					}
					for _, p := range se.GetPoints() {
						sum += int64(p.GetValue())
						if p.GetValue() != 0 {
							cols[p.GetTimestamp()] += int64(p.GetValue())
						}
					}
				}
				if sum != wantTotal || len(sr.Msg.GetSeries()) != min(1, int(wantTotal)) {
					t.Fatalf("%s: %d series summing to %d, the flame graph %d", what, len(sr.Msg.GetSeries()), sum, wantTotal)
				}
				if len(wantCols) > 0 {
					maps.DeleteFunc(wantCols, func(_, n int64) bool { return n == 0 })
					if !maps.Equal(cols, wantCols) {
						t.Fatalf("%s: series %v, the fleet timeline %v", what, cols, wantCols)
					}
				}
				if wantTotal > 0 {
					checked++
				}
			}
		}
	}
	if checked < 40 {
		t.Fatalf("only %d non-empty answers compared", checked)
	}

	// Series grouped by host: each host's own series; limit keeps the largest.
	grouped, err := g.SelectSeries(ctx, connect.NewRequest(&querierv1.SelectSeriesRequest{ProfileTypeID: cpuClock,
		LabelSelector: `{service_name="test"}`, Start: ms + 1_500, End: ms + 8_250, Step: 2, GroupBy: []string{"hostname"}}))
	if err != nil {
		t.Fatal(err)
	}
	var hosts []string
	totals := map[string]float64{}
	for _, se := range grouped.Msg.GetSeries() {
		if len(se.GetLabels()) != 1 || se.GetLabels()[0].GetName() != "hostname" {
			t.Fatalf("grouped series labels %v", se.GetLabels())
		}
		h := se.GetLabels()[0].GetValue()
		hosts = append(hosts, h)
		one, err := g.SelectSeries(ctx, connect.NewRequest(&querierv1.SelectSeriesRequest{ProfileTypeID: cpuClock,
			LabelSelector: `{service_name="test", hostname="` + h + `"}`, Start: ms + 1_500, End: ms + 8_250, Step: 2}))
		if err != nil || len(one.Msg.GetSeries()) != 1 || fmt.Sprint(one.Msg.GetSeries()[0].GetPoints()) != fmt.Sprint(se.GetPoints()) {
			t.Fatalf("host %s grouped: %v; alone: %v %v", h, se.GetPoints(), one, err)
		}
		for i, p := range se.GetPoints() {
			totals[h] += p.GetValue()
			if p.GetTimestamp() != (1795000001+int64(i)*2)*1000 {
				t.Fatalf("point %d at %d: columns of 2 s from the start's second", i, p.GetTimestamp())
			}
		}
	}
	if !slices.Equal(hosts, []string{"h1", "h2", "h3"}) {
		t.Fatalf("grouped by host: %v", hosts)
	}
	lim := int64(2)
	top, err := g.SelectSeries(ctx, connect.NewRequest(&querierv1.SelectSeriesRequest{ProfileTypeID: cpuClock,
		LabelSelector: `{service_name="test"}`, Start: ms + 1_500, End: ms + 8_250, Step: 2, GroupBy: []string{"hostname"}, Limit: &lim}))
	if err != nil || len(top.Msg.GetSeries()) != 2 {
		t.Fatalf("limit 2: %v %v", top, err)
	}
	for _, se := range top.Msg.GetSeries() {
		for h, n := range totals {
			if h != se.GetLabels()[0].GetValue() && !slices.ContainsFunc(top.Msg.GetSeries(), func(x *typesv1.Series) bool { return x.GetLabels()[0].GetValue() == h }) && n > totals[se.GetLabels()[0].GetValue()] {
				t.Fatalf("limit 2 kept %s (%v) over %s (%v)", se.GetLabels()[0].GetValue(), totals[se.GetLabels()[0].GetValue()], h, n)
			}
		}
	}

	// Untruncated by default; max_nodes keeps the total and every kept
	// node's value, and reports the rest as "other".
	full, err := g.SelectMergeStacktraces(ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{ProfileTypeID: cpuClock, LabelSelector: `{}`, Start: start, End: end}))
	if err != nil {
		t.Fatal(err)
	}
	_, fullNodes := unflame(t, full.Msg.GetFlamegraph())
	var profiles int32
	for _, app := range []string{"shop", "test"} {
		fg, err := fleet.GetFleetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFleetFlameGraphRequest{Selection: &fsv1.FleetSelection{App: app, Event: "cpu-clock",
			From: timestamppb.New(time.UnixMilli(start)), To: timestamppb.New(time.UnixMilli(end))}}))
		if err != nil {
			t.Fatal(err)
		}
		profiles += fg.Msg.GetAccounting().GetProfiles()
	}
	if got := full.Header().Get("Fleetscope-Profiles"); got != fmt.Sprint(profiles) || full.Header().Get("Fleetscope-Left-Out") != "{}" {
		t.Errorf("Fleetscope-Profiles %q, Fleetscope-Left-Out %q; the fleet's accounting: %d profiles", got, full.Header().Get("Fleetscope-Left-Out"), profiles)
	}
	for _, maxNodes := range []int64{1, 5, 20} {
		res, err := g.SelectMergeStacktraces(ctx, connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{ProfileTypeID: cpuClock, LabelSelector: `{}`, Start: start, End: end, MaxNodes: &maxNodes}))
		if err != nil {
			t.Fatal(err)
		}
		_, nodes := unflame(t, res.Msg.GetFlamegraph())
		kept, other := 0, int64(0)
		for p, v := range nodes {
			if strings.HasSuffix(p, ";other") || p == "other" {
				other += v
				continue
			}
			kept++
			if fullNodes[p] != v {
				t.Fatalf("max_nodes %d: %q has %d, untruncated %d", maxNodes, p, v, fullNodes[p])
			}
		}
		if res.Msg.GetFlamegraph().GetTotal() != full.Msg.GetFlamegraph().GetTotal() || int64(kept) != maxNodes || other == 0 || len(fullNodes) <= int(maxNodes) {
			t.Fatalf("max_nodes %d: total %d (untruncated %d), %d nodes kept of %d, %d in other", maxNodes, res.Msg.GetFlamegraph().GetTotal(), full.Msg.GetFlamegraph().GetTotal(), kept, len(fullNodes), other)
		}
	}

	// Bad requests: InvalidArgument, saying what is wrong.
	for _, c := range []struct {
		req  *querierv1.SelectMergeStacktracesRequest
		want string
	}{
		{&querierv1.SelectMergeStacktracesRequest{ProfileTypeID: cpuClock, LabelSelector: `{service_name="test"`, Start: start, End: end}, "expected ',' or '}'"},
		{&querierv1.SelectMergeStacktracesRequest{ProfileTypeID: cpuClock, LabelSelector: `{service_name=test}`, Start: start, End: end}, "expected a quoted string"},
		{&querierv1.SelectMergeStacktracesRequest{ProfileTypeID: cpuClock, LabelSelector: `{env=~"(prod"}`, Start: start, End: end}, "missing closing )"},
		{&querierv1.SelectMergeStacktracesRequest{ProfileTypeID: "block:contentions:count:contentions:count", LabelSelector: `{}`, Start: start, End: end}, "not one fleetscope serves"},
		{&querierv1.SelectMergeStacktracesRequest{LabelSelector: `{}`, Start: start, End: end}, "a profile type is needed"},
		{&querierv1.SelectMergeStacktracesRequest{ProfileTypeID: cpuClock, LabelSelector: `{}`, Start: end, End: start}, "is empty"},
		{&querierv1.SelectMergeStacktracesRequest{ProfileTypeID: cpuClock, LabelSelector: `{}`, End: end}, "start and end"},
		{&querierv1.SelectMergeStacktracesRequest{ProfileTypeID: cpuClock, LabelSelector: `{}`, Start: start, End: start + 32*24*3600*1000}, "at most"},
		{&querierv1.SelectMergeStacktracesRequest{ProfileTypeID: cpuClock, LabelSelector: `{}`, Start: start, End: end, Format: querierv1.ProfileFormat_PROFILE_FORMAT_DOT}, "flame graph format only"},
		{&querierv1.SelectMergeStacktracesRequest{ProfileTypeID: cpuClock, LabelSelector: `{}`, Start: start, End: end, ProfileIdSelector: []string{"x"}}, "not supported"},
	} {
		_, err := g.SelectMergeStacktraces(ctx, connect.NewRequest(c.req))
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want InvalidArgument %q", c.req, err, c.want)
		}
	}
	if _, err := g.SelectSeries(ctx, connect.NewRequest(&querierv1.SelectSeriesRequest{ProfileTypeID: cpuClock, LabelSelector: `{a!~"["}`, Start: start, End: end, Step: 15})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("series with a bad regular expression: %v", err)
	}
	if _, err := g.LabelNames(ctx, connect.NewRequest(&typesv1.LabelNamesRequest{Matchers: []string{`{service_name="test",,}`}, Start: start, End: end})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("label names with a bad selector: %v", err)
	}
	if _, err := g.LabelValues(ctx, connect.NewRequest(&typesv1.LabelValuesRequest{Matchers: []string{`{}`}, Start: start, End: end})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("label values without a name: %v", err)
	}

	// Keys: a Bearer key works too; no key, a key without the read scope,
	// and the procedures fleetscope does not serve are refused.
	bearer := querierv1connect.NewQuerierServiceClient(http.DefaultClient, s.url, connect.WithInterceptors(api.Bearer(s.key)))
	if _, err := bearer.ProfileTypes(ctx, connect.NewRequest(&querierv1.ProfileTypesRequest{})); err != nil {
		t.Errorf("profile types with a Bearer key and no window: %v", err)
	}
	if _, err := querierv1connect.NewQuerierServiceClient(http.DefaultClient, s.url).ProfileTypes(ctx, connect.NewRequest(&querierv1.ProfileTypesRequest{})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Errorf("no key: %v", err)
	}
	if _, err := s.grafana(s.newKey("acme", "ingest")).LabelNames(ctx, connect.NewRequest(&typesv1.LabelNamesRequest{})); connect.CodeOf(err) != connect.CodePermissionDenied {
		t.Errorf("an ingest key: %v", err)
	}
	if _, err := g.SelectMergeProfile(ctx, connect.NewRequest(&querierv1.SelectMergeProfileRequest{ProfileTypeID: cpuClock, Start: start, End: end})); connect.CodeOf(err) != connect.CodeUnimplemented {
		t.Errorf("SelectMergeProfile: %v", err)
	}
	t.Logf("%d non-empty flame graphs and series compared with fleetscope's own answers", checked)
}

// TestGrafanaSeriesBounds: SelectSeries grouped by host over 101 hosts of
// 1,000 points each (101,000 points) is refused, ResourceExhausted, saying
// how to ask for fewer; the limit and the step it names are served, and
// no answer holds a series of zeros (a host in the window's label sets
// whose profile counts nothing in the window has no series).
func TestGrafanaSeriesBounds(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	base, err := profile.ParseData(corpus.Read(t, "corpus/pprof/go-sha-sort.cpu.pprof"))
	if err != nil {
		t.Fatal(err)
	}
	const ms = int64(1795000000000)
	at := func(sec int64) []byte {
		p := base.Copy()
		p.TimeNanos = (ms/1000 + sec) * 1e9
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	const hosts = 101
	req := &pushv1.PushRequest{}
	for i := range hosts {
		req.Series = append(req.Series, &pushv1.RawProfileSeries{
			Labels:  []*typesv1.LabelPair{{Name: "service_name", Value: "wide"}, {Name: "hostname", Value: fmt.Sprintf("h%03d", i)}},
			Samples: []*pushv1.RawSample{{RawProfile: at(int64(i) * 10)}}})
	}
	// A host whose profile ends after the window: listed in the window,
	// counted in none of its points.
	req.Series = append(req.Series, &pushv1.RawProfileSeries{
		Labels:  []*typesv1.LabelPair{{Name: "service_name", Value: "wide"}, {Name: "hostname", Value: "edge"}},
		Samples: []*pushv1.RawSample{{RawProfile: at(1999)}}})
	push := pushv1connect.NewPusherServiceClient(&http.Client{Transport: basicAuth{s.key}}, s.url)
	if _, err := push.Push(ctx, connect.NewRequest(req)); err != nil {
		t.Fatal(err)
	}
	g := s.grafana(s.key)
	const cpu = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
	series := func(step float64, limit int64) (*connect.Response[querierv1.SelectSeriesResponse], error) {
		r := &querierv1.SelectSeriesRequest{ProfileTypeID: cpu, LabelSelector: `{service_name="wide"}`,
			Start: ms, End: ms + 2_000_000, Step: step, GroupBy: []string{"hostname"}}
		if limit > 0 {
			r.Limit = &limit
		}
		return g.SelectSeries(ctx, connect.NewRequest(r))
	}
	// 2,000 s at least 1 s a point: 1,000 points of 2 s.
	_, err = series(1, 0)
	want := fmt.Sprintf("the answer would hold %d series of 1000 points (%d points), more than %d", hosts, hosts*1000, api.MaxSeriesPoints)
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(fmt.Sprint(err), want) ||
		!strings.Contains(err.Error(), "set a limit of at most 100 series") || !strings.Contains(err.Error(), "widen the step to at least") {
		t.Fatalf("%d hosts of 1,000 points: %v; want ResourceExhausted saying %q, a limit and a step", hosts, err, want)
	}
	var step float64
	fmt.Sscanf(err.Error()[strings.Index(err.Error(), "widen the step to at least "):], "widen the step to at least %g s", &step)
	for _, c := range []struct {
		what   string
		step   float64
		limit  int64
		series int
	}{
		{"the limit it names", 1, 100, 100},
		{"the step it names", step, 0, hosts},
		{"an hour's step", 3600, 0, hosts},
	} {
		res, err := series(c.step, c.limit)
		if err != nil {
			t.Fatalf("%s (step %v, limit %d): %v", c.what, c.step, c.limit, err)
		}
		points := 0
		for _, se := range res.Msg.GetSeries() {
			points += len(se.GetPoints())
			if !slices.ContainsFunc(se.GetPoints(), func(p *typesv1.Point) bool { return p.GetValue() != 0 }) {
				t.Errorf("%s: series %v has only zeros", c.what, se.GetLabels())
			}
			if se.GetLabels()[0].GetValue() == "edge" {
				t.Errorf("%s: the edge host has a series", c.what)
			}
		}
		if len(res.Msg.GetSeries()) != c.series || points > api.MaxSeriesPoints {
			t.Errorf("%s: %d series, %d points; want %d series, at most %d points", c.what, len(res.Msg.GetSeries()), points, c.series, api.MaxSeriesPoints)
		}
	}
}
