package main

// The tenancy and security suite: a second tenant, with keys of every
// scope, attacks the first one through every registered procedure.

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
	querierv1 "github.com/grafana/pyroscope/api/gen/proto/go/querier/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"connectrpc.com/connect"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope/api"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/store/blob"
	"github.com/fleetscope/fleetscope/store/lifecycle"
)

// clients holds every service's client for one key.
type clients struct {
	ingest  fleetscopev1connect.IngestServiceClient
	query   fleetscopev1connect.QueryServiceClient
	fleet   fleetscopev1connect.FleetServiceClient
	compare fleetscopev1connect.CompareServiceClient
	admin   fleetscopev1connect.AdminServiceClient
	share   fleetscopev1connect.ShareServiceClient
	push    pushv1connect.PusherServiceClient
	pyro    querierv1connect.QuerierServiceClient
}

func (s *service) as(key string) clients {
	opt := connect.WithInterceptors(api.Bearer(key))
	return clients{
		ingest:  fleetscopev1connect.NewIngestServiceClient(http.DefaultClient, s.url, opt),
		query:   fleetscopev1connect.NewQueryServiceClient(http.DefaultClient, s.url, opt),
		fleet:   fleetscopev1connect.NewFleetServiceClient(http.DefaultClient, s.url, opt),
		compare: fleetscopev1connect.NewCompareServiceClient(http.DefaultClient, s.url, opt),
		admin:   fleetscopev1connect.NewAdminServiceClient(http.DefaultClient, s.url, opt),
		share:   fleetscopev1connect.NewShareServiceClient(http.DefaultClient, s.url, opt),
		push:    pushv1connect.NewPusherServiceClient(http.DefaultClient, s.url, opt),
		pyro:    querierv1connect.NewQuerierServiceClient(http.DefaultClient, s.url, opt),
	}
}

func (s *service) newKey(tenant, scopes string) string {
	s.t.Helper()
	return strings.TrimSpace(s.admin("key", "create", "--tenant", tenant, "--scope", scopes))
}

// procedures lists every endpoint the server serves data on: every
// procedure of the scope table (the interceptor refuses any other), every
// RPC of the API's own services and of Pyroscope's query service (so a
// service mounted without a scope entry shows, and so do the Pyroscope
// procedures fleetscope leaves unimplemented), and the plain HTTP ingest
// endpoint.
func procedures() []string {
	out := slices.Sorted(maps.Keys(api.Scopes))
	for _, fd := range []protoreflect.FileDescriptor{
		fsv1.File_fleetscope_v1_ingest_proto, fsv1.File_fleetscope_v1_query_proto, fsv1.File_fleetscope_v1_fleet_proto,
		fsv1.File_fleetscope_v1_admin_proto, fsv1.File_fleetscope_v1_share_proto, fsv1.File_fleetscope_v1_compare_proto,
		querierv1.File_querier_v1_querier_proto, pushv1.File_push_v1_push_proto,
	} {
		for i := 0; i < fd.Services().Len(); i++ {
			svc := fd.Services().Get(i)
			for j := 0; j < svc.Methods().Len(); j++ {
				if p := "/" + string(svc.FullName()) + "/" + string(svc.Methods().Get(j).Name()); !slices.Contains(out, p) {
					out = append(out, p)
				}
			}
		}
	}
	return append(out, api.PyroscopePath)
}

