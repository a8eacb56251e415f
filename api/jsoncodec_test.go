package api

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// TestJSONCodec: the hand-written flame graph answers read back as the
// same messages with protojson, and as the same JSON values protojson
// writes, names with quotes, backslashes, control characters and
// non-ASCII text included; other messages are protojson's.
func TestJSONCodec(t *testing.T) {
	names := []string{"all", `a"b\c`, "tab\there\x01", "ünïcødé 火焰", "<&>", ""}
	tree := &fsv1.FlameTree{Names: names, Name: []uint32{0, 1, 2, 3, 4, 5}, Value: []uint64{1 << 60, 5, 3, 2, 1, 0}, Depth: []uint32{0, 1, 2, 2, 1, 2}}
	for _, m := range []proto.Message{
		&fsv1.GetFlameGraphResponse{Event: "cpu-clock", Total: 1 << 60, Tree: tree},
		&fsv1.GetFlameGraphResponse{Tree: tree},                    // nothing but the tree
		&fsv1.GetFlameGraphResponse{Event: "e", Folded: "a;b 1\n"}, // no tree
		&fsv1.GetFleetFlameGraphResponse{FlameGraph: &fsv1.GetFlameGraphResponse{Total: 7, Tree: tree},
			Accounting: &fsv1.Accounting{Event: "cpu", Profiles: 3, LeftOut: map[string]int32{"why": 2}}},
		&fsv1.GetFleetFlameGraphResponse{FlameGraph: &fsv1.GetFlameGraphResponse{Tree: tree}},
		&fsv1.GetDiffFlameGraphResponse{TotalA: 3, TotalB: 4, Tree: &fsv1.DiffTree{Names: names, Name: tree.Name, ValueA: tree.Value, ValueB: tree.Value, Depth: tree.Depth},
			ChangesBySelf: []*fsv1.FunctionChange{{Name: "f", SelfA: 1}}},
		&fsv1.GetHeatmapResponse{Event: "x", Total: 3},
		&fsv1.GetHeatmapResponse{Event: "cpu", StartSecond: -5, Rows: 3, MaxCount: 1 << 40, Total: 9, SecondsPerColumn: 1,
			Columns: []*fsv1.Column{{Counts: []int64{0, 1, 1 << 40}}, {}, {Counts: []int64{-3, math.MaxInt64, math.MinInt64}}}},
		&fsv1.GetHeatmapResponse{Columns: []*fsv1.Column{{}}}, // nothing but an empty column
		&fsv1.GetFleetHeatmapResponse{StartSecond: 1_700_000_000, SecondsPerColumn: 2, Rows: 2, Columns: []*fsv1.Column{{Counts: []int64{4, 5}}},
			Accounting: &fsv1.Accounting{Event: "cpu", Profiles: 2}},
		&fsv1.GetFleetHeatmapResponse{Accounting: &fsv1.Accounting{Event: "cpu"}}, // no columns
	} {
		got, err := jsonCodec{}.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		back := m.ProtoReflect().New().Interface()
		if err := protojson.Unmarshal(got, back); err != nil {
			t.Fatalf("%T: protojson cannot read %s: %v", m, got, err)
		}
		if !proto.Equal(back, m) {
			t.Fatalf("%T: read back differs:\n%v\nwant\n%v", m, back, m)
		}
		want, _ := protojson.Marshal(m)
		var a, b any
		if err := json.Unmarshal(got, &a); err != nil {
			t.Fatalf("%T: not JSON: %v: %s", m, err, got)
		}
		json.Unmarshal(want, &b)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%T: JSON values differ from protojson's:\n%s\n%s", m, got, want)
		}
	}
}

