package nflx

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/fleetscope/fleetscope"
	nflxv1 "github.com/fleetscope/fleetscope/api/gen/nflxprofile/v1"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/ingest/internal/fstest"
	"github.com/fleetscope/fleetscope/ingest/nflx/nflxtest"
	"github.com/fleetscope/fleetscope/ingest/perf"
)

// refDecode is the reference for decode: proto.Unmarshal into the
// generated types, what Parse did before it had a decoder of its own, then
// the same msg. Its nodes come sorted by id (the map kept no order).
func refDecode(data []byte) (*msg, error) {
	var pm nflxv1.Profile
	if err := proto.Unmarshal(data, &pm); err != nil {
		return nil, err
	}
	m := &msg{
		index:     index{limit: uint32(min(2*int64(len(pm.Nodes))+maxSlack, math.MaxUint32))},
		startTime: pm.GetStartTime(), hasStart: pm.StartTime != nil,
		endTime: pm.GetEndTime(), hasEnd: pm.EndTime != nil,
		title: []byte(pm.GetTitle()), hasTitle: pm.Title != nil,
		description: []byte(pm.GetDescription()), hasDescription: pm.Description != nil,
		idleSampleCount: pm.GetIdleSampleCount(), hasIdle: pm.IdleSampleCount != nil,
		params:  pm.Params,
		samples: pm.Samples, timeDeltas: pm.TimeDeltas,
		samplesCPU: pm.SamplesCpu, samplesPID: pm.SamplesPid, samplesTID: pm.SamplesTid, samplesValue: pm.SamplesValue,
	}
	for _, id := range slices.Sorted(maps.Keys(pm.Nodes)) {
		pn := pm.Nodes[id]
		n := node{
			name: m.add(pn.GetFunctionName()), libtype: m.add(pn.GetLibtype()),
			parent: pn.GetParent(), pid: pn.GetPid(), tid: pn.GetTid(), cpu: pn.GetCpu(),
			children: run{off: len(m.children), n: len(pn.Children)},
			stack:    run{off: len(m.frames), n: len(pn.Stack)},
		}
		for bit, set := range map[uint8]bool{withParent: pn.Parent != nil, withPID: pn.Pid != nil, withTID: pn.Tid != nil, withCPU: pn.Cpu != nil} {
			if set {
				n.has |= bit
			}
		}
		m.children = append(m.children, pn.Children...)
		for _, f := range pn.Stack {
			m.frames = append(m.frames, stackFrame{name: m.add(f.GetFunctionName()), libtype: m.add(f.GetLibtype())})
		}
		m.index.put(id, int32(len(m.nodes)))
		m.ids, m.nodes = append(m.ids, id), append(m.nodes, n)
	}
	return m, nil
}

// add appends s to m.data, for refDecode.
func (m *msg) add(s string) span {
	m.data = append(m.data, s...)
	return span{len(m.data) - len(s), len(m.data)}
}

// view is a msg in a form reflect.DeepEqual compares by meaning: strings
// as strings, empty slices as nil, nodes by id, children and stacks
// inline.
type view struct {
	StartTime, EndTime       uint64 // bits, so that NaNs compare
	HasStart, HasEnd         bool
	Title, Description       string
	HasTitle, HasDescription bool
	Idle                     uint32
	HasIdle                  bool
	Params                   map[string]string
	Samples, CPU, PID, TID   []uint32
	TimeDeltas               []uint64 // bits, so that NaNs compare
	Values                   []uint64
	Nodes                    map[uint32]nodeView
}

type nodeView struct {
	Name, Libtype         string
	Children              []uint32
	Stack                 []string // name, libtype, name, libtype, ...
	Parent, PID, TID, CPU uint32
	Has                   uint8
}