// TestTenantIsolation: tenant B's keys of each scope try to read, search,
// query, share, delete and overwrite tenant A's data through every
// procedure. Every attempt must fail (or, for uploads and searches, touch
// only B's own data). A procedure without an attack here fails the test.
func TestTenantIsolation(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	aAdminKey := s.newKey("acme", "admin")
	aAdmin := s.as(aAdminKey)
	pathA := plant(t, "--seed", "31", "--seconds", "4")
	idA := s.upload(pathA, "--label", "team=a")
	// Recorded with epoch timestamps, days ago: B never has data then.
	idA2 := s.upload(plant(t, "--seed", "32", "--seconds", "3", "--epoch"))
	linkA, err := aAdmin.admin.CreateShareLink(ctx, connect.NewRequest(&fsv1.CreateShareLinkRequest{ProfileId: idA}))
	if err != nil {
		t.Fatal(err)
	}
	keysA, _ := aAdmin.admin.ListKeys(ctx, connect.NewRequest(&fsv1.ListKeysRequest{}))
	aKeyIDs := map[string]bool{}
	for _, k := range keysA.Msg.GetKeys() {
		aKeyIDs[k.GetId()] = true
	}

	s.admin("tenant", "create", "intruder")
	bKeys := map[string]string{}
	for _, scope := range []string{"ingest", "read", "admin", "ingest,read,admin"} {
		bKeys[scope] = s.newKey("intruder", scope)
	}
	dataA, _ := os.ReadFile(pathA)
	pprofData := corpus.Read(t, "corpus/pprof/go-sha-sort.cpu.pprof")
	guessed := []string{idA, idA2, uuid.NewString(), "not-a-uuid", strings.ToUpper(idA), idA + " "}

	pwned := "intruder"
	attempts, breaches := 0, 0
	covered := map[string]bool{}
	try := func(proc string, scope string, breached bool, detail any) {
		covered[proc] = true
		attempts++
		if breached {
			breaches++
			t.Errorf("BREACH: %s with B's %q key: %v", proc, scope, detail)
		}
		if err, isErr := detail.(error); isErr && err != nil && !refusal(err) {
			t.Errorf("%s with B's %q key: refused as %v (%v); want not found, permission denied or unauthenticated", proc, scope, connect.CodeOf(err), err)
		}
	}
	ok := func(err error) bool {
		if err != nil && !refusal(err) {
			t.Errorf("an attack was refused as %v (%v); want not found, permission denied or unauthenticated", connect.CodeOf(err), err)
		}
		return err == nil
	}
	for scope, key := range bKeys {
		b := s.as(key)
		for _, id := range guessed {
			_, err := b.query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id}))
			try(fleetscopev1connect.QueryServiceGetProfileProcedure, scope, ok(err), id)
			_, err = b.query.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id}))
			try(fleetscopev1connect.QueryServiceGetHeatmapProcedure, scope, ok(err), id)
			_, err = b.query.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id, Rows: 7, IncludeIdle: true}))
			try(fleetscopev1connect.QueryServiceGetHeatmapProcedure, scope, ok(err), id)
			st, en := int64(0), int64(1e9)
			_, err = b.query.GetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id, StartNanos: &st, EndNanos: &en}))
			try(fleetscopev1connect.QueryServiceGetFlameGraphProcedure, scope, ok(err), id)
			_, err = b.query.GetHeatmapSeries(ctx, connect.NewRequest(&fsv1.GetHeatmapSeriesRequest{ProfileId: id, By: fsv1.SeriesKey_SERIES_KEY_THREAD}))
			try(fleetscopev1connect.QueryServiceGetHeatmapSeriesProcedure, scope, ok(err), id)
			_, err = b.query.GetSpans(ctx, connect.NewRequest(&fsv1.GetSpansRequest{ProfileId: id}))
			try(fleetscopev1connect.QueryServiceGetSpansProcedure, scope, ok(err), id)
			_, err = b.query.GetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id, Filter: &fsv1.SampleFilter{InSpans: "slower:p50"}}))
			try(fleetscopev1connect.QueryServiceGetFlameGraphProcedure, scope, ok(err), id)
			side := &fsv1.DiffSide{Side: &fsv1.DiffSide_Profile{Profile: &fsv1.GetFlameGraphRequest{ProfileId: id}}}
			_, err = b.compare.GetDiffFlameGraph(ctx, connect.NewRequest(&fsv1.GetDiffFlameGraphRequest{A: side, B: side}))
			try(fleetscopev1connect.CompareServiceGetDiffFlameGraphProcedure, scope, ok(err), id)
			_, err = b.admin.DeleteProfile(ctx, connect.NewRequest(&fsv1.DeleteProfileRequest{Id: id}))
			try(fleetscopev1connect.AdminServiceDeleteProfileProcedure, scope, ok(err), id)
			_, err = b.admin.CreateShareLink(ctx, connect.NewRequest(&fsv1.CreateShareLinkRequest{ProfileId: id}))
			try(fleetscopev1connect.AdminServiceCreateShareLinkProcedure, scope, ok(err), id)
			_, err = b.admin.UpdateProfile(ctx, connect.NewRequest(&fsv1.UpdateProfileRequest{Id: id, App: &pwned, Host: &pwned, SetLabels: map[string]string{"team": "b"}}))
			try(fleetscopev1connect.AdminServiceUpdateProfileProcedure, scope, ok(err), id)
		}
		for _, f := range []*fsv1.SearchProfilesRequest{{}, {App: "test"}, {Labels: map[string]string{"team": "a"}}, {Since: nil, PageSize: 1000}} {
			res, err := b.query.SearchProfiles(ctx, connect.NewRequest(f))
			try(fleetscopev1connect.QueryServiceSearchProfilesProcedure, scope, err == nil && slices.ContainsFunc(res.Msg.GetProfiles(), func(p *fsv1.Profile) bool {
				return p.GetId() == idA || p.GetId() == idA2 || p.GetLabels()["team"] == "a"
			}), f)
		}
		// Upload A's exact bytes: B gets a profile of its own, never A's.
		res, err := b.ingest.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Metadata: &fsv1.UploadMetadata{App: "test"}, Data: dataA}))
		try(fleetscopev1connect.IngestServiceUploadFileProcedure, scope, err == nil && (res.Msg.GetProfile().GetId() == idA || res.Msg.GetProfile().GetId() == idA2), err)
		stream := b.ingest.Upload(ctx)
		stream.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Metadata{Metadata: &fsv1.UploadMetadata{App: "test"}}})
		stream.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Chunk{Chunk: dataA}})
		up, err := stream.CloseAndReceive()
		try(fleetscopev1connect.IngestServiceUploadProcedure, scope, err == nil && up.Msg.GetProfile().GetId() == idA, err)
		_ = up
		// A live batch under a stream name A used: B's own stream (or refused).
		lv, err := b.ingest.AppendLive(ctx, connect.NewRequest(&fsv1.AppendLiveRequest{Stream: "a-stream", Metadata: &fsv1.UploadMetadata{App: "test"}, Chunk: dataA, Final: true}))
		try(fleetscopev1connect.IngestServiceAppendLiveProcedure, scope, err == nil && (lv.Msg.GetProfile().GetId() == idA || lv.Msg.GetProfile().GetId() == idA2), err)

		gt, err := b.admin.GetTenant(ctx, connect.NewRequest(&fsv1.GetTenantRequest{}))
		try(fleetscopev1connect.AdminServiceGetTenantProcedure, scope, err == nil && gt.Msg.GetName() != "intruder", err)
		_ = gt
		lk, err := b.admin.ListKeys(ctx, connect.NewRequest(&fsv1.ListKeysRequest{}))
		leaked := false
		if err == nil {
			for _, k := range lk.Msg.GetKeys() {
				leaked = leaked || aKeyIDs[k.GetId()]
			}
		}
		try(fleetscopev1connect.AdminServiceListKeysProcedure, scope, err == nil && leaked, err)
		ck, err := b.admin.CreateKey(ctx, connect.NewRequest(&fsv1.CreateKeyRequest{Scopes: []string{"read"}}))
		if err == nil { // a key B made for itself still cannot read A
			_, rerr := s.as(ck.Msg.GetSecret()).query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: idA}))
			err = rerr
		}
		try(fleetscopev1connect.AdminServiceCreateKeyProcedure, scope, err == nil, "new key read A's profile")
		for id := range aKeyIDs {
			_, err := b.admin.RevokeKey(ctx, connect.NewRequest(&fsv1.RevokeKeyRequest{Id: id}))
			try(fleetscopev1connect.AdminServiceRevokeKeyProcedure, scope, ok(err), id)
		}
		ae, err := b.admin.ListAuditEvents(ctx, connect.NewRequest(&fsv1.ListAuditEventsRequest{PageSize: 1000}))
		seenA := false
		if err == nil {
			for _, e := range ae.Msg.GetEvents() {
				seenA = seenA || aKeyIDs[e.GetTarget()] || e.GetTarget() == linkA.Msg.GetLink().GetId() || e.GetTarget() == idA
			}
		}
		try(fleetscopev1connect.AdminServiceListAuditEventsProcedure, scope, err == nil && seenA, err)
		// Fleet queries over A's app, window and labels: B sees only its own.
		sel := &fsv1.FleetSelection{App: "test", Labels: []*fsv1.LabelMatcher{{Name: "team", Value: "a"}},
			From: timestamppb.New(time.Now().Add(-time.Hour)), To: timestamppb.New(time.Now().Add(time.Hour))}
		fh, err := b.fleet.GetFleetHeatmap(ctx, connect.NewRequest(&fsv1.GetFleetHeatmapRequest{Selection: sel}))
		try(fleetscopev1connect.FleetServiceGetFleetHeatmapProcedure, scope, err == nil && (fh.Msg.GetTotal() > 0 || fh.Msg.GetAccounting().GetProfiles() > 0), err)
		fhs, err := b.fleet.GetFleetHosts(ctx, connect.NewRequest(&fsv1.GetFleetHostsRequest{Selection: sel}))
		try(fleetscopev1connect.FleetServiceGetFleetHostsProcedure, scope, err == nil && len(fhs.Msg.GetHosts()) > 0, err)
		ftl, err := b.fleet.GetFleetTimeline(ctx, connect.NewRequest(&fsv1.GetFleetTimelineRequest{Selection: sel}))
		try(fleetscopev1connect.FleetServiceGetFleetTimelineProcedure, scope, err == nil && ftl.Msg.GetAccounting().GetProfiles() > 0, err)
		ffg, err := b.fleet.GetFleetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFleetFlameGraphRequest{Selection: sel}))
		try(fleetscopev1connect.FleetServiceGetFleetFlameGraphProcedure, scope, err == nil && ffg.Msg.GetFlameGraph().GetTotal() > 0, err)
		fleetSide := &fsv1.DiffSide{Side: &fsv1.DiffSide_Fleet{Fleet: sel}}
		dfg, err := b.compare.GetDiffFlameGraph(ctx, connect.NewRequest(&fsv1.GetDiffFlameGraphRequest{A: fleetSide, B: fleetSide}))
		try(fleetscopev1connect.CompareServiceGetDiffFlameGraphProcedure, scope, err == nil && (dfg.Msg.GetTotalA() > 0 || dfg.Msg.GetTotalB() > 0), err)
		// Grafana's queries (Pyroscope's query API): over the days-old
		// window only A has data, over the last hours only A has team=a;
		// B's key (with X-Scope-OrgID naming A, which is refused) reads
		// neither.
		pyroscopeAttacks(t, ctx, b.pyro, scope, try)
		// Pushes naming A's tenant are refused; without, they are B's own.
		pr := connect.NewRequest(&pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{{
			Labels:  []*typesv1.LabelPair{{Name: "service_name", Value: "test"}},
			Samples: []*pushv1.RawSample{{RawProfile: pprofData}}}}})
		pr.Header().Set("X-Scope-OrgID", "acme")
		_, err = b.push.Push(ctx, pr)
		try("/push.v1.PusherService/Push", scope, err == nil, err)
		// Pyroscope's HTTP ingest with A's tenant named: refused, as the
		// push is (the key alone selects the tenant; a header naming
		// another is PermissionDenied on every endpoint).
		req, _ := http.NewRequest("POST", s.url+"/ingest?name=intruder{origin=b}&format=folded", strings.NewReader("x;y 1\n"))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("X-Scope-OrgID", "acme")
		res2, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res2.Body.Close()
		// Forbidden with every key, an ingest key too (A's fleet is
		// checked below: unchanged).
		if want := http.StatusForbidden; res2.StatusCode != want {
			t.Errorf("%s with B's %q key and X-Scope-OrgID naming A: HTTP %d, want %d", api.PyroscopePath, scope, res2.StatusCode, want)
		}
		try(api.PyroscopePath, scope, false, nil)
		ls, err := b.admin.ListShareLinks(ctx, connect.NewRequest(&fsv1.ListShareLinksRequest{}))
		try(fleetscopev1connect.AdminServiceListShareLinksProcedure, scope, err == nil && slices.ContainsFunc(ls.Msg.GetLinks(), func(l *fsv1.ShareLink) bool { return l.GetProfileId() == idA }), err)
		_ = ls
		_, err = b.admin.RevokeShareLink(ctx, connect.NewRequest(&fsv1.RevokeShareLinkRequest{Id: linkA.Msg.GetLink().GetId()}))
		try(fleetscopev1connect.AdminServiceRevokeShareLinkProcedure, scope, ok(err), "A's link")
	}
	// Share links: guessed, truncated and altered tokens read nothing.
	token := linkA.Msg.GetToken()
	pub := s.as("")
	for _, tok := range []string{"", "fss_", "fss_" + strings.Repeat("a", 40), token[:len(token)-1], token + "x", strings.ToUpper(token), linkA.Msg.GetLink().GetId()} {
		_, err := pub.share.GetSharedProfile(ctx, connect.NewRequest(&fsv1.GetSharedProfileRequest{Token: tok}))
		try(fleetscopev1connect.ShareServiceGetSharedProfileProcedure, "none", ok(err), tok)
		_, err = pub.share.GetSharedHeatmap(ctx, connect.NewRequest(&fsv1.GetSharedHeatmapRequest{Token: tok}))
		try(fleetscopev1connect.ShareServiceGetSharedHeatmapProcedure, "none", ok(err), tok)
		_, err = pub.share.GetSharedFlameGraph(ctx, connect.NewRequest(&fsv1.GetSharedFlameGraphRequest{Token: tok}))
		try(fleetscopev1connect.ShareServiceGetSharedFlameGraphProcedure, "none", ok(err), tok)
	}
	// The same queries with A's own key do see A's data (so the attacks
	// above could have found it).
	if n := len(pyroscopeReads(t, ctx, s.as(s.key).pyro)); n != 9 {
		t.Errorf("A's own key sees %d of its 9 kinds of data through the query API", n)
	}
	// Every procedure was attacked.
	for _, p := range procedures() {
		if !covered[p] {
			t.Errorf("procedure %s has no attack in the isolation suite", p)
		}
	}
	// And every endpoint the server mounts, as its own mux lists them (the
	// "serving" log line): each procedure of a mounted service, the
	// Pyroscope ingest path; the rest serve no tenant's data, said why.
	noTenantData := map[string]string{
		"GET /healthz": "says whether the database answers, nothing else",
		"GET /metrics": "process and RPC counters by procedure and code, no tenant or profile",
		"/":            "the dashboard's static files",
	}
	line, _, _ := s.log.find(0, msg("serving"))
	routes, _ := line["routes"].([]any)
	if len(routes) < 10 {
		t.Fatalf("the server lists %d routes in its serving line: %v", len(routes), line)
	}
	for _, r := range routes {
		route := fmt.Sprint(r)
		if why, ok := noTenantData[route]; ok {
			t.Logf("route %s: not attacked: %s", route, why)
			continue
		}
		if route == api.PyroscopePath {
			if !covered[route] {
				t.Errorf("route %s has no attack", route)
			}
			continue
		}
		d, err := protoregistry.GlobalFiles.FindDescriptorByName(protoreflect.FullName(strings.Trim(route, "/")))
		svc, ok := d.(protoreflect.ServiceDescriptor)
		if err != nil || !ok {
			t.Errorf("route %s is neither a known service nor a known tenant-free endpoint: the isolation suite must attack it", route)
			continue
		}
		for j := 0; j < svc.Methods().Len(); j++ {
			if p := route + string(svc.Methods().Get(j).Name()); !covered[p] {
				t.Errorf("mounted procedure %s has no attack in the isolation suite", p)
			}
		}
	}
	// A's data is intact, its key and link still work.
	if _, err := aAdmin.query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: idA})); err == nil {
		t.Error("A's admin key (no read scope) read a profile")
	}
	for _, id := range []string{idA, idA2} {
		if _, err := s.as(s.key).query.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id})); err != nil {
			t.Errorf("A lost profile %s: %v", id, err)
		}
	}
	if p, err := s.as(s.key).query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: idA})); err != nil ||
		p.Msg.GetProfile().GetApp() != "test" || p.Msg.GetProfile().GetHost() == pwned || p.Msg.GetProfile().GetLabels()["team"] != "a" {
		t.Errorf("A's profile metadata changed: %v %v", err, p)
	}
	if _, err := pub.share.GetSharedFlameGraph(ctx, connect.NewRequest(&fsv1.GetSharedFlameGraphRequest{Token: token})); err != nil {
		t.Errorf("A's share link stopped working: %v", err)
	}
	// Nothing B sent landed in A's tenant.
	if res, err := s.as(s.key).query.SearchProfiles(ctx, connect.NewRequest(&fsv1.SearchProfilesRequest{PageSize: 1000})); err != nil || len(res.Msg.GetProfiles()) != 2 {
		t.Errorf("A's tenant holds %d profiles after the attacks, want its 2 (%v)", len(res.Msg.GetProfiles()), err)
	}
	t.Logf("%d cross-tenant attempts over %d procedures, %d succeeded", attempts, len(covered), breaches)
	if breaches != 0 {
		t.Fatalf("%d of %d cross-tenant attempts succeeded", breaches, attempts)
	}
}

