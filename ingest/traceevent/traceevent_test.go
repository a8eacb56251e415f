package traceevent

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/internal/fstest"
)

const chromeTrace = "chromium156-page.trace.json.gz"

// rootOf returns a sample's root frame (its process and thread).
func rootOf(p *fleetscope.Profile, s fleetscope.Sample) string {
	return p.Dict.FrameAt(p.Dict.StackFrames(s.Stack)[0]).Name
}

// TestCorpus: the Chromium trace holds 35,028 CPU samples in two profiles,
// 18,145 of the page's renderer and 16,883 of the WebUI renderer.
func TestCorpus(t *testing.T) {
	data := fstest.Read(t, "corpus", "trace_event", chromeTrace)
	p, all := fstest.Parse(t, Parse, data)
	if len(all) != 35028 || p.Untimed != 0 {
		t.Errorf("%d samples (%d untimed), want 35028 timed", len(all), p.Untimed)
	}
	per := map[string]int{}
	for _, s := range all {
		per[rootOf(p, s)]++
	}
	want := map[string]int{"Renderer[13392]/CrRendererMain": 18145, "WebUI Top Renderer[13381]/CrRendererMain": 16883}
	if fmt.Sprint(per) != fmt.Sprint(want) {
		t.Errorf("samples per profile %v, want %v", per, want)
	}
	if m := p.Meta["profiles"]; m != "Renderer[13392]/CrRendererMain: 18145 samples; WebUI Top Renderer[13381]/CrRendererMain: 16883 samples" {
		t.Errorf(`Meta["profiles"] = %q`, m)
	}
	if len(p.Warnings) > 0 {
		t.Errorf("warnings: %q", p.Warnings)
	}
	// Every event was found (encoding/json counts 158,809).
	if n := p.Meta["trace_events"]; n != "158809" {
		t.Errorf("%s trace events, want 158809", n)
	}
	// Options pick one profile.
	for _, o := range []Options{{PID: "13392"}, {PID: "13381", TID: "13381"}, {TID: "13392"}} {
		op, oall := fstest.Parse(t, o.Parse, data)
		for _, s := range oall {
			if got := fmt.Sprint(s.PID); got != o.PID && o.PID != "" || fmt.Sprint(s.TID) != o.TID && o.TID != "" {
				t.Fatalf("%+v: a sample of pid %d tid %d", o, s.PID, s.TID)
			}
		}
		if n := want[rootOf(op, oall[0])]; n != len(oall) {
			t.Errorf("%+v: %d samples, want %d", o, len(oall), n)
		}
	}
}

// TestPhases: the page's workload runs fib for the first 250 ms of every
// second, then layout, then sorting (from 500 ms on, each sort taking tens
// of ms): its samples' times show it.
func TestPhases(t *testing.T) {
	p, all := fstest.Parse(t, Options{PID: "13392"}.Parse, fstest.Read(t, "corpus", "trace_event", chromeTrace))
	leaf := func(s fleetscope.Sample) string {
		fs := p.Dict.StackFrames(s.Stack)
		return p.Dict.FrameAt(fs[len(fs)-1]).Name
	}
	start := int64(fleetscope.NoTime)
	var fibIn, fibAll, sortIn, sortAll int
	for _, s := range all {
		stack := fstest.StackText(p.Dict, s.Stack)
		switch {
		case leaf(s) == "fib" || strings.Contains(stack, ";tick;fib"):
			if start == fleetscope.NoTime {
				start = s.TimeNanos // the workload's first tick
			}
			fibAll++
			if (s.TimeNanos-start)%1e9 < 270e6 {
				fibIn++
			}
		case strings.Contains(stack, ";sortMany") && start != fleetscope.NoTime:
			sortAll++
			// A sort started late in a second may run on into the next.
			if off := (s.TimeNanos - start) % 1e9; off >= 480e6 || off < 80e6 {
				sortIn++
			}
		}
	}
	t.Logf("fib: %d of %d samples in [0, 270 ms) of its seconds; sortMany: %d of %d in [480, 1080 ms)", fibIn, fibAll, sortIn, sortAll)
	if fibAll < 100 || sortAll < 100 || fibIn*100 < fibAll*95 || sortIn*100 < sortAll*95 {
		t.Errorf("the phases do not show in the sample times")
	}
}

