package main

// Regression tests for what a hostile-but-fair key holder found (the
// hardening issue): answers bounded by what is asked, permanent errors that
// say so, no work before authentication, uploads bounded in flight, and
// stalled bodies cut off.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"
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

// pyroscopeIngest posts body to Pyroscope's ingest endpoint with key and
// the query; it returns the HTTP status and the answer's text.
func (s *service) pyroscopeIngest(key, query string, body io.Reader) (int, string, error) {
	req, _ := http.NewRequest("POST", s.url+api.PyroscopePath+"?"+query, body)
	req.Header.Set("Authorization", "Bearer "+key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	return res.StatusCode, string(b), nil
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
		code, body, err := s.pyroscopeIngest(s.key, "name="+name+"&format=folded", strings.NewReader("main;f 1\n"))
		if err != nil {
			t.Fatal(err)
		}
		if code != http.StatusBadRequest {
			t.Errorf("/ingest name %s: %d %s, want 400", name, code, body)
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

// stallUploads opens n uploads with key that send their metadata and then
// nothing, and waits until the server has admitted them (its log says so).
func (s *service) stallUploads(key string, n int, from int) ([]*connect.ClientStreamForClient[fsv1.UploadRequest, fsv1.UploadResponse], int) {
	s.t.Helper()
	ing, _ := s.clientsWithKey(key)
	var out []*connect.ClientStreamForClient[fsv1.UploadRequest, fsv1.UploadResponse]
	for range n {
		st := ing.Upload(context.Background())
		if err := st.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Metadata{Metadata: &fsv1.UploadMetadata{App: "stalled"}}}); err != nil {
			s.t.Fatal(err)
		}
		out = append(out, st)
		_, from = s.log.await(s.t, from, 60*time.Second, func(l map[string]any) bool {
			return l["msg"] == "upload admitted" && strings.HasSuffix(fmt.Sprint(l["procedure"]), "IngestService/Upload")
		})
	}
	return out, from
}

// TestTenantsShareTheUploadSlots: one tenant, whatever its keys, holds at
// most its share of the server's upload places, so another tenant's
// upload still goes through while the first keeps its uploads open.
func TestTenantsShareTheUploadSlots(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_MAX_UPLOADS=4", "FLEETSCOPE_MAX_UPLOADS_PER_TENANT=2", "FLEETSCOPE_MAX_UPLOADS_PER_KEY=8"}})
	second := s.newKey("acme", "ingest,read")
	s.admin("tenant", "create", "other")
	other := s.newKey("other", "ingest,read")
	stalled, _ := s.stallUploads(s.key, 2, 0)
	ing, _ := s.clientsWithKey(second)
	_, err := ing.UploadFile(context.Background(), connect.NewRequest(&fsv1.UploadFileRequest{Metadata: &fsv1.UploadMetadata{App: "third"}, Data: []byte("not a profile")}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "tenant") {
		t.Fatalf("a third upload of the tenant, with another key: %v, want ResourceExhausted naming the tenant's share", err)
	}
	out, errOut, code := run1([]string{"FLEETSCOPE_URL=" + s.url, "FLEETSCOPE_API_KEY=" + other}, "upload", "--app", "other", plant(t, "--seed", "83", "--seconds", "2"))
	if code != 0 {
		t.Fatalf("another tenant's upload while the first holds its share: exit %d %s %s", code, out, errOut)
	}
	for _, st := range stalled {
		st.CloseAndReceive()
	}
}

// TestTricklingUploadsAreCutOff: an upload that sends a byte now and then,
// never idle long enough to be cut off as stalled, is cut off once it has
// been waited for the idle timeout at less than the minimum rate, and its
// place is free again.
func TestTricklingUploadsAreCutOff(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_BODY_IDLE_TIMEOUT=2s", "FLEETSCOPE_MIN_BODY_RATE=1000", "FLEETSCOPE_MAX_UPLOADS_PER_KEY=1"}})
	ing, _ := s.clients()
	st := ing.Upload(context.Background())
	if err := st.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Metadata{Metadata: &fsv1.UploadMetadata{App: "trickle"}}}); err != nil {
		t.Fatal(err)
	}
	// A byte every 100 ms: never 2 s idle, 10 bytes a second. Bounded: 600
	// bytes at most, a minute.
	var sendErr error
	for i := 0; i < 600 && sendErr == nil; i++ {
		sendErr = st.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Chunk{Chunk: []byte{'#'}}})
		if l, _, _ := s.log.find(0, func(l map[string]any) bool {
			return l["msg"] == "request failed" && strings.Contains(fmt.Sprint(l["err"]), "slower than")
		}); l != nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // the trickle's pace, not a wait for the server
	}
	_, err := st.CloseAndReceive()
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "slower than") {
		t.Fatalf("a trickling upload: %v, want it cut off as too slow", err)
	}
	s.upload(plant(t, "--seed", "84", "--seconds", "2"), "--label", "after=trickle") // its place is free
}

