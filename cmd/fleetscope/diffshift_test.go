package main

import (
	"bufio"
	"context"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// TestDiffParseShift: --a-shift/--b-shift read whole numbers with units
// exactly (a day is 24 h, a week 7 days) and refuse anything else.
func TestDiffParseShift(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"24h": 24 * time.Hour, "1d": 24 * time.Hour, "1w": 7 * 24 * time.Hour, "2w1d": 15 * 24 * time.Hour,
		"1h30m": 90 * time.Minute, "86400s": 24 * time.Hour, "1d1ns": 24*time.Hour + 1,
		"23h59m59s999ms999us999ns": 24*time.Hour - 1, "2µs": 2 * time.Microsecond, "5ms": 5 * time.Millisecond,
		"106751d23h47m16s854ms775us807ns": 1<<63 - 1, "": 0,
	} {
		if got, err := parseShift(in); err != nil || got != want {
			t.Errorf("parseShift(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, says := range map[string]string{
		"-5x": "negative", "-1h": "negative", "0": "zero", "0s": "zero", "0d0h": "zero", "1.5h": "fraction",
		"5": "without a unit", "1x": "unknown unit", "+1h": "not a whole number", "1h ": "not a whole number", "h": "not a whole number",
		"106751d23h47m16s854ms775us808ns": "too long", "99999999999999999999s": "too long",
	} {
		if d, err := parseShift(in); err == nil || !strings.Contains(err.Error(), says) || !strings.Contains(err.Error(), "want a positive duration") {
			t.Errorf("parseShift(%q) = %v, %v; want an error saying %q", in, d, err, says)
		}
	}
}

// TestDiffShift: the same samples recorded on two consecutive days (one
// planted profile stored twice, anchored 24 h apart) diff to equal counts,
// stack by stack, with --a-shift 1d (or 24h, 86400s), for a window whose
// edges sit exactly on samples: the shifted window is [from-D, to-D) to
// the nanosecond, so 1d1ns also matches while 1d-1ns (one sample out at
// from, one in at to) and 1h do not. --b-shift shifts B; given A alone, B
// is A's selection; relative windows shift from one now. A bad shift, or
// a shift of a side that is not a fleet, is a usage error (exit 2).
func TestDiffShift(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	path := plant(t, "--seed", "75", "--seconds", "6") // boot clock, from 51234 s
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := os.ReadFile(gzipFile(t, path)) // the same samples, other bytes: stored again
	if err != nil {
		t.Fatal(err)
	}
	const boot = 51234 * int64(time.Second)
	day1 := time.Unix(1795000000, 250000000)
	day2 := day1.Add(24 * time.Hour)
	ing, _ := s.clients()
	store := func(app string, data []byte, wall time.Time) {
		t.Helper()
		res, err := ing.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Data: data, Metadata: &fsv1.UploadMetadata{App: app, Host: "h1",
			Anchor: &fsv1.ClockAnchor{ClockNanos: boot, WallTime: timestamppb.New(wall)}}}))
		if err != nil || !res.Msg.GetCreated() {
			t.Fatalf("upload anchored at %v: %v (created %v)", wall, err, err == nil && res.Msg.GetCreated())
		}
	}
	store("shift", raw, day1)
	store("shift", gz, day2)

	// The window's edges: two busy samples' own instants on day 2, with
	// different stacks.
	from, to := edgeSamples(t, path, 1500*time.Millisecond, 4*time.Second)
	unix := func(ns int64) string { return fmt.Sprintf("%d.%09d", ns/1e9, ns%1e9) }
	wall := func(clock int64) int64 { return day2.UnixNano() + clock - boot }
	sel := "fleet:app=shift,from=" + unix(wall(from.clock)) + ",to=" + unix(wall(to.clock))
	// Each edge sample's folded stack: the flame graph of its nanosecond.
	stackAt := func(clock int64) string {
		t.Helper()
		one := foldedMap(t, s.mustCLI("flamegraph", "--app", "shift", "--from", unix(wall(clock)), "--to", unix(wall(clock)+1)))
		if len(one) != 1 {
			t.Fatalf("the nanosecond of a sample holds %d stacks", len(one))
		}
		for stack := range one {
			return stack
		}
		return ""
	}
	fromStack, toStack := stackAt(from.clock), stackAt(to.clock)
	if fromStack == toStack {
		t.Fatalf("the edge samples have one stack")
	}

	diff := func(args ...string) (a, b map[string]uint64, out string) {
		t.Helper()
		out = s.mustCLI(append([]string{"diff"}, args...)...)
		a, b = diffColumns(t, out)
		return a, b, out
	}
	a, b, dayBefore := diff("--a-shift", "1d", sel, sel)
	if len(b) == 0 || !maps.Equal(a, b) {
		t.Fatalf("--a-shift 1d: the day before differs from the day (%d vs %d stacks):\n%s", len(a), len(b), dayBefore)
	}
	if want := foldedMap(t, s.mustCLI("flamegraph", "--app", "shift", "--from", unix(wall(from.clock)), "--to", unix(wall(to.clock)))); !maps.Equal(b, want) {
		t.Fatalf("B is not the unshifted window's flame graph")
	}
	var n uint64
	for _, c := range b {
		n += c
	}
	if n < 20 {
		t.Fatalf("the window holds %d samples; want a window that tells shifts apart", n)
	}
	for _, same := range [][]string{
		{"--a-shift", "24h", sel, sel}, {"--a-shift", "86400s", sel, sel}, {"--a-shift", "1d", sel},
		{"--a-shift", "1d1ns", sel}, // [from-1d-1ns, to-1d-1ns): no sample in the nanosecond before either edge
	} {
		if _, _, out := diff(same...); out != dayBefore {
			t.Errorf("diff %v differs from diff --a-shift 1d:\n%s", same, out)
		}
	}
	// One nanosecond short: A loses the sample at from and gains the one
	// at to (half-open, exact).
	a, b, _ = diff("--a-shift", "23h59m59s999ms999us999ns", sel)
	if maps.Equal(a, b) {
		t.Fatalf("--a-shift 1d-1ns: the same counts as the day itself")
	}
	for stack := range b {
		wantA := b[stack]
		if stack == fromStack {
			wantA--
		}
		if stack == toStack {
			wantA++
		}
		if a[stack] != wantA {
			t.Errorf("--a-shift 1d-1ns: %q: A %d, want %d (B %d)", stack, a[stack], wantA, b[stack])
		}
	}
	if a, _, _ := diff("--a-shift", "1h", sel); len(a) != 0 {
		t.Fatalf("--a-shift 1h: A has %d stacks, want an empty window", len(a))
	}
	// --b-shift: B is the day before, A the day: the columns swap.
	if _, _, out := diff("--b-shift", "1d", sel); out != dayBefore {
		t.Fatalf("--b-shift 1d differs from --a-shift 1d though both days match:\n%s", out)
	}
	if a, b, _ := diff("--b-shift", "1h", sel); len(b) != 0 || len(a) == 0 {
		t.Fatalf("--b-shift 1h: %d stacks in A, %d in B; want B empty", len(a), len(b))
	}

	// Relative windows (to= now by default): both sides count back from
	// one now, so the last hour against the same hour a day earlier.
	other := plant(t, "--seed", "76", "--seconds", "3")
	raw, _ = os.ReadFile(other)
	gz, _ = os.ReadFile(gzipFile(t, other))
	recent := time.Now().Add(-30 * time.Minute).Truncate(time.Second)
	store("recent", raw, recent.Add(-24*time.Hour))
	store("recent", gz, recent)
	a, b, _ = diff("--a-shift", "1d", "fleet:app=recent,from=1h")
	if len(b) == 0 || !maps.Equal(a, b) {
		t.Fatalf("--a-shift 1d over the last hour: %d stacks in A, %d in B, equal %v", len(a), len(b), maps.Equal(a, b))
	}

	// Usage errors, before asking the server anything.
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--a-shift", "-5x", sel}, `--a-shift "-5x": negative`},
		{[]string{"--b-shift", "-24h", sel}, `--b-shift "-24h": negative`},
		{[]string{"--a-shift", "0", sel}, `--a-shift "0": zero`},
		{[]string{"--a-shift", "0s", sel}, `--a-shift "0s": zero`},
		{[]string{"--a-shift", "1.5d", sel}, `--a-shift "1.5d": a fraction`},
		{[]string{"--a-shift", "5x", sel}, `--a-shift "5x": unknown unit`},
		{[]string{"--a-shift", "1d", path, sel}, `--a-shift moves a fleet side's window`},
		{[]string{"--b-shift", "1d", sel, "profile:x"}, `--b-shift moves a fleet side's window`},
		{[]string{sel, sel, sel}, "want diff"},
	} {
		out, errOut, code := s.cli(append([]string{"diff"}, c.args...)...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.says) {
			t.Errorf("diff %v: exit %d, stdout %q, stderr %q; want exit 2 saying %q", c.args, code, out, errOut, c.says)
		}
	}
}

