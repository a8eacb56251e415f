package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/slim/otlp/common/v1"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/fleetscope/fleetscope/api"
)

// TestOTLPStreamPerHostMinute: exports of one host in one minute join one
// stream (a segment each, queryable at once); an export two minutes
// later ends that stream (in the background), stored as one profile of the minute's samples
// (the segments gone); another host's exports make their own stream.
func TestOTLPStreamPerHostMinute(t *testing.T) {
	s := startService(t, serviceOpts{})
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).UnixNano()
	send := func(at int64, host string) {
		t.Helper()
		req := otlpRequest(at)
		req.ResourceProfiles[0].Resource.Attributes[1] = &commonpb.KeyValue{Key: "host.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: host}}}
		if resp, err := s.otlpConnectGRPC(s.key, "", req); err != nil || resp.GetPartialSuccess() != nil {
			t.Fatalf("export at %d of %s: %v %v", at, host, resp, err)
		}
	}
	for i := range 6 { // every 5 s of minute 10:00, 2 samples each
		send(t0+int64(i)*5e9, "h1")
	}
	send(t0+10e9, "h2")
	byHost := func() map[string][]bool { // host: live segment or not
		out := map[string][]bool{}
		for _, p := range s.search("hostile") {
			out[p.GetHost()] = append(out[p.GetHost()], p.GetLabels()["live"] != "")
		}
		return out
	}
	if got := byHost(); len(got["h1"]) != 6 || len(got["h2"]) != 1 || !got["h1"][0] {
		t.Fatalf("after 6 exports of h1 and 1 of h2 in one minute: %v, want 6 and 1 live segments", got)
	}
	send(t0+121e9, "h1") // 10:02:01: ends h1's stream of 10:00, in the background
	waitUntil(t, "h1's minute stored as one profile and the new segment", func() bool {
		got := byHost()
		return len(got["h1"]) == 2 && len(got["h2"]) == 1
	})
	found := false
	for _, p := range s.search("hostile") {
		if p.GetHost() == "h1" && p.GetLabels()["live"] == "" {
			found = true
			if p.GetSamples() != 12 || p.GetStartTime().AsTime().Unix() != t0/1e9+1 {
				t.Fatalf("h1's 10:00 profile: %d samples from %v, want the 12 samples of its 6 exports from 10:00:01", p.GetSamples(), p.GetStartTime().AsTime())
			}
		}
	}
	if !found {
		t.Fatal("h1's 10:00 stream was not stored as one profile")
	}
}

// TestOTLPUploadPlaces: an OTLP export takes an upload place of its key
// like any upload: with one place a key, a stalled OTLP/HTTP body holds
// it, and the key's next export is refused at once as retryable: over
// gRPC ResourceExhausted with RetryInfo (without it a Collector drops
// the data), over HTTP 429 with Retry-After and a google.rpc.Status. A
// request without a key is refused before its body is read.
func TestOTLPUploadPlaces(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_MAX_UPLOADS_PER_KEY=1"}})
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).UnixNano()
	good, _ := proto.Marshal(otlpRequest(t0))

	// No key: 401 before the body (which never comes).
	body, bodyW := io.Pipe()
	req, _ := http.NewRequest("POST", s.url+api.OTLPPath, body)
	req.Header.Set("Content-Type", "application/x-protobuf")
	cl := &http.Client{Timeout: 30 * time.Second}
	res, err := cl.Do(req)
	if err != nil || res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key, a body that never comes: %v %v, want 401 at once", res, err)
	}
	res.Body.Close()
	bodyW.Close()

	body, bodyW = io.Pipe()
	done := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest("POST", s.url+api.OTLPPath, body)
		req.Header.Set("Content-Type", "application/x-protobuf")
		req.Header.Set("Authorization", "Bearer "+s.key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- 0
			return
		}
		res.Body.Close()
		done <- res.StatusCode
	}()
	bodyW.Write(good[:10])
	s.log.await(t, 0, time.Minute, func(l map[string]any) bool { return l["msg"] == "upload admitted" && l["procedure"] == api.OTLPPath })

	pd := perfToOTLP(t, "../../../shared/corpus/perf/recorded-perf-realtime-2events.txt", 0, "placed", "h1")[0]
	_, err = s.otlpGRPC(t, s.key, "", pd)
	st, _ := status.FromError(err)
	retry := false
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok && ri.GetRetryDelay().AsDuration() > 0 {
			retry = true
		}
	}
	if st.Code() != codes.ResourceExhausted || !retry || !strings.Contains(st.Message(), "this key has 1 uploads in flight") {
		t.Errorf("a gRPC export while the key's place is taken: %v (details %v), want ResourceExhausted with RetryInfo", err, st.Details())
	}
	code, b, h := s.otlpHTTP(t, s.key, nil, good)
	var sst spb.Status
	if perr := proto.Unmarshal(b, &sst); perr != nil || code != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(sst.GetMessage(), "uploads in flight") {
		t.Errorf("an HTTP export while the key's place is taken: %d %q Retry-After %q, want 429 with Retry-After", code, b, h.Get("Retry-After"))
	}
	// The stalled body ends: stored; the place is free again.
	io.Copy(bodyW, bytes.NewReader(good[10:]))
	bodyW.Close()
	if c := <-done; c != http.StatusOK {
		t.Fatalf("the stalled export, once its body ended: %d", c)
	}
	if resp, err := s.otlpGRPC(t, s.key, "", pd); err != nil || resp.PartialSuccess().RejectedProfiles() != 0 {
		t.Fatalf("a gRPC export once the place is free: %v", err)
	}
}