// TestStalledBodiesAreCutOff: a body that stops coming is cut off as
// rate_limited (429, the code in Fleetscope-Error-Code), an upload's after
// FLEETSCOPE_BODY_IDLE_TIMEOUT without a byte, a query's once 10 s have
// passed without all of it; and the answer comes while the client still
// owes the rest: the server does not wait for it (the connection closed
// after the answer, its descriptor free).
func TestStalledBodiesAreCutOff(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_BODY_IDLE_TIMEOUT=1s"}})
	addr := strings.TrimPrefix(s.url, "http://")
	auth := "Host: x\r\nAuthorization: Bearer " + s.key + "\r\n"
	for _, c := range []struct{ name, request, want string }{
		{"a Pyroscope /ingest upload", "POST /ingest?name=stalled&format=folded HTTP/1.1\r\n" + auth +
			"Transfer-Encoding: chunked\r\n\r\n6\r\nr;a 1\n\r\n", "sent nothing for 1s"},
		{"a query", "POST /fleetscope.v1.QueryService/GetHeatmap HTTP/1.1\r\n" + auth +
			"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{", "did not arrive within 10s"},
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, c.request); err != nil {
			t.Fatal(err)
		}
		// A hang guard, not a duration the answer is held to: the old
		// server waited for the rest of the body before answering, forever.
		conn.SetReadDeadline(time.Now().Add(2 * time.Minute))
		res, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s that stalls: no answer while the body is owed: %v", c.name, err)
		}
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusTooManyRequests || res.Header.Get(api.CodeHeader) != "rate_limited" || !strings.Contains(string(body), c.want) {
			t.Fatalf("%s that stalls: %d %s=%q %s, want 429 rate_limited saying %q", c.name, res.StatusCode, api.CodeHeader, res.Header.Get(api.CodeHeader), body, c.want)
		}
	}
	// A Connect upload stream that sends its metadata, then nothing.
	stalled, from := s.stallUploads(s.key, 1, 0)
	s.log.await(t, from, 2*time.Minute, func(l map[string]any) bool {
		return l["msg"] == "request failed" && strings.Contains(fmt.Sprint(l["procedure"]), "IngestService/Upload")
	})
	_, err := stalled[0].CloseAndReceive()
	if connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "sent nothing for 1s") {
		t.Fatalf("a Connect upload that stalls: %v, want ResourceExhausted saying it sent nothing", err)
	}
	if err, ok := err.(*connect.Error); ok && err.Meta().Get(api.CodeHeader) != "rate_limited" {
		t.Fatalf("a Connect upload that stalls: %s=%q, want rate_limited", api.CodeHeader, err.Meta().Get(api.CodeHeader))
	}
}

// TestQueryBodiesAreSmall: a query's request body is a selection of a few
// hundred bytes: one of more than 64 KiB is refused as too large before
// it is read to its end.
func TestQueryBodiesAreSmall(t *testing.T) {
	s := startService(t, serviceOpts{})
	_, q := s.clients()
	_, err := q.GetHeatmap(context.Background(), connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: strings.Repeat("x", 100<<10)}))
	if connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Fatalf("a 100-KiB query: %v, want ResourceExhausted (too large)", err)
	}
	if _, err := q.GetHeatmap(context.Background(), connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: "not-an-id"})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("a small query for no profile: %v, want NotFound (read, not refused for its size)", err)
	}
}

