package postgres_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/store/memory"
	"github.com/fleetscope/fleetscope/store/postgres"
)

// epochPerf is perf script text recorded with epoch timestamps at the
// given seconds, of one event.
func epochPerf(event string, at ...string) string {
	var b bytes.Buffer
	for _, t := range at {
		fmt.Fprintf(&b, "app 1 [000] %s: 1 %s:\n\t1 main (/bin/app)\n\n", t, event)
	}
	return b.String()
}

// insertParsed parses data as an upload with metadata m (stored at
// 1795000100) and inserts it for tenant: it returns the profile as
// described before the insert, and what was parsed.
func insertParsed(t *testing.T, db *postgres.DB, tenant int64, data []byte, m ingest.Meta) (*fleetscope.ProfileInfo, *ingest.Parsed) {
	t.Helper()
	pr, err := ingest.ParseIndex(bytes.NewReader(data), "", 0, ingest.Shape{})
	if err != nil {
		t.Fatal(err)
	}
	info := ingest.Describe(m, pr, time.Unix(1795000100, 0))
	sum := sha256.Sum256(data)
	info.BlobKey, info.SizeBytes = fmt.Sprintf("%d/%x", tenant, sum), int64(len(data))
	mine := *info
	if _, _, err := db.InsertProfile(context.Background(), tenant, info, sum[:], pr.Profile.Dict, pr.Index, nil); err != nil {
		t.Fatal(err)
	}
	return &mine, pr
}

