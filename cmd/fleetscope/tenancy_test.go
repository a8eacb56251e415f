package main

// The tenancy and security suite: a second tenant, with keys of every
// scope, attacks the first one through every registered procedure.

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
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
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope/api"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/store/blob"
	"github.com/fleetscope/fleetscope/store/index"
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
	return append(out, api.PyroscopePath, api.OTLPPath)
}

// grpcToConnect gives a gRPC client's error the Connect code of its
// status, so the suite's checks read both clients alike.
func grpcToConnect(err error) error {
	if err == nil {
		return nil
	}
	return connect.NewError(connect.Code(status.Code(err)), err)
}

// TestTenantIsolation: tenant B's keys of each scope try to read, search,
// query, share, delete and overwrite tenant A's data through every
// procedure. Every attempt must be refused with the exact code pinned for
// it (permission denied for a key without the procedure's scope, not found
// for A's ids and guessed ones, unimplemented for the Pyroscope procedures
// not served), or, for uploads, live batches, searches and fleet queries,
// answered about B's own data only. A's own key finds A's data through the
// same fleet and Pyroscope queries (so the attacks could have found it),
// A's open live stream goes on unaffected by B's batches under its name,
// and nothing B sends lands in A's tenant. A procedure without an attack
// here fails the test.
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
	intruderOTLP := perfToOTLP(t, "../../../shared/corpus/perf/recorded-perf-realtime-2events.txt", 0, "intruder", "b1")[0]
	pprofData := corpus.Read(t, "corpus/pprof/go-sha-sort.cpu.pprof")
	// A live recording of A's is open while B attacks: B's batches under
	// its name make B's own stream, and B cannot read its segment.
	livePath := plant(t, "--seed", "34", "--seconds", "4")
	liveRaw, _ := os.ReadFile(livePath)
	liveBatches := perfBatches(t, string(liveRaw), 2)
	liveA := s.liveTo("a-stream", &fsv1.UploadMetadata{App: "test"})
	if r, err := liveA(0, liveBatches[0], false); err != nil || r.GetNextSeq() != 1 {
		t.Fatalf("A's live batch 0: %v %v", r, err)
	}
	segA := ""
	for _, p := range s.search("test") {
		if p.GetLabels()["live"] == "a-stream" {
			segA = p.GetId()
		}
	}
	if segA == "" {
		t.Fatal("A's live stream has no segment")
	}
	guessed := []string{idA, idA2, segA, uuid.NewString(), "not-a-uuid", strings.ToUpper(idA), idA + " "}

	pwned := "intruder"
	attempts, breaches := 0, 0
	covered := map[string]bool{}
	// try records one attack on proc with B's key of scope: breached says
	// whether it read or changed A's data; err is the server's answer,
	// which must be want exactly (0: none, B acting on its own data).
	try := func(proc, scope string, breached bool, err error, want connect.Code, detail any) {
		t.Helper()
		covered[proc] = true
		attempts++
		if breached {
			breaches++
			t.Errorf("BREACH: %s with B's %q key: %v", proc, scope, detail)
		}
		switch {
		case want == 0 && err != nil:
			t.Errorf("%s with B's %q key (%v): %v; want an answer about B's own data", proc, scope, detail, err)
		case want != 0 && connect.CodeOf(err) != want:
			t.Errorf("%s with B's %q key (%v): %v; want %v", proc, scope, detail, err, want)
		}
	}
	// own is the answer to B's call of proc about its own data: none, or
	// the refusal of a key without proc's scope.
	own := func(proc, scope string) connect.Code {
		need, ok := api.Scopes[proc]
		switch {
		case !ok:
			return connect.CodeUnimplemented
		case need != api.Public && !slices.Contains(strings.Split(scope, ","), need):
			return connect.CodePermissionDenied
		}
		return 0
	}
	// notFound is the refusal of B's call of proc naming A's profile, key
	// or link, or a guessed one: not found, as for one that does not exist
	// (a malformed id too: the server says no more about it).
	notFound := func(proc, scope string) connect.Code {
		if c := own(proc, scope); c != 0 {
			return c
		}
		return connect.CodeNotFound
	}
	aIDs := map[string]bool{idA: true, idA2: true, segA: true}
	// What A sees through the fleet queries and A's own Pyroscope reads:
	// the attacks below ask the same, so they could have found it.
	sel := &fsv1.FleetSelection{App: "test", Labels: []*fsv1.LabelMatcher{{Name: "team", Value: "a"}},
		From: timestamppb.New(time.Now().Add(-time.Hour)), To: timestamppb.New(time.Now().Add(time.Hour))}
	fleetSide := &fsv1.DiffSide{Side: &fsv1.DiffSide_Fleet{Fleet: sel}}
	fleetReads := func(c clients) map[string]answer {
		t.Helper()
		out := map[string]answer{}
		fh, err := c.fleet.GetFleetHeatmap(ctx, connect.NewRequest(&fsv1.GetFleetHeatmapRequest{Selection: sel}))
		out[fleetscopev1connect.FleetServiceGetFleetHeatmapProcedure] = answer{err == nil && (fh.Msg.GetTotal() > 0 || fh.Msg.GetAccounting().GetProfiles() > 0), err}
		fhs, err := c.fleet.GetFleetHosts(ctx, connect.NewRequest(&fsv1.GetFleetHostsRequest{Selection: sel}))
		out[fleetscopev1connect.FleetServiceGetFleetHostsProcedure] = answer{err == nil && len(fhs.Msg.GetHosts()) > 0, err}
		ftl, err := c.fleet.GetFleetTimeline(ctx, connect.NewRequest(&fsv1.GetFleetTimelineRequest{Selection: sel}))
		out[fleetscopev1connect.FleetServiceGetFleetTimelineProcedure] = answer{err == nil && ftl.Msg.GetAccounting().GetProfiles() > 0, err}
		ffg, err := c.fleet.GetFleetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFleetFlameGraphRequest{Selection: sel}))
		out[fleetscopev1connect.FleetServiceGetFleetFlameGraphProcedure] = answer{err == nil && ffg.Msg.GetFlameGraph().GetTotal() > 0, err}
		dfg, err := c.compare.GetDiffFlameGraph(ctx, connect.NewRequest(&fsv1.GetDiffFlameGraphRequest{A: fleetSide, B: fleetSide}))
		out[fleetscopev1connect.CompareServiceGetDiffFlameGraphProcedure] = answer{err == nil && (dfg.Msg.GetTotalA() > 0 || dfg.Msg.GetTotalB() > 0), err}
		return out
	}
	for proc, r := range fleetReads(s.as(s.key)) {
		if r.err != nil || !r.found {
			t.Errorf("A's own key finds nothing of A's through %s (%v): the attack on it proves nothing", proc, r.err)
		}
	}
	pyroA := pyroscopeReads(t, ctx, s.as(s.key).pyro)
	for kind, r := range pyroA {
		if r.err != nil || !r.found {
			t.Errorf("A's own key, Pyroscope query API, %s: found %v, %v", kind, r.found, r.err)
		}
	}
	if len(pyroA) != 9 {
		t.Errorf("A's own key reads %d kinds of data through the Pyroscope query API, want 9", len(pyroA))
	}
	// landedInA reports whether A's tenant holds a profile B sent (app
	// intruder, or label origin=b) that it did not hold when last asked.
	landed := 0
	landedInA := func() bool {
		t.Helper()
		n := 0
		for _, f := range []*fsv1.SearchProfilesRequest{{App: "intruder", PageSize: 1000}, {Labels: map[string]string{"origin": "b"}, PageSize: 1000}} {
			res, err := s.as(s.key).query.SearchProfiles(ctx, connect.NewRequest(f))
			if err != nil {
				t.Fatal(err)
			}
			n += len(res.Msg.GetProfiles())
		}
		more := n > landed
		landed = n
		return more
	}
	for scope, key := range bKeys {
		b := s.as(key)
		for _, id := range guessed {
			_, err := b.query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id}))
			p := fleetscopev1connect.QueryServiceGetProfileProcedure
			try(p, scope, err == nil, err, notFound(p, scope), id)
			p = fleetscopev1connect.QueryServiceGetHeatmapProcedure
			_, err = b.query.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id}))
			try(p, scope, err == nil, err, notFound(p, scope), id)
			_, err = b.query.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id, Rows: 7, IncludeIdle: true}))
			try(p, scope, err == nil, err, notFound(p, scope), id)
			st, en := int64(0), int64(1e9)
			p = fleetscopev1connect.QueryServiceGetFlameGraphProcedure
			_, err = b.query.GetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id, StartNanos: &st, EndNanos: &en}))
			try(p, scope, err == nil, err, notFound(p, scope), id)
			_, err = b.query.GetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: id, Filter: &fsv1.SampleFilter{InSpans: "slower:p50"}}))
			try(p, scope, err == nil, err, notFound(p, scope), id)
			p = fleetscopev1connect.QueryServiceGetHeatmapSeriesProcedure
			_, err = b.query.GetHeatmapSeries(ctx, connect.NewRequest(&fsv1.GetHeatmapSeriesRequest{ProfileId: id, By: fsv1.SeriesKey_SERIES_KEY_THREAD}))
			try(p, scope, err == nil, err, notFound(p, scope), id)
			p = fleetscopev1connect.QueryServiceGetSpansProcedure
			_, err = b.query.GetSpans(ctx, connect.NewRequest(&fsv1.GetSpansRequest{ProfileId: id}))
			try(p, scope, err == nil, err, notFound(p, scope), id)
			p = fleetscopev1connect.CompareServiceGetDiffFlameGraphProcedure
			side := &fsv1.DiffSide{Side: &fsv1.DiffSide_Profile{Profile: &fsv1.GetFlameGraphRequest{ProfileId: id}}}
			_, err = b.compare.GetDiffFlameGraph(ctx, connect.NewRequest(&fsv1.GetDiffFlameGraphRequest{A: side, B: side}))
			try(p, scope, err == nil, err, notFound(p, scope), id)
			p = fleetscopev1connect.AdminServiceDeleteProfileProcedure
			_, err = b.admin.DeleteProfile(ctx, connect.NewRequest(&fsv1.DeleteProfileRequest{Id: id}))
			try(p, scope, err == nil, err, notFound(p, scope), id)
			p = fleetscopev1connect.AdminServiceCreateShareLinkProcedure
			_, err = b.admin.CreateShareLink(ctx, connect.NewRequest(&fsv1.CreateShareLinkRequest{ProfileId: id}))
			try(p, scope, err == nil, err, notFound(p, scope), id)
			p = fleetscopev1connect.AdminServiceUpdateProfileProcedure
			_, err = b.admin.UpdateProfile(ctx, connect.NewRequest(&fsv1.UpdateProfileRequest{Id: id, App: &pwned, Host: &pwned, SetLabels: map[string]string{"team": "b"}}))
			try(p, scope, err == nil, err, notFound(p, scope), id)
		}
		p := fleetscopev1connect.QueryServiceSearchProfilesProcedure
		for _, f := range []*fsv1.SearchProfilesRequest{{}, {App: "test"}, {Labels: map[string]string{"team": "a"}}, {Since: nil, PageSize: 1000}} {
			res, err := b.query.SearchProfiles(ctx, connect.NewRequest(f))
			try(p, scope, err == nil && slices.ContainsFunc(res.Msg.GetProfiles(), func(p *fsv1.Profile) bool {
				return aIDs[p.GetId()] || p.GetLabels()["team"] == "a"
			}), err, own(p, scope), f)
		}
		// Upload A's exact bytes: B gets a profile of its own, never A's.
		p = fleetscopev1connect.IngestServiceUploadFileProcedure
		res, err := b.ingest.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Metadata: &fsv1.UploadMetadata{App: "intruder"}, Data: dataA}))
		try(p, scope, err == nil && aIDs[res.Msg.GetProfile().GetId()], err, own(p, scope), "A's bytes")
		p = fleetscopev1connect.IngestServiceUploadProcedure
		stream := b.ingest.Upload(ctx)
		stream.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Metadata{Metadata: &fsv1.UploadMetadata{App: "intruder"}}})
		stream.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Chunk{Chunk: dataA}})
		up, err := stream.CloseAndReceive()
		try(p, scope, err == nil && aIDs[up.Msg.GetProfile().GetId()], err, own(p, scope), "A's bytes")
		// A live batch, and the end, under the name of A's open stream: B's
		// own stream (below: A's goes on as if B had sent nothing).
		p = fleetscopev1connect.IngestServiceAppendLiveProcedure
		lv, err := b.ingest.AppendLive(ctx, connect.NewRequest(&fsv1.AppendLiveRequest{Stream: "a-stream", Metadata: &fsv1.UploadMetadata{App: "intruder"}, Chunk: dataA, Final: true}))
		try(p, scope, err == nil && aIDs[lv.Msg.GetProfile().GetId()], err, own(p, scope), "A's stream name")
		// A's stream's next batch, with A's metadata and other bytes, and
		// its end: refused as invalid, B's own stream of that name having
		// begun with other metadata.
		lv, err = b.ingest.AppendLive(ctx, connect.NewRequest(&fsv1.AppendLiveRequest{Stream: "a-stream", Seq: 1, Metadata: &fsv1.UploadMetadata{App: "test"}, Chunk: dataA, Final: true}))
		wantLive := own(p, scope)
		if wantLive == 0 {
			wantLive = connect.CodeInvalidArgument
		}
		try(p, scope, err == nil && aIDs[lv.Msg.GetProfile().GetId()], err, wantLive, "A's stream's next batch")

		p = fleetscopev1connect.AdminServiceGetTenantProcedure
		gt, err := b.admin.GetTenant(ctx, connect.NewRequest(&fsv1.GetTenantRequest{}))
		try(p, scope, err == nil && gt.Msg.GetName() != "intruder", err, own(p, scope), "")
		p = fleetscopev1connect.AdminServiceListKeysProcedure
		lk, err := b.admin.ListKeys(ctx, connect.NewRequest(&fsv1.ListKeysRequest{}))
		leaked := false
		if err == nil {
			for _, k := range lk.Msg.GetKeys() {
				leaked = leaked || aKeyIDs[k.GetId()]
			}
		}
		try(p, scope, leaked, err, own(p, scope), "")
		p = fleetscopev1connect.AdminServiceCreateKeyProcedure
		ck, err := b.admin.CreateKey(ctx, connect.NewRequest(&fsv1.CreateKeyRequest{Scopes: []string{"read"}}))
		try(p, scope, false, err, own(p, scope), "")
		if err == nil { // a key B made for itself still cannot read A
			_, rerr := s.as(ck.Msg.GetSecret()).query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: idA}))
			try(p, scope, rerr == nil, rerr, connect.CodeNotFound, "new key read A's profile")
		}
		p = fleetscopev1connect.AdminServiceRevokeKeyProcedure
		for id := range aKeyIDs {
			_, err := b.admin.RevokeKey(ctx, connect.NewRequest(&fsv1.RevokeKeyRequest{Id: id}))
			try(p, scope, err == nil, err, notFound(p, scope), id)
		}
		p = fleetscopev1connect.AdminServiceListAuditEventsProcedure
		ae, err := b.admin.ListAuditEvents(ctx, connect.NewRequest(&fsv1.ListAuditEventsRequest{PageSize: 1000}))
		seenA := false
		if err == nil {
			for _, e := range ae.Msg.GetEvents() {
				seenA = seenA || aKeyIDs[e.GetTarget()] || e.GetTarget() == linkA.Msg.GetLink().GetId() || aIDs[e.GetTarget()]
			}
		}
		try(p, scope, seenA, err, own(p, scope), "")
		// Fleet queries over A's app, window and labels (A's own key sees
		// its data through each, above): B sees nothing, and its key
		// with the read scope is answered, not refused.
		for p, r := range fleetReads(b) {
			try(p, scope, r.found, r.err, own(p, scope), sel)
		}
		// Grafana's queries (Pyroscope's query API): over the days-old
		// window only A has data, over the last hours only A has team=a;
		// B's key (with X-Scope-OrgID naming A, which is refused) reads
		// neither.
		pyroscopeAttacks(t, ctx, b.pyro, scope, own, try)
		// Pushes naming A's tenant are refused; without, they are B's own.
		p = pushv1connect.PusherServicePushProcedure
		pr := connect.NewRequest(&pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{{
			Labels:  []*typesv1.LabelPair{{Name: "service_name", Value: "intruder"}},
			Samples: []*pushv1.RawSample{{RawProfile: pprofData}}}}})
		pr.Header().Set("X-Scope-OrgID", "acme")
		_, err = b.push.Push(ctx, pr)
		// Refused with every key: the key alone selects the tenant, and a
		// header naming another is PermissionDenied on every endpoint.
		try(p, scope, landedInA(), err, connect.CodePermissionDenied, "X-Scope-OrgID: acme")
		// Pyroscope's HTTP ingest with A's tenant named: refused, as the
		// push is.
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
		try(api.PyroscopePath, scope, landedInA(), nil, 0, "X-Scope-OrgID: acme")
		// OpenTelemetry profiles, gRPC and OTLP/HTTP: naming A's tenant is
		// refused with every key; without, an ingest key stores in B's own
		// tenant and any other key is refused.
		p = api.OTLPProcedure
		_, err = s.otlpGRPC(t, key, "acme", intruderOTLP)
		try(p, scope, landedInA(), grpcToConnect(err), connect.CodePermissionDenied, "X-Scope-OrgID: acme")
		_, err = s.otlpGRPC(t, key, "", intruderOTLP)
		try(p, scope, landedInA(), grpcToConnect(err), own(p, scope), "no X-Scope-OrgID")
		for _, orgID := range []string{"acme", ""} {
			want := http.StatusForbidden
			if orgID == "" && slices.Contains(strings.Split(scope, ","), "ingest") {
				want = http.StatusOK
			}
			if code, body, _ := s.otlpHTTP(t, key, http.Header{"X-Scope-Orgid": {orgID}}, marshalOTLP(t, intruderOTLP)); code != want {
				t.Errorf("%s with B's %q key, X-Scope-OrgID %q: HTTP %d %q, want %d", api.OTLPPath, scope, orgID, code, body, want)
			}
			try(api.OTLPPath, scope, landedInA(), nil, 0, "X-Scope-OrgID: "+orgID)
		}
		p = fleetscopev1connect.AdminServiceListShareLinksProcedure
		ls, err := b.admin.ListShareLinks(ctx, connect.NewRequest(&fsv1.ListShareLinksRequest{}))
		try(p, scope, err == nil && slices.ContainsFunc(ls.Msg.GetLinks(), func(l *fsv1.ShareLink) bool { return aIDs[l.GetProfileId()] }), err, own(p, scope), "")
		p = fleetscopev1connect.AdminServiceRevokeShareLinkProcedure
		_, err = b.admin.RevokeShareLink(ctx, connect.NewRequest(&fsv1.RevokeShareLinkRequest{Id: linkA.Msg.GetLink().GetId()}))
		try(p, scope, err == nil, err, notFound(p, scope), "A's link")
	}
	// The positive control: what B's ingest key sends without naming A is
	// B's, and B finds it (so A's searches above would have found it had it
	// landed in A).
	req, _ := http.NewRequest("POST", s.url+"/ingest?name=intruder{origin=b}&format=folded", strings.NewReader("x;y 1\n"))
	req.Header.Set("Authorization", "Bearer "+bKeys["ingest,read,admin"])
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Fatalf("B's own /ingest: %v %v", res, err)
	} else {
		res.Body.Close()
	}
	if res, err := s.as(bKeys["ingest,read,admin"]).query.SearchProfiles(ctx, connect.NewRequest(&fsv1.SearchProfilesRequest{App: "intruder", Labels: map[string]string{"origin": "b"}})); err != nil || len(res.Msg.GetProfiles()) == 0 {
		t.Errorf("B's /ingest profile is not in B's tenant: %v %v", err, res)
	}
	// Share links: guessed, truncated and altered tokens read nothing.
	token := linkA.Msg.GetToken()
	pub := s.as("")
	for _, tok := range []string{"", "fss_", "fss_" + strings.Repeat("a", 40), token[:len(token)-1], token + "x", strings.ToUpper(token), linkA.Msg.GetLink().GetId()} {
		_, err := pub.share.GetSharedProfile(ctx, connect.NewRequest(&fsv1.GetSharedProfileRequest{Token: tok}))
		try(fleetscopev1connect.ShareServiceGetSharedProfileProcedure, "none", err == nil, err, connect.CodeNotFound, tok)
		_, err = pub.share.GetSharedHeatmap(ctx, connect.NewRequest(&fsv1.GetSharedHeatmapRequest{Token: tok}))
		try(fleetscopev1connect.ShareServiceGetSharedHeatmapProcedure, "none", err == nil, err, connect.CodeNotFound, tok)
		_, err = pub.share.GetSharedFlameGraph(ctx, connect.NewRequest(&fsv1.GetSharedFlameGraphRequest{Token: tok}))
		try(fleetscopev1connect.ShareServiceGetSharedFlameGraphProcedure, "none", err == nil, err, connect.CodeNotFound, tok)
	}
	// A's live stream went on where A left it, as if B had sent nothing:
	// its next batch is 1 and ends it, as the recording's exact bytes.
	if r, err := liveA(1, liveBatches[1], true); err != nil || r.GetNextSeq() != 2 || r.GetProfile().GetId() == "" {
		t.Errorf("A's live stream after B's batches under its name: %v %v, want batch 1 taken, the recording stored", r, err)
	} else if again := s.upload(livePath); again != r.GetProfile().GetId() {
		t.Errorf("A's live recording is %s, not the profile of its bytes %s: B's batches got in", r.GetProfile().GetId(), again)
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
		if route == api.PyroscopePath || route == api.OTLPPath || route == api.OTLPProcedure {
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
	// Nothing B sent landed in A's tenant: A holds its two uploads and its
	// live recording.
	if res, err := s.as(s.key).query.SearchProfiles(ctx, connect.NewRequest(&fsv1.SearchProfilesRequest{PageSize: 1000})); err != nil || len(res.Msg.GetProfiles()) != 3 {
		t.Errorf("A's tenant holds %d profiles after the attacks, want its 3 (%v)", len(res.Msg.GetProfiles()), err)
	}
	t.Logf("%d cross-tenant attempts over %d procedures, %d succeeded", attempts, len(covered), breaches)
	if breaches != 0 {
		t.Fatalf("%d of %d cross-tenant attempts succeeded", breaches, attempts)
	}
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
	// clock to pass expires_at, the answer is the server's. The use before
	// expiry must be answered before expires_at to count: on a machine too
	// slow for that, the key is made again with twice the time left.
	var secret string
	var expires time.Time
	for left := time.Second; ; left *= 2 {
		if left > time.Minute {
			t.Fatal("no request was answered within a minute of making a key")
		}
		expires = time.Now().Add(left)
		exp, err := admin.admin.CreateKey(ctx, connect.NewRequest(&fsv1.CreateKeyRequest{Scopes: []string{"read"}, ExpiresAt: timestamppb.New(expires)}))
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.as(exp.Msg.GetSecret()).query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id}))
		if time.Now().Before(expires) { // answered before the expiry: the answer counts
			if err != nil {
				t.Fatalf("a key before its expiry: %v", err)
			}
			secret = exp.Msg.GetSecret()
			break
		}
	}
	for time.Now().Before(expires.Add(time.Millisecond)) { // the condition is the wall clock itself
		time.Sleep(time.Until(expires) + time.Millisecond)
	}
	if _, err := s.as(secret).query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id})); connect.CodeOf(err) != connect.CodeUnauthenticated {
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
	// Rate 5/s, a burst of twice that: a fresh limiter passes the first 10
	// requests, then refuses one once they come faster than it refills.
	// Requests go until one is refused; however fast or slow the machine,
	// no more pass than the burst and what refilled while they ran.
	s.admin("tenant", "set-limits", "acme", "--rate", "5")
	s.flushCaches()
	q := s.as(s.key).query
	began := time.Now()
	passed, limited := 0, 0
	for limited == 0 {
		if passed == 1000 {
			t.Fatal("rate 5/s: 1000 requests in a row passed")
		}
		_, err := q.SearchProfiles(ctx, connect.NewRequest(&fsv1.SearchProfilesRequest{}))
		switch {
		case connect.CodeOf(err) == connect.CodeResourceExhausted:
			limited++
		case err != nil:
			t.Fatal(err)
		default:
			passed++
		}
	}
	if most := 10 + int(5*time.Since(began).Seconds()) + 1; passed < 10 || passed > most {
		t.Fatalf("rate 5/s, burst 10: %d requests passed before the first refusal, want 10 to %d (the burst and what refilled meanwhile)", passed, most)
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
	// Retention reclaims the dictionary rows no profile uses: here all.
	if got := s.counts(); got != "profiles=0 profile_stacks=0 seconds=0 frames=0 stacks=0 blobs=0" {
		t.Fatalf("after retention: %s", got)
	}
	// DeleteProfile through the API (of frames no other profile has).
	own := filepath.Join(t.TempDir(), "own.perf")
	if err := os.WriteFile(own, []byte("app 1 [000] 1.000000: cpu-clock:\n\t1 deleted_only (/bin/app)\n\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	id := s.upload(own)
	admin := s.as(s.newKey("acme", "admin"))
	if _, err := admin.admin.DeleteProfile(ctx, connect.NewRequest(&fsv1.DeleteProfileRequest{Id: id})); err != nil {
		t.Fatal(err)
	}
	if _, err := s.as(s.key).query.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("deleted profile: %v", err)
	}
	// Dictionary rows no profile uses.
	unused := func() int {
		var n int
		if err := s.sql(func(c *pgx.Conn) error {
			rows, err := c.Query(ctx, `SELECT seqs FROM profile_stacks`)
			if err != nil {
				return err
			}
			lists, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
			if err != nil {
				return err
			}
			used := []int64{}
			for _, b := range lists {
				seqs, err := index.ReadStackList(b)
				if err != nil {
					return err
				}
				used = append(used, seqs...)
			}
			return c.QueryRow(ctx, `SELECT (SELECT count(*) FROM stacks WHERE seq <> ALL ($1::bigint[]))
				+ (SELECT count(*) FROM frames WHERE id NOT IN (SELECT unnest(frames) FROM stacks))`, used).Scan(&n)
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := unused(); n == 0 {
		t.Fatal("no unused dictionary rows after a deletion")
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
	// --fix also reclaims the dictionary rows of the profile deleted
	// through the API (which the server does 10 s after a deletion).
	if out, errOut, code := run1(s.env, "check", "--fix"); code != 0 || !strings.Contains(out, "unused dictionary rows of 1 tenants") {
		t.Fatalf("check --fix: exit %d %q %q", code, out, errOut)
	}
	if n := unused(); n != 0 {
		t.Fatalf("after check --fix: %d unused dictionary rows", n)
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

// answer is what one read found of A's data, and its error.
type answer struct {
	found bool
	err   error
}

// withOrgA are the kinds of pyroscopeReads that name A's tenant in
// X-Scope-OrgID: A's own key may, any other key is refused.
var withOrgA = map[string]bool{"profile types": true, "flame graph": true, "flame graph, any app": true, "flame graph, regex": true}

// pyroscopeReads asks the query API, with q's key, for A's data in every
// way the data source can, and returns what each kind of read found of
// A's.
func pyroscopeReads(t *testing.T, ctx context.Context, q querierv1connect.QuerierServiceClient) map[string]answer {
	t.Helper()
	out := map[string]answer{}
	orgA := func(r connect.AnyRequest) { r.Header().Set("X-Scope-OrgID", "acme") }
	now := time.Now().UnixMilli()
	ep, recent := [2]int64{tenancyEpoch, tenancyEpoch + 10_000}, [2]int64{now - 3600_000, now + 60_000}
	pt := connect.NewRequest(&querierv1.ProfileTypesRequest{Start: ep[0], End: ep[1]})
	orgA(pt)
	res, err := q.ProfileTypes(ctx, pt)
	out["profile types"] = answer{err == nil && len(res.Msg.GetProfileTypes()) > 0, err}
	ln, err := q.LabelNames(ctx, connect.NewRequest(&typesv1.LabelNamesRequest{Start: recent[0], End: recent[1]}))
	out["label names"] = answer{err == nil && slices.Contains(ln.Msg.GetNames(), "team"), err}
	lv, err := q.LabelValues(ctx, connect.NewRequest(&typesv1.LabelValuesRequest{Name: "team", Start: recent[0], End: recent[1]}))
	out["label values"] = answer{err == nil && slices.Contains(lv.Msg.GetNames(), "a"), err}
	apps, err := q.LabelValues(ctx, connect.NewRequest(&typesv1.LabelValuesRequest{Name: "service_name", Start: ep[0], End: ep[1]}))
	out["apps"] = answer{err == nil && len(apps.Msg.GetNames()) > 0, err}
	sr, err := q.Series(ctx, connect.NewRequest(&querierv1.SeriesRequest{Matchers: []string{`{team="a"}`}, Start: recent[0], End: recent[1]}))
	out["series"] = answer{err == nil && len(sr.Msg.GetLabelsSet()) > 0, err}
	const cpu = "fleetscope:cpu-clock:count:cpu-clock:count"
	for _, c := range []struct {
		kind, selector string
		w              [2]int64
	}{{"flame graph", `{service_name="test", team="a"}`, recent}, {"flame graph, any app", `{}`, ep}, {"flame graph, regex", `{service_name=~".+", hostname!="x"}`, ep}} {
		r := connect.NewRequest(&querierv1.SelectMergeStacktracesRequest{ProfileTypeID: cpu, LabelSelector: c.selector, Start: c.w[0], End: c.w[1]})
		orgA(r)
		fg, err := q.SelectMergeStacktraces(ctx, r)
		out[c.kind] = answer{err == nil && fg.Msg.GetFlamegraph().GetTotal() > 0, err}
	}
	ss, err := q.SelectSeries(ctx, connect.NewRequest(&querierv1.SelectSeriesRequest{ProfileTypeID: cpu, LabelSelector: `{team="a"}`, Start: recent[0], End: recent[1], Step: 60}))
	out["series points"] = answer{err == nil && len(ss.Msg.GetSeries()) > 0, err}
	return out
}

// pyroscopeAttacks runs pyroscopeReads with B's key (each read a breach if
// it finds A's data; answered if the key may read, refused otherwise) and
// calls every procedure fleetscope leaves unimplemented (refused as such
// whatever the key).
func pyroscopeAttacks(t *testing.T, ctx context.Context, q querierv1connect.QuerierServiceClient, scope string,
	own func(proc, scope string) connect.Code, try func(proc, scope string, breached bool, err error, want connect.Code, detail any)) {
	t.Helper()
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
			want := own(proc, scope)
			if withOrgA[k] { // the header names A: refused whatever the key
				want = connect.CodePermissionDenied
			}
			try(proc, scope, found[k].found, found[k].err, want, k)
		}
	}
	w := [2]int64{tenancyEpoch, tenancyEpoch + 10_000}
	_, err := q.SelectMergeProfile(ctx, connect.NewRequest(&querierv1.SelectMergeProfileRequest{LabelSelector: `{}`, Start: w[0], End: w[1]}))
	try(querierv1connect.QuerierServiceSelectMergeProfileProcedure, scope, err == nil, err, connect.CodeUnimplemented, "")
	_, err = q.SelectMergeSpanProfile(ctx, connect.NewRequest(&querierv1.SelectMergeSpanProfileRequest{LabelSelector: `{}`, Start: w[0], End: w[1]}))
	try(querierv1connect.QuerierServiceSelectMergeSpanProfileProcedure, scope, err == nil, err, connect.CodeUnimplemented, "")
	_, err = q.SelectHeatmap(ctx, connect.NewRequest(&querierv1.SelectHeatmapRequest{LabelSelector: `{}`, Start: w[0], End: w[1]}))
	try(querierv1connect.QuerierServiceSelectHeatmapProcedure, scope, err == nil, err, connect.CodeUnimplemented, "")
	_, err = q.Diff(ctx, connect.NewRequest(&querierv1.DiffRequest{}))
	try(querierv1connect.QuerierServiceDiffProcedure, scope, err == nil, err, connect.CodeUnimplemented, "")
	_, err = q.GetProfileStats(ctx, connect.NewRequest(&typesv1.GetProfileStatsRequest{}))
	try(querierv1connect.QuerierServiceGetProfileStatsProcedure, scope, err == nil, err, connect.CodeUnimplemented, "")
	_, err = q.AnalyzeQuery(ctx, connect.NewRequest(&querierv1.AnalyzeQueryRequest{Start: w[0], End: w[1], Query: `{}`}))
	try(querierv1connect.QuerierServiceAnalyzeQueryProcedure, scope, err == nil, err, connect.CodeUnimplemented, "")
}