// refusal reports whether err is how the server refuses another tenant's
// data: not found, permission denied or unauthenticated (invalid argument
// for a malformed id, unimplemented for Pyroscope procedures fleetscope does
// not serve). Anything else (internal, unavailable, unknown) is a bug even
// when nothing leaked: a client would retry it, or it hides a failure.
func refusal(err error) bool {
	switch connect.CodeOf(err) {
	case connect.CodeNotFound, connect.CodePermissionDenied, connect.CodeUnauthenticated,
		connect.CodeInvalidArgument, connect.CodeUnimplemented:
		return true
	}
	return false
}

// TestKeysScopesAndLinks: revocation, expiry, disabled tenants; share links
// read without a key and stop at once when revoked.
func TestKeysScopesAndLinks(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	id := s.upload(plant(t, "--seed", "33", "--seconds", "4"), "--host", "web-7", "--label", "env=prod")
	admin := s.as(s.newKey("acme", "admin"))

	// A key made through the API works, then stops when revoked.
	ck, err := admin.admin.CreateKey(ctx, connect.NewRequest(&fsv1.CreateKeyRequest{Name: "ci", Scopes: []string{"read"}}))
	if err != nil || !strings.HasPrefix(ck.Msg.GetSecret(), "fsk_") || !strings.HasPrefix(ck.Msg.GetSecret(), ck.Msg.GetKey().GetId()) {
		t.Fatalf("create key: %v %+v", err, ck)
	}
	reader := s.as(ck.Msg.GetSecret())
	if _, err := reader.query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id})); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.admin.RevokeKey(ctx, connect.NewRequest(&fsv1.RevokeKeyRequest{Id: ck.Msg.GetKey().GetId()})); err != nil {
		t.Fatal(err)
	}
	if _, err := reader.query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("revoked key: %v", err)
	}
	// A key is refused from its expiry on, though the server has it in its
	// authentication cache (used once before): the wait is for the wall
	// clock to pass expires_at, the answer is the server's.
	expires := time.Now().Add(2 * time.Second)
	exp, err := admin.admin.CreateKey(ctx, connect.NewRequest(&fsv1.CreateKeyRequest{Scopes: []string{"read"}, ExpiresAt: timestamppb.New(expires)}))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.as(exp.Msg.GetSecret()).query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id}))
	if time.Now().Before(expires) && err != nil {
		t.Fatalf("a key before its expiry: %v", err)
	}
	time.Sleep(time.Until(expires) + time.Millisecond)
	if _, err := s.as(exp.Msg.GetSecret()).query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("expired key: %v", err)
	}
	// Share link: readable without a key, exactly its range; revocation holds at once.
	st, en := int64(1e9), int64(2e9)
	link, err := admin.admin.CreateShareLink(ctx, connect.NewRequest(&fsv1.CreateShareLinkRequest{ProfileId: id, StartNanos: &st, EndNanos: &en, TtlSeconds: 600}))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(link.Msg.GetUrl(), "/s/"+link.Msg.GetToken()) {
		t.Fatalf("share URL %q", link.Msg.GetUrl())
	}
	pub := s.as("")
	fg, err := pub.share.GetSharedFlameGraph(ctx, connect.NewRequest(&fsv1.GetSharedFlameGraphRequest{Token: link.Msg.GetToken()}))
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.as(s.key).query.GetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id, StartNanos: &st, EndNanos: &en}))
	if err != nil || fg.Msg.GetFlameGraph().GetFolded() != want.Msg.GetFolded() || want.Msg.GetTotal() == 0 {
		t.Fatalf("shared flame graph differs from the owner's: %v", err)
	}
	// What a range link reveals: the seconds its range touches, not the
	// host, labels or header facts.
	sp, err := pub.share.GetSharedProfile(ctx, connect.NewRequest(&fsv1.GetSharedProfileRequest{Token: link.Msg.GetToken()}))
	if err != nil {
		t.Fatal(err)
	}
	if p := sp.Msg.GetProfile(); p.GetHost() != "" || len(p.GetLabels()) != 0 || len(p.GetMeta()) != 0 || p.GetSha256() != "" || p.GetApp() != "test" {
		t.Fatalf("a range link reveals host %q, labels %v, meta %v, sha %q (app %q)", p.GetHost(), p.GetLabels(), p.GetMeta(), p.GetSha256(), p.GetApp())
	}
	shm, err := pub.share.GetSharedHeatmap(ctx, connect.NewRequest(&fsv1.GetSharedHeatmapRequest{Token: link.Msg.GetToken()}))
	if err != nil {
		t.Fatal(err)
	}
	owner, err := s.as(s.key).query.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id}))
	if err != nil {
		t.Fatal(err)
	}
	if hm := shm.Msg.GetHeatmap(); hm.GetStartSecond() != owner.Msg.GetStartSecond()+1 || len(hm.GetColumns()) != 1 ||
		!slices.Equal(hm.GetColumns()[0].GetCounts(), owner.Msg.GetColumns()[1].GetCounts()) {
		t.Fatalf("the heatmap of a [1, 2) link: start %d, %d columns; want start %d and the owner's column 1 alone",
			hm.GetStartSecond(), len(hm.GetColumns()), owner.Msg.GetStartSecond()+1)
	}
	keep, err := admin.admin.CreateShareLink(ctx, connect.NewRequest(&fsv1.CreateShareLinkRequest{ProfileId: id, TtlSeconds: 600}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.admin.RevokeShareLink(ctx, connect.NewRequest(&fsv1.RevokeShareLinkRequest{Id: link.Msg.GetLink().GetId()})); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.share.GetSharedFlameGraph(ctx, connect.NewRequest(&fsv1.GetSharedFlameGraphRequest{Token: link.Msg.GetToken()})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("revoked link: %v", err)
	}
	// A disabled tenant's links stop working at once, its keys within the
	// auth cache's 5 s.
	if _, err := pub.share.GetSharedFlameGraph(ctx, connect.NewRequest(&fsv1.GetSharedFlameGraphRequest{Token: keep.Msg.GetToken()})); err != nil {
		t.Fatalf("whole-profile link before disabling: %v", err)
	}
	s.admin("tenant", "disable", "acme")
	if _, err := pub.share.GetSharedFlameGraph(ctx, connect.NewRequest(&fsv1.GetSharedFlameGraphRequest{Token: keep.Msg.GetToken()})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("a disabled tenant's link: %v, want NotFound", err)
	}
	s.flushCaches() // as the 5-s key cache would, at once
	if _, err := s.as(s.key).query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id})); connect.CodeOf(err) != connect.CodeUnauthenticated {
		t.Fatalf("disabled tenant: %v", err)
	}
	s.admin("tenant", "enable", "acme")
	// The audit log has it all, newest first.
	ae, err := admin.admin.ListAuditEvents(ctx, connect.NewRequest(&fsv1.ListAuditEventsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, e := range ae.Msg.GetEvents() {
		actions = append(actions, e.GetAction())
	}
	for _, a := range []string{"key.create", "key.revoke", "share.create", "share.revoke", "tenant.disable", "tenant.enable"} {
		if !slices.Contains(actions, a) {
			t.Errorf("audit log lacks %s: %v", a, actions)
		}
	}
}

// TestQuotas: per-tenant upload size, stored bytes and request rate limits
// answer ResourceExhausted with a clear message and store nothing.
func TestQuotas(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	small := plant(t, "--seed", "34", "--seconds", "2")
	st, _ := os.Stat(small)
	s.admin("tenant", "set-limits", "acme", "--max-upload-bytes", "400000", "--max-stored-bytes", "1")
	s.flushCaches() // the key cache holds limits for 5 s
	big := plant(t, "--seed", "35", "--seconds", "20")
	_, errOut, code := s.cli("upload", "--app", "q", big)
	if code != 1 || !strings.Contains(errOut, "upload larger than the limit of 400000 bytes") {
		t.Fatalf("over the upload limit: exit %d %q", code, errOut)
	}
	_, errOut, code = s.cli("upload", "--app", "q", small)
	if code != 1 || !strings.Contains(errOut, "storage quota exceeded") {
		t.Fatalf("over the storage quota (%d bytes): exit %d %q", st.Size(), code, errOut)
	}
	if got := s.counts(); got != "profiles=0 profile_stacks=0 seconds=0 frames=0 stacks=0 blobs=0" {
		t.Fatalf("quota failures left: %s", got)
	}
	s.admin("tenant", "set-limits", "acme", "--rate", "5")
	s.flushCaches()
	q := s.as(s.key).query
	limited := 0
	for range 40 {
		_, err := q.SearchProfiles(ctx, connect.NewRequest(&fsv1.SearchProfilesRequest{}))
		if connect.CodeOf(err) == connect.CodeResourceExhausted {
			limited++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if limited < 20 {
		t.Fatalf("rate 5/s: only %d of 40 rapid requests were limited", limited)
	}
}

// TestRetentionAndDeletion: the sweeper (with an injected clock) deletes
// expired profiles and their raw files; DeleteProfile and tenant deletion
// leave no orphans; check reports orphans both ways.
func TestRetentionAndDeletion(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	old := s.upload(plant(t, "--seed", "36", "--seconds", "2"))
	s.upload(plant(t, "--seed", "37", "--seconds", "2"))
	s.admin("tenant", "set-limits", "acme", "--retention-days", "30")
	svc := &lifecycle.Service{DB: s.db, Blobs: s.blobs}
	// Make one profile 31 days old.
	if err := s.sql(func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `UPDATE profiles SET created_at = now() - interval '31 days' WHERE id = $1`, old)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	n, err := svc.Sweep(ctx, time.Now())
	if err != nil || n != 1 {
		t.Fatalf("sweep: %d deleted, %v; want 1", n, err)
	}
	// An injected clock 30 days on expires the other one too.
	if n, err := svc.Sweep(ctx, time.Now().Add(31*24*time.Hour)); err != nil || n != 1 {
		t.Fatalf("sweep a month later: %d deleted, %v; want 1", n, err)
	}
	if got := s.counts(); !strings.HasPrefix(got, "profiles=0 profile_stacks=0 seconds=0") || !strings.HasSuffix(got, "blobs=0") {
		t.Fatalf("after retention: %s", got)
	}
	// DeleteProfile through the API.
	id := s.upload(plant(t, "--seed", "38", "--seconds", "2"))
	admin := s.as(s.newKey("acme", "admin"))
	if _, err := admin.admin.DeleteProfile(ctx, connect.NewRequest(&fsv1.DeleteProfileRequest{Id: id})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.as(s.key).query.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("deleted profile: %v", err)
	}
	// check: an orphan blob and a missing blob are reported, --fix removes the orphan.
	s.upload(plant(t, "--seed", "39", "--seconds", "2"))
	if err := s.blobs.Put(ctx, "1/orphan", strings.NewReader("x"), 1); err != nil {
		t.Fatal(err)
	}
	out, _, code := run1(s.env, "check")
	if code != 1 || !strings.Contains(out, "orphan blob 1/orphan") {
		t.Fatalf("check: exit %d %q", code, out)
	}
	if out, errOut, code := run1(s.env, "check", "--fix"); code != 0 {
		t.Fatalf("check --fix: exit %d %q %q", code, out, errOut)
	}
	if _, _, code := run1(s.env, "check"); code != 0 {
		t.Fatal("check after --fix still finds problems")
	}
	// Deleting the tenant removes everything it owns.
	s.admin("tenant", "delete", "acme")
	var left []string
	s.blobs.List(ctx, "", func(i blob.Info) error { left = append(left, i.Key); return nil })
	if got := s.counts(); !strings.HasPrefix(got, "profiles=0 profile_stacks=0 seconds=0 frames=0 stacks=0") || len(left) != 0 {
		t.Fatalf("after tenant delete: %s, blobs %v", got, left)
	}
	if n := s.count("audit_log") + s.count("api_keys") + s.count("share_links"); n != 0 {
		t.Fatalf("after tenant delete: %d audit/key/link rows left", n)
	}
}

// TestAdminCLI drives the admin service through the CLI.
func TestAdminCLI(t *testing.T) {
	s := startService(t, serviceOpts{})
	id := s.upload(plant(t, "--seed", "40", "--seconds", "3"))
	env := []string{"FLEETSCOPE_URL=" + s.url, "FLEETSCOPE_API_KEY=" + s.newKey("acme", "admin")}
	run := func(args ...string) string {
		t.Helper()
		out, errOut, code := run1(env, args...)
		if code != 0 {
			t.Fatalf("fleetscope %v: exit %d %s", args, code, errOut)
		}
		return out
	}
	if out := run("admin", "tenant"); !strings.Contains(out, "tenant acme") || !strings.Contains(out, "profiles 1") {
		t.Fatalf("admin tenant: %q", out)
	}
	secret := strings.TrimSpace(run("admin", "create-key", "--scope", "read", "--name", "dash"))
	if !strings.HasPrefix(secret, "fsk_") {
		t.Fatalf("create-key printed %q", secret)
	}
	if out := run("admin", "keys"); !strings.Contains(out, "dash") || !strings.Contains(out, secret[:12]) || strings.Contains(out, secret) {
		t.Fatalf("admin keys (must show the prefix, never the secret): %q", out)
	}
	f := strings.Fields(run("admin", "share", "--profile", id, "--start", "1", "--end", "2", "--ttl", "1h"))
	if len(f) != 2 || !strings.Contains(f[1], "/s/fss_") {
		t.Fatalf("admin share printed %v", f)
	}
	run("admin", "unshare", f[0])
	run("admin", "revoke-key", secret[:12])
	run("admin", "delete-profile", id)
	out := run("admin", "audit")
	for _, a := range []string{"key.create", "share.create", "share.revoke", "key.revoke", "profile.delete"} {
		if !strings.Contains(out, a) {
			t.Errorf("audit lacks %s:\n%s", a, out)
		}
	}
	if _, errOut, code := run1(env, "admin", "delete-profile", id); code != 1 || !strings.Contains(errOut, "not found") {
		t.Fatalf("deleting twice: exit %d %q", code, errOut)
	}
}

// tenancyEpoch is where A's epoch-clock profile lies (unix ms); its
// labelled one (team=a) was uploaded now.
const tenancyEpoch = int64(1795000000000)

// pyroscopeReads asks the query API, with q's key, for A's data in every
// way the data source can, and returns what it found of A's, by kind.
func pyroscopeReads(t *testing.T, ctx context.Context, q querierv1connect.QuerierServiceClient) map[string]bool {
	t.Helper()
	found := map[string]bool{}
	orgA := func(r connect.AnyRequest) { r.Header().Set("X-Scope-OrgID", "acme") }
	now := time.Now().UnixMilli()
	ep, recent := [2]int64{tenancyEpoch, tenancyEpoch + 10_000}, [2]int64{now - 3600_000, now + 60_000}
	pt := connect.NewRequest(&querierv1.ProfileTypesRequest{Start: ep[0], End: ep[1]})
	orgA(pt)
	if res, err := q.ProfileTypes(ctx, pt); err == nil && len(res.Msg.GetProfileTypes()) > 0 {
		found["profile types"] = true
	}
	if res, err := q.LabelNames(ctx, connect.NewRequest(&typesv1.LabelNamesRequest{Start: recent[0], End: recent[1]})); err == nil && slices.Contains(res.Msg.GetNames(), "team") {
		found["label names"] = true
	}
	if res, err := q.LabelValues(ctx, connect.NewRequest(&typesv1.LabelValuesRequest{Name: "team", Start: recent[0], End: recent[1]})); err == nil && slices.Contains(res.Msg.GetNames(), "a") {
		found["label values"] = true
	}
	if res, err := q.LabelValues(ctx, connect.NewRequest(&typesv1.LabelValuesRequest{Name: "service_name", Start: ep[0], End: ep[1]})); err == nil && len(res.Msg.GetNames()) > 0 {
		found["apps"] = true
	}
	if res, err := q.Series(ctx, connect.NewRequest(&querierv1.SeriesRequest{Matchers: []string{`{team="a"}`}, Start: recent[0], End: recent[1]})); err == nil && len(res.Msg.GetLabelsSet()) > 0 {
		found["series"] = true
	}
	const cpu = "fleetscope:cpu-clock:count:cpu-clock:count"
	for _, c := range []struct {
		kind, selector string
		w              [2]int64
	}{{"flame graph", `{service_name="test", team="a"}`, recent}, {"flame graph, any app", `{}`, ep}, {"flame graph, regex", `{service_name=~".+", hostname!="x"}`, ep}} {
		r := connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{ProfileTypeID: cpu, LabelSelector: c.selector, Start: c.w[0], End: c.w[1]})
		orgA(r)
		if res, err := q.SelectMergeStacktraces(ctx, r); err == nil && res.Msg.GetFlamegraph().GetTotal() > 0 {
			found[c.kind] = true
		}
	}
	if res, err := q.SelectSeries(ctx, connect.NewRequest(&querierv1.SelectSeriesRequest{ProfileTypeID: cpu, LabelSelector: `{team="a"}`, Start: recent[0], End: recent[1], Step: 60})); err == nil && len(res.Msg.GetSeries()) > 0 {
		found["series points"] = true
	}
	return found
}

// pyroscopeAttacks runs pyroscopeReads with B's key (each read a breach if
// it finds A's data) and calls every procedure fleetscope leaves
// unimplemented (a breach if one answers).
func pyroscopeAttacks(t *testing.T, ctx context.Context, q querierv1connect.QuerierServiceClient, scope string, try func(proc, scope string, breached bool, detail any)) {
	found := pyroscopeReads(t, ctx, q)
	for proc, kinds := range map[string][]string{
		querierv1connect.QuerierServiceProfileTypesProcedure:           {"profile types"},
		querierv1connect.QuerierServiceLabelNamesProcedure:             {"label names"},
		querierv1connect.QuerierServiceLabelValuesProcedure:            {"label values", "apps"},
		querierv1connect.QuerierServiceSeriesProcedure:                 {"series"},
		querierv1connect.QuerierServiceSelectMergeStacktracesProcedure: {"flame graph", "flame graph, any app", "flame graph, regex"},
		querierv1connect.QuerierServiceSelectSeriesProcedure:           {"series points"},
	} {
		for _, k := range kinds {
			try(proc, scope, found[k], k)
		}
	}
	w := [2]int64{tenancyEpoch, tenancyEpoch + 10_000}
	_, err := q.SelectMergeProfile(ctx, connect.NewRequest(&querierv1.SelectMergeProfileRequest{LabelSelector: `{}`, Start: w[0], End: w[1]}))
	try(querierv1connect.QuerierServiceSelectMergeProfileProcedure, scope, err == nil, err)
	_, err = q.SelectMergeSpanProfile(ctx, connect.NewRequest(&querierv1.SelectMergeSpanProfileRequest{LabelSelector: `{}`, Start: w[0], End: w[1]}))
	try(querierv1connect.QuerierServiceSelectMergeSpanProfileProcedure, scope, err == nil, err)
	_, err = q.SelectHeatmap(ctx, connect.NewRequest(&querierv1.SelectHeatmapRequest{LabelSelector: `{}`, Start: w[0], End: w[1]}))
	try(querierv1connect.QuerierServiceSelectHeatmapProcedure, scope, err == nil, err)
	_, err = q.Diff(ctx, connect.NewRequest(&querierv1.DiffRequest{}))
	try(querierv1connect.QuerierServiceDiffProcedure, scope, err == nil, err)
	_, err = q.GetProfileStats(ctx, connect.NewRequest(&typesv1.GetProfileStatsRequest{}))
	try(querierv1connect.QuerierServiceGetProfileStatsProcedure, scope, err == nil, err)
	_, err = q.AnalyzeQuery(ctx, connect.NewRequest(&querierv1.AnalyzeQueryRequest{Start: w[0], End: w[1], Query: `{}`}))
	try(querierv1connect.QuerierServiceAnalyzeQueryProcedure, scope, err == nil, err)
}
