package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	collpb "go.opentelemetry.io/proto/slim/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/slim/otlp/common/v1"
	pb "go.opentelemetry.io/proto/slim/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/slim/otlp/resource/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/fleetscope/fleetscope/api"
)

// otlpRequest is a well-formed export of app "hostile": two samples of
// one stack (main called by start, in /bin/app), thread attributes, each
// timestamped inside the profile's span [t0, t0+5s).
func otlpRequest(t0 int64) *collpb.ExportProfilesServiceRequest {
	str := func(s string) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}}
	}
	return &collpb.ExportProfilesServiceRequest{
		Dictionary: &pb.ProfilesDictionary{
			StringTable:    []string{"", "cpu", "nanoseconds", "main", "start", "/bin/app", "thread.name", "thread.id", "env"},
			FunctionTable:  []*pb.Function{{}, {NameStrindex: 3}, {NameStrindex: 4}},
			MappingTable:   []*pb.Mapping{{}, {FilenameStrindex: 5}},
			LocationTable:  []*pb.Location{{}, {MappingIndex: 1, Address: 0x1234, Lines: []*pb.Line{{FunctionIndex: 1}}}, {MappingIndex: 1, Address: 0x5678, Lines: []*pb.Line{{FunctionIndex: 2}}}},
			StackTable:     []*pb.Stack{{}, {LocationIndices: []int32{1, 2}}},
			AttributeTable: []*pb.KeyValueAndUnit{{}, {KeyStrindex: 6, Value: str("worker")}, {KeyStrindex: 7, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: 42}}}, {KeyStrindex: 8, Value: str("prod")}},
			LinkTable:      []*pb.Link{{}},
		},
		ResourceProfiles: []*pb.ResourceProfiles{{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: str("hostile")}, {Key: "host.name", Value: str("h1")}}},
			ScopeProfiles: []*pb.ScopeProfiles{{Profiles: []*pb.Profile{{
				SampleType: &pb.ValueType{TypeStrindex: 1, UnitStrindex: 2}, TimeUnixNano: uint64(t0), DurationNano: uint64(5 * time.Second), Period: 10_000_000,
				Samples: []*pb.Sample{{StackIndex: 1, AttributeIndices: []int32{1, 2, 3}, TimestampsUnixNano: []uint64{uint64(t0 + 1e9), uint64(t0 + 2e9)}, Values: []int64{10_000_000, 10_000_000}}},
			}}}},
		}},
	}
}

