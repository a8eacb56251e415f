package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
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
	if _, err := appendLive(3, batches[0], false); connect.CodeOf(err) != connect.CodeAlreadyExists {
		t.Fatalf("a batch after the end: %v, want already exists (the stream ended)", err)
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

// liveTo returns a sender of one stream's batches with md.
func (s *service) liveTo(stream string, md *fsv1.UploadMetadata) func(seq int64, chunk string, final bool) (*fsv1.AppendLiveResponse, error) {
	ing, _ := s.clients()
	return func(seq int64, chunk string, final bool) (*fsv1.AppendLiveResponse, error) {
		res, err := ing.AppendLive(context.Background(), connect.NewRequest(&fsv1.AppendLiveRequest{Stream: stream, Seq: seq, Metadata: md, Chunk: []byte(chunk), Final: final}))
		if err != nil {
			return nil, err
		}
		return res.Msg, nil
	}
}

// exists reports whether the tenant has profile id.
func (s *service) exists(id string) bool {
	s.t.Helper()
	_, q := s.clients()
	_, err := q.GetProfile(context.Background(), connect.NewRequest(&fsv1.GetProfileRequest{Id: id}))
	if connect.CodeOf(err) == connect.CodeNotFound {
		return false
	}
	if err != nil {
		s.t.Fatal(err)
	}
	return true
}

// segments returns the live segment profiles of an app by stream.
func (s *service) segments(app string) map[string]int {
	out := map[string]int{}
	for _, p := range s.search(app) {
		if st := p.GetLabels()["live"]; st != "" {
			out[st]++
		}
	}
	return out
}

// TestLiveKeepsStoredProfiles: a live stream owns its segments, so
// finalising it deletes nothing else: (a) a recording that fits in one
// batch is stored (its segment and the whole recording are the same
// bytes); (b) an earlier upload of the same bytes stays, and the stream's
// answer says the recording was stored already, as another app's
// profile; (c) two streams whose first batches are the same bytes each
// keep their own segment until they end.
func TestLiveKeepsStoredProfiles(t *testing.T) {
	s := startService(t, serviceOpts{})
	read := func(path string) string {
		raw, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	md := func(app string) *fsv1.UploadMetadata { return &fsv1.UploadMetadata{App: app, Host: "h1"} }

	// (a) One batch, then an empty final one; and one final batch alone.
	for i, final := range []bool{false, true} {
		path := plant(t, "--seed", fmt.Sprint(93+i), "--seconds", "2", "--epoch")
		app := fmt.Sprintf("one-%d", i)
		send := s.liveTo(app, md(app))
		r, err := send(0, read(path), final)
		if err == nil && !final {
			r, err = send(1, "", true)
		}
		if err != nil || r.GetProfile().GetId() == "" {
			t.Fatalf("(a) final=%v: %v %v", final, r, err)
		}
		id := r.GetProfile().GetId()
		if !s.exists(id) {
			t.Fatalf("(a) the stream's profile %s (one batch, final=%v) was deleted when the stream ended", id, final)
		}
		ps := s.search(app)
		if len(ps) != 1 || ps[0].GetId() != id || ps[0].GetSamples() != localSamples(t, path) {
			t.Fatalf("(a) app %s holds %v, want the one profile %s of %d samples", app, ps, id, localSamples(t, path))
		}
	}

	// (b) The same bytes uploaded before, as another app: the upload stays.
	path := plant(t, "--seed", "95", "--seconds", "2", "--epoch")
	up := s.upload(path, "--app", "uploaded")
	send := s.liveTo("dup", md("live-b"))
	if _, err := send(0, read(path), false); err != nil {
		t.Fatal(err)
	}
	r, err := send(1, "", true)
	if err != nil {
		t.Fatal(err)
	}
	if !s.exists(up) {
		t.Fatalf("(b) the upload %s of the same bytes was deleted when the live stream ended", up)
	}
	if d := r.GetDuplicate(); r.GetProfile().GetId() != up || d.GetProfileId() != up || d.GetApp() != "uploaded" || !slices.Contains(d.GetIgnored(), "app") {
		t.Fatalf("(b) the stream ended as %s with duplicate %v, want the upload %s said to be stored already as app uploaded", r.GetProfile().GetId(), d, up)
	}
	if segs := s.segments("live-b"); len(segs) != 0 {
		t.Fatalf("(b) segments left: %v", segs)
	}

	// (c) Two streams, the same first batch: ending one keeps the other's.
	path = plant(t, "--seed", "96", "--seconds", "4", "--epoch")
	batches := perfBatches(t, read(path), 2)
	c1, c2 := s.liveTo("c1", md("live-c")), s.liveTo("c2", md("live-c"))
	for _, send := range []func(int64, string, bool) (*fsv1.AppendLiveResponse, error){c1, c2} {
		if _, err := send(0, batches[0], false); err != nil {
			t.Fatal(err)
		}
	}
	if segs := s.segments("live-c"); segs["c1"] != 1 || segs["c2"] != 1 {
		t.Fatalf("(c) segments %v, want one of each stream", segs)
	}
	if _, err := c1(1, "", true); err != nil {
		t.Fatal(err)
	}
	if segs := s.segments("live-c"); segs["c1"] != 0 || segs["c2"] != 1 {
		t.Fatalf("(c) after c1 ended, segments %v: want c2's kept", segs)
	}
	r, err = c2(1, batches[1], true)
	if err != nil || !s.exists(r.GetProfile().GetId()) || r.GetProfile().GetSamples() != localSamples(t, path) {
		t.Fatalf("(c) c2's end: %v %v, want the whole recording of %d samples", r, err, localSamples(t, path))
	}
	if segs := s.segments("live-c"); len(segs) != 0 {
		t.Fatalf("(c) segments left: %v", segs)
	}
}

// localSamples counts a file's samples as the CLI reads it.
func localSamples(t *testing.T, path string) int64 {
	t.Helper()
	var h heatmapJSON
	if err := json.Unmarshal([]byte(local(t, "heatmap", "--json", "--include-idle", path)), &h); err != nil {
		t.Fatal(err)
	}
	return h.Total
}

// TestLiveStreamRules: a stream keeps the format and metadata of its
// first batch (a batch in another format or with other metadata is
// refused, never acknowledged and dropped), batch numbers are never
// negative, and a tenant's open streams are capped.
func TestLiveStreamRules(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_MAX_LIVE_STREAMS=2"}})
	raw, err := os.ReadFile(plant(t, "--seed", "97", "--seconds", "4", "--epoch"))
	if err != nil {
		t.Fatal(err)
	}
	batches := perfBatches(t, string(raw), 2)
	md := &fsv1.UploadMetadata{App: "rules", Host: "h1", Labels: map[string]string{"env": "a"}}
	send := s.liveTo("fmt", md)
	if _, err := send(0, batches[0], false); err != nil {
		t.Fatal(err)
	}
	if _, err := send(1, "FOLDEDROOT;b 3\n", false); connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "perf") {
		t.Fatalf("a folded batch in a perf stream: %v, want invalid argument naming the stream's format", err)
	}
	for what, other := range map[string]*fsv1.UploadMetadata{
		"app":    {App: "moved", Host: "h1", Labels: md.Labels},
		"host":   {App: "rules", Host: "h2", Labels: md.Labels},
		"labels": {App: "rules", Host: "h1", Labels: map[string]string{"env": "b"}},
	} {
		if _, err := s.liveTo("fmt", other)(1, batches[1], false); connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), what) {
			t.Fatalf("a batch with another %s: %v, want invalid argument", what, err)
		}
	}
	if _, err := send(-1, batches[1], false); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("batch -1: %v, want invalid argument", err)
	}
	r, err := send(1, "", true)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "b0.perf")
	os.WriteFile(f, []byte(batches[0]), 0o644)
	if got, want := r.GetProfile().GetSamples(), localSamples(t, f); got != want || len(s.search("moved")) != 0 {
		t.Fatalf("the stream stored %d samples, want batch 0's %d, and nothing under another app", got, want)
	}

	// A pprof or JSON batch cannot join a recording's text: refused at once.
	if _, err := s.liveTo("json", md)(0, `{"nodes":[]}`, false); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Fatalf("a JSON batch: %v, want invalid argument", err)
	}

	// Two streams open at most; a third waits for one to end.
	open1, open2 := s.liveTo("open-1", md), s.liveTo("open-2", md)
	for _, o := range []func(int64, string, bool) (*fsv1.AppendLiveResponse, error){open1, open2} {
		if _, err := o(0, batches[0], false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.liveTo("open-3", md)(0, batches[0], false); connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "FLEETSCOPE_MAX_LIVE_STREAMS") {
		t.Fatalf("a third open stream: %v, want resource exhausted naming the limit", err)
	}
	if _, err := open1(1, batches[1], true); err != nil {
		t.Fatal(err)
	}
	if _, err := s.liveTo("open-3", md)(0, batches[0], false); err != nil {
		t.Fatalf("a new stream once another ended: %v", err)
	}
}

