package main

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/protobuf/proto"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// TestOTLPTenantLimits: a tenant's limits hold for OTLP as for every
// upload: its stack depth, its largest upload (as sent), its storage quota and its
// request rate, over gRPC and OTLP/HTTP, each with its pinned code; the
// rate limit, the one a retry fixes, carries RetryInfo over gRPC and
// Retry-After over HTTP. Nothing over a limit is stored.
func TestOTLPTenantLimits(t *testing.T) {
	s := startService(t, serviceOpts{})
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).UnixNano()
	good, _ := proto.Marshal(otlpRequest(t0))
	for _, c := range []struct {
		tenant string
		limits []string
		code   connect.Code
		status int
		msg    string
	}{
		{"shallow", []string{"--max-depth", "2"}, connect.CodeResourceExhausted, 413, "a stack of 3 frames, more than 2"},
		{"small", []string{"--max-upload-bytes", "100"}, connect.CodeResourceExhausted, 413, "100 bytes"},
		{"full", []string{"--max-stored-bytes", "10"}, connect.CodeResourceExhausted, 413, "storage quota exceeded"},
	} {
		s.admin("tenant", "create", c.tenant)
		s.admin(append([]string{"tenant", "set-limits", c.tenant}, c.limits...)...)
		key := s.newKey(c.tenant, "ingest,read")
		_, err := s.otlpConnectGRPC(key, "", otlpRequest(t0))
		if connect.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s over gRPC: %v, want %v with %q", c.tenant, err, c.code, c.msg)
		}
		code, body, _ := s.otlpHTTP(t, key, nil, good)
		if code != c.status || !strings.Contains(string(body), c.msg) {
			t.Errorf("%s over OTLP/HTTP: %d %q, want %d with %q", c.tenant, code, body, c.status, c.msg)
		}
		res, err := s.as(key).query.SearchProfiles(context.Background(), connect.NewRequest(&fsv1.SearchProfilesRequest{PageSize: 10}))
		if err != nil || len(res.Msg.GetProfiles()) != 0 {
			t.Errorf("%s: %v %v stored over its limit", c.tenant, res, err)
		}
	}

	s.admin("tenant", "create", "slow")
	s.admin("tenant", "set-limits", "slow", "--rate", "1")
	key := s.newKey("slow", "ingest")
	var limited error
	for i := range 10 {
		if _, err := s.otlpConnectGRPC(key, "", otlpRequest(t0+int64(i)*1e9)); err != nil {
			limited = err
			break
		}
	}
	var ce *connect.Error
	retry := false
	if errors.As(limited, &ce) {
		for _, d := range ce.Details() {
			if v, err := d.Value(); err == nil {
				if _, ok := v.(*errdetails.RetryInfo); ok {
					retry = true
				}
			}
		}
	}
	if connect.CodeOf(limited) != connect.CodeResourceExhausted || !retry || !strings.Contains(limited.Error(), "rate limit") {
		t.Errorf("exports over the tenant's rate over gRPC: %v, want ResourceExhausted with RetryInfo", limited)
	}
	for range 5 {
		code, _, h := s.otlpHTTP(t, key, nil, good)
		if code == http.StatusTooManyRequests {
			if h.Get("Retry-After") == "" {
				t.Errorf("429 without Retry-After")
			}
			return
		}
	}
	t.Error("exports over the tenant's rate over OTLP/HTTP: never 429")
}