// TestIdleConnectionsAreShed: with every connection place taken by
// connections that send nothing, a new client (a health check) still gets
// in: the connection idle longest is closed to make room.
func TestIdleConnectionsAreShed(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_MAX_CONNS=8"}})
	addr := strings.TrimPrefix(s.url, "http://")
	var idle []net.Conn
	for range 8 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 30 * time.Second}
	for i := range 3 {
		res, err := hc.Get(s.url + "/healthz")
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("health check %d with every place idle: %v %v", i, res, err)
		}
		res.Body.Close()
	}
	// The oldest idle connection was the one closed.
	idle[0].SetReadDeadline(time.Now().Add(30 * time.Second))
	if _, err := idle[0].Read(make([]byte, 1)); err == nil {
		t.Fatal("the idlest connection is still open")
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
		return s.pyroscopeIngest(key, "name=bounded&format=folded", body)
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

// TestConnectionsPerAddressAreBounded: with two connections an address,
// two held open from 127.0.0.1 take its places: a third from there is
// closed unanswered, while another address (127.0.0.2) is served; once
// one of the two closes, 127.0.0.1 is served again.
func TestConnectionsPerAddressAreBounded(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_MAX_CONNS_PER_IP=2"}})
	http.DefaultClient.CloseIdleConnections()
	addr := strings.TrimPrefix(s.url, "http://")
	// health dials from ip and asks /healthz on a kept-alive connection;
	// it returns the open connection if the server answered.
	health := func(ip string) (net.Conn, error) {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second} // a failure, not a measurement
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return nil, err
		}
		c.SetDeadline(time.Now().Add(10 * time.Second)) // a closed connection says so at once
		if _, err := c.Write([]byte("GET /healthz HTTP/1.1\r\nHost: fleetscope\r\n\r\n")); err != nil {
			c.Close()
			return nil, err
		}
		res, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			c.Close()
			return nil, err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			c.Close()
			return nil, fmt.Errorf("/healthz: %s", res.Status)
		}
		c.SetDeadline(time.Time{})
		return c, nil
	}
	var held []net.Conn
	// Until the server has let go of the connections startService used.
	waitUntil(t, "two connections from 127.0.0.1 served and held", func() bool {
		c, err := health("127.0.0.1")
		if err == nil {
			held = append(held, c)
		}
		return len(held) == 2
	})
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	if c, err := health("127.0.0.1"); err == nil {
		c.Close()
		t.Fatal("a third connection from 127.0.0.1 was served with two held open")
	} else if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a third connection from 127.0.0.1: %v; want it closed at once, not kept waiting", err)
	}
	if c, err := health("127.0.0.2"); err != nil {
		t.Fatalf("a connection from another address with 127.0.0.1's places taken: %v", err)
	} else {
		c.Close()
	}
	held[0].Close()
	held = held[1:]
	waitUntil(t, "127.0.0.1 served again once one of its connections closed", func() bool {
		c, err := health("127.0.0.1")
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}

// TestShapesAreBounded: the server refuses a profile deeper than
// FLEETSCOPE_MAX_DEPTH or with more distinct stacks than
// FLEETSCOPE_MAX_STACKS, through the Connect upload and /ingest alike,
// storing nothing, while one at the limits is stored.
func TestShapesAreBounded(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_MAX_DEPTH=3", "FLEETSCOPE_MAX_STACKS=2"}})
	ctx := context.Background()
	ing, _ := s.clients()
	upload := func(text string) error {
		_, err := ing.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Metadata: &fsv1.UploadMetadata{App: "shape", InputFormat: "folded"}, Data: []byte(text)}))
		return err
	}
	pyroscope := func(text string) (int, string) {
		code, msg, err := s.pyroscopeIngest(s.key, "name=shape&format=folded", strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return code, msg
	}

	// Shapes: too deep, too many stacks; nothing stored.
	for _, tc := range []struct{ name, text, setting string }{
		{"a stack of 4 frames", "main;a;b;c 1\n", "FLEETSCOPE_MAX_DEPTH"},
		{"3 distinct stacks", "main;a 1\nmain;b 1\nmain;c 1\n", "FLEETSCOPE_MAX_STACKS"},
	} {
		if err := upload(tc.text); connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), tc.setting) {
			t.Errorf("UploadFile of %s: %v; want ResourceExhausted naming %s", tc.name, err, tc.setting)
		}
		if code, msg := pyroscope(tc.text); code != http.StatusRequestEntityTooLarge || !strings.Contains(msg, tc.setting) {
			t.Errorf("/ingest of %s: %d %q; want 413 naming %s", tc.name, code, msg, tc.setting)
		}
	}
	if got := s.counts(); got != "profiles=0 profile_stacks=0 seconds=0 frames=0 stacks=0 blobs=0" {
		t.Fatalf("refused shapes left: %s", got)
	}
	if err := upload("main;a;b 1\nmain;c 2\n"); err != nil {
		t.Errorf("a profile at the limits (depth 3, 2 stacks): %v", err)
	}
	if code, msg := pyroscope("main;a;b 3\nmain;d 1\n"); code != http.StatusOK {
		t.Errorf("/ingest of a profile at the limits: %d %q", code, msg)
	}
}

