package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// TestFleetShareLinks: a share link to a fleet selection opens without a
// key and answers the owner's fleet heatmap and merged flame graph of its
// selection and window (cell for cell, totals the hosts' own files count);
// it reveals the app, window and event, not the hosts or labels; it is
// listed, stops at once when revoked, and a link naming both a profile and
// a fleet is refused.
func TestFleetShareLinks(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	var paths []string
	for i, h := range []string{"s1", "s2", "s3"} {
		p := plant(t, "--seed", fmt.Sprint(81+i), "--seconds", "6", "--epoch")
		s.upload(p, "--host", h, "--label", fmt.Sprintf("version=%d", 1+i%2))
		paths = append(paths, p)
	}
	owner := s.as(s.newKey("acme", "admin,read"))
	sel := &fsv1.FleetSelection{App: "test", Labels: []*fsv1.LabelMatcher{{Name: "version", Value: "1"}}, // s1 and s3
		From: timestamppb.New(time.Unix(1795000000, 0)), To: timestamppb.New(time.Unix(1795000010, 0))}
	link, err := owner.admin.CreateShareLink(ctx, connect.NewRequest(&fsv1.CreateShareLinkRequest{Fleet: sel, TtlSeconds: 600}))
	if err != nil {
		t.Fatal(err)
	}
	token := link.Msg.GetToken()
	pub := s.as("")
	sp, err := pub.share.GetSharedProfile(ctx, connect.NewRequest(&fsv1.GetSharedProfileRequest{Token: token}))
	if err != nil {
		t.Fatal(err)
	}
	if f := sp.Msg.GetFleet(); sp.Msg.GetProfile() != nil || f.GetApp() != "test" || len(f.GetHosts()) != 0 || len(f.GetLabels()) != 0 ||
		!f.GetFrom().AsTime().Equal(time.Unix(1795000000, 0)) || !f.GetTo().AsTime().Equal(time.Unix(1795000010, 0)) {
		t.Fatalf("a fleet link shows %v", sp.Msg)
	}
	shared, err := pub.share.GetSharedHeatmap(ctx, connect.NewRequest(&fsv1.GetSharedHeatmapRequest{Token: token}))
	if err != nil {
		t.Fatal(err)
	}
	own, err := owner.fleet.GetFleetHeatmap(ctx, connect.NewRequest(&fsv1.GetFleetHeatmapRequest{Selection: sel}))
	if err != nil {
		t.Fatal(err)
	}
	h := shared.Msg.GetHeatmap()
	if h.GetStartSecond() != own.Msg.GetStartSecond() || h.GetTotal() != own.Msg.GetTotal() || fmt.Sprint(h.GetColumns()) != fmt.Sprint(own.Msg.GetColumns()) {
		t.Fatalf("the shared fleet heatmap differs from the owner's")
	}
	// Independently: s1's and s3's own files, counted locally.
	var want int64
	for _, p := range []string{paths[0], paths[2]} {
		var hm heatmapJSON
		json.Unmarshal([]byte(local(t, "heatmap", "--json", p)), &hm)
		want += hm.Total
	}
	if h.GetTotal() != want || want == 0 {
		t.Fatalf("shared fleet heatmap total %d, the version=1 hosts' files %d", h.GetTotal(), want)
	}
	fg, err := pub.share.GetSharedFlameGraph(ctx, connect.NewRequest(&fsv1.GetSharedFlameGraphRequest{Token: token, Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_TREE}))
	if err != nil || int64(fg.Msg.GetFlameGraph().GetTotal()) != want {
		t.Fatalf("shared fleet flame graph: %v, total %d, want %d", err, fg.Msg.GetFlameGraph().GetTotal(), want)
	}
	// Listed with its selection; revoked, it stops at once.
	ls, err := owner.admin.ListShareLinks(ctx, connect.NewRequest(&fsv1.ListShareLinksRequest{}))
	if err != nil || !slices.ContainsFunc(ls.Msg.GetLinks(), func(l *fsv1.ShareLink) bool {
		return l.GetId() == link.Msg.GetLink().GetId() && l.GetFleet().GetApp() == "test" && len(l.GetFleet().GetLabels()) == 1 && l.GetProfileId() == ""
	}) {
		t.Fatalf("the fleet link is not listed with its selection: %v %v", err, ls.Msg.GetLinks())
	}
	if _, err := owner.admin.RevokeShareLink(ctx, connect.NewRequest(&fsv1.RevokeShareLinkRequest{Id: link.Msg.GetLink().GetId()})); err != nil {
		t.Fatal(err)
	}
	if _, err := pub.share.GetSharedHeatmap(ctx, connect.NewRequest(&fsv1.GetSharedHeatmapRequest{Token: token})); connect.CodeOf(err) != connect.CodeNotFound {
		t.Fatalf("a revoked fleet link: %v, want not found", err)
	}
	// Bad requests are refused as such.
	for name, req := range map[string]*fsv1.CreateShareLinkRequest{
		"profile and fleet": {Fleet: sel, ProfileId: "00000000-0000-0000-0000-000000000000"},
		"no window":         {Fleet: &fsv1.FleetSelection{App: "test"}},
		"thread filter":     {Fleet: &fsv1.FleetSelection{App: "test", From: sel.From, To: sel.To, Filter: &fsv1.SampleFilter{Tids: []int32{1}}}},
	} {
		if _, err := owner.admin.CreateShareLink(ctx, connect.NewRequest(req)); connect.CodeOf(err) != connect.CodeInvalidArgument {
			t.Errorf("%s: %v, want invalid argument", name, err)
		}
	}
}
