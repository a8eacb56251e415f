package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// perfBatches splits perf script text into n batches at sample boundaries
// (the first keeps perf's # header), as the live agent sends it.
func perfBatches(t *testing.T, text string, n int) []string {
	t.Helper()
	blocks := strings.SplitAfter(text, "\n\n")
	per := (len(blocks) + n - 1) / n
	var out []string
	for i := 0; i < len(blocks); i += per {
		out = append(out, strings.Join(blocks[i:min(i+per, len(blocks))], ""))
	}
	if strings.Join(out, "") != text || len(out) != n {
		t.Fatalf("split into %d batches, want %d, rejoining to the text", len(out), n)
	}
	return out
}

// TestLiveAppend: a live recording's batches are queryable as they come
// (the fleet heatmap counts what has arrived, as the CLI counts the same
// text), each counts once across resends, out-of-order batches are
// refused, and the final batch turns the recording into the profile a
// batch upload of the same text stores (the same bytes: upload reports it
// stored already), its segments gone.
func TestLiveAppend(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	path := plant(t, "--seed", "91", "--seconds", "6", "--epoch")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	batches := perfBatches(t, string(raw), 3)
	ing, q := s.clients()
	md := &fsv1.UploadMetadata{App: "live", Host: "h1", Labels: map[string]string{"env": "test"}}
	appendLive := func(seq int64, chunk string, final bool) (*fsv1.AppendLiveResponse, error) {
		res, err := ing.AppendLive(ctx, connect.NewRequest(&fsv1.AppendLiveRequest{Stream: "rec-1", Seq: seq, Metadata: md, Chunk: []byte(chunk), Final: final}))
		if err != nil {
			return nil, err
		}
		return res.Msg, nil
	}
	total := func() int64 { // the fleet heatmap of app live
		t.Helper()
		var h heatmapJSON
		json.Unmarshal([]byte(s.mustCLI("heatmap", "--json", "--app", "live", "--from", "1795000000", "--to", "1795000100")), &h)
		return h.Total
	}
	localTotal := func(text string) int64 { // what the CLI counts in the text itself
		t.Helper()
		f := filepath.Join(t.TempDir(), "part.perf")
		os.WriteFile(f, []byte(text), 0o644)
		var h heatmapJSON
		json.Unmarshal([]byte(local(t, "heatmap", "--json", f)), &h)
		return h.Total
	}
	if r, err := appendLive(0, batches[0], false); err != nil || r.GetNextSeq() != 1 {
		t.Fatalf("batch 0: %v %v", r, err)
	}
	want0 := localTotal(batches[0])
	if got := total(); got != want0 || want0 == 0 {
		t.Fatalf("after batch 0 the fleet heatmap counts %d, the batch holds %d", got, want0)
	}
	// A resent batch is acknowledged, not applied again; a gap is refused.
	if r, err := appendLive(0, batches[0], false); err != nil || r.GetNextSeq() != 1 {
		t.Fatalf("batch 0 again: %v %v", r, err)
	}
	if got := total(); got != want0 {
		t.Fatalf("a resent batch counted twice: %d, want %d", got, want0)
	}
	if _, err := appendLive(2, batches[2], false); connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "expects batch 1") {
		t.Fatalf("batch 2 before 1: %v, want invalid argument", err)
	}
	if _, err := appendLive(1, batches[1], false); err != nil {
		t.Fatal(err)
	}
	if got, want := total(), localTotal(batches[0]+batches[1]); got != want {
		t.Fatalf("after batch 1: %d, want %d", got, want)
	}
	r, err := appendLive(2, batches[2], true)
	if err != nil || r.GetProfile().GetId() == "" || r.GetNextSeq() != 3 {
		t.Fatalf("final batch: %v %v", r, err)
	}
	id := r.GetProfile().GetId()
	if got, want := total(), localTotal(string(raw)); got != want {
		t.Fatalf("after the final batch: %d, want the recording's %d (segments and whole counted once)", got, want)
	}
	// The whole recording is the profile a batch upload stores: the same bytes.
	if again := s.upload(path, "--host", "h1", "--label", "env=test"); again != id {
		t.Fatalf("a batch upload of the recording made %s, want the live profile %s", again, id)
	}
	res, err := q.SearchProfiles(ctx, connect.NewRequest(&fsv1.SearchProfilesRequest{App: "live"}))
	if err != nil || len(res.Msg.GetProfiles()) != 1 || res.Msg.GetProfiles()[0].GetLabels()["live"] != "" {
		t.Fatalf("after the end: %v %v, want the one profile, no segments", err, res.Msg.GetProfiles())
	}
	// The final batch again answers the same profile; a batch after the end is refused.
	if r, err := appendLive(2, batches[2], true); err != nil || r.GetProfile().GetId() != id {
		t.Fatalf("final batch again: %v %v", r, err)
	}
	if _, err := appendLive(3, "x", false); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("a batch after the end: %v", err)
	}
	if _, err := ing.AppendLive(ctx, connect.NewRequest(&fsv1.AppendLiveRequest{Stream: "bad name!", Metadata: md, Chunk: []byte(batches[0])})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("a bad stream name: %v", err)
	}
}

