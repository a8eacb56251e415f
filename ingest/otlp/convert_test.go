package otlp_test

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pprofile"
	"go.opentelemetry.io/collector/pdata/pprofile/pprofileotlp"
	collpb "go.opentelemetry.io/proto/slim/otlp/collector/profiles/v1development"
	commonpb "go.opentelemetry.io/proto/slim/otlp/common/v1"
	pb "go.opentelemetry.io/proto/slim/otlp/profiles/v1development"
	resourcepb "go.opentelemetry.io/proto/slim/otlp/resource/v1"
	"google.golang.org/protobuf/proto"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/otlp"
	"github.com/fleetscope/fleetscope/ingest/perf"
)

var t0 = time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC).UnixNano()

// pdataRequest is an export built with the Collector's own pdata, every
// field the converter reads set: what a Collector sends.
func pdataRequest(t *testing.T) []byte {
	pd := pprofile.NewProfiles()
	d := pd.Dictionary()
	for _, s := range []string{"", "cpu", "nanoseconds", "do_sys_poll", "PyEval", "memcpy", "printf", "/usr/lib/libc.so.6", "/usr/bin/python3",
		"profile.frame.type", "kernel", "python", "native", "thread.name", "process.pid", "thread.id", "process.executable.name", "cpu.logical_number", "team"} {
		d.StringTable().Append(s)
	}
	d.MappingTable().AppendEmpty()
	d.LocationTable().AppendEmpty()
	d.FunctionTable().AppendEmpty()
	d.LinkTable().AppendEmpty()
	d.AttributeTable().AppendEmpty()
	d.StackTable().AppendEmpty()
	for _, name := range []int32{3, 4, 5, 6} { // functions 1-4
		d.FunctionTable().AppendEmpty().SetNameStrindex(name)
	}
	d.MappingTable().AppendEmpty().SetFilenameStrindex(7) // 1: libc
	d.MappingTable().AppendEmpty().SetFilenameStrindex(8) // 2: python
	attr := func(k int32, v any) int32 {
		a := d.AttributeTable().AppendEmpty()
		a.SetKeyStrindex(k)
		switch x := v.(type) {
		case string:
			a.Value().SetStr(x)
		case int:
			a.Value().SetInt(int64(x))
		}
		return int32(d.AttributeTable().Len() - 1)
	}
	kernel, python, native := attr(9, "kernel"), attr(9, "python"), attr(9, "native")
	// Locations, leaf first in the stack: a kernel function, printf with
	// memcpy inlined, an unsymbolized libc address, a Python frame.
	loc := func(m int32, addr uint64, kind int32, fns ...int32) int32 {
		l := d.LocationTable().AppendEmpty()
		l.SetMappingIndex(m)
		l.SetAddress(addr)
		l.AttributeIndices().Append(kind)
		for _, f := range fns {
			l.Lines().AppendEmpty().SetFunctionIndex(f)
		}
		return int32(d.LocationTable().Len() - 1)
	}
	stack := []int32{loc(0, 0xffffffff81000000, kernel, 1), loc(1, 0x1000, native, 3, 4), loc(1, 0x2a3b, native), loc(2, 0x77, python, 2)}
	d.StackTable().AppendEmpty().LocationIndices().FromRaw(stack)
	rp := pd.ResourceProfiles().AppendEmpty()
	rp.Resource().Attributes().PutStr("service.name", "shop")
	rp.Resource().Attributes().PutStr("host.id", "i-0abc")
	p := rp.ScopeProfiles().AppendEmpty().Profiles().AppendEmpty()
	p.SampleType().SetTypeStrindex(1)
	p.SampleType().SetUnitStrindex(2)
	p.SetTime(pcommon.Timestamp(t0))
	p.SetDurationNano(uint64(5 * time.Second))
	p.SetPeriod(1e7)
	s := p.Samples().AppendEmpty()
	s.SetStackIndex(1)
	s.AttributeIndices().FromRaw([]int32{attr(13, "python worker"), attr(14, 4242), attr(15, 4243), attr(16, "python3"), attr(17, 3), attr(18, "ml")})
	s.TimestampsUnixNano().FromRaw([]uint64{uint64(t0 + 1_500_000_000), uint64(t0 + 250_000_000)})
	s.Values().FromRaw([]int64{10_000_000, 20_000_000})
	b, err := pprofileotlp.NewExportRequestFromProfiles(pd).MarshalProto()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPdataAgrees: the bytes the Collector's pdata (pprofile v0.165.0)
// marshals read, in the generated messages fleetscope decodes with
// (go.opentelemetry.io/proto/slim/otlp profiles v0.4.1), as the same
// fields, with nothing unknown: the two agree on the protocol version,
// field numbers and all. (pdata sends resource attributes as references
// into the string table, key_strindex and string_value_strindex: the
// mapping test reads them.)
func TestPdataAgrees(t *testing.T) {
	var req collpb.ExportProfilesServiceRequest
	if err := proto.Unmarshal(pdataRequest(t), &req); err != nil {
		t.Fatal(err)
	}
	if err := otlp.CheckVersion(&req); err != nil {
		t.Fatal(err)
	}
	d := req.GetDictionary()
	p := req.GetResourceProfiles()[0].GetScopeProfiles()[0].GetProfiles()[0]
	s := p.GetSamples()[0]
	if len(d.GetStringTable()) < 19 || d.GetStringTable()[8] != "/usr/bin/python3" || len(d.GetStackTable()) != 2 || len(d.GetStackTable()[1].GetLocationIndices()) != 4 ||
		len(d.GetLocationTable()[2].GetLines()) != 2 || d.GetLocationTable()[3].GetAddress() != 0x2a3b || d.GetMappingTable()[2].GetFilenameStrindex() != 8 ||
		p.GetTimeUnixNano() != uint64(t0) || p.GetDurationNano() != uint64(5*time.Second) || p.GetPeriod() != 1e7 ||
		s.GetStackIndex() != 1 || len(s.GetAttributeIndices()) != 6 || s.GetTimestampsUnixNano()[1] != uint64(t0+250_000_000) || s.GetValues()[1] != 20_000_000 {
		t.Fatalf("pdata's bytes read otherwise here: %v", &req)
	}
	// And back: what the slim messages marshal, pdata reads.
	b, _ := proto.Marshal(&req)
	back := pprofileotlp.NewExportRequest()
	if err := back.UnmarshalProto(b); err != nil {
		t.Fatal(err)
	}
	if back.Profiles().ResourceProfiles().At(0).ScopeProfiles().At(0).Profiles().At(0).Samples().At(0).TimestampsUnixNano().At(1) != uint64(t0+250_000_000) {
		t.Fatal("pdata reads the slim messages' bytes otherwise")
	}
}

// TestConvertMapping: the request pdata built becomes perf script text
// that the perf parser reads as the mapping says: service.name the app,
// host.id the host (no host.name), thread.name the process frame,
// process.pid and thread.id, cpu.logical_number, the sample's other
// attribute a label; frames root first with the kernel frame marked
// kernel and the Python frame marked as perf marks JIT frames, the
// inlined function after its caller, the unsymbolized address
// BINARY+0xADDR; each timestamp a sample, in time order, weighted by its
// nanoseconds.
func TestConvertMapping(t *testing.T) {
	var req collpb.ExportProfilesServiceRequest
	if err := proto.Unmarshal(pdataRequest(t), &req); err != nil {
		t.Fatal(err)
	}
	res, err := otlp.Convert(&req)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Batches) != 1 || res.Rejected != 0 {
		t.Fatalf("%+v", res)
	}
	b := res.Batches[0]
	if b.App != "shop" || b.Host != "i-0abc" || fmt.Sprint(b.Labels) != "map[team:ml]" || b.Samples != 2 || b.MinNanos != t0+250_000_000 {
		t.Fatalf("batch %+v", b)
	}
	var samples []fleetscope.Sample
	prof, err := perf.Parse(bytes.NewReader(b.Text), func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
		samples = append(samples, batch...)
		return nil
	})
	if err != nil || len(prof.Warnings) > 0 {
		t.Fatalf("%v %v\n%s", err, prof.Warnings, b.Text)
	}
	if len(samples) != 2 {
		t.Fatalf("%d samples", len(samples))
	}
	var frames []string
	for _, f := range prof.Dict.StackFrames(samples[0].Stack) {
		fr := prof.Dict.FrameAt(f)
		name := fr.Name
		if fr.Kind&fleetscope.KindKernel != 0 {
			name += " (kernel)"
		}
		if fr.Kind&fleetscope.KindJIT != 0 {
			name += " (jit)"
		}
		frames = append(frames, name)
	}
	want := "python_worker;PyEval (jit);libc.so.6+0x2a3b;printf;memcpy_[i];do_sys_poll (kernel)"
	if got := strings.Join(frames, ";"); got != want {
		t.Errorf("frames %q, want %q\n%s", got, want, b.Text)
	}
	s0, s1 := samples[0], samples[1]
	if s0.PID != 4242 || s0.TID != 4243 || s0.CPU != 3 || s0.TimeNanos != t0+250_000_000 || s0.Period != 20_000_000 ||
		s1.TimeNanos != t0+1_500_000_000 || s1.Period != 10_000_000 || prof.Dict.Events()[s0.Event] != "cpu" {
		t.Errorf("samples %+v %+v", s0, s1)
	}
}