func (m *msg) view() view {
	nilIfEmpty := func(s []uint32) []uint32 {
		if len(s) == 0 {
			return nil
		}
		return s
	}
	v := view{
		StartTime: math.Float64bits(m.startTime), EndTime: math.Float64bits(m.endTime), HasStart: m.hasStart, HasEnd: m.hasEnd,
		Title: string(m.title), Description: string(m.description), HasTitle: m.hasTitle, HasDescription: m.hasDescription,
		Idle: m.idleSampleCount, HasIdle: m.hasIdle,
		Samples: nilIfEmpty(m.samples), CPU: nilIfEmpty(m.samplesCPU), PID: nilIfEmpty(m.samplesPID), TID: nilIfEmpty(m.samplesTID),
		Nodes: map[uint32]nodeView{},
	}
	if len(m.params) > 0 {
		v.Params = m.params
	}
	for _, d := range m.timeDeltas {
		v.TimeDeltas = append(v.TimeDeltas, math.Float64bits(d))
	}
	if len(m.samplesValue) > 0 {
		v.Values = m.samplesValue
	}
	for i, id := range m.ids {
		n := &m.nodes[i]
		nv := nodeView{Name: string(m.str(n.name)), Libtype: string(m.str(n.libtype)), Parent: n.parent, PID: n.pid, TID: n.tid, CPU: n.cpu, Has: n.has}
		nv.Children = nilIfEmpty(m.children[n.children.off : n.children.off+n.children.n])
		for _, f := range m.frames[n.stack.off : n.stack.off+n.stack.n] {
			nv.Stack = append(nv.Stack, string(m.str(f.name)), string(m.str(f.libtype)))
		}
		if _, ok := v.Nodes[id]; ok {
			panic(fmt.Sprintf("node %d twice", id))
		}
		if j, ok := m.index.get(id); !ok || int(j) != i {
			panic(fmt.Sprintf("node %d: index says %d, %v; it is %d", id, j, ok, i))
		}
		v.Nodes[id] = nv
	}
	return v
}

// canonical is what a parse handed out, with each sample's stack and event
// by name: the ids a dictionary gives depend on the order in which the
// nodes were met, which proto.Unmarshal's map does not keep.
type canonical struct {
	Profile fleetscope.Profile // without Dict
	Frames  []fleetscope.Frame // sorted
	Stacks  int
	Samples []canonSample
	Err     string
}

type canonSample struct {
	fleetscope.Sample // Stack and Event 0
	Stack             string
	Event             string
}

func (o outcome) canonical() canonical {
	c := canonical{Profile: *o.p}
	c.Profile.Dict = nil
	d := o.p.Dict
	for i := range d.NumFrames() {
		c.Frames = append(c.Frames, d.FrameAt(fleetscope.FrameID(i)))
	}
	slices.SortFunc(c.Frames, func(a, b fleetscope.Frame) int {
		return strings.Compare(fmt.Sprint(a), fmt.Sprint(b))
	})
	c.Stacks = d.NumStacks()
	for _, s := range o.samples {
		cs := canonSample{Sample: s, Event: d.Events()[s.Event]}
		cs.Sample.Stack, cs.Sample.Event = 0, 0
		for _, f := range d.StackFrames(s.Stack) {
			cs.Stack += fmt.Sprintf("%q/%d;", d.FrameAt(f).Name, d.FrameAt(f).Kind)
		}
		c.Samples = append(c.Samples, cs)
	}
	if o.err != nil {
		c.Err = fleetscope.ErrorCode(o.err) + ": " + o.err.Error()
	}
	return c
}

// outcome is all that a parse hands out.
type outcome struct {
	p       *fleetscope.Profile
	samples []fleetscope.Sample
	err     error
}

// errEnough ends a parse whose samples are not worth keeping further.
var errEnough = errors.New("enough samples")

func parseWith(dec func([]byte) (*msg, error), data []byte, limit int) outcome {
	var o outcome
	o.p, o.err = parse(bytes.NewReader(data), dec, func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
		o.samples = append(o.samples, batch...)
		if len(o.samples) > limit {
			return errEnough
		}
		return nil
	})
	return o
}

