package nflx

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/fleetscope/fleetscope"
	nflxv1 "github.com/fleetscope/fleetscope/api/gen/nflxprofile/v1"
	"github.com/fleetscope/fleetscope/ingest/cpuprofile"
	"github.com/fleetscope/fleetscope/ingest/internal/fstest"
	"github.com/fleetscope/fleetscope/query/flame"
)

// refNode is a node of nflxprofile's own flame graph (NAME.tree.json): its
// value is the samples ending at the node (self), not the total under it;
// siblings may repeat a name with another libtype or file.
type refNode struct {
	Name     string     `json:"name"`
	Value    uint64     `json:"value"`
	Children []*refNode `json:"children"`
}

// selfByPath flattens a reference tree into path -> self value.
func (n *refNode) selfByPath(prefix string, out map[string]uint64) {
	for _, c := range n.Children {
		path := prefix + ";" + strings.TrimSpace(c.Name)
		if c.Value > 0 {
			out[path] += c.Value
		}
		c.selfByPath(path, out)
	}
}

// ourSelfByPath flattens our flame graph tree into path -> self value.
func ourSelfByPath(n *flame.Node, prefix string, out map[string]uint64) {
	for _, c := range n.Children {
		path := prefix + ";" + c.Name
		self := c.Value
		for _, g := range c.Children {
			self -= g.Value
		}
		if self > 0 {
			out[path] += self
		}
		ourSelfByPath(c, path, out)
	}
}

// TestFlameGraphMatchesReference: the whole-profile flame graph of each
// corpus nflxprofile equals nflxprofile's own (names and values).
func TestFlameGraphMatchesReference(t *testing.T) {
	for _, name := range []string{"nodejs1", "node20-phases"} {
		t.Run(name, func(t *testing.T) {
			p, all := fstest.Parse(t, Parse, fstest.Read(t, "corpus", "nflxprofile", name+".nflxprofile"))
			var ref refNode
			if err := json.Unmarshal(fstest.Read(t, "corpus", "nflxprofile", name+".tree.json"), &ref); err != nil {
				t.Fatal(err)
			}
			want := map[string]uint64{}
			ref.selfByPath("", want)

			sel := fleetscope.Selection{IncludeIdle: true, Range: fleetscope.All}
			var c flame.Counts
			c.Add(p.Dict, &sel, all, false)
			got := map[string]uint64{}
			ourSelfByPath(flame.NewLayout(p.Dict, flame.Annotate{}).Flat(&c).Tree(), "", got)

			var wantTotal uint64
			for path, v := range want {
				wantTotal += v
				if got[path] != v {
					t.Errorf("%s: %d samples, reference %d", path, got[path], v)
				}
			}
			for path, v := range got {
				if _, ok := want[path]; !ok {
					t.Errorf("%s: %d samples, not in the reference", path, v)
				}
			}
			if c.Total != wantTotal || uint64(len(all)) != wantTotal {
				t.Errorf("total %d (%d samples), reference %d", c.Total, len(all), wantTotal)
			}
			t.Logf("%d samples, %d stacks, %d distinct paths", len(all), p.Dict.NumStacks(), len(want))
		})
	}
}

// TestSameAsCPUProfile: node20-phases.nflxprofile was converted from
// node20-phases.cpuprofile; without idle samples both give the same flame
// graph: 2,368 samples (2,381 with (idle) and (program) in the cpuprofile).
func TestSameAsCPUProfile(t *testing.T) {
	np, nall := fstest.Parse(t, Parse, fstest.Read(t, "corpus", "nflxprofile", "node20-phases.nflxprofile"))
	cp, call := fstest.Parse(t, cpuprofile.Parse, fstest.Read(t, "corpus", "cpuprofile", "node20-phases.cpuprofile"))
	if len(call) != 2381 {
		t.Errorf("cpuprofile: %d samples, want 2381", len(call))
	}
	nf := fstest.Folded(np, nall, "", false, false)
	cf := fstest.Folded(cp, call, "", false, false)
	sum := func(folded []string) (n int) {
		for _, l := range folded {
			var v int
			fmt.Sscan(l[strings.LastIndexByte(l, ' ')+1:], &v)
			n += v
		}
		return n
	}
	if sum(nf) != 2368 || sum(cf) != 2368 {
		t.Errorf("non-idle samples: nflxprofile %d, cpuprofile %d, want 2368 each", sum(nf), sum(cf))
	}
	if strings.Join(nf, "\n") != strings.Join(cf, "\n") {
		t.Errorf("flame graphs differ:\nnflxprofile:\n%s\ncpuprofile:\n%s", strings.Join(nf, "\n"), strings.Join(cf, "\n"))
	}
}

