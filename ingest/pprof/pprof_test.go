package pprof

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/internal/fstest"
	"github.com/fleetscope/fleetscope/query/flame"
)

// TestTotals: per sample type, the period-weighted flame graph totals what
// github.com/google/pprof/profile sums over the samples.
func TestTotals(t *testing.T) {
	data := fstest.Read(t, "corpus", "pprof", "go-sha-sort.cpu.pprof")
	ref, err := profile.ParseData(data)
	if err != nil {
		t.Fatal(err)
	}
	p, all := fstest.Parse(t, Parse, data)
	if p.Untimed != p.Samples {
		t.Errorf("%d of %d samples untimed; pprof has no per-sample times", p.Untimed, p.Samples)
	}
	if len(p.Dict.Events()) != len(ref.SampleType) {
		t.Fatalf("events %q for sample types %v", p.Dict.Events(), ref.SampleType)
	}
	for i, st := range ref.SampleType {
		var want int64
		for _, s := range ref.Sample {
			want += s.Value[i]
		}
		ev, err := fleetscope.ResolveEvent(p.Dict.Events(), st.Type)
		if err != nil {
			t.Fatal(err)
		}
		sel := fleetscope.Selection{Event: ev, IncludeIdle: true, Range: fleetscope.All}
		var c flame.Counts
		c.Add(p.Dict, &sel, all, true)
		if c.Total != uint64(want) || want == 0 {
			t.Errorf("%s/%s: total %d, pprof sums %d", st.Type, st.Unit, c.Total, want)
		}
		t.Logf("%s/%s: %d over %d samples", st.Type, st.Unit, want, len(ref.Sample))
	}
	// First (the default event): the type counted in samples.
	def := ""
	for _, st := range ref.SampleType {
		if st.Unit == "count" && def == "" {
			def = st.Type
		}
	}
	if got := p.Dict.Events()[0]; got != def {
		t.Errorf("first event %q, want the type counted in samples, %q", got, def)
	}
	for ev := range p.Dict.Events() {
		if !p.IsWeighted(fleetscope.EventID(ev)) {
			t.Errorf("event %s not weighted: a record would count as one sample", p.Dict.Events()[ev])
		}
	}
}

// TestStacks: stacks run from the process frame through the locations,
// inlined functions expanded callers first, a location without symbols
// named by its binary and file offset.
func TestStacks(t *testing.T) {
	fn := func(id uint64, name string) *profile.Function { return &profile.Function{ID: id, Name: name} }
	main, inl, leaf := fn(1, "main.main"), fn(2, "main.helper"), fn(3, "runtime.memmove")
	m := &profile.Mapping{ID: 1, Start: 0x1000, Limit: 0x9000, File: "/usr/bin/app"}
	l1 := &profile.Location{ID: 1, Mapping: m, Address: 0x1100, Line: []profile.Line{{Function: main}}}
	l2 := &profile.Location{ID: 2, Mapping: m, Address: 0x1200, Line: []profile.Line{{Function: leaf}, {Function: inl}}}
	l3 := &profile.Location{ID: 3, Mapping: m, Address: 0x1300}
	pp := &profile.Profile{
		SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
		Sample: []*profile.Sample{
			{Location: []*profile.Location{l2, l1}, Value: []int64{2, 20}, NumLabel: map[string][]int64{"pid": {7}}},
			{Location: []*profile.Location{l3, l1}, Value: []int64{1, 0}},
		},
		Mapping: []*profile.Mapping{m}, Location: []*profile.Location{l1, l2, l3}, Function: []*profile.Function{main, inl, leaf},
	}
	var buf bytes.Buffer
	if err := pp.Write(&buf); err != nil {
		t.Fatal(err)
	}
	p, all := fstest.Parse(t, Parse, buf.Bytes())
	if got := strings.Join(p.Dict.Events(), ","); got != "samples,cpu" {
		t.Errorf("events %s, want samples (counted in samples) first", got)
	}
	got := strings.Join(fstest.Folded(p, all, "samples", true, true), "|")
	if want := "app;main.main;app+0x300 1|app;main.main;main.helper;runtime.memmove 2"; got != want {
		t.Errorf("samples: %s\nwant     %s", got, want)
	}
	if got := strings.Join(fstest.Folded(p, all, "cpu", true, true), "|"); got != "app;main.main;main.helper;runtime.memmove 20" {
		t.Errorf("cpu (the zero value left out): %s", got)
	}
	if all[0].PID != 7 {
		t.Errorf("pid label: %d", all[0].PID)
	}
}

// TestNotPprof: text and garbage are refused, not read as legacy formats.
func TestNotPprof(t *testing.T) {
	for _, in := range []string{"", "heap profile: 1: 2 [3: 4] @ heap/2\n", "\x00\x01\x02garbage"} {
		_, err := Parse(strings.NewReader(in), func(*fleetscope.Profile, []fleetscope.Sample) error { return nil })
		if fleetscope.ErrorCode(err) != fleetscope.EINVALID {
			t.Errorf("%q: err = %v, want EINVALID", in, err)
		}
	}
}