// TestOneMessageUploadsAreBounded: over the API, the single-message
// uploads (the browser's UploadFile, Pyroscope's Push) are bounded in size
// (FLEETSCOPE_BROWSER_UPLOAD_BYTES; the streamed upload of the same file
// is stored) and four at a time in flight (a fifth is refused at once,
// while a streamed upload is still admitted).
func TestOneMessageUploadsAreBounded(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_BROWSER_UPLOAD_BYTES=1048576"}})
	ctx := context.Background()
	ing, _ := s.clients()
	push := s.as(s.key).push
	upload := func(text string) error {
		_, err := ing.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Metadata: &fsv1.UploadMetadata{App: "shape", InputFormat: "folded"}, Data: []byte(text)}))
		return err
	}

	// Size: a file over the bound in one message is refused; streamed, it
	// is stored.
	// (The bound is 1 MiB, the CLI's chunk: each message of a streamed
	// upload is bounded by it too.)
	big := plant(t, "--seed", "83", "--seconds", "8")
	data, _ := os.ReadFile(big)
	if len(data) <= 1<<20+64<<10 {
		t.Fatalf("the planted file has %d bytes: not over the bound", len(data))
	}
	if _, err := ing.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Metadata: &fsv1.UploadMetadata{App: "big"}, Data: data})); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Errorf("UploadFile of %d bytes over a bound of 1 MiB: %v; want ResourceExhausted", len(data), err)
	}
	pr := connect.NewRequest(&pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{{
		Labels:  []*typesv1.LabelPair{{Name: "service_name", Value: "big"}},
		Samples: []*pushv1.RawSample{{RawProfile: data}}}}})
	if _, err := push.Push(ctx, pr); connect.CodeOf(err) != connect.CodeResourceExhausted {
		t.Errorf("Push of %d bytes over a bound of 1 MiB: %v; want ResourceExhausted", len(data), err)
	}
	s.upload(big) // streamed

	// In flight: four one-message uploads stall mid-body; a fifth is
	// refused at once, a streamed upload still admitted.
	_, from, _ := s.log.find(0, func(map[string]any) bool { return false })
	var bodies []*io.PipeWriter
	ended := make(chan error, 4)
	for range 4 {
		body, bodyW := io.Pipe()
		bodies = append(bodies, bodyW)
		req, _ := http.NewRequest("POST", s.url+fleetscopev1connect.IngestServiceUploadFileProcedure, body)
		req.Header.Set("Authorization", "Bearer "+s.key)
		req.Header.Set("Content-Type", "application/proto")
		go func() {
			res, err := http.DefaultClient.Do(req)
			if err == nil {
				res.Body.Close()
			}
			ended <- err
		}()
		bodyW.Write([]byte{0x0a}) // the start of the message, no more
		_, from = s.log.await(t, from, 60*time.Second, func(l map[string]any) bool {
			return l["msg"] == "upload admitted" && l["procedure"] == fleetscopev1connect.IngestServiceUploadFileProcedure
		})
	}
	if err := upload("main;x 1\n"); connect.CodeOf(err) != connect.CodeResourceExhausted || !strings.Contains(err.Error(), "one-message uploads in flight") {
		t.Errorf("a fifth one-message upload with four stalled: %v; want ResourceExhausted, the one-message uploads in flight", err)
	}
	s.upload(plant(t, "--seed", "84", "--seconds", "1")) // streamed: admitted
	for _, w := range bodies {
		w.CloseWithError(errors.New("the client gives up"))
	}
	for range bodies {
		<-ended
	}
	waitUntil(t, "a one-message upload admitted again", func() bool {
		return connect.CodeOf(upload("main;y 1\n")) != connect.CodeResourceExhausted
	})
}