// agree checks that decode and refDecode accept and refuse the same data
// and decode it to the same message, and that Parse with either gives the
// same profile, dictionary, samples and error. It returns the hand
// decoder's parse.
func agree(t testing.TB, data []byte, limit int) outcome {
	t.Helper()
	got, gerr := decode(data)
	want, werr := refDecode(data)
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("decode: err %v, proto.Unmarshal: err %v", gerr, werr)
	}
	if gerr == nil && !reflect.DeepEqual(got.view(), want.view()) {
		g, w := got.view(), want.view()
		t.Fatalf("decode and proto.Unmarshal differ:\n got  %s\n want %s", brief(g), brief(w))
	}
	o := parseWith(decode, data, limit)
	r := parseWith(refDecode, data, limit)
	oc, rc := o.canonical(), r.canonical()
	if gerr != nil { // refused: the messages name the field or quote proto
		if fleetscope.ErrorCode(o.err) != fleetscope.EINVALID || fleetscope.ErrorCode(r.err) != fleetscope.EINVALID {
			t.Fatalf("Parse: err %v, with proto.Unmarshal %v; want EINVALID", o.err, r.err)
		}
		oc.Err, rc.Err = "", ""
	}
	switch {
	case oc.Err != rc.Err:
		t.Fatalf("Parse: err %v, with proto.Unmarshal %v", o.err, r.err)
	case !reflect.DeepEqual(oc.Samples, rc.Samples):
		t.Fatalf("Parse: %d samples, with proto.Unmarshal %d, or they differ", len(o.samples), len(r.samples))
	case !reflect.DeepEqual(oc, rc):
		t.Fatalf("Parse: profiles differ:\n got  %+v\n want %+v", oc.Profile, rc.Profile)
	}
	return o
}

func brief(v view) string {
	s := fmt.Sprintf("%+v", v)
	if len(s) > 2000 {
		s = s[:2000] + "..."
	}
	return s
}

// TestDecodeCorpus: every nflxprofile of the corpus decodes and parses the
// same with the hand decoder as with proto.Unmarshal.
func TestDecodeCorpus(t *testing.T) {
	dir := fstest.Shared("corpus", "nflxprofile")
	names, _ := filepath.Glob(filepath.Join(dir, "*.nflxprofile*"))
	if len(names) == 0 {
		corpus.Read(t, filepath.Join("corpus", "nflxprofile", "nodejs1.nflxprofile")) // skips, or fails under FLEETSCOPE_TEST_REQUIRE=1
		t.Fatalf("no nflxprofile in %s", dir)
	}
	for _, name := range names {
		t.Run(filepath.Base(name), func(t *testing.T) {
			data := fstest.Read(t, "corpus", "nflxprofile", filepath.Base(name))
			o := agree(t, data, math.MaxInt)
			if o.err != nil {
				t.Fatal(o.err)
			}
			t.Logf("%d samples, %d stacks", len(o.samples), o.p.Dict.NumStacks())
		})
	}
}