// otlpConnectGRPC sends req over gRPC with a generic Connect client of
// the slim generated types (any bytes a sender may send, well-formed or
// not), the key and X-Scope-OrgID as given.
func (s *service) otlpConnectGRPC(key, orgID string, req *collpb.ExportProfilesServiceRequest) (*collpb.ExportProfilesServiceResponse, error) {
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true)
	hc := &http.Client{Transport: &http.Transport{Protocols: h2c}}
	defer hc.CloseIdleConnections()
	c := connect.NewClient[collpb.ExportProfilesServiceRequest, collpb.ExportProfilesServiceResponse](hc, s.url+api.OTLPProcedure, connect.WithGRPC(), connect.WithSendGzip())
	r := connect.NewRequest(req)
	if key != "" {
		r.Header().Set("Authorization", "Bearer "+key)
	}
	if orgID != "" {
		r.Header().Set(api.OrgIDHeader, orgID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := c.CallUnary(ctx, r)
	if err != nil {
		return nil, err
	}
	return res.Msg, nil
}

// TestOTLPHostileInput: malformed requests, out-of-range indexes into
// every dictionary table, a million attributes, timestamps outside the
// profile's span, untimed samples, another protocol version, a gzip bomb,
// no key, a key without the ingest scope and another tenant's
// X-Scope-OrgID, each over gRPC and OTLP/HTTP: each is answered with its
// pinned code (InvalidArgument / 400 for what a retry cannot fix, so a
// Collector does not retry it) and a message naming what is wrong, and
// nothing is stored. A request with one bad profile of two is a partial
// success naming it, and stores the good one; the well-formed request is
// stored (the positive control).
func TestOTLPHostileInput(t *testing.T) {
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_BROWSER_UPLOAD_BYTES=" + "33554432"}})
	readKey := s.newKey("acme", "read")
	s.admin("tenant", "create", "other")
	t0 := time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).UnixNano()
	type hostile struct {
		what   string
		mutate func(r *collpb.ExportProfilesServiceRequest)
		msg    string
	}
	prof := func(r *collpb.ExportProfilesServiceRequest) *pb.Profile {
		return r.ResourceProfiles[0].ScopeProfiles[0].Profiles[0]
	}
	million := make([]int32, 1_000_000)
	for i := range million {
		million[i] = 3
	}
	cases := []hostile{
		{"a function name out of the string table", func(r *collpb.ExportProfilesServiceRequest) { r.Dictionary.FunctionTable[1].NameStrindex = 99 }, "dictionary.string_table index 99 is out of range"},
		{"a negative string index", func(r *collpb.ExportProfilesServiceRequest) { r.Dictionary.MappingTable[1].FilenameStrindex = -1 }, "dictionary.string_table index -1"},
		{"a stack out of range", func(r *collpb.ExportProfilesServiceRequest) { prof(r).Samples[0].StackIndex = 7 }, "dictionary.stack_table index 7 is out of range (the table has 2 entries)"},
		{"a location out of range", func(r *collpb.ExportProfilesServiceRequest) { r.Dictionary.StackTable[1].LocationIndices[1] = 1 << 30 }, "dictionary.location_table index 1073741824"},
		{"a function out of range", func(r *collpb.ExportProfilesServiceRequest) { r.Dictionary.LocationTable[1].Lines[0].FunctionIndex = 3 }, "dictionary.function_table index 3"},
		{"a mapping out of range", func(r *collpb.ExportProfilesServiceRequest) { r.Dictionary.LocationTable[2].MappingIndex = 2 }, "dictionary.mapping_table index 2"},
		{"an attribute out of range", func(r *collpb.ExportProfilesServiceRequest) { prof(r).Samples[0].AttributeIndices[0] = 4 }, "dictionary.attribute_table index 4"},
		{"an attribute key out of range", func(r *collpb.ExportProfilesServiceRequest) { r.Dictionary.AttributeTable[3].KeyStrindex = 1000 }, "dictionary.string_table index 1000"},
		{"a sample type out of range", func(r *collpb.ExportProfilesServiceRequest) { prof(r).SampleType.TypeStrindex = 50 }, "string_table index 50"},
		{"no empty string first", func(r *collpb.ExportProfilesServiceRequest) { r.Dictionary.StringTable[0] = "x" }, `string_table[0] must be ""`},
		{"no dictionary", func(r *collpb.ExportProfilesServiceRequest) { r.Dictionary = nil }, "no dictionary"},
		{"a newline in a function name", func(r *collpb.ExportProfilesServiceRequest) { r.Dictionary.StringTable[3] = "main\n\tffff evil (x)" }, "control character"},
		{"a million attributes on a sample", func(r *collpb.ExportProfilesServiceRequest) { prof(r).Samples[0].AttributeIndices = million }, "has 1000000 attributes: at most 64"},
		{"a million attributes on a profile", func(r *collpb.ExportProfilesServiceRequest) { prof(r).AttributeIndices = million }, "has 1000000 attributes: at most 64"},
		{"timestamps outside the span", func(r *collpb.ExportProfilesServiceRequest) {
			prof(r).Samples[0].TimestampsUnixNano[1] = uint64(t0 + 6e9)
		}, "lies outside the profile's span"},
		{"a timestamp before the span", func(r *collpb.ExportProfilesServiceRequest) { prof(r).Samples[0].TimestampsUnixNano[0] = 1 }, "lies outside the profile's span"},
		{"untimed samples", func(r *collpb.ExportProfilesServiceRequest) {
			prof(r).Samples[0].TimestampsUnixNano = nil
			prof(r).Samples[0].Values = []int64{5}
		}, "no timestamps_unix_nano: fleetscope stores timed samples only"},
		{"values not matching timestamps", func(r *collpb.ExportProfilesServiceRequest) { prof(r).Samples[0].Values = []int64{1} }, "1 values and 2 timestamps"},
		{"another protocol version", func(r *collpb.ExportProfilesServiceRequest) {
			prof(r).ProtoReflect().SetUnknown(protowire.AppendVarint(protowire.AppendTag(nil, 99, protowire.VarintType), 1))
		}, "unknown to opentelemetry-proto v1.10.0"},
		{"an event name perf cannot print", func(r *collpb.ExportProfilesServiceRequest) { r.Dictionary.StringTable[1] = "cpu time" }, "an event name is"},
	}
	grpcCode := map[int]connect.Code{400: connect.CodeInvalidArgument, 401: connect.CodeUnauthenticated, 403: connect.CodePermissionDenied, 413: connect.CodeResourceExhausted}
	checkHTTP := func(what string, code int, body []byte, want int, msg string) {
		t.Helper()
		var st spb.Status
		if err := proto.Unmarshal(body, &st); err != nil || code != want || !strings.Contains(st.GetMessage(), msg) {
			t.Errorf("%s over OTLP/HTTP: %d %q (%v), want %d with %q", what, code, st.GetMessage(), err, want, msg)
		}
	}
	for _, c := range cases {
		req := otlpRequest(t0)
		c.mutate(req)
		_, err := s.otlpConnectGRPC(s.key, "", req)
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s over gRPC: %v, want InvalidArgument with %q", c.what, err, c.msg)
		}
		body, _ := proto.Marshal(req)
		code, res, _ := s.otlpHTTP(t, s.key, nil, body)
		checkHTTP(c.what, code, res, 400, c.msg)
	}
	// Who may send: no key, a key without the ingest scope, another
	// tenant named.
	good, _ := proto.Marshal(otlpRequest(t0))
	for _, c := range []struct {
		what, key, orgID string
		status           int
		msg              string
	}{
		{"no key", "", "", 401, "missing API key"},
		{"a read key", readKey, "", 403, "lacks the ingest scope"},
		{"another tenant's X-Scope-OrgID", s.key, "other", 403, `X-Scope-OrgID "other" is not this key's tenant`},
	} {
		_, err := s.otlpConnectGRPC(c.key, c.orgID, otlpRequest(t0))
		if connect.CodeOf(err) != grpcCode[c.status] || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s over gRPC: %v, want %v with %q", c.what, err, grpcCode[c.status], c.msg)
		}
		h := http.Header{}
		if c.orgID != "" {
			h.Set(api.OrgIDHeader, c.orgID)
		}
		code, res, _ := s.otlpHTTP(t, c.key, h, good)
		checkHTTP(c.what, code, res, c.status, c.msg)
	}
	// Bodies that are not a request: not protobuf, JSON, a gzip bomb.
	code, res, _ := s.otlpHTTP(t, s.key, nil, []byte("\xff\xff\xff not protobuf"))
	checkHTTP("a body that is not protobuf", code, res, 400, "not an ExportProfilesServiceRequest")
	code, res, _ = s.otlpHTTP(t, s.key, http.Header{"Content-Type": {"application/json"}}, []byte(`{}`))
	if code != http.StatusUnsupportedMediaType {
		t.Errorf("a JSON body: HTTP %d %q, want 415", code, res)
	}
	var bomb bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&bomb, gzip.BestCompression)
	zw.Write(make([]byte, 40<<20))
	zw.Close()
	code, res, _ = s.otlpHTTP(t, s.key, nil, bomb.Bytes()) // gzipped once more by otlpHTTP
	checkHTTP("a gzip bomb", code, res, 400, "not an ExportProfilesServiceRequest")
	req, _ := http.NewRequest("POST", s.url+api.OTLPPath, bytes.NewReader(bomb.Bytes()))
	req.Header.Set("Authorization", "Bearer "+s.key)
	req.Header.Set("Content-Type", "application/x-protobuf")
	req.Header.Set("Content-Encoding", "gzip")
	if r, err := http.DefaultClient.Do(req); err != nil || r.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("%d KiB of gzip inflating to 40 MiB (the bound 32 MiB): %v %v, want 413", bomb.Len()>>10, r, err)
	} else {
		r.Body.Close()
	}
	if n := len(s.search("hostile")); n != 0 {
		t.Fatalf("%d profiles stored from hostile requests", n)
	}

	// Partial success: a good profile and a bad one.
	req2 := otlpRequest(t0)
	bad := proto.Clone(prof(req2)).(*pb.Profile)
	bad.Samples[0].TimestampsUnixNano[0] = uint64(t0 - 1)
	req2.ResourceProfiles[0].ScopeProfiles[0].Profiles = append(req2.ResourceProfiles[0].ScopeProfiles[0].Profiles, bad)
	resp, err := s.otlpConnectGRPC(s.key, "", req2)
	if err != nil || resp.GetPartialSuccess().GetRejectedProfiles() != 1 || !strings.Contains(resp.GetPartialSuccess().GetErrorMessage(), "profiles[1]") {
		t.Fatalf("one bad profile of two over gRPC: %v %v, want a partial success rejecting profiles[1]", resp, err)
	}
	body, _ := proto.Marshal(req2)
	code, res, _ = s.otlpHTTP(t, s.key, nil, body)
	var hres collpb.ExportProfilesServiceResponse
	if err := proto.Unmarshal(res, &hres); code != 200 || err != nil || hres.GetPartialSuccess().GetRejectedProfiles() != 1 {
		t.Fatalf("one bad profile of two over OTLP/HTTP: %d %v %v", code, &hres, err)
	}
	// The good profile is stored once (the second request is a retry of
	// the first's good part), with what it says.
	ps := s.search("hostile")
	if len(ps) != 1 || ps[0].GetSamples() != 2 || ps[0].GetHost() != "h1" || ps[0].GetLabels()["env"] != "prod" {
		t.Fatalf("after the partial successes: %v, want one segment of 2 samples, host h1, label env=prod", ps)
	}
	folded := s.mustCLI("flamegraph", "--profile", ps[0].GetId(), "--period")
	if strings.TrimSpace(folded) != "worker;start;main 20000000" {
		t.Fatalf("the stored samples fold to %q, want worker;start;main weighted 2 x 10 ms", folded)
	}
}