// TestJSONNumbers: the arrays of numbers are strconv's digits, at every
// length (powers of ten and their neighbours, the largest values, random).
func TestJSONNumbers(t *testing.T) {
	var u64 []uint64
	for p := uint64(1); ; p *= 10 {
		u64 = append(u64, p-1, p, p+1)
		if p > math.MaxUint64/10 {
			break
		}
	}
	u64 = append(u64, 0, math.MaxUint32, math.MaxUint32+1, math.MaxUint64-1, math.MaxUint64)
	rng := rand.New(rand.NewPCG(5, 6))
	for range 1000 {
		u64 = append(u64, rng.Uint64()>>rng.IntN(64))
	}
	var u32 []uint32
	for _, x := range u64 {
		u32 = append(u32, uint32(x))
	}
	want64, want32 := []byte("xs:["), []byte("xs:[")
	for i := range u64 {
		if i > 0 {
			want64, want32 = append(want64, ','), append(want32, ',')
		}
		want64 = append(strconv.AppendUint(append(want64, '"'), u64[i], 10), '"')
		want32 = strconv.AppendUint(want32, uint64(u32[i]), 10)
	}
	want64, want32 = append(want64, ']'), append(want32, ']')
	if got := appendUint64s([]byte("xs:"), u64); !bytes.Equal(got, want64) {
		t.Errorf("appendUint64s:\n%s\nwant\n%s", got, want64)
	}
	if got := appendUint32s([]byte("xs:"), u32); !bytes.Equal(got, want32) {
		t.Errorf("appendUint32s:\n%s\nwant\n%s", got, want32)
	}
	if got := string(appendUint32s(nil, nil)) + string(appendUint64s(nil, nil)); got != "[][]" {
		t.Errorf("empty arrays: %s", got)
	}
}

// BenchmarkJSONTree writes a whole-profile-sized tree's arrays.
func BenchmarkJSONTree(b *testing.B) {
	rng := rand.New(rand.NewPCG(7, 8))
	name, depth, value := make([]uint32, 141_500), make([]uint32, 141_500), make([]uint64, 141_500)
	for i := range name {
		name[i], depth[i], value[i] = uint32(rng.IntN(15000)), uint32(rng.IntN(60)), uint64(rng.IntN(1000)+1)
	}
	var buf []byte
	for b.Loop() {
		buf = appendUint32s(fresh(buf), name)
		buf = appendUint64s(buf, value)
		buf = appendUint32s(buf, depth)
	}
	b.SetBytes(int64(len(buf)))
}

// fresh is buf emptied, or a new buffer when JSON_FRESH is set (as a
// server's answer may start from a small pooled one).
func fresh(buf []byte) []byte {
	if os.Getenv("JSON_FRESH") != "" {
		return make([]byte, 0, 512)
	}
	return buf[:0]
}

// FuzzJSONCodec: any answer the hand-written paths write (flame graphs,
// fleet and diff flame graphs, heatmaps, from any bytes protobuf reads)
// is JSON that protojson reads back as the same message.
func FuzzJSONCodec(f *testing.F) {
	for _, m := range protoCases() {
		if b, err := proto.Marshal(m); err == nil && len(b) < 1<<16 {
			f.Add(b)
		}
	}
	f.Add([]byte("\x12\x03cpu\x2a\x06\x0a\x04\x00\x01\x02\x7f\x2a\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range []func() proto.Message{
			func() proto.Message { return new(fsv1.GetFlameGraphResponse) },
			func() proto.Message { return new(fsv1.GetFleetFlameGraphResponse) },
			func() proto.Message { return new(fsv1.GetDiffFlameGraphResponse) },
			func() proto.Message { return new(fsv1.GetHeatmapResponse) },
			func() proto.Message { return new(fsv1.GetFleetHeatmapResponse) },
		} {
			msg := m()
			if (proto.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(b, msg) != nil {
				continue
			}
			got, err := jsonCodec{}.Marshal(msg)
			if _, perr := protojson.Marshal(msg); (err == nil) != (perr == nil) {
				t.Fatalf("%T: error %v, protojson's %v", msg, err, perr)
			}
			if err != nil {
				continue
			}
			back := m()
			if err := protojson.Unmarshal(got, back); err != nil {
				t.Fatalf("%T: protojson cannot read %q: %v", msg, got, err)
			}
			if !proto.Equal(back, msg) {
				t.Fatalf("%T: read back\n%v\nwant\n%v", msg, back, msg)
			}
		}
	})
}