// TestFleetLabelSets: the distinct (app, host, labels) of the profiles
// overlapping a window, with their events' base names, decided to the
// nanosecond exactly as fleet selections decide it (a timed profile spans
// its first second's start to its last sample, an untimed one its recorded
// span), by the index and by the in-memory store alike; another tenant's
// profiles never show.
func TestFleetLabelSets(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	acme, _ := db.CreateTenant(ctx, "acme", false)
	other, _ := db.CreateTenant(ctx, "other", false)
	mem := memory.New()
	add := func(tenant int64, data []byte, m ingest.Meta) {
		t.Helper()
		mine, pr := insertParsed(t, db, tenant, data, m)
		if tenant == acme {
			if _, err := mem.Add(mine, pr.Profile.Dict, pr.Index); err != nil {
				t.Fatal(err)
			}
		}
	}
	prod := map[string]string{"env": "prod"}
	// web-1 twice (two events), web-2 once: spans [10.0, 12.5] and [20.0, 20.3].
	add(acme, []byte(epochPerf("cpu-clock:pppH", "1795000010.100000", "1795000012.500000")), ingest.Meta{App: "checkout", Host: "web-1", Labels: prod})
	add(acme, []byte(epochPerf("cycles", "1795000020.300000")), ingest.Meta{App: "checkout", Host: "web-1", Labels: prod})
	add(acme, []byte(epochPerf("cpu-clock", "1795000010.100000", "1795000012.500000")), ingest.Meta{App: "checkout", Host: "web-2", Labels: prod})
	add(acme, []byte(epochPerf("cpu-clock", "1795000011.000000")), ingest.Meta{App: "search"})
	// Untimed: [30.25, 31.75).
	add(acme, corpus.Read(t, "corpus/pprof/go-sha-sort.cpu.pprof"), ingest.Meta{App: "search", Labels: map[string]string{"team": "x"},
		SpanStart: time.Unix(1795000030, 25e7), SpanEnd: time.Unix(1795000031, 75e7)})
	// Another tenant's profile in the same window, with the same names.
	add(other, []byte(epochPerf("cpu-clock", "1795000010.500000")), ingest.Meta{App: "checkout", Host: "web-1", Labels: map[string]string{"env": "staging"}})

	web1 := fleetscope.LabelSet{App: "checkout", Host: "web-1", Labels: prod, Events: []string{"cpu-clock", "cycles"}}
	web2 := fleetscope.LabelSet{App: "checkout", Host: "web-2", Labels: prod, Events: []string{"cpu-clock"}}
	search := fleetscope.LabelSet{App: "search", Labels: map[string]string{}, Events: []string{"cpu-clock"}}
	pprof := fleetscope.LabelSet{App: "search", Labels: map[string]string{"team": "x"}, Events: []string{"cpu", "samples"}}
	const s = int64(1795000000e9)
	for _, c := range []struct {
		what     string
		app      string
		from, to int64
		want     []fleetscope.LabelSet
	}{
		{"everything", "", s, s + 100e9, []fleetscope.LabelSet{web1, web2, pprof, search}}, // labels in JSON order
		{"one app", "checkout", s, s + 100e9, []fleetscope.LabelSet{web1, web2}},
		{"no such app", "cart", s, s + 100e9, nil},
		{"ends before the first second", "", s, s + 10e9, nil},
		{"ends a nanosecond into it", "", s, s + 10e9 + 1, []fleetscope.LabelSet{{App: "checkout", Host: "web-1", Labels: prod, Events: []string{"cpu-clock"}}, web2}},
		{"starts at the last sample", "checkout", s + 12_500_000_000, s + 13e9, []fleetscope.LabelSet{{App: "checkout", Host: "web-1", Labels: prod, Events: []string{"cpu-clock"}}, web2}},
		{"starts a nanosecond after it", "checkout", s + 12_500_000_001, s + 13e9, nil},
		{"the cycles profile alone", "", s + 12_500_000_001, s + 25e9, []fleetscope.LabelSet{{App: "checkout", Host: "web-1", Labels: prod, Events: []string{"cycles"}}}},
		{"the untimed span's end", "search", s + 31_750_000_000, s + 40e9, []fleetscope.LabelSet{pprof}},
		{"after it", "search", s + 31_750_000_001, s + 40e9, nil},
		{"before its start", "search", s + 20e9, s + 30_250_000_000, nil},
		{"at its start", "search", s + 20e9, s + 30_250_000_001, []fleetscope.LabelSet{pprof}},
	} {
		got, err := db.FleetLabelSets(ctx, acme, c.app, c.from, c.to, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: the index lists %+v, want %+v", c.what, got, c.want)
		}
		got, err = mem.FleetLabelSets(ctx, acme, c.app, c.from, c.to, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: the memory store lists %+v, want %+v", c.what, got, c.want)
		}
	}
	// The other tenant sees its own profile only.
	got, err := db.FleetLabelSets(ctx, other, "", s, s+100e9, 100)
	if err != nil || len(got) != 1 || got[0].Labels["env"] != "staging" {
		t.Fatalf("the other tenant lists %+v, %v", got, err)
	}
	if _, err := db.FleetLabelSets(ctx, acme, "", s, s+100e9, 3); fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE {
		t.Fatalf("four label sets over a limit of three: %v", err)
	}
	if _, err := mem.FleetLabelSets(ctx, acme, "", s, s+100e9, 3); fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE {
		t.Fatalf("memory: four label sets over a limit of three: %v", err)
	}

	// Label conditions with regular expressions select profiles as
	// Prometheus matchers do (a missing label is the empty value), in the
	// index and in memory.
	re := func(expr string) *regexp.Regexp { return regexp.MustCompile("^(?:" + expr + ")$") }
	for _, c := range []struct {
		app    string
		labels []fleetscope.LabelMatch
		want   int
	}{
		{"checkout", []fleetscope.LabelMatch{{Name: "env", Regexp: re("pro.*")}}, 3},
		{"checkout", []fleetscope.LabelMatch{{Name: "env", Regexp: re("pro")}}, 0},
		{"checkout", []fleetscope.LabelMatch{{Name: "env", Regexp: re("prod"), Not: true}}, 0},
		{"checkout", []fleetscope.LabelMatch{{Name: "env", Value: "prod"}, {Name: "env", Regexp: re("p.*|staging")}}, 3},
		{"checkout", []fleetscope.LabelMatch{{Name: "env", Value: "prod"}, {Name: "env", Regexp: re("staging")}}, 0},
		{"search", []fleetscope.LabelMatch{{Name: "team", Regexp: re("")}}, 1},
		{"search", []fleetscope.LabelMatch{{Name: "team", Regexp: re(""), Not: true}}, 1},
		{"search", []fleetscope.LabelMatch{{Name: "team", Regexp: re("x|y")}}, 1},
		{"search", []fleetscope.LabelMatch{{Name: "team", Regexp: re("x|"), Not: true}}, 0},
	} {
		ps, err := db.FleetProfiles(ctx, acme, c.app, nil, c.labels, s, s+100e9, 100)
		if err != nil {
			t.Fatal(err)
		}
		mps, err := mem.FleetProfiles(ctx, acme, c.app, nil, c.labels, s, s+100e9, 100)
		if err != nil {
			t.Fatal(err)
		}
		if len(ps) != c.want || len(mps) != c.want {
			t.Errorf("%s %+v: the index selects %d profiles, the memory store %d; want %d", c.app, c.labels, len(ps), len(mps), c.want)
		}
	}
}

