package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope/ingest/corpus"
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
		{[]string{"spans"}, 2, "want spans"},
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
