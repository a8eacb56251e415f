package perf_test

import (
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/perf"
)

func parse(t *testing.T, text string) (*fleetscope.Profile, []fleetscope.Sample, error) {
	t.Helper()
	var out []fleetscope.Sample
	p, err := perf.Parse(strings.NewReader(text), func(_ *fleetscope.Profile, b []fleetscope.Sample) error {
		out = append(out, b...)
		return nil
	})
	return p, out, err
}

func TestParseEdges(t *testing.T) {
	const two = "# hostname : web-1\n# cmdline : perf record -k CLOCK_REALTIME\n" +
		"V8 WorkerThread 24636/25607 [003] 1795000000.250000: 1000 cpu-clock:pppH: \n\t1 a+0x1 (/x)\n\n" +
		"perf 13741/13741 [000]  9006.401114: sched:sched_switch: prev_comm=perf ==> next_comm=x\n\tffff schedule ([kernel.kallsyms])\n\n"
	p, s, err := parse(t, two)
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 2 || p.Meta["hostname"] != "web-1" {
		t.Fatalf("samples %d, meta %v", len(s), p.Meta)
	}
	if s[0].PID != 24636 || s[0].TID != 25607 || s[0].CPU != 3 || s[0].Period != 1000 || s[0].TimeNanos != 1795000000250000000 {
		t.Errorf("first sample fields: %+v", s[0])
	}
	if got := p.Dict.Events(); len(got) != 2 || got[0] != "cpu-clock:pppH" || got[1] != "sched:sched_switch" {
		t.Errorf("events %q", got)
	}
	root := p.Dict.FrameAt(p.Dict.StackFrames(s[0].Stack)[0]).Name
	if root != "V8_WorkerThread" {
		t.Errorf("root frame %q, want the process name with spaces as underscores", root)
	}

	// A sample cut off by the end of input is dropped with a warning.
	p, s, err = parse(t, "a 1 [000] 1.000000: cpu-clock: \n\tff f (m)\n\nb 2 [000] 1.500000: cpu-clock: \n\tff g (m)\n")
	if err != nil || len(s) != 1 || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "cut off") {
		t.Fatalf("truncated: %d samples, warnings %q, err %v", len(s), p.Warnings, err)
	}

	// Input that is not perf script is refused, naming the line.
	if _, _, err := parse(t, "# comment\n\n{\"traceEvents\": []}\n"); err == nil || !strings.Contains(err.Error(), "line 3: not perf script output") {
		t.Fatalf("JSON input: %v", err)
	}
	if _, _, err := parse(t, ""); err == nil || !strings.Contains(err.Error(), "no samples") {
		t.Fatalf("empty input: %v", err)
	}

	// Samples without timestamps are counted as such.
	p, s, err = parse(t, "func_ab 15294 cpu-clock: \n\t400570 func_b (/f)\n\n")
	if err != nil || len(s) != 1 || p.Untimed != 1 || s[0].TimeNanos != fleetscope.NoTime {
		t.Fatalf("untimed: %+v %v", p, err)
	}
	// Unrecognised lines inside a profile are skipped with a warning.
	p, s, err = parse(t, "a 1 [000] 1.000000: cpu-clock: \n\tff f (m)\n\nnonsense here\n\na 1 [000] 2.000000: cpu-clock: \n\tff f (m)\n\n")
	if err != nil || len(s) != 2 || len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "line 4") {
		t.Fatalf("unrecognised line: %d samples, %q, %v", len(s), p.Warnings, err)
	}
}
