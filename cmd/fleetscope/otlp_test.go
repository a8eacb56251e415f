package main

import (
	"context"
	"encoding/json"
	"os"
	"strconv"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"fmt"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// otlpFolded reads folded flame graph text into stack → count; with
// unsymbolized, a frame "BINARY+0xADDR" (an OTLP location without a
// function) reads as perf's "[BINARY]".
func otlpFolded(text string, unsymbolized bool) map[string]int64 {
	out := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		var n int64
		fmt.Sscan(line[i+1:], &n)
		stack := line[:i]
		if unsymbolized {
			stack = binaryAddr.ReplaceAllString(stack, "[$1]")
		}
		out[stack] += n
	}
	return out
}

var binaryAddr = regexp.MustCompile(`([^;\[\]]+)\+0x[0-9a-f]+`)

// otlpRecordings are the recordings the equality test sends: wall-clock
// ones as they are, boot-clock ones placed by an anchor (the perf upload)
// and shifted by as much (the OTLP exports, which carry Unix time). The
// second crosses a 5 s boundary and a minute: two exports, two streams.
var otlpRecordings = []struct {
	name     string
	path     string
	shift    time.Duration // boot clock + shift = wall clock
	events   []string
	from, to float64 // the heatmap's window, Unix seconds
	ranges   [][2]float64
	streams  int
}{
	{"realtime", "../../../shared/corpus/perf/recorded-perf-realtime-2events.txt", 0, []string{"cpu-clock", "context-switches"},
		1795362890, 1795362900, [][2]float64{{1795362890, 1795362900}, {1795362896, 1795362897}, {1795362897.02, 1795362897.5}, {1795362896.61, 1795362896.62}, {1795362898.3, 1795362899}}, 1},
	{"uprobe", "../../../shared/corpus/perf/recorded-perf-uprobe-reqsim.txt", (1795000080 - 9045) * time.Second, []string{"cpu-clock", "probe_reqsim:handle_request"},
		1795000075, 1795000085, [][2]float64{{1795000075, 1795000085}, {1795000079.5, 1795000080.5}, {1795000080, 1795000081}, {1795000078.74, 1795000078.76}, {1795000081.2, 1795000081.7}}, 2},
}

// TestOTLPEqualsPerf: real perf recordings converted into what the
// OpenTelemetry eBPF profiler exports (a ProfilesData per 5 s, a shared
// dictionary, per-sample timestamps), sent with the Collector's own gRPC
// client and as its otlphttp exporter posts (protobuf, gzip), each export
// twice (a Collector retry): the fleet heatmap and the range flame graphs
// of the OTLP streams equal those of the perf upload of the same
// recording, cell for cell, for each event, at once (the streams'
// segments) and after the streams have ended (one profile a host-minute).
// Frames without a function read "BINARY+0xADDR" where perf says
// "[BINARY]": the comparison reads one as the other.
func TestOTLPEqualsPerf(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_LIVE_IDLE_TIMEOUT=20s"}})
	ing, _ := s.clients()
	ctx := context.Background()
	for _, rec := range otlpRecordings {
		perfApp, otlpApp := "perf-"+rec.name, "otlp-"+rec.name
		raw, err := os.ReadFile(rec.path)
		if err != nil {
			t.Fatal(err)
		}
		md := &fsv1.UploadMetadata{App: perfApp, Host: "h1"}
		if rec.shift != 0 {
			md.Anchor = &fsv1.ClockAnchor{ClockNanos: 0, WallTime: timestamppb.New(time.Unix(0, int64(rec.shift)))}
		}
		if _, err := ing.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Data: raw, Metadata: md})); err != nil {
			t.Fatal(err)
		}
		exports := perfToOTLP(t, rec.path, rec.shift, otlpApp, "h1")
		start := time.Now()
		for i, pd := range exports {
			for try := range 2 {
				if (i+try)%2 == 0 {
					resp, err := s.otlpGRPC(t, s.key, "", pd)
					if err != nil || resp.PartialSuccess().RejectedProfiles() != 0 {
						t.Fatalf("%s: export %d over gRPC: %v %v", rec.name, i, err, resp.PartialSuccess().ErrorMessage())
					}
				} else if code, body, _ := s.otlpHTTP(t, s.key, nil, marshalOTLP(t, pd)); code != 200 {
					t.Fatalf("%s: export %d over HTTP: %d %q", rec.name, i, code, body)
				}
			}
		}
		t.Logf("%s: %d exports sent twice each in %v", rec.name, len(exports), time.Since(start))
		otlpCompare(t, s, rec.name+", the streams' segments", perfApp, otlpApp, rec.events, rec.from, rec.to, rec.ranges)
		if segs := s.search(otlpApp); len(segs) != len(exports) {
			t.Fatalf("%s: %d segments for %d exports sent twice each: a retry counted again", rec.name, len(segs), len(exports))
		}
	}
	for _, rec := range otlpRecordings {
		otlpApp := "otlp-" + rec.name
		waitUntil(t, rec.name+"'s streams ended", func() bool {
			ps := s.search(otlpApp)
			for _, p := range ps {
				if p.GetLabels()["live"] != "" {
					return false
				}
			}
			return len(ps) == rec.streams
		})
		otlpCompare(t, s, rec.name+", the ended streams", "perf-"+rec.name, otlpApp, rec.events, rec.from, rec.to, rec.ranges)
	}
}

