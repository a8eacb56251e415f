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

	"github.com/fleetscope/fleetscope/api"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
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
	// Through the API: NUL bytes in names and labels, an anchor in 9999.
	ing, _ := s.clients()
	for name, md := range map[string]*fsv1.UploadMetadata{
		"NUL in the app":      {App: "a\x00b"},
		"NUL in a label":      {App: "a", Labels: map[string]string{"env": "pr\x00d"}},
		"NUL in the filename": {App: "a", Filename: "x\x00.perf"},
		"anchor in 9999":      {App: "a", Anchor: &fsv1.ClockAnchor{ClockNanos: 1, WallTime: timestamppb.New(time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC))}},
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

// TestUploadBoundsCoverEveryUploadPath: Pyroscope's /ingest takes its place
// among the uploads in flight as the Connect uploads do. With one upload a
// key and two on the server: a stalled /ingest holds its key's place (that
// key's next upload is refused at once, through either path); a stalled
// streamed upload of a second key fills the server (a third key is
// refused, through either path, the server saying it is full); once the
// stalled bodies end, the /ingest is stored and the places are free.
func TestUploadBoundsCoverEveryUploadPath(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_MAX_UPLOADS=2", "FLEETSCOPE_MAX_UPLOADS_PER_KEY=1"}})
	ctx := context.Background()
	k2, k3 := s.newKey("acme", "ingest"), s.newKey("acme", "ingest")
	pyroscope := func(key string, body io.Reader) (int, string, error) {
		req, _ := http.NewRequest("POST", s.url+api.PyroscopePath+"?name=bounded&format=folded", body)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		return res.StatusCode, string(b), nil
	}
	_, from, _ := s.log.find(0, func(map[string]any) bool { return false })
	admitted := func(proc string) {
		t.Helper()
		_, from = s.log.await(t, from, 60*time.Second, func(l map[string]any) bool {
			return l["msg"] == "upload admitted" && l["procedure"] == proc
		})
	}
	oneMessage := func(key string) error {
		ing, _ := s.clientsWithKey(key)
		_, err := ing.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Metadata: &fsv1.UploadMetadata{App: "bounded"}, Data: []byte("main;x 1\n")}))
		return err
	}

	// The first key's /ingest stalls mid-body.
	body, bodyW := io.Pipe()
	type answer struct {
		code int
		err  error
	}
	first := make(chan answer, 1)
	go func() {
		code, _, err := pyroscope(s.key, body)
		first <- answer{code, err}
	}()
	bodyW.Write([]byte("main;a 1\n"))
	admitted(api.PyroscopePath)
	if code, msg, err := pyroscope(s.key, strings.NewReader("main;b 1\n")); code != http.StatusTooManyRequests || !strings.Contains(msg, "this key has 1 uploads in flight") {
		t.Errorf("a second /ingest of a key with a stalled one: %d %q %v; want 429, the key's uploads in flight", code, msg, err)
	}
	if err := oneMessage(s.key); connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "this key has 1 uploads in flight") {
		t.Errorf("an upload of a key with a stalled /ingest: %v; want ResourceExhausted, the key's uploads in flight", err)
	}
	// A second key's streamed upload stalls: the server is full.
	ing2, _ := s.clientsWithKey(k2)
	st := ing2.Upload(ctx)
	if err := st.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Metadata{Metadata: &fsv1.UploadMetadata{App: "stalled"}}}); err != nil {
		t.Fatal(err)
	}
	admitted(fleetscopev1connect.IngestServiceUploadProcedure)
	if err := oneMessage(k3); connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "the server has 2 uploads in flight") {
		t.Errorf("an upload with the server full: %v; want ResourceExhausted, the server's uploads in flight", err)
	}
	if code, msg, err := pyroscope(k3, strings.NewReader("main;c 1\n")); code != http.StatusTooManyRequests || !strings.Contains(msg, "the server has 2 uploads in flight") {
		t.Errorf("an /ingest with the server full: %d %q %v; want 429, the server's uploads in flight", code, msg, err)
	}
	// The stalled bodies end: the /ingest is stored, the places freed.
	bodyW.Close()
	if a := <-first; a.err != nil || a.code != http.StatusOK {
		t.Fatalf("the stalled /ingest, once its body ended: %d %v", a.code, a.err)
	}
	st.CloseAndReceive()
	waitUntil(t, "the third key's upload to be admitted", func() bool {
		code, _, err := pyroscope(k3, strings.NewReader("main;c 1\n"))
		return err == nil && code == http.StatusOK
	})
	if err := oneMessage(s.key); err != nil {
		t.Errorf("an upload once the places are free: %v", err)
	}
}