// continuousMinute is a host-minute of the continuous fleet benchmark
// (cmd/fleetscope: loadReplay(b).thin(20).profile(b, 3, 1)), ungzipped:
// the benchmark file's stacks as a tree with parent links, every 20th
// sample by time, its time modulo 60 s. Its nodes are written in the
// order of a Go map, as proto.Marshal writes them.
func continuousMinute(t testing.TB) []byte {
	f, err := os.Open(corpus.Path(t, "bench/perf-mixed-60s.txt.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var all []fleetscope.Sample
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	p, err := perf.Parse(zr, func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
		all = append(all, batch...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	all2, leafOf := nflxtest.Tree(p.Dict)
	sort.SliceStable(all, func(i, j int) bool { return all[i].TimeNanos < all[j].TimeNanos })
	type sample struct {
		leaf uint32
		off  int64
	}
	var ss []sample
	for i := 0; i < len(all); i += 20 {
		ss = append(ss, sample{leafOf[all[i].Stack], (all[i].TimeNanos - all[0].TimeNanos) % int64(time.Minute)})
	}
	sort.SliceStable(ss, func(i, j int) bool { return ss[i].off < ss[j].off })
	m := &nflxv1.Profile{StartTime: proto.Float64(1795000060.111), EndTime: proto.Float64(1795000120.111),
		Nodes: map[uint32]*nflxv1.Profile_Node{}, Params: map[string]string{"has_parent": "true"}}
	prev := int64(0)
	for _, s := range ss {
		m.Samples = append(m.Samples, s.leaf)
		m.TimeDeltas = append(m.TimeDeltas, float64(s.off-prev)/1e9)
		prev = s.off
		for id := s.leaf; id != 0; id = all2[id].GetParent() {
			if _, ok := m.Nodes[id]; ok {
				break
			}
			m.Nodes[id] = all2[id]
		}
	}
	data, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestDecodeContinuousMinute: the continuous fleet benchmark's host-minute
// parses the same with either decoder.
func TestDecodeContinuousMinute(t *testing.T) {
	if testing.Short() {
		t.Skip("parses the benchmark file")
	}
	data := continuousMinute(t)
	o := agree(t, data, math.MaxInt)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if len(o.samples) != 2850 {
		t.Errorf("%d samples, want 2850", len(o.samples))
	}
	t.Logf("%d bytes, %d samples, %d stacks, %d frames", len(data), len(o.samples), o.p.Dict.NumStacks(), o.p.Dict.NumFrames())
}

// TestParseReusesMemory: parses one after another, each reusing what the
// last released (its file's buffer, its message's arrays and node index,
// dense and sparse), give what a parse with nothing to reuse gives: the
// benchmark's host-minute (node ids past the dense index), the corpus
// files, a small hand-made message, and the host-minute again.
func TestParseReusesMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("parses the benchmark file")
	}
	files := [][]byte{continuousMinute(t)}
	names, _ := filepath.Glob(filepath.Join(fstest.Shared("corpus", "nflxprofile"), "*.nflxprofile*"))
	for _, name := range names {
		files = append(files, fstest.Read(t, "corpus", "nflxprofile", filepath.Base(name)))
	}
	// The small message's far node has the host-minute's largest id: in
	// the sparse index of both, at another entry.
	minute, err := refDecode(files[0])
	if err != nil {
		t.Fatal(err)
	}
	far := uint64(slices.Max(minute.ids))
	if far < 1<<17 {
		t.Fatalf("the host-minute's largest node id is %d: not in its sparse index", far)
	}
	small := slices.Concat(tagged(1, protowire.Fixed64Type, fixed64(math.Float64bits(100))),
		tagged(3, protowire.BytesType, lenp(varint(far), varint(7))),
		tagged(4, protowire.BytesType, lenp(fixed64(math.Float64bits(0.5)), fixed64(math.Float64bits(0.25)))),
		tagged(8, protowire.BytesType, lenp(str(1, "has_parent"), str(2, "true"))),
		entry(uv(1, 7), value(str(1, "root"))), entry(uv(1, far), value(str(1, "far"), uv(5, 7))))
	files = append(files, small, files[0])
	want := make([]canonical, len(files))
	for i, data := range files {
		want[i] = parseWith(refDecode, data, math.MaxInt).canonical()
	}
	for round := range 2 {
		for i, data := range files {
			if got := parseWith(decode, data, math.MaxInt).canonical(); !reflect.DeepEqual(got, want[i]) {
				t.Fatalf("round %d, file %d: the parse differs from proto.Unmarshal's:\n got  %+v\n want %+v", round, i, got.Profile, want[i].Profile)
			}
		}
	}
}

// Wire-level building blocks for hand-made messages.
func tagged(num protowire.Number, typ protowire.Type, payload ...[]byte) []byte {
	b := protowire.AppendTag(nil, num, typ)
	for _, p := range payload {
		b = append(b, p...)
	}
	return b
}

func varint(v uint64) []byte { return protowire.AppendVarint(nil, v) }

func fixed64(v uint64) []byte { return protowire.AppendFixed64(nil, v) }

func lenp(parts ...[]byte) []byte {
	body := slices.Concat(parts...)
	return protowire.AppendBytes(nil, body)
}

func str(num protowire.Number, s string) []byte {
	return tagged(num, protowire.BytesType, lenp([]byte(s)))
}

func uv(num protowire.Number, v uint64) []byte { return tagged(num, protowire.VarintType, varint(v)) }

// entry is a nodes map entry (field 5) of the given parts.
func entry(parts ...[]byte) []byte { return tagged(5, protowire.BytesType, lenp(parts...)) }

// value is a map entry's value field holding a Node of the given fields.
func value(fields ...[]byte) []byte { return tagged(2, protowire.BytesType, lenp(fields...)) }

// TestDecodeWire: hand-made messages that exercise the wire format's
// corners decode as proto.Unmarshal decodes them, or are refused as it
// refuses them; so does every prefix of each.
func TestDecodeWire(t *testing.T) {
	head := slices.Concat(tagged(1, protowire.Fixed64Type, fixed64(math.Float64bits(100))), tagged(2, protowire.Fixed64Type, fixed64(math.Float64bits(101))))
	root := entry(uv(1, 0), value(str(1, "root"), uv(3, 1)))
	one := entry(uv(1, 1), value(str(1, "main"), str(4, "jit"), uv(8, 3)))
	samples := tagged(3, protowire.BytesType, lenp(varint(1), varint(1), varint(0)))
	deltas := tagged(4, protowire.BytesType, lenp(fixed64(math.Float64bits(0.5)), fixed64(math.Float64bits(0.25)), fixed64(math.Float64bits(0.125))))
	base := slices.Concat(head, samples, deltas, root, one)
	group := slices.Concat(tagged(99, protowire.StartGroupType), uv(1, 5), tagged(2, protowire.StartGroupType), tagged(2, protowire.EndGroupType), tagged(99, protowire.EndGroupType))
	cases := []struct {
		name string
		data []byte
		ok   bool
	}{
		{"base", base, true},
		{"empty", nil, true}, // decoded; Parse: no samples (EEMPTY)
		{"unknown fields of every wire type", slices.Concat(uv(20, 7), tagged(21, protowire.Fixed32Type, []byte{1, 2, 3, 4}), tagged(22, protowire.Fixed64Type, fixed64(9)), str(23, "x"), group, base), true},
		{"unknown fields inside nodes, frames and files", slices.Concat(base, entry(uv(1, 2), value(uv(30, 1), group, str(1, "n"), tagged(10, protowire.BytesType, lenp(str(1, "f"), uv(9, 9), tagged(3, protowire.BytesType, lenp(str(1, "a.js"), uv(2, 7), uv(7, 7))))), tagged(11, protowire.BytesType, lenp(str(1, "b.js"), uv(5, 1)))), uv(3, 9))), true},
		{"unpacked samples and deltas", slices.Concat(head, uv(3, 1), tagged(4, protowire.Fixed64Type, fixed64(math.Float64bits(0.5))), root, one), true},
		{"packed and unpacked mixed", slices.Concat(head, uv(3, 1), samples, uv(3, 0), deltas, tagged(4, protowire.Fixed64Type, fixed64(math.Float64bits(1))), tagged(4, protowire.Fixed64Type, fixed64(math.Float64bits(2))), root, one), true},
		{"children packed and unpacked", slices.Concat(head, samples, deltas, entry(uv(1, 0), value(uv(3, 2), tagged(3, protowire.BytesType, lenp(varint(1), varint(3))))), one, entry(uv(1, 2), value(str(1, "two"))), entry(uv(1, 3), value(str(1, "three")))), true},
		{"last scalar wins", slices.Concat(base, tagged(1, protowire.Fixed64Type, fixed64(math.Float64bits(50))), str(6, "a"), str(6, "b"), uv(13, 1), uv(13, 2), entry(uv(1, 1), value(str(1, "x"), str(1, "y"), uv(8, 1), uv(8, 2), uv(5, 0), uv(5, 0)))), true},
		{"empty packed fields", slices.Concat(base, tagged(3, protowire.BytesType, lenp()), tagged(4, protowire.BytesType, lenp()), tagged(9, protowire.BytesType, lenp())), true},
		{"per-sample arrays", slices.Concat(base, tagged(9, protowire.BytesType, lenp(varint(1), varint(2), varint(3))), uv(10, 5), uv(10, 6), uv(10, 1<<33), tagged(11, protowire.BytesType, lenp(varint(7))), tagged(12, protowire.BytesType, lenp(varint(1<<40), varint(2), varint(3)))), true},
		{"large unpacked values", slices.Concat(head, uv(3, 1<<31+1), uv(3, 0), uv(3, 1<<31+1), deltas, uv(9, 1<<31+2), uv(9, 1), uv(9, 1<<32+3), uv(10, 1<<30), uv(10, 1<<31+4), uv(10, 2), uv(11, 1<<31+5), uv(11, 3), uv(11, 1<<29), uv(12, 1<<40), uv(12, 1<<63), uv(12, 5), uv(13, 1<<31+6),
			entry(uv(1, 0), value(str(1, "root"), uv(3, 1<<31+1), uv(6, 1<<31+7), uv(7, 1<<31+8), uv(8, 1<<31+9))), entry(uv(1, 1<<31+1), value(str(1, "far"), uv(5, 1<<31+10), uv(6, 1<<20), uv(7, 1<<21), uv(8, 1<<22)))), true},
		{"uint32 truncates a 64-bit varint", slices.Concat(head, tagged(3, protowire.BytesType, lenp(varint(1<<32+1), varint(1<<32), varint(0))), deltas, root, one), true},
		{"params", slices.Concat(base, tagged(8, protowire.BytesType, lenp(str(1, "has_parent"), str(2, "false"))), tagged(8, protowire.BytesType, lenp(str(1, "k"), str(2, "1"))), tagged(8, protowire.BytesType, lenp(str(1, "k"), str(2, "2"), str(1, "k2")))), true},
		{"param without key or value", slices.Concat(base, tagged(8, protowire.BytesType, lenp()), tagged(8, protowire.BytesType, lenp(str(2, "v"))), tagged(8, protowire.BytesType, lenp(str(1, "nov")))), true},
		{"params with unknown fields", slices.Concat(base, tagged(8, protowire.BytesType, lenp(uv(3, 1), str(1, "k"), group, str(2, "v"), uv(1, 1)))), true},
		{"node entry without key", slices.Concat(head, samples, deltas, entry(value(str(1, "root"), uv(3, 1))), one), true},
		{"node entry without value", slices.Concat(head, samples, deltas, root, entry(uv(1, 1))), true},
		{"empty node entry", slices.Concat(head, samples, deltas, entry(), one), true},
		{"node entry key twice", slices.Concat(head, samples, deltas, entry(uv(1, 7), value(str(1, "root"), uv(3, 1)), uv(1, 0)), one), true},
		{"node entry value twice merges", slices.Concat(head, samples, deltas, root, entry(uv(1, 1), value(str(1, "main"), uv(3, 4), tagged(10, protowire.BytesType, lenp(str(1, "s1")))), uv(1, 1), value(str(4, "kernel"), uv(3, 5), uv(6, 9), tagged(10, protowire.BytesType, lenp(str(1, "s2"), str(2, "jit")))))), true},
		{"node id twice: the last entry wins", slices.Concat(base, entry(uv(1, 1), value(str(1, "other"), uv(7, 4)))), true},
		{"node stacks", slices.Concat(head, samples, deltas, entry(uv(1, 0), value(str(1, "p"), tagged(10, protowire.BytesType, lenp(str(1, "a"))))), entry(uv(1, 1), value(str(1, "q"), tagged(10, protowire.BytesType, lenp(str(1, "b"), str(2, "kernel"), str(1, "c"))), tagged(10, protowire.BytesType, lenp())))), true},
		{"node value and key of other wire types are unknown", slices.Concat(head, samples, deltas, root, entry(tagged(1, protowire.Fixed32Type, []byte{1, 0, 0, 0}), uv(1, 1), uv(2, 5), value(str(1, "main")))), true},
		{"known fields of other wire types are unknown", slices.Concat(base, uv(1, 5), uv(6, 1), tagged(3, protowire.Fixed32Type, []byte{1, 0, 0, 0}), tagged(5, protowire.Fixed64Type, fixed64(1)), uv(8, 3), tagged(13, protowire.BytesType, lenp(varint(1))), entry(uv(1, 1), value(uv(1, 3), str(5, "x"), uv(10, 1), str(8, "x"), tagged(3, protowire.Fixed64Type, fixed64(2)), uv(11, 4)))), true},
		{"sparse node ids", slices.Concat(head, tagged(3, protowire.BytesType, lenp(varint(1<<30), varint(0), varint(1<<30))), deltas, entry(uv(1, 0), value(str(1, "root"), uv(3, 1<<30))), entry(uv(1, 1<<30), value(str(1, "far")))), true},
		{"sparse ids with parents", slices.Concat(head, tagged(3, protowire.BytesType, lenp(varint(1<<31), varint(7), varint(1<<31))), deltas, tagged(8, protowire.BytesType, lenp(str(1, "has_parent"), str(2, "true"))), entry(uv(1, 7), value(str(1, "root"))), entry(uv(1, 1<<31), value(str(1, "far"), uv(5, 7)))), true},
		{"strings that are not UTF-8 (proto2 does not check)", slices.Concat(base, tagged(8, protowire.BytesType, lenp(str(1, "k\xff"), str(2, "\xc3"))), str(6, "t\x80"), entry(uv(1, 1), value(str(1, "m\xffain"), str(4, "\xfe")))), true},
		{"field number 0", slices.Concat(base, []byte{0x00, 0x01}), false},
		{"field number above 2^29-1", slices.Concat(base, protowire.AppendVarint(nil, uint64(protowire.MaxValidNumber+1)<<3), []byte{1}), false},
		{"field number above 2^29-1 in a node", slices.Concat(base, entry(uv(1, 1), value(protowire.AppendVarint(nil, uint64(1<<30)<<3), []byte{1}))), false},
		{"field number above 2^29-1 in an entry", slices.Concat(base, entry(protowire.AppendVarint(nil, uint64(1<<30)<<3), []byte{1})), false},
		{"wire type 6", slices.Concat(base, []byte{0x0e}), false},
		{"wire type 7 in a node", slices.Concat(base, entry(uv(1, 1), value([]byte{0x0f}))), false},
		{"end group at the top", slices.Concat(base, tagged(3, protowire.EndGroupType)), false},
		{"end group in an entry", slices.Concat(base, entry(tagged(1, protowire.EndGroupType))), false},
		{"end group in a node", slices.Concat(base, entry(uv(1, 1), value(tagged(1, protowire.EndGroupType)))), false},
		{"end group in a file", slices.Concat(base, entry(uv(1, 1), value(tagged(11, protowire.BytesType, lenp(tagged(2, protowire.EndGroupType)))))), false},
		{"unclosed group", slices.Concat(base, tagged(50, protowire.StartGroupType), uv(1, 1)), false},
		{"group closed by another number", slices.Concat(base, tagged(50, protowire.StartGroupType), tagged(51, protowire.EndGroupType)), false},
		{"varint of 11 bytes", slices.Concat(base, tagged(13, protowire.VarintType), bytes.Repeat([]byte{0xff}, 10), []byte{1}), false},
		{"varint overflowing 64 bits", slices.Concat(base, tagged(13, protowire.VarintType), bytes.Repeat([]byte{0xff}, 9), []byte{2}), false},
		{"overlong packed varint", slices.Concat(base, tagged(3, protowire.BytesType, lenp(bytes.Repeat([]byte{0x80}, 10), []byte{0}))), false},
		{"packed varints cut off", slices.Concat(base, tagged(9, protowire.BytesType, lenp(varint(1), []byte{0x80}))), false},
		{"packed doubles of 12 bytes", slices.Concat(base, tagged(4, protowire.BytesType, lenp(fixed64(0), []byte{1, 2, 3, 4}))), false},
		{"packed children cut off", slices.Concat(base, entry(uv(1, 1), value(tagged(3, protowire.BytesType, lenp([]byte{0x81}))))), false},
		{"length past the end", slices.Concat(base, tagged(6, protowire.BytesType, varint(5), []byte("ab"))), false},
		{"length overflowing", slices.Concat(base, tagged(6, protowire.BytesType), bytes.Repeat([]byte{0xff}, 9), []byte{1}), false},
		{"bad file in a stack frame", slices.Concat(base, entry(uv(1, 1), value(tagged(10, protowire.BytesType, lenp(tagged(3, protowire.BytesType, lenp([]byte{0x0e}))))))), false},
		{"bad stack frame", slices.Concat(base, entry(uv(1, 1), value(tagged(10, protowire.BytesType, lenp(tagged(1, protowire.BytesType, varint(3))))))), false},
		{"NaN delta", slices.Concat(head, uv(3, 1), tagged(4, protowire.Fixed64Type, fixed64(math.Float64bits(math.NaN()))), root, one), true},
		{"not protobuf", []byte("not protobuf at all"), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode(tc.data)
			if (err == nil) != tc.ok {
				t.Errorf("decode: err %v, want ok %v", err, tc.ok)
			}
			if err != nil && !strings.Contains(fmt.Sprint(err), "field") && !strings.Contains(fmt.Sprint(err), "tag") {
				t.Errorf("decode: err %q names no field", err)
			}
			agree(t, tc.data, math.MaxInt)
			for n := range len(tc.data) {
				agree(t, tc.data[:n], math.MaxInt)
			}
		})
	}
}

// TestDecodeError: a refused message is EINVALID, naming where it broke.
func TestDecodeError(t *testing.T) {
	data := slices.Concat(uv(3, 1), entry(uv(1, 1), value(str(1, "main"), tagged(10, protowire.BytesType, lenp(tagged(1, protowire.BytesType, varint(3)))))))
	_, err := Parse(bytes.NewReader(data), nil)
	if fleetscope.ErrorCode(err) != fleetscope.EINVALID {
		t.Fatalf("err = %v, want EINVALID", err)
	}
	const want = "nflxprofile: not a valid Profile message: field 5 (nodes) at byte 2: field 2 (value): field 10 (stack): field 1 (function_name): unexpected EOF"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want %q", err, want)
	}
}

// TestDecodeDeepGroups: unknown groups nested past protobuf's recursion
// limit are refused as proto.Unmarshal refuses them; less deep ones are
// skipped.
func TestDecodeDeepGroups(t *testing.T) {
	nested := func(depth int) []byte {
		var b []byte
		for range depth {
			b = protowire.AppendTag(b, 99, protowire.StartGroupType)
		}
		for range depth {
			b = protowire.AppendTag(b, 99, protowire.EndGroupType)
		}
		return b
	}
	base := slices.Concat(uv(3, 0), entry(uv(1, 0), value(str(1, "root"))))
	for _, depth := range []int{100, 2 * protowire.DefaultRecursionLimit} {
		for _, data := range [][]byte{slices.Concat(base, nested(depth)), slices.Concat(base, entry(uv(1, 1), value(nested(depth))))} {
			_, err := decode(data)
			if (err == nil) != (depth == 100) {
				t.Errorf("depth %d: err %v", depth, err)
			}
			agree(t, data, math.MaxInt)
		}
	}
}