// baseRequest is a minimal valid request of n samples, sample i with the
// label k=v(i).
func baseRequest(n int, label func(i int) string) *collpb.ExportProfilesServiceRequest {
	d := &pb.ProfilesDictionary{StringTable: []string{"", "cpu", "main", "k"}, FunctionTable: []*pb.Function{{}, {NameStrindex: 2}},
		MappingTable: []*pb.Mapping{{}}, LocationTable: []*pb.Location{{}, {Lines: []*pb.Line{{FunctionIndex: 1}}}},
		StackTable: []*pb.Stack{{}, {LocationIndices: []int32{1}}}, AttributeTable: []*pb.KeyValueAndUnit{{}}}
	p := &pb.Profile{SampleType: &pb.ValueType{TypeStrindex: 1}, TimeUnixNano: uint64(t0), DurationNano: 1e9}
	for i := range n {
		s := &pb.Sample{StackIndex: 1, TimestampsUnixNano: []uint64{uint64(t0 + int64(i))}}
		if label != nil {
			d.AttributeTable = append(d.AttributeTable, &pb.KeyValueAndUnit{KeyStrindex: 3, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: label(i)}}})
			s.AttributeIndices = []int32{int32(len(d.AttributeTable) - 1)}
		}
		p.Samples = append(p.Samples, s)
	}
	return &collpb.ExportProfilesServiceRequest{Dictionary: d, ResourceProfiles: []*pb.ResourceProfiles{{
		Resource:      &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: "app"}}}}},
		ScopeProfiles: []*pb.ScopeProfiles{{Profiles: []*pb.Profile{p}}}}}}
}