// edgeSample is a busy sample: its clock reading and its frames as perf
// printed them.
type edgeSample struct {
	clock  int64
	frames string
}

// edgeSamples reads a planted perf file's busy (not swapper) samples and
// returns the first at or after the first busy sample + lo, and the first
// at or after it + hi with other frames; their clocks are the file's
// microseconds, exactly.
func edgeSamples(t *testing.T, path string, lo, hi time.Duration) (from, to edgeSample) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var samples []edgeSample
	var cur *edgeSample
	var comm string
	var frames []string
	flush := func() {
		if cur != nil && comm != "swapper" {
			cur.frames = comm + "\n" + strings.Join(frames, "\n")
			samples = append(samples, *cur)
		}
		cur, frames = nil, nil
	}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			flush()
		case line[0] == '\t':
			frames = append(frames, strings.TrimSpace(line))
		default:
			flush()
			fs := strings.Fields(line)
			comm = fs[0]
			ts := strings.TrimSuffix(fs[3], ":")
			sec, frac, _ := strings.Cut(ts, ".")
			s, err1 := strconv.ParseInt(sec, 10, 64)
			us, err2 := strconv.ParseInt(frac, 10, 64)
			if err1 != nil || err2 != nil || len(frac) != 6 {
				t.Fatalf("sample line %q", line)
			}
			cur = &edgeSample{clock: s*1e9 + us*1e3}
		}
	}
	flush()
	if len(samples) == 0 {
		t.Fatal("no busy samples")
	}
	start := samples[0].clock
	for _, s := range samples {
		if from.clock == 0 && s.clock >= start+int64(lo) {
			from = s
		}
		if from.clock != 0 && s.clock >= start+int64(hi) && s.frames != from.frames {
			return from, s
		}
	}
	t.Fatal("no edge samples")
	return
}
