package main

// Regression tests for what a hostile-but-fair key holder found (the
// hardening issue): answers bounded by what is asked, permanent errors that
// say so, no work before authentication, uploads bounded in flight, and
// stalled bodies cut off.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

type heatmapJSON struct {
	StartSecond      int64     `json:"startSecond"`
	SecondsPerColumn int64     `json:"secondsPerColumn"`
	Rows             int       `json:"rows"`
	Columns          [][]int64 `json:"columns"`
	Total            int64     `json:"total"`
	Profiles         int       `json:"profiles"`
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHeatmapBoundedByWhatIsShown: two samples 9e9 s apart once asked the
// server for a 216 GB heatmap; now such timestamps are refused, and two
// samples 2e9 s apart (epoch times, 2023 and 2087) make a heatmap of at
// most 1,000 columns (several seconds each), at any row count, locally and
// from the server.
func TestHeatmapBoundedByWhatIsShown(t *testing.T) {
	s := startService(t, serviceOpts{})
	path := writeFile(t, "far.perf", "app 1 1700000000.000000: 1 cpu-clock:\n\t    1 main (/bin/app)\n\t    2 f0 (/bin/app)\n\n"+
		"app 1 3700000000.000000: 1 cpu-clock:\n\t    1 main (/bin/app)\n\t    2 f1 (/bin/app)\n\n")
	id := s.upload(path)
	for _, rows := range []string{"50", "999"} {
		remote := s.mustCLI("heatmap", "--json", "--rows", rows, "--profile", id)
		if l := local(t, "heatmap", "--json", "--rows", rows, path); l != remote {
			t.Fatalf("rows %s: the local file and the server differ", rows)
		}
		var h heatmapJSON
		if err := json.Unmarshal([]byte(remote), &h); err != nil {
			t.Fatal(err)
		}
		// 2,000,000,001 seconds, from the first to the last, in at most 1,000 columns.
		if len(h.Columns) != 1000 || h.SecondsPerColumn != 2_000_001 || h.Total != 2 || h.Columns[0][0] != 1 || h.Columns[999][0] != 1 {
			t.Fatalf("rows %s: %d columns of %d s, total %d; want 1000 columns of 2000001 s holding both samples", rows, len(h.Columns), h.SecondsPerColumn, h.Total)
		}
	}
}

// TestPermanentErrorsAreInvalidArgument: bad input is InvalidArgument (HTTP
// 400) saying what is wrong, never "unavailable, retry later", and stores
// nothing.
func TestPermanentErrorsAreInvalidArgument(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	good, _ := os.ReadFile(plant(t, "--seed", "81", "--seconds", "2"))
	// Through the CLI: one line, exit 1, the cause named.
	for _, tc := range []struct{ name, text, want string }{
		{"latin1.perf", "caf\xe9 1 100.000001: 1 cpu-clock:\n\t 1 main (/bin/app)\n\n", "UTF-8"},
		{"far.perf", "app 1 1.000000: 1 cpu-clock:\n\t1 main (/bin/app)\n\napp 1 9300000000.000000: 1 cpu-clock:\n\t1 main (/bin/app)\n\n", "outside the accepted range"},
		{"negative.perf", "app 1 -5.000000: 1 cpu-clock:\n\t1 main (/bin/app)\n\n", "outside the accepted range"},
	} {
		_, errOut, code := s.cli("upload", "--app", "x", writeFile(t, tc.name, tc.text))
		if code != 1 || !strings.Contains(errOut, tc.want) || strings.Contains(errOut, "unavailable") || strings.Count(errOut, "\n") != 1 {
			t.Errorf("%s: exit %d, %q; want exit 1 and one line saying %q", tc.name, code, errOut, tc.want)
		}
	}
	// Through the API: NUL bytes in names and labels, anchors in 9999 and in
	// the year 1 (the zero time, once taken for no anchor).
	ing, _ := s.clients()
	for name, md := range map[string]*fsv1.UploadMetadata{
		"NUL in the app":      {App: "a\x00b"},
		"NUL in a label":      {App: "a", Labels: map[string]string{"env": "pr\x00d"}},
		"NUL in the filename": {App: "a", Filename: "x\x00.perf"},
		"anchor in 9999":      {App: "a", Anchor: &fsv1.ClockAnchor{ClockNanos: 1, WallTime: timestamppb.New(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))}},
		"anchor in year 1":    {App: "a", Anchor: &fsv1.ClockAnchor{ClockNanos: 1, WallTime: timestamppb.New(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))}},
	} {
		_, err := ing.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Metadata: md, Data: good}))
		if connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", name, err)
		}
	}
	// The Pyroscope endpoint: %00 and %FF in the name.
	for _, name := range []string{"a%00b", "a%FFb", "app{k=v%00}"} {
		req, _ := http.NewRequest("POST", s.url+"/ingest?name="+name+"&format=folded", strings.NewReader("main;f 1\n"))
		req.Header.Set("Authorization", "Bearer "+s.key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusBadRequest {
			t.Errorf("/ingest name %s: %d %s, want 400", name, res.StatusCode, body)
		}
	}
	// Admin calls with a NUL in an id.
	admin := s.as(s.newKey("acme", "admin"))
	if _, err := admin.admin.RevokeKey(ctx, connect.NewRequest(&fsv1.RevokeKeyRequest{Id: "fsk_\x00"})); connect.CodeOf(err) != connect.CodeInvalidArgument && connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("RevokeKey with a NUL: %v, want InvalidArgument or NotFound", err)
	}
	if _, err := admin.admin.RevokeShareLink(ctx, connect.NewRequest(&fsv1.RevokeShareLinkRequest{Id: "fss_\x00"})); connect.CodeOf(err) != connect.CodeInvalidArgument && connect.CodeOf(err) != connect.CodeNotFound {
		t.Errorf("RevokeShareLink with a NUL: %v, want InvalidArgument or NotFound", err)
	}
	if got := s.counts(); got != "profiles=0 profile_stacks=0 seconds=0 frames=0 stacks=0 blobs=0" {
		t.Fatalf("refused uploads left: %s", got)
	}
	// Searches still answer, in JSON too.
	req, _ := http.NewRequest("POST", s.url+"/fleetscope.v1.QueryService/SearchProfiles", strings.NewReader("{}"))
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("JSON search after the refusals: %v %v", res.Status, err)
	}
	res.Body.Close()
	// A flame graph format the server does not know.
	up, err := ing.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Metadata: &fsv1.UploadMetadata{App: "a"}, Data: good}))
	if err != nil {
		t.Fatal(err)
	}
	_, q := s.clients()
	if _, err := q.GetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: up.Msg.GetProfile().GetId(), Format: 99})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("flame graph format 99: %v, want InvalidArgument", err)
	}
}