// TestLabelCardinality: a label of unbounded cardinality (a value per
// sample) is refused, naming the bound; a bounded one makes a batch per
// value.
func TestLabelCardinality(t *testing.T) {
	res, err := otlp.Convert(baseRequest(1000, func(i int) string { return fmt.Sprint(i % 3) }))
	if err != nil || len(res.Batches) != 3 || res.Batches[0].Labels["k"] != "0" || res.Batches[0].Samples != 334 {
		t.Fatalf("3 label values: %v %+v", err, res)
	}
	_, err = otlp.Convert(baseRequest(2*otlp.MaxBatches, func(i int) string { return fmt.Sprint(i) }))
	if fleetscope.ErrorCode(err) != fleetscope.EINVALID || !strings.Contains(err.Error(), fmt.Sprintf("more than %d distinct (service, host, labels)", otlp.MaxBatches)) {
		t.Fatalf("a label value per sample: %v", err)
	}
}

// TestConvertNeverPanics: requests whose indexes are random (in range or
// far out of it, negative too) convert or are refused as EINVALID, never
// panic.
func TestConvertNeverPanics(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	idx := func() int32 {
		switch rng.IntN(4) {
		case 0:
			return -rng.Int32N(5) - 1
		case 1:
			return rng.Int32()
		}
		return rng.Int32N(6)
	}
	for range 3000 {
		req := baseRequest(3, func(i int) string { return "v" })
		d := req.Dictionary
		switch rng.IntN(7) {
		case 0:
			d.FunctionTable[1].NameStrindex = idx()
		case 1:
			d.LocationTable[1].Lines[0].FunctionIndex = idx()
		case 2:
			d.LocationTable[1].MappingIndex = idx()
		case 3:
			d.StackTable[1].LocationIndices = append(d.StackTable[1].LocationIndices, idx())
		case 4:
			req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].Samples[0].StackIndex = idx()
		case 5:
			req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].Samples[1].AttributeIndices[0] = idx()
		case 6:
			d.AttributeTable[1].KeyStrindex = idx()
		}
		if _, err := otlp.Convert(req); err != nil && fleetscope.ErrorCode(err) != fleetscope.EINVALID {
			t.Fatalf("%v, want EINVALID", err)
		}
	}
}

// TestTextBounded: a few bytes on the wire that would become gigabytes of
// text (a million timestamps of one deep stack) are refused as too large
// before the text is made.
func TestTextBounded(t *testing.T) {
	req := baseRequest(1, nil)
	d := req.Dictionary
	for range 200 {
		d.StackTable[1].LocationIndices = append(d.StackTable[1].LocationIndices, 1)
	}
	s := req.ResourceProfiles[0].ScopeProfiles[0].Profiles[0].Samples[0]
	for i := range 1_000_000 {
		s.TimestampsUnixNano = append(s.TimestampsUnixNano, uint64(t0+int64(i)))
	}
	_, err := otlp.Convert(req)
	if fleetscope.ErrorCode(err) != fleetscope.ETOOLARGE || !strings.Contains(err.Error(), "MiB of perf script text") {
		t.Fatalf("%v, want ETOOLARGE", err)
	}
}
