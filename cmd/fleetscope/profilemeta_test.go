package main

// A profile's metadata: re-uploads of the same bytes say they are
// duplicates and what the profile is stored as; an admin changes app, host
// and labels (AdminService.UpdateProfile, `admin update-profile`), audited,
// with the fleet aggregates moving along.

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// TestDuplicateUploadSaysSo: the same bytes uploaded again with other
// metadata return the stored profile, unchanged; the API says it is a
// duplicate with the stored app, host and labels and what was ignored, and
// the CLI says so with the command that would change it.
func TestDuplicateUploadSaysSo(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	path := plant(t, "--seed", "41", "--seconds", "3")
	id := s.upload(path, "--host", "web-1", "--label", "env=prod")

	out, errOut, code := s.cli("upload", "--app", "test", "--host", "web-2", "--label", "env=staging", "--label", "team=a b", path)
	if code != 0 || strings.Fields(out)[0] != id {
		t.Fatalf("re-upload: exit %d, stdout %q, stderr %q; want exit 0 and %s", code, out, errOut, id)
	}
	want := path + ": duplicate of " + id + " (stored as app=test, host=web-1, labels env=prod): metadata not changed (this upload's host, labels ignored);" +
		" to change it (admin key): fleetscope admin update-profile " + id + " --host web-2 --replace-labels --label env=staging --label 'team=a b'"
	if !slices.Contains(strings.Split(errOut, "\n"), want) {
		t.Fatalf("re-upload with other metadata: stderr\n%s\nwant the line\n%s", errOut, want)
	}
	_, errOut, _ = s.cli("upload", "--app", "test", "--host", "web-1", "--label", "env=prod", path)
	if !strings.Contains(errOut, path+": duplicate of "+id+" (stored as app=test, host=web-1, labels env=prod): already stored, nothing changed\n") {
		t.Fatalf("re-upload with the same metadata: stderr %q", errOut)
	}
	// Without --host, the host is the one the profile records, both times.
	other := plant(t, "--seed", "42", "--seconds", "2")
	if out, errOut, _ := s.cli("upload", "--app", "test", other); strings.Contains(errOut, "duplicate") || out == "" {
		t.Fatalf("a new profile reported as a duplicate: %q %q", out, errOut)
	}
	if _, errOut, _ := s.cli("upload", "--app", "test", other); !strings.Contains(errOut, "(stored as app=test, host=planted-host, labels (none)): already stored, nothing changed\n") {
		t.Fatalf("re-upload without --host: stderr %q", errOut)
	}
	if _, errOut, _ := s.cli("upload", "--app", "test", "--host", "web-1", other); !strings.Contains(errOut, "(this upload's host ignored); to change it (admin key): fleetscope admin update-profile") ||
		!strings.HasSuffix(errOut, " --host web-1\n") {
		t.Fatalf("re-upload with a host: stderr %q", errOut)
	}

	// The API, both upload procedures.
	data, _ := os.ReadFile(path)
	ing, _ := s.clients()
	for _, c := range []struct {
		md      *fsv1.UploadMetadata
		ignored []string
	}{
		{&fsv1.UploadMetadata{App: "test", Host: "web-1", Labels: map[string]string{"env": "prod"}}, nil},
		{&fsv1.UploadMetadata{App: " test ", Host: "web-1", Labels: map[string]string{"env": "prod"}}, nil}, // the app is trimmed, as at ingest
		{&fsv1.UploadMetadata{App: "other", Host: "web-1", Labels: map[string]string{"env": "prod"}}, []string{"app"}},
		{&fsv1.UploadMetadata{App: "other", Labels: map[string]string{"env": "prod"}}, []string{"app", "host"}}, // the host it records: planted-host
		{&fsv1.UploadMetadata{App: "test", Host: "web-1"}, []string{"labels"}},
	} {
		res, err := ing.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Metadata: c.md, Data: data}))
		if err != nil {
			t.Fatal(err)
		}
		d := res.Msg.GetDuplicate()
		if res.Msg.GetCreated() || d == nil || d.GetProfileId() != id || d.GetApp() != "test" || d.GetHost() != "web-1" ||
			len(d.GetLabels()) != 1 || d.GetLabels()["env"] != "prod" || !slices.Equal(d.GetIgnored(), c.ignored) {
			t.Errorf("UploadFile %v: created %v, duplicate %v; want ignored %v", c.md, res.Msg.GetCreated(), d, c.ignored)
		}
		if p := res.Msg.GetProfile(); p.GetId() != id || p.GetHost() != "web-1" || p.GetLabels()["env"] != "prod" {
			t.Errorf("UploadFile %v: profile %v, want the stored one", c.md, p)
		}
	}
	stream := ing.Upload(ctx)
	stream.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Metadata{Metadata: &fsv1.UploadMetadata{App: "test", Host: "web-9"}}})
	stream.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Chunk{Chunk: data}})
	res, err := stream.CloseAndReceive()
	if err != nil || res.Msg.GetDuplicate() == nil || !slices.Equal(res.Msg.GetDuplicate().GetIgnored(), []string{"host", "labels"}) {
		t.Fatalf("Upload of stored bytes: %v %v", err, res)
	}
	fresh, err := ing.UploadFile(ctx, connect.NewRequest(&fsv1.UploadFileRequest{Metadata: &fsv1.UploadMetadata{App: "test"}, Data: []byte("a;b 1\n")}))
	if err != nil || !fresh.Msg.GetCreated() || fresh.Msg.GetDuplicate() != nil {
		t.Fatalf("a new upload: %v %v", err, fresh)
	}
}

