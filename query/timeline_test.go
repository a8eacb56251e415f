package query_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/export"
)

// ssFile is a speedscope export as these tests read it.
type ssFile struct {
	Name   string `json:"name"`
	Shared struct {
		Frames []struct{ Name string } `json:"frames"`
	} `json:"shared"`
	Profiles []struct {
		Unit       string    `json:"unit"`
		StartValue float64   `json:"startValue"`
		EndValue   float64   `json:"endValue"`
		Samples    [][]int   `json:"samples"`
		Weights    []float64 `json:"weights"`
	} `json:"profiles"`
}

// speedscopeOf exports a flame request's graph to speedscope and reads it
// back: its samples' stacks (frames joined by ';'), in order, and weights.
func speedscopeOf(t *testing.T, p *parsed, r query.FlameRequest) (*ssFile, []string, []float64) {
	t.Helper()
	r.ProfileID = p.id
	g, err := p.q.FlameGraph(context.Background(), 0, r)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := g.Export(context.Background(), &b, export.FormatSpeedscope, query.RangeTitle(r.Range), r.ByPeriod); err != nil {
		t.Fatal(err)
	}
	var f ssFile
	if err := json.Unmarshal(b.Bytes(), &f); err != nil || len(f.Profiles) != 1 {
		t.Fatalf("speedscope export: %v, %d profiles", err, len(f.Profiles))
	}
	var stacks []string
	for _, s := range f.Profiles[0].Samples {
		names := make([]string, len(s))
		for i, k := range s {
			names[i] = f.Shared.Frames[k].Name
		}
		stacks = append(stacks, strings.Join(names, ";"))
	}
	return &f, stacks, f.Profiles[0].Weights
}

// TestSpeedscopeSamplesEqualRangeSamples: a range's speedscope export
// holds the range's non-idle samples as the perf text lists them (read by
// the test's own reader), one entry each, in time order (each sample
// checked by its command, its stack's root; samples of one time in any
// order among themselves); under filters and --period its
// samples are the flame graph's, in time order, their weights its total.
func TestSpeedscopeSamplesEqualRangeSamples(t *testing.T) {
	path, _ := plant(t, "--seed", "3", "--seconds", "12", "--cpus", "4", "--hz", "99")
	p := parseFile(t, path)
	all := blocks(t, path)
	start := slices.MinFunc(all, func(a, b block) int { return int(a.nanos - b.nanos) }).nanos / 1e9 * 1e9
	for _, rg := range []fleetscope.Range{{Start: 2.4e9, End: 3.48e9}, {Start: 0, End: 12e9}, {Start: 7.25e9, End: 7.26e9}} {
		var want []block
		for _, b := range all {
			if rel := b.nanos - start; !b.idle && rg.Contains(rel) {
				want = append(want, b)
			}
		}
		slices.SortStableFunc(want, func(a, b block) int { return int(a.nanos - b.nanos) })
		f, stacks, weights := speedscopeOf(t, p, query.FlameRequest{Range: &rg})
		if len(stacks) != len(want) {
			t.Fatalf("%v: %d samples exported, the perf text has %d non-idle", rg, len(stacks), len(want))
		}
		for i := 0; i < len(want); {
			j := i
			for j < len(want) && want[j].nanos == want[i].nanos {
				j++
			}
			var got, exp []string
			for k := i; k < j; k++ {
				got = append(got, strings.SplitN(stacks[k], ";", 2)[0])
				exp = append(exp, strings.Fields(want[k].text)[0])
				if weights[k] != 1 {
					t.Fatalf("%v: sample %d weight %v, want 1", rg, k, weights[k])
				}
			}
			slices.Sort(got)
			slices.Sort(exp)
			if !slices.Equal(got, exp) {
				t.Fatalf("%v: samples %d..%d are of %q, the perf text's at %d ns of %q: not the range's samples in time order", rg, i, j-1, got, want[i].nanos, exp)
			}
			i = j
		}
		if pr := f.Profiles[0]; pr.StartValue != 0 || pr.EndValue != float64(len(want)) || pr.Unit != "none" {
			t.Errorf("%v: [%v, %v] %s, want [0, %d] none", rg, pr.StartValue, pr.EndValue, pr.Unit, len(want))
		}
	}

	// Filters and periods: the flame graph's samples, in time order.
	rg := fleetscope.Range{Start: 1e9, End: 9e9}
	for _, r := range []query.FlameRequest{
		{Range: &rg, Filter: fleetscope.Filter{Function: "GC|json"}},
		{Range: &rg, Filter: fleetscope.Filter{CPUs: []int32{1, 2}}, ByPeriod: true},
		{Range: &rg, Outside: true, IncludeIdle: true},
		{},
	} {
		r.ProfileID = p.id
		g, err := p.q.FlameGraph(context.Background(), 0, r)
		if err != nil {
			t.Fatal(err)
		}
		var folded bytes.Buffer
		g.WriteFolded(&folded)
		want := map[string]float64{}
		for _, line := range strings.Split(strings.TrimSpace(folded.String()), "\n") {
			i := strings.LastIndexByte(line, ' ')
			var n float64
			fmt.Sscan(line[i+1:], &n)
			want[line[:i]] += n
		}
		f, stacks, weights := speedscopeOf(t, p, r)
		got := map[string]float64{}
		for i, s := range stacks {
			got[s] += weights[i]
		}
		if !maps.Equal(got, want) || len(got) == 0 {
			t.Errorf("%+v: the export's samples differ from the flame graph's", r)
		}
		if unit := f.Profiles[0].Unit; (unit == "nanoseconds") != r.ByPeriod {
			t.Errorf("%+v: unit %q", r, unit)
		}
	}

	// The limit: refused, naming it.
	defer query.SetMaxTimelineSamples(10)()
	g, err := p.q.FlameGraph(context.Background(), 0, query.FlameRequest{ProfileID: p.id})
	if err != nil {
		t.Fatal(err)
	}
	err = g.Export(context.Background(), &bytes.Buffer{}, export.FormatSpeedscope, "", false)
	if fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE || !strings.Contains(fmt.Sprint(err), "at most 10 samples") {
		t.Errorf("past the limit: %v, want ETOOLARGE naming it", err)
	}
	if err := g.Export(context.Background(), &bytes.Buffer{}, export.FormatSVG, "", false); err != nil {
		t.Errorf("svg past the speedscope limit: %v", err)
	}
}
