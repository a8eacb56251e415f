package main

import (
	"encoding/json"
	"maps"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/query/flame"
	"github.com/fleetscope/fleetscope/query/spans"
)

// TestSpansJSON: spans --json on the uprobe recording matches the corpus
// README: 2,202 requests, p50 686 µs, p90 3,857 µs, p95 4,002 µs, p99
// 4,159 µs (within 2 %).
func TestSpansJSON(t *testing.T) {
	file := corpus.Path(t, "corpus/perf/recorded-perf-uprobe-reqsim.txt")
	for _, flags := range [][]string{
		{"--json"},
		{"--json", "--entry", "probe_reqsim:handle_request", "--return", "probe_reqsim:handle_request__return"},
		{"--json", "--input-format", "perf"},
	} {
		out := local(t, append(append([]string{"spans"}, flags...), file)...)
		var got map[string]any
		dec := json.NewDecoder(strings.NewReader(out))
		dec.UseNumber()
		if err := dec.Decode(&got); err != nil {
			t.Fatalf("%v: not JSON: %v: %q", flags, err, out)
		}
		num := func(key string) float64 {
			v, ok := got[key].(json.Number)
			if !ok {
				t.Fatalf("%v: key %q is %#v, want a number, in %s", flags, key, got[key], out)
			}
			f, _ := v.Float64()
			return f
		}
		if n := num("spans"); n != 2202 {
			t.Errorf("%v: spans %v, want 2202", flags, n)
		}
		if strings.Contains(got["unmatched"].(json.Number).String(), ".") {
			t.Errorf("%v: unmatched %v is not an int", flags, got["unmatched"])
		}
		for key, ref := range map[string]float64{"p50Micros": 686, "p90Micros": 3857, "p95Micros": 4002, "p99Micros": 4159} {
			if v := num(key); math.Abs(v-ref) > 0.02*ref {
				t.Errorf("%v: %s %v, want %v within 2 %%", flags, key, v, ref)
			}
		}
	}
}

// TestSpansText: the human summary and the errors.
func TestSpansText(t *testing.T) {
	file := corpus.Path(t, "corpus/perf/recorded-perf-uprobe-reqsim.txt")
	out := local(t, "spans", file)
	for _, want := range []string{"2202 spans from probe_reqsim:handle_request to probe_reqsim:handle_request__return", "p95 4002 µs", "|#"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	noProbes := corpus.Path(t, "corpus/perf/recorded-perf-realtime-2events.txt")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"spans", noProbes}, 1, `no entry/return event pair (F and F__return) among the events "context-switches", "cpu-clock"`},
		{[]string{"spans", "--entry", "nope", "--return", "probe_reqsim:handle_request__return", file}, 1, `no entry event "nope" among the events`},
		{[]string{"spans"}, 2, "give either FILE or --profile ID"},
		{[]string{"spans", "--input-format", "nope", file}, 2, "unknown input format"},
		{[]string{"spans", "--bogus", file}, 2, "unknown flag"},
	} {
		_, errOut, code := run1(nil, tc.args...)
		line, rest, _ := strings.Cut(errOut, "\n")
		if code != tc.code || rest != "" || !strings.HasPrefix(line, "fleetscope: ") || !strings.Contains(line, tc.msg) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line with %q", tc.args, code, errOut, tc.code, tc.msg)
		}
	}
}

