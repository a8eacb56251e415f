package query_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/store/memory"
)

// TestFleetAccountingCountsLiveStreams: every fleet answer's accounting
// says which of the profiles it counts are segments of live streams (one
// profile a batch, labelled live=STREAM and live_seq=N) and of how many
// streams, so that a stream of 19 batches can be shown as one stream. A
// profile with a live label but no live_seq (not a segment) is counted as
// a profile only.
func TestFleetAccountingCountsLiveStreams(t *testing.T) {
	st := memory.New()
	q := query.New(st, query.Options{})
	add := func(host string, labels map[string]string, seed string) {
		path, _ := plant(t, "--seed", seed, "--seconds", "3", "--epoch")
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		pr, err := ingest.ParseIndex(f, "", 0, ingest.Shape{})
		if err != nil {
			t.Fatal(err)
		}
		info := ingest.Describe(ingest.Meta{App: "shop", Host: host, Labels: labels}, pr, time.Now())
		if _, err := st.Add(info, pr.Profile.Dict, pr.Index); err != nil {
			t.Fatal(err)
		}
	}
	seg := func(stream, seq string) map[string]string {
		return map[string]string{fleetscope.LiveLabel: stream, fleetscope.LiveSeqLabel: seq}
	}
	add("h1", seg("s1", "0"), "31")
	add("h1", seg("s1", "1"), "32")
	add("h1", seg("s1", "2"), "33")
	add("h2", seg("s2", "0"), "34")
	add("h3", map[string]string{"env": "prod"}, "35")
	add("h4", map[string]string{fleetscope.LiveLabel: "not-a-segment"}, "36")

	ctx := context.Background()
	sel := fleetscope.FleetSelection{App: "shop", From: fleetBase, To: fleetBase + 10e9}
	want := func(what string, a query.Accounting) {
		t.Helper()
		if a.Profiles != 6 || a.LiveSegments != 4 || a.LiveStreams != 2 {
			t.Errorf("%s: %d profiles, %d live segments of %d streams; want 6, 4 of 2", what, a.Profiles, a.LiveSegments, a.LiveStreams)
		}
	}
	h, err := q.FleetHeatmap(ctx, 0, sel, 50, 0)
	if err != nil {
		t.Fatal(err)
	}
	want("heatmap", h.Accounting)
	hs, err := q.FleetHosts(ctx, 0, sel, 0)
	if err != nil {
		t.Fatal(err)
	}
	want("hosts", hs.Accounting)
	tl, err := q.FleetTimeline(ctx, 0, sel, 0)
	if err != nil {
		t.Fatal(err)
	}
	want("timeline", tl.Accounting)
	g, err := q.FleetFlameGraph(ctx, 0, sel, query.FleetFlameOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want("flame graph", g.Accounting)

	// Narrowed to one stream's host: one stream of three segments.
	sel.Hosts = []string{"h1"}
	h, err = q.FleetHeatmap(ctx, 0, sel, 50, 0)
	if err != nil {
		t.Fatal(err)
	}
	if a := h.Accounting; a.Profiles != 3 || a.LiveSegments != 3 || a.LiveStreams != 1 {
		t.Errorf("h1: %d profiles, %d live segments of %d streams; want 3, 3 of 1", a.Profiles, a.LiveSegments, a.LiveStreams)
	}
}
