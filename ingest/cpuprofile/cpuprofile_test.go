package cpuprofile

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/internal/fstest"
)

// TestCorpus: node20-phases.cpuprofile has 2,381 samples, 13 of them
// (idle) or (program); times are startTime plus the running time deltas.
func TestCorpus(t *testing.T) {
	data := fstest.Read(t, "corpus", "cpuprofile", "node20-phases.cpuprofile")
	p, all := fstest.Parse(t, Parse, data)
	var raw struct {
		StartTime  int64   `json:"startTime"`
		TimeDeltas []int64 `json:"timeDeltas"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	idle := 0
	now := raw.StartTime
	for i, s := range all {
		now += raw.TimeDeltas[i]
		if s.TimeNanos != now*1000 {
			t.Fatalf("sample %d at %d ns, want %d µs", i, s.TimeNanos, now)
		}
		if p.Dict.Idle(s.Stack) {
			idle++
		}
		if root := p.Dict.FrameAt(p.Dict.StackFrames(s.Stack)[0]).Name; root != Process {
			t.Fatalf("sample %d: root %q", i, root)
		}
	}
	if len(all) != 2381 || idle != 13 || p.Untimed != 0 {
		t.Errorf("%d samples, %d idle, %d untimed; want 2381, 13, 0", len(all), idle, p.Untimed)
	}
}

// TestPhases: the workload runs fib for the first 200 ms of each second
// (from its start), then sorts (a sort started before 600 ms may run on
// to the end of the second), then does JSON: the times show it.
func TestPhases(t *testing.T) {
	p, all := fstest.Parse(t, Parse, fstest.Read(t, "corpus", "cpuprofile", "node20-phases.cpuprofile"))
	start := int64(fleetscope.NoTime)
	in, n := map[string]int{}, map[string]int{}
	window := map[string][2]int64{"fib": {0, 220e6}, "sortMany": {180e6, 1000e6}, "jsonRound": {580e6, 1020e6}}
	for _, s := range all {
		stack := fstest.StackText(p.Dict, s.Stack)
		for fn, w := range window {
			if !strings.Contains(stack, ";"+fn) {
				continue
			}
			if start == fleetscope.NoTime {
				if fn != "fib" {
					break
				}
				start = s.TimeNanos
			}
			n[fn]++
			off := (s.TimeNanos - start) % 1e9
			if off >= w[0] && off < w[1] || off+1e9 < w[1] {
				in[fn]++
			}
		}
	}
	for fn := range window {
		t.Logf("%s: %d of %d samples in its phase", fn, in[fn], n[fn])
		if n[fn] < 100 || in[fn]*100 < n[fn]*95 {
			t.Errorf("%s: %d of %d samples in its phase", fn, in[fn], n[fn])
		}
	}
}

// TestShapes: nodes with parent links instead of children, fields in any
// order, fractional times, no time deltas.
func TestShapes(t *testing.T) {
	in := `{"samples":[3,2,3],"timeDeltas":[1.5,2,0.25],"startTime":100,"endTime":200,"nodes":[
		{"id":3,"callFrame":{"functionName":"leaf","url":"x.js"},"parent":2},
		{"id":1,"callFrame":{"functionName":"(root)"}},
		{"id":2,"callFrame":{"functionName":""},"parent":1}]}`
	if Detect([]byte(in)) == 0 {
		t.Errorf("Detect = 0")
	}
	p, all := fstest.Parse(t, Parse, []byte(in))
	if got := strings.Join(fstest.Folded(p, all, "", true, false), "|"); got != "(root);(root);(anonymous) 1|(root);(root);(anonymous);leaf 2" {
		t.Errorf("folded %s", got)
	}
	for i, want := range []int64{101500, 103500, 103750} {
		if all[i].TimeNanos != want {
			t.Errorf("sample %d at %d ns, want %d", i, all[i].TimeNanos, want)
		}
	}
	p, all = fstest.Parse(t, Parse, []byte(`{"nodes":[{"id":1,"callFrame":{"functionName":"(root)"}}],"samples":[1]}`))
	if p.Untimed != 1 || len(p.Warnings) != 1 {
		t.Errorf("no timeDeltas: %d untimed, warnings %q", p.Untimed, p.Warnings)
	}
}

// TestErrors: bad input gets EINVALID naming the field or offset.
func TestErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`[]`, `expected the profile object, found "["`},
		{`{"nodes":[],"samples":[]}`, "no samples"},
		{`{"samples":[1]}`, `no "nodes"`},
		{`{"nodes":[{"id":1,"callFrame":{}}],"samples":[2],"timeDeltas":[1]}`, "samples[0]: sample of unknown node 2"},
		{`{"nodes":[{"id":1,"callFrame":{}}],"samples":[1,1],"timeDeltas":[1]}`, `1 "timeDeltas" for 2 "samples"`},
		{`{"nodes":[{"id":1,"callFrame":{}},{"id":1,"callFrame":{}}],"samples":[1]}`, "nodes[1]: node id 1 appears twice"},
		{`{"nodes":[{"id":1,"callFrame":{},"parent":2},{"id":2,"callFrame":{},"parent":1}],"samples":[1]}`, "cycle"},
		{`{"nodes":[{"id":"x"}]}`, "nodes[0]: byte"},
		{`{"nodes":[{"id":1,"callFrame":{}}],"samples":[1],"timeDeltas":[1e300]}`, "timeDeltas"},
		{`{"nodes":[`, "ends at byte"},
	} {
		_, err := Parse(strings.NewReader(tc.in), func(*fleetscope.Profile, []fleetscope.Sample) error { return nil })
		code := fleetscope.EINVALID
		if tc.want == "no samples" {
			code = fleetscope.EEMPTY // well formed, nothing in it
		}
		if err == nil || fleetscope.ErrorCode(err) != code || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %s with %q", tc.in, err, code, tc.want)
		}
	}
}

// TestDetect: .cpuprofile JSON is recognised, other JSON is not.
func TestDetect(t *testing.T) {
	for in, want := range map[string]bool{
		`{"nodes":[{"id":1,"callFrame":{"functionName":"(root)"`: true,
		`{"startTime":1,"endTime":2,"nodes":[`:                   true,
		`{"samples":[1],"timeDeltas":[1]}`:                       true,
		`{"traceEvents":[]}`:                                     false,
		`{"name":"x","nodes":[]}`:                                false,
		`{"startTime":1}`:                                        false,
		`[{"nodes":[]}]`:                                         false,
		`nodes`:                                                  false,
	} {
		if got := Detect([]byte(in)) > 0; got != want {
			t.Errorf("Detect(%s) = %v, want %v", in, got, want)
		}
	}
}