// TestAgentLive: `fleetscope agent --live` over a recorded replay (a
// planted perf script paced out over about two seconds, through a proxy
// that drops every connection for a while mid-stream) sends batches as the
// text arrives, retries across the outage, and ends with the profile a
// batch upload of the same text stores: nothing lost, nothing twice.
func TestAgentLive(t *testing.T) {
	s := startService(t, serviceOpts{})
	px := newSwitchProxy(t, s.url)
	px.up(t)
	path := plant(t, "--seed", "92", "--seconds", "8", "--epoch")
	// The replay: the planted text, a pause every 400 samples.
	replay := `awk '{ print; fflush() } /^$/ { n++; if (n % 400 == 0) system("sleep 0.15") }' ` + path
	a := startAgent(t, s.agentEnv(px.url()), "--app", "livetest", "--host", "h1", "--live", "--live-source", replay,
		"--live-batch", "100ms", "--retry-min", "50ms", "--retry-max", "200ms")
	a.await("a first batch", 60*time.Second, func() bool { return a.count("live batch sent") >= 1 })
	px.down() // the server goes away mid-stream, and comes back
	a.await("a retry", 60*time.Second, func() bool { return a.count("live batch not sent: retrying") >= 1 })
	px.up(t)
	if code := a.wait(60 * time.Second); code != 0 {
		t.Fatalf("agent exit %d:\n%s", code, a.log())
	}
	var id string
	for _, l := range strings.Split(a.log(), "\n") {
		var m struct{ Msg, Profile string }
		if json.Unmarshal([]byte(l), &m) == nil && m.Msg == "live recording stored" {
			id = m.Profile
		}
	}
	if n := a.count("live batch sent"); id == "" || n < 3 {
		t.Fatalf("%d batches sent, profile %q:\n%s", n, id, a.log())
	}
	if again := s.upload(path, "--app", "livetest", "--host", "h1"); again != id {
		t.Fatalf("a batch upload of the replayed text made %s, want the live profile %s", again, id)
	}
	t.Logf("%d live batches, %d retries; stored as %s, the same bytes as the file", a.count("live batch sent"), a.count("live batch not sent: retrying"), id)
}

// TestAgentLiveRealPerf: `agent --live` with real perf (perf record -a
// | perf script, as root here) streams batches while it records and, on
// SIGTERM, stores the recording: perf record stops, perf script drains.
func TestAgentLiveRealPerf(t *testing.T) {
	realPerf(t)
	s := startService(t, serviceOpts{})
	a := startAgent(t, s.agentEnv(s.url), "--app", "liveperf", "--live", "--live-batch", "200ms")
	a.await("batches while perf records", 60*time.Second, func() bool { return a.count("live batch sent") >= 2 })
	a.cmd.Process.Signal(syscall.SIGTERM)
	if code := a.wait(60 * time.Second); code != 0 {
		t.Fatalf("agent exit %d:\n%s", code, a.log())
	}
	ps := s.search("liveperf")
	if len(ps) != 1 || ps[0].GetSamples() == 0 || ps[0].GetTimeSource() != "realtime" {
		t.Fatalf("after SIGTERM: %v, want one profile of wall-clock samples", ps)
	}
	t.Logf("real perf, live: %d batches, %d samples, %s", a.count("live batch sent"), ps[0].GetSamples(), ps[0].GetTimeSource())
}