// TestNoWorkBeforeAuthentication: a request without a valid key is
// answered Unauthenticated before its body is read: the client here never
// sends the body at all.
func TestNoWorkBeforeAuthentication(t *testing.T) {
	s := startService(t, serviceOpts{})
	for _, key := range []string{"", "fsk_notakeyatall0000000000000"} {
		body, bodyW := io.Pipe()
		defer bodyW.Close() // the body is never written
		req, _ := http.NewRequest("POST", s.url+"/fleetscope.v1.IngestService/UploadFile", body)
		req.Header.Set("Content-Type", "application/proto")
		req.Header.Set("Content-Encoding", "gzip")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		cl := &http.Client{Timeout: 30 * time.Second} // a failure, not a measurement
		res, err := cl.Do(req)
		if err != nil {
			t.Fatalf("key %q: no answer before the body: %v", key, err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("key %q: %s, want 401 Unauthorized", key, res.Status)
		}
	}
}

// TestUploadsInFlightAreBounded: with 2 uploads per key, two stalled
// uploads hold both places; a third is refused at once (ResourceExhausted,
// "retry"), health checks and queries answer meanwhile, and the stalled
// bodies are cut off after the idle timeout, freeing the places.
func TestUploadsInFlightAreBounded(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_MAX_UPLOADS_PER_KEY=2", "FLEETSCOPE_BODY_IDLE_TIMEOUT=5s"}})
	path := plant(t, "--seed", "82", "--seconds", "2")
	id := s.upload(path)
	ing, q := s.clients()
	ctx := context.Background()
	md := &fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Metadata{Metadata: &fsv1.UploadMetadata{App: "stalled"}}}
	var stalled []*connect.ClientStreamForClient[fsv1.UploadRequest, fsv1.UploadResponse]
	_, from, _ := s.log.find(0, func(map[string]any) bool { return false })
	for range 2 {
		st := ing.Upload(ctx)
		if err := st.Send(md); err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, st)
	}
	// Once the server has admitted both (its log says so), a third is
	// refused at once.
	for range 2 {
		_, from = s.log.await(t, from, 60*time.Second, func(l map[string]any) bool {
			return l["msg"] == "upload admitted" && strings.HasSuffix(fmt.Sprint(l["procedure"]), "IngestService/Upload")
		})
	}
	_, refused := ing.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Metadata: &fsv1.UploadMetadata{App: "third"}, Data: []byte("not a profile")}))
	if connect.CodeOf(refused) != connect.CodeResourceExhausted || !strings.Contains(refused.Error(), "retry") {
		t.Fatalf("a third upload with two in flight: %v, want ResourceExhausted saying retry", refused)
	}
	res, err := http.Get(s.url + "/healthz")
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("/healthz with the uploads stalled: %v %v", res, err)
	}
	res.Body.Close()
	if _, err := q.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id})); err != nil {
		t.Fatalf("a query with the uploads stalled: %v", err)
	}
	// The server cuts the stalled bodies off (its log says so) and the
	// places are free again.
	for range 2 {
		_, from = s.log.await(t, from, 60*time.Second, func(l map[string]any) bool {
			return l["msg"] == "request failed" && strings.Contains(fmt.Sprint(l["procedure"]), "IngestService/Upload")
		})
	}
	for _, st := range stalled {
		st.CloseAndReceive()
	}
	s.upload(path, "--label", "after=stall")
	if n := s.spoolFiles(); n != 0 {
		t.Fatalf("%d spool files left by the stalled uploads", n)
	}
}
