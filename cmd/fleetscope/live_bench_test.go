package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// BenchmarkLive measures how long a live sample takes to reach a query
// answer: `fleetscope agent --live` streams a source that writes a sample
// stamped with the wall clock every 20 ms for 8 s (as perf record -k
// CLOCK_REALTIME | perf script would), in 1-s batches as the agent runs by
// default, while a client asks for the app's fleet heatmap every 25 ms;
// each sample's latency is from its timestamp to the first answer that
// counts it. Run with:
// go test -run '^$' -bench 'Live$' -benchtime 1x ./cmd/fleetscope/
func BenchmarkLive(b *testing.B) {
	s := startService(b, serviceOpts{})
	ctx := context.Background()
	stamps := filepath.Join(b.TempDir(), "stamps")
	gen := fmt.Sprintf(`python3 -c '
import sys, time
out = open(%q, "w")
for i in range(400):
    t = time.time()
    sys.stdout.write("app 1 [000] %%.6f: 1 cpu-clock:\n\t    1 main (/bin/app)\n\t    2 f%%d (/bin/app)\n\n" %% (t, i %% 7))
    sys.stdout.flush()
    out.write("%%.6f\n" %% t); out.flush()
    time.sleep(0.02)
'`, stamps)
	start := time.Now()
	a := startAgent(b, s.agentEnv(s.url), "--app", "livebench", "--live", "--live-source", gen)
	fleetClient := s.as(s.key).fleet
	sel := &fsv1.FleetSelection{App: "livebench", From: timestamppb.New(start.Add(-time.Minute)), To: timestamppb.New(start.Add(time.Hour))}
	var seen []time.Time // seen[k]: when an answer first counted k+1 samples
	for polling := true; polling; {
		select {
		case <-a.exited: // the source ended and the agent stored the recording
			polling = false
		case <-time.After(25 * time.Millisecond):
		}
		res, err := fleetClient.GetFleetHeatmap(ctx, connect.NewRequest(&fsv1.GetFleetHeatmapRequest{Selection: sel}))
		if err != nil {
			continue // before the first batch: no event to count yet
		}
		now := time.Now()
		for int64(len(seen)) < res.Msg.GetTotal() {
			seen = append(seen, now)
		}
	}
	if code := a.wait(time.Second); code != 0 {
		b.Fatalf("agent exit %d:\n%s", code, a.log())
	}
	raw, err := os.ReadFile(stamps)
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for k, line := range strings.Fields(string(raw)) {
		ts, _ := strconv.ParseFloat(line, 64)
		if k < len(seen) {
			lat = append(lat, seen[k].Sub(time.Unix(0, int64(ts*1e9))))
		}
	}
	if len(lat) == 0 {
		b.Fatalf("no sample reached an answer:\n%s", a.log())
	}
	report(b, fmt.Sprintf("live sample -> fleet heatmap answer (%d of %d samples)", len(lat), len(strings.Fields(string(raw)))), lat, "target <= 2 s")
}
