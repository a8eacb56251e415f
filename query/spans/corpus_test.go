package spans_test

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/query/spans"
)

// reqsim is the corpus's uprobe recording; its README gives the reference:
// 2,202 requests, latency p50 686 µs, p90 3,857 µs, p95 4,002 µs, p99
// 4,159 µs.
const reqsim = "corpus/perf/recorded-perf-uprobe-reqsim.txt"

// loadShared parses a file of the shared corpus (given relative to it),
// skipping the test when it is absent (failing instead when
// FLEETSCOPE_TEST_REQUIRE=1).
func loadShared(tb testing.TB, path string) (*fleetscope.Profile, []fleetscope.Sample) {
	tb.Helper()
	f, err := os.Open(corpus.Path(tb, path))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var samples []fleetscope.Sample
	p, err := ingest.Parse(f, "", 0, func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
		samples = append(samples, batch...)
		return nil
	})
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return p, samples
}

func reqsimSpans(tb testing.TB) (*fleetscope.Profile, []fleetscope.Sample, *spans.Set) {
	tb.Helper()
	p, samples := loadShared(tb, reqsim)
	pair, err := spans.FindPair(p.Dict.Events(), "", "")
	if err != nil {
		tb.Fatal(err)
	}
	if pair.EntryName != "probe_reqsim:handle_request" || pair.ReturnName != "probe_reqsim:handle_request__return" {
		tb.Fatalf("detected pair %q / %q", pair.EntryName, pair.ReturnName)
	}
	return p, samples, spans.Match(samples, pair, p.Dict)
}

func TestReferenceLatency(t *testing.T) {
	_, _, set := reqsimSpans(t)
	if len(set.Spans) != 2202 {
		t.Errorf("%d spans, want 2202 requests", len(set.Spans))
	}
	t.Logf("%d spans on %d threads; unmatched: %d entries, %d returns", len(set.Spans), set.Threads(), set.UnmatchedEntries, set.UnmatchedReturns)
	for _, ref := range []struct {
		p      float64
		micros float64
	}{{50, 686}, {90, 3857}, {95, 4002}, {99, 4159}} {
		got := float64(set.PercentileNanos(ref.p)) / 1e3
		t.Logf("p%v = %v µs (reference %v µs)", ref.p, got, ref.micros)
		if math.Abs(got-ref.micros) > 0.02*ref.micros {
			t.Errorf("p%v = %v µs, want %v µs within 2 %%", ref.p, got, ref.micros)
		}
	}
}

// TestReferenceSelection checks Select on the real file against a
// straightforward count: every cpu-clock sample against every span.
func TestReferenceSelection(t *testing.T) {
	p, samples, set := reqsimSpans(t)
	cpu, ok := p.Dict.EventID("cpu-clock")
	if !ok {
		t.Fatalf("no cpu-clock among %v", p.Dict.Events())
	}
	for _, sp := range set.Spans {
		if sp.Depth != 0 {
			t.Fatalf("nested span %v: handle_request does not recurse", sp)
		}
	}
	// The p95 threshold, worked out here: the sorted durations at index
	// floor((n-1)·0.95).
	var ds []int64
	for _, sp := range set.Spans {
		ds = append(ds, sp.DurationNanos())
	}
	slices.Sort(ds)
	p95 := ds[(len(ds)-1)*95/100]
	slow := set.Select(mustCondition(t, "slower:p95"))
	fast := set.Select(mustCondition(t, "faster:p95"))
	if slow.ThresholdNanos() != p95 || fast.ThresholdNanos() != p95 {
		t.Fatalf("thresholds %d, %d; want %d", slow.ThresholdNanos(), fast.ThresholdNanos(), p95)
	}
	inside := func(s *fleetscope.Sample, keep func(d int64) bool) bool {
		for _, sp := range set.Spans {
			if sp.TID == s.TID && sp.StartNanos <= s.TimeNanos && s.TimeNanos < sp.EndNanos && keep(sp.DurationNanos()) {
				return true
			}
		}
		return false
	}
	var wantSlow, wantFast, wantAny, gotSlow, gotFast, cpuSamples int
	for i := range samples {
		s := &samples[i]
		if s.Event == cpu {
			cpuSamples++
			if inside(s, func(d int64) bool { return d > p95 }) {
				wantSlow++
			}
			if inside(s, func(d int64) bool { return d <= p95 }) {
				wantFast++
			}
			if inside(s, func(int64) bool { return true }) {
				wantAny++
			}
		}
		if slow.Keep(s) {
			if s.Event != cpu {
				t.Fatalf("kept a %s sample", p.Dict.Events()[s.Event])
			}
			gotSlow++
		}
		if fast.Keep(s) {
			gotFast++
		}
	}
	t.Logf("%d cpu-clock samples: %d inside spans, %d inside slower:p95 (%d spans), %d inside faster:p95", cpuSamples, wantAny, wantSlow, slow.Spans(), wantFast)
	if wantSlow == 0 || wantFast == 0 {
		t.Fatalf("degenerate reference counts: slow %d, fast %d", wantSlow, wantFast)
	}
	if gotSlow != wantSlow || gotFast != wantFast {
		t.Errorf("kept slower %d, faster %d; counted %d, %d", gotSlow, gotFast, wantSlow, wantFast)
	}
	if gotSlow+gotFast != wantAny {
		t.Errorf("slower %d + faster %d != %d samples inside any span", gotSlow, gotFast, wantAny)
	}
	if n := slow.Spans() + fast.Spans(); n != len(set.Spans) {
		t.Errorf("%d + %d selected spans != %d", slow.Spans(), fast.Spans(), len(set.Spans))
	}
}

// BenchmarkConditioned measures Selector.Keep over every sample of a
// profile: the corpus file (7,473 samples), and a synthetic fleet-sized one
// (200 threads making calls back to back for 60 s, about 4M spans, so 8M
// probe events, plus 1M cpu samples at random threads and times).
func BenchmarkConditioned(b *testing.B) {
	b.Run("reqsim", func(b *testing.B) {
		_, samples, set := reqsimSpans(b)
		benchKeep(b, set.Select(mustCondition(b, "slower:p95")), samples)
	})
	b.Run("synthetic", func(b *testing.B) {
		f := synthetic()
		set := spans.Match(f.samples, f.pair, f.d)
		benchKeep(b, set.Select(mustCondition(b, "slower:p95")), f.samples)
	})
}

// BenchmarkMatch pairs the synthetic profile's probe events.
func BenchmarkMatch(b *testing.B) {
	f := synthetic()
	b.ResetTimer()
	for b.Loop() {
		spans.Match(f.samples, f.pair, f.d)
	}
	b.ReportMetric(float64(len(f.samples))*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}

func synthetic() *fixture {
	f := newFixture()
	r := rand.New(rand.NewPCG(1, 2))
	const threads = 200
	for tid := range int32(threads) {
		for t := int64(0); t < 60_000_000; { // 60 s of calls, in µs
			d := 100 + r.Int64N(5000)
			f.entry(tid, t, 3)
			f.ret(tid, t+d, 2)
			t += d + r.Int64N(500)
		}
	}
	for range 1_000_000 {
		f.sample(r.Int32N(threads), r.Int64N(60_000_000))
	}
	return f
}

func benchKeep(b *testing.B, sel *spans.Selector, samples []fleetscope.Sample) {
	b.ResetTimer()
	kept := 0
	for b.Loop() {
		kept = 0
		for i := range samples {
			if sel.Keep(&samples[i]) {
				kept++
			}
		}
	}
	b.ReportMetric(float64(len(samples))*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
	b.ReportMetric(float64(kept), "kept")
}