// TestShapes: arrays with and without the closing bracket, metadata
// after the samples, the old CpuProfile event, chunks without Profile.
func TestShapes(t *testing.T) {
	const (
		meta    = `{"ph":"M","name":"process_name","pid":7,"tid":0,"args":{"name":"Browser"}},{"ph":"M","name":"thread_name","pid":7,"tid":9,"args":{"name":"Worker"}}`
		profile = `{"ph":"P","name":"Profile","id":"0x2","pid":7,"tid":9,"ts":5,"args":{"data":{"startTime":1000}}}`
		chunk1  = `{"ph":"P","name":"ProfileChunk","id":"0x2","pid":7,"tid":11,"ts":6,"args":{"data":{"cpuProfile":{"nodes":[{"id":1,"callFrame":{"functionName":"(root)"}},{"id":2,"parent":1,"callFrame":{"functionName":"main"}}],"samples":[2,2]},"timeDeltas":[10,5]}}}`
		chunk2  = `{"ph":"P","name":"ProfileChunk","id":"0x2","pid":7,"tid":11,"ts":7,"args":{"data":{"cpuProfile":{"nodes":[{"id":3,"parent":2,"callFrame":{"functionName":""}}],"samples":[3,1]},"timeDeltas":[1,-2]}}}`
	)
	want := "Browser[7]/Worker[9];(root);main 2|Browser[7]/Worker[9];(root);main;(anonymous) 1|Browser[7]/Worker[9];(root) 1"
	for name, in := range map[string]string{
		"object":      `{"traceEvents":[` + meta + "," + profile + "," + chunk1 + "," + chunk2 + `],"metadata":{"x":[1,{"y":2}]}}`,
		"meta last":   `{"otherData":{},"traceEvents":[` + profile + "," + chunk1 + "," + chunk2 + "," + meta + `]}`,
		"array":       "[" + meta + "," + profile + "," + chunk1 + "," + chunk2 + "]",
		"open array":  "[" + meta + "," + profile + "," + chunk1 + "," + chunk2 + ",\n",
		"open array2": "[" + meta + "," + profile + "," + chunk1 + "," + chunk2,
	} {
		t.Run(name, func(t *testing.T) {
			if c := Detect([]byte(in)); c < 80 {
				t.Errorf("Detect = %d", c)
			}
			p, all := fstest.Parse(t, Parse, []byte(in))
			got := fstest.Folded(p, all, "", true, false)
			if w := slices.Sorted(slices.Values(strings.Split(want, "|"))); !slices.Equal(got, w) {
				t.Errorf("folded %q\nwant %q", got, w)
			}
			times := []int64{1010, 1015, 1016, 1014}
			for i, s := range all {
				if s.TimeNanos != times[i]*1000 || s.PID != 7 || s.TID != 9 {
					t.Errorf("sample %d: time %d pid %d tid %d, want %d µs pid 7 tid 9", i, s.TimeNanos, s.PID, s.TID, times[i])
				}
			}
		})
	}
	// A trace cut off inside its last event: that event is left out.
	cut := "[" + meta + "," + profile + "," + chunk1 + "," + chunk2 + `,{"ph":"X","name":"Paint","args":{"da`
	p, all := fstest.Parse(t, Parse, []byte(cut))
	if len(all) != 4 || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "ends inside event 5") {
		t.Errorf("cut off: %d samples, warnings %q", len(all), p.Warnings)
	}
	old := `[{"ph":"I","name":"CpuProfile","pid":3,"tid":4,"ts":1,"args":{"data":{"cpuProfile":{"nodes":[{"id":1,"callFrame":{"functionName":"(root)"},"children":[2]},{"id":2,"callFrame":{"functionName":"(idle)"}}],"samples":[2,2,2],"startTime":50,"timeDeltas":[1,1,1]}}}}]`
	p, all = fstest.Parse(t, Parse, []byte(old))
	if got := fstest.Folded(p, all, "", true, false); len(got) != 1 || got[0] != "process[3]/thread[4];(root);(idle) 3" || !p.Dict.Idle(all[0].Stack) {
		t.Errorf("CpuProfile event: %q (idle %v)", got, p.Dict.Idle(all[0].Stack))
	}
}

// TestErrors: bad input gets EINVALID naming where.
func TestErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"traceEvents":[{"ph":"X","name":"a","pid":1,"tid":1,"ts":1}]}`, "no CPU samples"},
		{`{"foo":1}`, `without "traceEvents"`},
		{`{"traceEvents":[{"ph":"P","name":"ProfileChunk","pid":1,"args":{"data":{"cpuProfile":{"samples":[1,2]},"timeDeltas":[1]}}}]}`, "1 time deltas for 2 samples"},
		{`{"traceEvents":[{"ph":"P","name":"ProfileChunk","pid":1,"args":{"data":{"cpuProfile":{"samples":"x"}}}}]}`, "event 0 (ProfileChunk, byte 16)"},
		{`{"traceEvents":[{"ph":"X",`, "ends at byte"},
		{`[1,2,3]`, "event 0 (byte 1)"},
		{`"just a string"`, "not a JSON array or object"},
		{`{"traceEvents":[]} trailing`, ""},
	} {
		_, err := Parse(strings.NewReader(tc.in), func(*fleetscope.Profile, []fleetscope.Sample) error { return nil })
		if err == nil || fleetscope.ErrorCode(err) != fleetscope.EINVALID || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want EINVALID with %q", tc.in, err, tc.want)
		}
	}
	// Samples of nodes never defined are left out with a warning.
	in := `[{"ph":"P","name":"Profile","id":"1","pid":1,"tid":1,"args":{"data":{"startTime":0}}},{"ph":"P","name":"ProfileChunk","id":"1","pid":1,"tid":2,"args":{"data":{"cpuProfile":{"nodes":[{"id":1,"callFrame":{"functionName":"(root)"}}],"samples":[1,5]},"timeDeltas":[1,1]}}}]`
	p, all := fstest.Parse(t, Parse, []byte(in))
	if len(all) != 1 || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "1 samples of nodes the trace does not define") {
		t.Errorf("%d samples, warnings %q", len(all), p.Warnings)
	}
}

// TestDetect: traces are recognised, other JSON is not.
func TestDetect(t *testing.T) {
	for in, want := range map[string]bool{
		`{"traceEvents":[`:                           true,
		` {"displayTimeUnit":"ns","traceEvents":[]}`: true,
		`[{"name":"a","ph":"X","ts":1,"pid":1}`:      true,
		`[{"ph":"B","pid":1,"tid":1,"ts":0},`:        true,
		`{"nodes":[{"id":1,"callFrame":{}}]}`:        false,
		`[1,2,3]`:                                    false,
		`[{"name":"x","value":3}]`:                   false,
		`{"traceEvents":3}`:                          false,
		``:                                           false,
	} {
		if got := Detect([]byte(in)) > 0; got != want {
			t.Errorf("Detect(%s) = %v, want %v", in, got, want)
		}
	}
}