// TestLiveIdleStreamEnds: a stream left open is ended after the idle
// timeout with every batch it had, and a batch sent to it later is
// refused as to a stream that ended (the agent then begins a new one).
func TestLiveIdleStreamEnds(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_LIVE_IDLE_TIMEOUT=1s"}})
	path := plant(t, "--seed", "98", "--seconds", "4", "--epoch")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	batches := perfBatches(t, string(raw), 2)
	send := s.liveTo("left", &fsv1.UploadMetadata{App: "idle", Host: "h1"})
	for seq, b := range batches {
		if _, err := send(int64(seq), b, false); err != nil {
			t.Fatal(err)
		}
	}
	s.log.await(t, 0, time.Minute, func(m map[string]any) bool { return m["msg"] == "idle live stream ended" && m["stream"] == "left" })
	ps := s.search("idle")
	if len(ps) != 1 || ps[0].GetLabels()["live"] != "" || ps[0].GetSamples() != localSamples(t, path) {
		t.Fatalf("after the idle end: %v, want one profile of the %d samples sent, no segments", ps, localSamples(t, path))
	}
	if _, err := send(2, batches[1], false); connect.CodeOf(err) != connect.CodeAlreadyExists {
		t.Fatalf("a batch after the idle end: %v, want already exists (the stream ended)", err)
	}
	if r, err := send(2, "", true); err != nil || r.GetProfile().GetId() != ps[0].GetId() {
		t.Fatalf("the final batch after the idle end: %v %v, want the stored profile", r, err)
	}
}