// otlpCompare requires the OTLP app's heatmap and range flame graphs of
// each event to equal the perf app's.
func otlpCompare(t *testing.T, s *service, when, perfApp, otlpApp string, events []string, from, to float64, ranges [][2]float64) {
	t.Helper()
	sec := func(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
	for _, event := range events {
		heat := func(app string) heatmapJSON {
			var h heatmapJSON
			out := s.mustCLI("heatmap", "--json", "--app", app, "--event", event, "--from", sec(from), "--to", sec(to))
			if err := json.Unmarshal([]byte(out), &h); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			return h
		}
		want, got := heat(perfApp), heat(otlpApp)
		if want.Total == 0 || got.Total != want.Total || got.StartSecond != want.StartSecond || fmt.Sprint(got.Columns) != fmt.Sprint(want.Columns) {
			t.Fatalf("%s, %s: the OTLP heatmap (total %d) differs from the perf upload's (total %d)", when, event, got.Total, want.Total)
		}
		nonEmpty := 0
		for _, r := range ranges {
			fg := func(app string) string {
				out, _, _ := s.cli("flamegraph", "--app", app, "--event", event, "--from", sec(r[0]), "--to", sec(r[1]))
				return out
			}
			w, g := otlpFolded(fg(perfApp), false), otlpFolded(fg(otlpApp), true)
			if len(w) > 0 {
				nonEmpty++
			}
			if !maps.Equal(w, g) {
				var diff []string
				for _, k := range slices.Sorted(maps.Keys(w)) {
					if w[k] != g[k] {
						diff = append(diff, fmt.Sprintf("%s: perf %d otlp %d", k, w[k], g[k]))
					}
				}
				for _, k := range slices.Sorted(maps.Keys(g)) {
					if _, ok := w[k]; !ok {
						diff = append(diff, fmt.Sprintf("%s: perf 0 otlp %d", k, g[k]))
					}
				}
				t.Fatalf("%s, %s, [%s, %s): the OTLP flame graph differs from the perf upload's in %d stacks, e.g. %q", when, event, sec(r[0]), sec(r[1]), len(diff), diff[:min(3, len(diff))])
			}
		}
		if nonEmpty < 3 {
			t.Fatalf("%s, %s: only %d of the ranges hold samples: the comparison proves little", when, event, nonEmpty)
		}
		t.Logf("%s, %s: heatmaps equal (%d samples), flame graphs of %d ranges equal (%d not empty)", when, event, want.Total, len(ranges), nonEmpty)
	}
}