// TestFleetCounts: what a fleet's heatmap, strip and timeline say about
// the profiles of their window without listing them: timed and untimed
// profiles, live segments and their streams (a segment needs both labels
// and a stream name), and the sorted names of their events, of the
// selected hosts only; another tenant's profiles never count.
func TestFleetCounts(t *testing.T) {
	ctx := context.Background()
	db := newDB(t)
	acme, _ := db.CreateTenant(ctx, "acme", false)
	other, _ := db.CreateTenant(ctx, "other", false)
	add := func(tenant int64, data []byte, m ingest.Meta) *fleetscope.ProfileInfo {
		t.Helper()
		info, _ := insertParsed(t, db, tenant, data, m)
		return info
	}
	live := func(stream, seq string) map[string]string {
		return map[string]string{fleetscope.LiveLabel: stream, fleetscope.LiveSeqLabel: seq}
	}
	web1 := ingest.Meta{App: "checkout", Host: "web-1"}
	add(acme, []byte(epochPerf("cpu-clock:pppH", "1795000010.100000", "1795000012.500000")), web1)
	add(acme, []byte(epochPerf("cycles", "1795000020.300000")), web1)
	for i, l := range []map[string]string{live("s1", "1"), live("s1", "2"), live("s2", "1"), live("", "1"), {fleetscope.LiveLabel: "s3"}} {
		add(acme, []byte(epochPerf("cpu-clock", fmt.Sprintf("1795000011.%06d", i))), ingest.Meta{App: "checkout", Host: "web-2", Labels: l})
	}
	pprof := add(acme, corpus.Read(t, "corpus/pprof/go-sha-sort.cpu.pprof"), ingest.Meta{App: "checkout", Host: "web-3",
		SpanStart: time.Unix(1795000030, 25e7), SpanEnd: time.Unix(1795000031, 75e7)})
	add(other, []byte(epochPerf("bus-cycles", "1795000010.500000")), web1)
	var pprofEvents []string
	for _, e := range pprof.Events {
		pprofEvents = append(pprofEvents, e.Name)
	}
	if len(pprofEvents) == 0 {
		t.Fatal("the pprof profile has no events")
	}
	slices.Sort(pprofEvents)
	all := append([]string{"cpu-clock", "cpu-clock:pppH", "cycles"}, pprofEvents...)
	slices.Sort(all)
	const s = int64(1795000000e9)
	for _, c := range []struct {
		what     string
		hosts    []string
		from, to int64
		want     fleetscope.FleetCounts
	}{
		{"everything", nil, s, s + 40e9, fleetscope.FleetCounts{Timed: 7, Untimed: 1, LiveSegments: 3, LiveStreams: 2, Events: all}},
		{"one host", []string{"web-1"}, s, s + 40e9, fleetscope.FleetCounts{Timed: 2, Events: []string{"cpu-clock:pppH", "cycles"}}},
		{"the live host", []string{"web-2"}, s, s + 40e9, fleetscope.FleetCounts{Timed: 5, LiveSegments: 3, LiveStreams: 2, Events: []string{"cpu-clock"}}},
		{"one second", nil, s + 20e9, s + 21e9, fleetscope.FleetCounts{Timed: 1, Events: []string{"cycles"}}},
		{"the untimed span", nil, s + 31e9, s + 32e9, fleetscope.FleetCounts{Untimed: 1, Events: pprofEvents}},
		{"nothing", nil, s + 50e9, s + 60e9, fleetscope.FleetCounts{Events: []string{}}},
	} {
		got, err := db.FleetCounts(ctx, acme, "checkout", c.hosts, c.from, c.to)
		if err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.what, got, c.want)
		}
	}
}