// TestTimes: a sample's time is start_time plus the running sum of
// time_deltas.
func TestTimes(t *testing.T) {
	m := &nflxv1.Profile{
		StartTime:  proto.Float64(1700000000.5),
		EndTime:    proto.Float64(1700000002),
		Samples:    []uint32{2, 2, 1},
		TimeDeltas: []float64{0.25, 0.5, 0.125},
		Nodes: map[uint32]*nflxv1.Profile_Node{
			0: {FunctionName: proto.String("root"), Children: []uint32{1}},
			1: {FunctionName: proto.String("java"), Children: []uint32{2}},
			2: {FunctionName: proto.String(" main "), Libtype: proto.String("jit")},
		},
		SamplesCpu: []uint32{3, 4, 5},
	}
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if Detect(data) == 0 {
		t.Errorf("Detect of a marshalled profile = 0")
	}
	p, all := fstest.Parse(t, Parse, data)
	want := []int64{1700000000750000000, 1700000001250000000, 1700000001375000000}
	for i, s := range all {
		if s.TimeNanos != want[i] || s.CPU != int32(3+i) {
			t.Errorf("sample %d: time %d cpu %d, want %d cpu %d", i, s.TimeNanos, s.CPU, want[i], 3+i)
		}
	}
	got := fstest.Folded(p, all, "", true, false)
	if strings.Join(got, "|") != "root;java 1|root;java;main 2" {
		t.Errorf("folded %q", got)
	}
	if f := p.Dict.FrameAt(p.Dict.StackFrames(all[0].Stack)[2]); f.Kind != fleetscope.KindJIT {
		t.Errorf("main: kind %v, want JIT", f.Kind)
	}
}

// TestParentLinks: with has_parent, stacks follow parent links up to a node
// whose parent is 0.
func TestParentLinks(t *testing.T) {
	m := &nflxv1.Profile{
		StartTime: proto.Float64(10), EndTime: proto.Float64(11),
		Samples: []uint32{3}, TimeDeltas: []float64{0.1},
		Params: map[string]string{"has_parent": "true"},
		Nodes: map[uint32]*nflxv1.Profile_Node{
			0: {FunctionName: proto.String("root")},
			1: {FunctionName: proto.String("node"), Parent: proto.Uint32(0)},
			2: {FunctionName: proto.String("a"), Parent: proto.Uint32(1)},
			3: {FunctionName: proto.String("b"), Parent: proto.Uint32(2)},
		},
	}
	data, _ := proto.Marshal(m)
	p, all := fstest.Parse(t, Parse, data)
	if got := fstest.Folded(p, all, "", true, false); len(got) != 1 || got[0] != "node;a;b 1" {
		t.Errorf("folded %q", got)
	}
	m.Nodes[1].Parent = proto.Uint32(3) // a cycle
	data, _ = proto.Marshal(m)
	if _, err := Parse(bytes.NewReader(data), func(*fleetscope.Profile, []fleetscope.Sample) error { return nil }); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("cyclic parents: err = %v", err)
	}
}

// TestErrors: bad input gets EINVALID naming the problem.
func TestErrors(t *testing.T) {
	nodes := map[uint32]*nflxv1.Profile_Node{0: {FunctionName: proto.String("root")}}
	for _, tc := range []struct {
		name string
		m    *nflxv1.Profile
		want string
	}{
		{"no samples", &nflxv1.Profile{StartTime: proto.Float64(1), Nodes: nodes}, "no samples"},
		{"unknown node", &nflxv1.Profile{StartTime: proto.Float64(1), Samples: []uint32{7}, TimeDeltas: []float64{1}, Nodes: nodes}, "samples[0]: node 7 is not in nodes"},
		{"deltas", &nflxv1.Profile{StartTime: proto.Float64(1), Samples: []uint32{0, 0}, TimeDeltas: []float64{1}, Nodes: nodes}, "1 time_deltas for 2 samples"},
	} {
		data, _ := proto.Marshal(tc.m)
		_, err := Parse(bytes.NewReader(data), func(*fleetscope.Profile, []fleetscope.Sample) error { return nil })
		code := fleetscope.EINVALID
		if tc.want == "no samples" {
			code = fleetscope.EEMPTY // well formed, nothing in it
		}
		if err == nil || fleetscope.ErrorCode(err) != code || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %s with %q", tc.name, err, code, tc.want)
		}
	}
	if _, err := Parse(strings.NewReader("not protobuf at all"), nil); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
		t.Errorf("text: err = %v", err)
	}
}

// TestSameNameOtherKind: frames of one name and another libtype stay
// apart, each with its kind.
func TestSameNameOtherKind(t *testing.T) {
	m := &nflxv1.Profile{
		StartTime: proto.Float64(1), Samples: []uint32{1, 2, 3, 2}, TimeDeltas: []float64{1, 1, 1, 1},
		Params: map[string]string{"has_parent": "true"},
		Nodes: map[uint32]*nflxv1.Profile_Node{
			1: {FunctionName: proto.String("f"), Libtype: proto.String("kernel")},
			2: {FunctionName: proto.String("f")},
			3: {FunctionName: proto.String(" f"), Libtype: proto.String("jit"), Parent: proto.Uint32(2)},
		},
	}
	data, _ := proto.Marshal(m)
	p, all := fstest.Parse(t, Parse, data)
	var got []string
	for _, s := range all {
		var fs []string
		for _, f := range p.Dict.StackFrames(s.Stack) {
			fs = append(fs, fmt.Sprintf("%s/%d", p.Dict.FrameAt(f).Name, p.Dict.FrameAt(f).Kind))
		}
		got = append(got, strings.Join(fs, ";"))
	}
	want := fmt.Sprintf("f/%d|f/0|f/0;f/%d|f/0", fleetscope.KindKernel, fleetscope.KindJIT)
	if strings.Join(got, "|") != want || p.Dict.NumFrames() != 3 {
		t.Errorf("stacks %q (%d frames), want %q (3 frames)", strings.Join(got, "|"), p.Dict.NumFrames(), want)
	}
}