// TestSpansConditionedFlameGraphs: flame graphs, heatmaps and diffs
// conditioned on spans, for the uprobe recording stored and as a file,
// equal what the spans package selects from the file's samples in file
// order (the sampling event's samples inside the selected outermost spans
// on their thread); slower:p95 and faster:p95 split the samples inside
// spans; spans --profile equals spans FILE.
func TestSpansConditionedFlameGraphs(t *testing.T) {
	s := startService(t, serviceOpts{})
	file := corpus.Path(t, "corpus/perf/recorded-perf-uprobe-reqsim.txt")
	id := s.upload(file)
	if got, want := s.mustCLI("spans", "--json", "--profile", id), local(t, "spans", "--json", file); got != want {
		t.Fatalf("spans --profile %s\nspans FILE %s", got, want)
	}

	// The reference: the spans package over the file's samples in file
	// order, the sampling event's samples kept by the selector.
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var samples []fleetscope.Sample
	prof, err := ingest.Parse(f, "", 0, func(_ *fleetscope.Profile, b []fleetscope.Sample) error {
		samples = append(samples, b...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pair, err := spans.FindPair(prof.Dict.Events(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	set := spans.Match(samples, pair, prof.Dict)
	sampling, err := fleetscope.ResolveEvent(prof.Dict.Events(), "cpu-clock")
	if err != nil {
		t.Fatal(err)
	}
	want := func(cond string) map[string]uint64 {
		c, err := spans.ParseCondition(cond)
		if err != nil {
			t.Fatal(err)
		}
		sel := set.Select(c)
		counts := &flame.Counts{}
		for i := range samples {
			if smp := &samples[i]; smp.Event == sampling && sel.Keep(smp) {
				counts.AddStack(smp.Stack, 1)
			}
		}
		return flame.Folded(prof.Dict, counts, flame.Annotate{})
	}
	inside := map[string]uint64{}
	for _, cond := range []string{"slower:p95", "faster:p95", "slower:2ms", "faster:500us"} {
		ref := want(cond)
		for _, where := range [][]string{{file}, {"--profile", id}} {
			args := append([]string{"flamegraph", "--include-idle", "--event", "cpu-clock", "--in-spans", cond}, where...)
			got := foldedMap(t, s.mustCLI(args...))
			if !maps.Equal(got, ref) || len(ref) == 0 {
				t.Fatalf("%v: %d stacks, the spans package over the file selects %d", args, len(got), len(ref))
			}
			var h heatmapJSON
			json.Unmarshal([]byte(s.mustCLI(append([]string{"heatmap", "--json", "--include-idle", "--event", "cpu-clock", "--in-spans", cond}, where...)...)), &h)
			var total uint64
			for _, n := range ref {
				total += n
			}
			if uint64(h.Total) != total {
				t.Fatalf("%v: heatmap total %d, flame graph %d", where, h.Total, total)
			}
		}
		if strings.HasSuffix(cond, "p95") {
			for k, v := range ref {
				inside[k] += v
			}
		}
	}
	// slower:p95 and faster:p95 together: every sampling sample inside an
	// outermost span.
	all := &flame.Counts{}
	for i := range samples {
		smp := &samples[i]
		if smp.Event != sampling {
			continue
		}
		for _, sp := range set.Spans {
			if sp.Depth == 0 && sp.TID == smp.TID && smp.TimeNanos >= sp.StartNanos && smp.TimeNanos < sp.EndNanos {
				all.AddStack(smp.Stack, 1)
				break
			}
		}
	}
	if !maps.Equal(inside, flame.Folded(prof.Dict, all, flame.Annotate{})) {
		t.Fatalf("slower:p95 and faster:p95 do not split the samples inside spans")
	}
	// "Slow requests against the rest" is one diff.
	a, b := diffColumns(t, s.mustCLI("diff", "--include-idle", "--event", "cpu-clock", "--a-spans", "faster:p95", "--b-spans", "slower:p95", "profile:"+id, file))
	if !maps.Equal(a, want("faster:p95")) || !maps.Equal(b, want("slower:p95")) {
		t.Fatalf("diff --a-spans faster:p95 --b-spans slower:p95: columns differ from the conditioned flame graphs")
	}
	// Fleets are refused, as is a bad condition.
	if _, errOut, code := s.cli("flamegraph", "--in-spans", "slower:p95", "--app", "test", "--from", "1h"); code != 1 || !strings.Contains(errOut, "one profile") {
		t.Fatalf("a fleet with --in-spans: exit %d: %s", code, errOut)
	}
	if _, errOut, code := s.cli("flamegraph", "--in-spans", "slowest:p95", file); code != 2 || !strings.Contains(errOut, "slowest") {
		t.Fatalf("a bad condition: exit %d: %s", code, errOut)
	}
}