// TestUpdateProfile: an admin changes a profile's host, labels and app
// through the CLI and the API; searches and fleet queries by the new values
// find it (by the old ones no longer), the audit log has each change, a key
// without the admin scope is refused, invalid changes are refused.
func TestUpdateProfile(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	path := plant(t, "--seed", "43", "--seconds", "4", "--epoch")
	id := s.upload(path, "--host", "web-1", "--label", "env=prod", "--label", "team=a")
	other := s.upload(plant(t, "--seed", "44", "--seconds", "4", "--epoch"), "--host", "web-1")
	adminKey := s.newKey("acme", "admin")
	admin := s.as(adminKey)
	reader := s.as(s.key)
	prof, err := reader.query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id}))
	if err != nil {
		t.Fatal(err)
	}
	hm, err := reader.query.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id}))
	if err != nil || hm.Msg.GetTotal() == 0 {
		t.Fatalf("heatmap: %v", err)
	}
	p := prof.Msg.GetProfile()
	window := func(app string, hosts ...string) *fsv1.FleetSelection {
		return &fsv1.FleetSelection{App: app, Hosts: hosts, From: timestamppb.New(p.GetStartTime().AsTime().Add(-time.Minute)),
			To: timestamppb.New(p.GetEndTime().AsTime().Add(time.Minute))}
	}
	// fleet answers a selection's profiles and sample total from the
	// heatmap, the host strip and the merged flame graph, which must agree.
	fleet := func(sel *fsv1.FleetSelection) (int32, int64) {
		t.Helper()
		h, err := reader.fleet.GetFleetHeatmap(ctx, connect.NewRequest(&fsv1.GetFleetHeatmapRequest{Selection: sel}))
		if err != nil {
			t.Fatal(err)
		}
		hosts, err := reader.fleet.GetFleetHosts(ctx, connect.NewRequest(&fsv1.GetFleetHostsRequest{Selection: sel}))
		if err != nil {
			t.Fatal(err)
		}
		var strip int64
		for _, hs := range hosts.Msg.GetHosts() {
			strip += hs.GetTotal()
		}
		fg, err := reader.fleet.GetFleetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFleetFlameGraphRequest{Selection: sel}))
		if err != nil {
			t.Fatal(err)
		}
		if strip != h.Msg.GetTotal() || int64(fg.Msg.GetFlameGraph().GetTotal()) != h.Msg.GetTotal() {
			t.Fatalf("fleet %v: heatmap total %d, host strip %d, flame graph %d", sel, h.Msg.GetTotal(), strip, fg.Msg.GetFlameGraph().GetTotal())
		}
		return h.Msg.GetAccounting().GetProfiles(), h.Msg.GetTotal()
	}
	if n, _ := fleet(window("test", "web-2")); n != 0 {
		t.Fatalf("host web-2 before the change: %d profiles", n)
	}
	_, both := fleet(window("test", "web-1"))

	// The CLI: new host, one label changed, one removed.
	env := []string{"FLEETSCOPE_URL=" + s.url, "FLEETSCOPE_API_KEY=" + adminKey}
	out, errOut, code := run1(env, "admin", "update-profile", id, "--host", "web-2", "--label", "env=staging", "--remove-label", "team")
	if code != 0 || out != id+" app=test host=web-2 labels=env=staging\n" {
		t.Fatalf("admin update-profile: exit %d, %q %q", code, out, errOut)
	}
	got, err := reader.query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id}))
	if err != nil || got.Msg.GetProfile().GetHost() != "web-2" || len(got.Msg.GetProfile().GetLabels()) != 1 || got.Msg.GetProfile().GetLabels()["env"] != "staging" {
		t.Fatalf("after the change: %v %v", err, got)
	}
	if res := s.mustCLI("profiles", "--host", "web-2", "--label", "env=staging", "--json"); !strings.Contains(res, id) {
		t.Fatalf("search by the new host and label misses it: %s", res)
	}
	if res := s.mustCLI("profiles", "--label", "env=prod", "--json"); strings.Contains(res, id) {
		t.Fatalf("search by the old label still finds it: %s", res)
	}
	if n, total := fleet(window("test", "web-2")); n != 1 || total != hm.Msg.GetTotal() {
		t.Fatalf("fleet of host web-2: %d profiles, %d samples; want 1 and the profile's %d", n, total, hm.Msg.GetTotal())
	}
	if n, total := fleet(window("test", "web-1")); n != 1 || total != both-hm.Msg.GetTotal() {
		t.Fatalf("fleet of host web-1: %d profiles, %d samples; want only profile %s's %d", n, total, other, both-hm.Msg.GetTotal())
	}

	// The API: a new app; the labels replaced.
	app := "checkout"
	res, err := admin.admin.UpdateProfile(ctx, connect.NewRequest(&fsv1.UpdateProfileRequest{Id: id, App: &app, SetLabels: map[string]string{"tier": "1"}, ReplaceLabels: true}))
	if err != nil || res.Msg.GetProfile().GetApp() != "checkout" || res.Msg.GetProfile().GetHost() != "web-2" || fmtLabels(res.Msg.GetProfile().GetLabels()) != "tier=1" {
		t.Fatalf("UpdateProfile app: %v %v", err, res)
	}
	if n, _ := fleet(window("test")); n != 1 {
		t.Fatalf("the old app's fleet still counts %d profiles, want the other one only", n)
	}
	if n, total := fleet(window("checkout", "web-2")); n != 1 || total != hm.Msg.GetTotal() {
		t.Fatalf("the new app's fleet: %d profiles, %d samples; want 1 and %d", n, total, hm.Msg.GetTotal())
	}
	var stale int
	if err := s.sql(func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT count(*) FROM fleet_tens WHERE profile_id = $1 AND (app <> 'checkout' OR host <> 'web-2')`, id).Scan(&stale)
	}); err != nil || stale != 0 {
		t.Fatalf("fleet rows left with the old app or host: %d (%v)", stale, err)
	}
	// Its samples did not change.
	if hm2, err := reader.query.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: id})); err != nil || hm2.Msg.GetTotal() != hm.Msg.GetTotal() {
		t.Fatalf("heatmap after the changes: %v", err)
	}
	// The same values again change nothing and audit nothing.
	if _, err := admin.admin.UpdateProfile(ctx, connect.NewRequest(&fsv1.UpdateProfileRequest{Id: id, App: &app})); err != nil {
		t.Fatal(err)
	}

	// Audited, with the values before and after.
	ae, err := admin.admin.ListAuditEvents(ctx, connect.NewRequest(&fsv1.ListAuditEventsRequest{}))
	if err != nil {
		t.Fatal(err)
	}
	var updates []map[string]string
	for _, e := range ae.Msg.GetEvents() {
		if e.GetAction() == "profile.update" && e.GetTarget() == id {
			if len(e.GetActor()) < 12 || !strings.HasPrefix(adminKey, e.GetActor()) {
				t.Errorf("profile.update by %q, want the admin key's id", e.GetActor())
			}
			updates = append(updates, e.GetDetail())
		}
	}
	if len(updates) != 2 ||
		!maps.Equal(updates[0], map[string]string{"app.was": "test", "app": "checkout", "labels.was": "env=staging", "labels": "tier=1"}) ||
		!maps.Equal(updates[1], map[string]string{"host.was": "web-1", "host": "web-2", "labels.was": "env=prod,team=a", "labels": "env=staging"}) {
		t.Fatalf("audit of the changes (newest first): %v", updates)
	}
	if out := strings.Join(strings.Fields(mustRun(t, env, "admin", "audit")), " "); !strings.Contains(out, "profile.update "+id+" app=checkout app.was=test labels=tier=1 labels.was=env=staging") {
		t.Fatalf("admin audit:\n%s", out)
	}

	// Refused: without the admin scope; invalid changes; unknown ids.
	empty, bad := "", "x\x1b[31m"
	for _, c := range []struct {
		key  string
		req  *fsv1.UpdateProfileRequest
		code connect.Code
	}{
		{s.key, &fsv1.UpdateProfileRequest{Id: id, Host: &bad}, connect.CodePermissionDenied},
		{s.newKey("acme", "ingest,read"), &fsv1.UpdateProfileRequest{Id: id, App: &empty}, connect.CodePermissionDenied},
		{adminKey, &fsv1.UpdateProfileRequest{Id: id, App: &empty}, connect.CodeInvalidArgument},
		{adminKey, &fsv1.UpdateProfileRequest{Id: id, Host: &bad}, connect.CodeInvalidArgument},
		{adminKey, &fsv1.UpdateProfileRequest{Id: id, SetLabels: map[string]string{"": "x"}}, connect.CodeInvalidArgument},
		{adminKey, &fsv1.UpdateProfileRequest{Id: id, SetLabels: map[string]string{"a": "b"}, RemoveLabels: []string{"tier"}, ReplaceLabels: true}, connect.CodeInvalidArgument},
		{adminKey, &fsv1.UpdateProfileRequest{Id: id}, connect.CodeInvalidArgument},
		{adminKey, &fsv1.UpdateProfileRequest{Id: "6f0c0000-0000-4000-8000-000000000000", App: &app}, connect.CodeNotFound},
		{adminKey, &fsv1.UpdateProfileRequest{Id: "not-a-uuid", App: &app}, connect.CodeNotFound},
	} {
		_, err := s.as(c.key).admin.UpdateProfile(ctx, connect.NewRequest(c.req))
		if connect.CodeOf(err) != c.code {
			t.Errorf("UpdateProfile %v: %v, want %v", c.req, err, c.code)
		}
	}
	if _, errOut, code := s.cli("admin", "update-profile", id, "--host", "web-3"); code != 1 || !strings.Contains(errOut, "admin") {
		t.Errorf("update-profile with a key without the admin scope: exit %d %q", code, errOut)
	}
	if _, errOut, code := run1(env, "admin", "update-profile", id); code != 2 || !strings.Contains(errOut, "nothing to change") {
		t.Errorf("update-profile without a change: exit %d %q", code, errOut)
	}
	if got, _ := reader.query.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id})); got.Msg.GetProfile().GetHost() != "web-2" || got.Msg.GetProfile().GetApp() != "checkout" {
		t.Fatalf("a refused change changed the profile: %v", got.Msg.GetProfile())
	}
	if n := len(mustAudit(t, admin, "profile.update")); n != 2 {
		t.Fatalf("%d profile.update audit entries after the refusals, want 2", n)
	}
}

func mustRun(t *testing.T, env []string, args ...string) string {
	t.Helper()
	out, errOut, code := run1(env, args...)
	if code != 0 {
		t.Fatalf("fleetscope %v: exit %d %s", args, code, errOut)
	}
	return out
}

// mustAudit returns the tenant's audit events of one action.
func mustAudit(t *testing.T, c clients, action string) []*fsv1.AuditEvent {
	t.Helper()
	ae, err := c.admin.ListAuditEvents(context.Background(), connect.NewRequest(&fsv1.ListAuditEventsRequest{PageSize: 1000}))
	if err != nil {
		t.Fatal(err)
	}
	var out []*fsv1.AuditEvent
	for _, e := range ae.Msg.GetEvents() {
		if e.GetAction() == action {
			out = append(out, e)
		}
	}
	return out
}

// fmtLabels writes a map as k=v pairs, keys sorted.
func fmtLabels(m map[string]string) string {
	var parts []string
	for k, v := range m {
		parts = append(parts, k+"="+v)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}
