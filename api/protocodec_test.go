package api

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// bigTree is a whole-profile-sized tree (the benchmark profile's full
// flame graph has 141,497 nodes and ~15k names).
func bigTree(seed uint64) *fsv1.FlameTree {
	rng := rand.New(rand.NewPCG(seed, 8))
	const n = 141_500
	t := &fsv1.FlameTree{Name: make([]uint32, n), Value: make([]uint64, n), Depth: make([]uint32, n)}
	t.Names = bigNames(rng, 15_000, "x")
	for i := range n {
		t.Name[i], t.Depth[i], t.Value[i] = uint32(rng.IntN(15_000)), uint32(rng.IntN(60)), uint64(rng.IntN(100_000)+1)
	}
	return t
}

// bigNames is n frame names of up to 60 pad bytes and a short tail.
func bigNames(rng *rand.Rand, n int, pad string) []string {
	names := make([]string, n)
	for i := range names {
		names[i] = strings.Repeat(pad, rng.IntN(60)) + "fn" + string(rune('a'+i%26))
	}
	return names
}

// bigLines is a whole-profile-sized set of folded lines (the benchmark
// profile's: 19,086 lines adding 141k frames, 4,909 names).
func bigLines(seed uint64) *fsv1.FoldedLines {
	rng := rand.New(rand.NewPCG(seed, 9))
	const n = 19_100
	ls := &fsv1.FoldedLines{Shared: make([]uint32, n), Added: make([]uint32, n), Value: make([]uint64, n)}
	ls.Names = bigNames(rng, 4_900, "y")
	for i := range n {
		ls.Shared[i], ls.Added[i], ls.Value[i] = uint32(rng.IntN(60)), uint32(1+rng.IntN(14)), uint64(rng.IntN(1000)+1)
		for range ls.Added[i] {
			ls.Frame = append(ls.Frame, uint32(rng.IntN(4_900)))
		}
	}
	return ls
}

// protoCases are the flame graph answers (and one other message) both
// tests write and read.
func protoCases() []proto.Message {
	names := []string{"all", `a"b\c`, "tab\there\x01", "ünïcødé 火焰", "", strings.Repeat("long", 100)}
	tree := &fsv1.FlameTree{Names: names, Name: []uint32{0, 1, 2, 3, 4, 5}, Value: []uint64{1 << 60, math.MaxUint64, 3, 2, 1, 0}, Depth: []uint32{0, 1, 2, 2, 1, math.MaxUint32}}
	lines := &fsv1.FoldedLines{Names: names, Shared: []uint32{0, 1, math.MaxUint32}, Added: []uint32{2, 0, 1}, Frame: []uint32{5, 4, 3}, Value: []uint64{math.MaxUint64, 0, 1 << 40}}
	diff := &fsv1.DiffTree{Names: names, Name: tree.Name, ValueA: tree.Value, ValueB: []uint64{9, 8, 7, 6, 5, 4}, Depth: tree.Depth}
	return []proto.Message{
		&fsv1.GetFlameGraphResponse{Event: "cpu-clock", Total: 1 << 60, Tree: tree},
		&fsv1.GetFlameGraphResponse{Tree: tree},                                    // nothing but the tree
		&fsv1.GetFlameGraphResponse{Tree: &fsv1.FlameTree{}},                       // an empty tree
		&fsv1.GetFlameGraphResponse{Tree: &fsv1.FlameTree{Names: []string{"all"}}}, // names only
		&fsv1.GetFlameGraphResponse{Event: "e", Folded: "a;b 1\n"},                 // no tree
		&fsv1.GetFlameGraphResponse{Event: "e", Total: 3, Tree: tree, Export: []byte("<svg/>")},
		&fsv1.GetFlameGraphResponse{Event: "big", Total: 1e9, Tree: bigTree(1)},
		&fsv1.GetSharedFlameGraphResponse{FlameGraph: &fsv1.GetFlameGraphResponse{Total: 7, Tree: tree}},
		&fsv1.GetSharedFlameGraphResponse{},
		&fsv1.GetFleetFlameGraphResponse{FlameGraph: &fsv1.GetFlameGraphResponse{Total: 7, Tree: tree},
			Accounting: &fsv1.Accounting{Event: "cpu", Profiles: 3, LeftOut: map[string]int32{"why": 2}}},
		&fsv1.GetFleetFlameGraphResponse{FlameGraph: &fsv1.GetFlameGraphResponse{Tree: bigTree(2)}},
		&fsv1.GetDiffFlameGraphResponse{TotalA: 3, TotalB: 4, Normalized: true, Tree: diff, Export: []byte("x"),
			ChangesBySelf: []*fsv1.FunctionChange{{Name: "f", SelfA: 1}}, ChangesByTotal: []*fsv1.FunctionChange{{Name: "g", TotalB: 2}}},
		&fsv1.GetHeatmapResponse{Event: "x", Total: 3},
		&fsv1.GetFlameGraphResponse{Event: "e", Total: 7, Lines: lines},
		&fsv1.GetFlameGraphResponse{Lines: &fsv1.FoldedLines{}},                    // empty lines
		&fsv1.GetFlameGraphResponse{Tree: tree, Export: []byte("x"), Lines: lines}, // all three
		&fsv1.GetFlameGraphResponse{Event: "big", Lines: bigLines(3)},
		&fsv1.GetFleetFlameGraphResponse{FlameGraph: &fsv1.GetFlameGraphResponse{Total: 7, Lines: lines}},
	}
}

// TestProtoCodec: the flame graph answers are written byte for byte as
// proto.Marshal writes them, read back as the same messages, and read by
// the codec as proto.Unmarshal reads them.
func TestProtoCodec(t *testing.T) {
	c := protoCodec{}
	for _, m := range protoCases() {
		want, err := proto.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		got, err := c.Marshal(m)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%T: %d bytes differ from proto.Marshal's %d", m, len(got), len(want))
		}
		if got, _ := c.MarshalAppend([]byte("prefix"), m); !bytes.Equal(got, append([]byte("prefix"), want...)) {
			t.Fatalf("%T: MarshalAppend differs from proto.Marshal's", m)
		}
		back := m.ProtoReflect().New().Interface()
		if err := c.Unmarshal(want, back); err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if !proto.Equal(back, m) {
			t.Fatalf("%T: read back differs", m)
		}
	}
	// Invalid UTF-8 in a name: proto.Marshal's error, not bytes.
	bad := &fsv1.GetFlameGraphResponse{Tree: &fsv1.FlameTree{Names: []string{"all", "\xff"}, Name: []uint32{0, 1}, Value: []uint64{1, 1}, Depth: []uint32{0, 1}}}
	if _, err := c.Marshal(bad); err == nil {
		t.Fatal("a name of invalid UTF-8 was written")
	}
}

// TestProtoCodecWritesWhatProtobufReads: messages protobuf reads from
// encodings the server does not write (numbers not packed, a tree in two
// parts, unknown fields) are written byte for byte as proto.Marshal writes
// them; broken ones (invalid UTF-8, truncated or overlong varints, a packed
// run ending inside a varint) are refused by the codec's reader as by
// proto.Unmarshal.
func TestProtoCodecWritesWhatProtobufReads(t *testing.T) {
	tag := func(b []byte, num protowire.Number, typ protowire.Type) []byte {
		return protowire.AppendTag(b, num, typ)
	}
	str := func(b []byte, num protowire.Number, s string) []byte {
		return protowire.AppendString(tag(b, num, protowire.BytesType), s)
	}
	varint := func(b []byte, num protowire.Number, x uint64) []byte {
		return protowire.AppendVarint(tag(b, num, protowire.VarintType), x)
	}
	packed := func(b []byte, num protowire.Number, raw ...byte) []byte {
		return protowire.AppendBytes(tag(b, num, protowire.BytesType), raw)
	}
	wrap := func(num protowire.Number, inner []byte) []byte {
		return protowire.AppendBytes(tag(nil, num, protowire.BytesType), inner)
	}

	treeA := packed(varint(varint(str(str(nil, 1, "all"), 1, "f"), 2, 0), 2, 1), 3, 5, 2) // name unpacked, value packed
	treeB := varint(varint(str(nil, 1, "g"), 4, 0), 4, 1<<40)                             // a uint32 over 32 bits
	trees := map[string][]byte{
		"unpacked":        treeA,
		"over 32 bits":    treeB,
		"unknown field":   varint(treeA, 9, 7),
		"empty":           nil,
		"invalid UTF-8":   str(nil, 1, "\xc3"),
		"truncated":       packed(nil, 2, 0x80),
		"overlong varint": packed(nil, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01),
		"names as varint": varint(nil, 1, 3),
		"cut in a field":  str(nil, 1, "all")[:3],
		"fifth column":    packed(treeA, 5, 1, 2), // lines' values, unknown to a tree
		"sixth column":    packed(nil, 6, 1),
	}
	for what, tree := range trees {
		for _, msg := range []struct {
			name string
			b    []byte
			m    func() proto.Message
		}{
			{"flame", wrap(4, tree), func() proto.Message { return new(fsv1.GetFlameGraphResponse) }},
			{"flame, two trees", append(wrap(4, tree), wrap(4, treeB)...), func() proto.Message { return new(fsv1.GetFlameGraphResponse) }},
			{"flame with other fields", str(varint(append(str(nil, 1, "cpu"), wrap(4, tree)...), 2, 9), 3, "f 1\n"), func() proto.Message { return new(fsv1.GetFlameGraphResponse) }},
			{"fleet", append(wrap(1, wrap(4, tree)), wrap(2, str(nil, 1, "cpu"))...), func() proto.Message { return new(fsv1.GetFleetFlameGraphResponse) }},
			{"shared", wrap(1, wrap(4, tree)), func() proto.Message { return new(fsv1.GetSharedFlameGraphResponse) }},
			{"lines", wrap(6, tree), func() proto.Message { return new(fsv1.GetFlameGraphResponse) }},
			{"lines, twice, and a tree", append(append(wrap(6, tree), wrap(4, tree)...), wrap(6, treeA)...), func() proto.Message { return new(fsv1.GetFlameGraphResponse) }},
			{"fleet lines", wrap(1, wrap(6, tree)), func() proto.Message { return new(fsv1.GetFleetFlameGraphResponse) }},
		} {
			want, got := msg.m(), msg.m()
			werr := proto.Unmarshal(msg.b, want)
			gerr := protoCodec{}.Unmarshal(msg.b, got)
			if (werr == nil) != (gerr == nil) {
				t.Errorf("%s, %s: error %v, proto.Unmarshal's %v", what, msg.name, gerr, werr)
				continue
			}
			if werr != nil {
				continue
			}
			if !proto.Equal(got, want) {
				t.Errorf("%s, %s: read\n%v\nproto.Unmarshal read\n%v", what, msg.name, got, want)
			}
			wb, _ := proto.Marshal(want)
			if gb, err := (protoCodec{}).Marshal(want); err != nil || !bytes.Equal(gb, wb) {
				t.Errorf("%s, %s: written differently from proto.Marshal (%v)", what, msg.name, err)
			}
		}
	}
}

// BenchmarkProtoFlame writes a whole-profile-sized answer, with this codec
// and with protobuf-go's (BenchmarkCodecs: the benchmark profile's answers).
func BenchmarkProtoFlame(b *testing.B) {
	m := &fsv1.GetFlameGraphResponse{Event: "cpu-clock", Total: 1e9, Tree: bigTree(1)}
	b.Run("write", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = protoCodec{}.MarshalAppend(buf[:0], m)
		}
	})
	b.Run("write/protobuf-go", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf, _ = proto.MarshalOptions{}.MarshalAppend(buf[:0], m)
		}
	})
}

// FuzzProtoCodecWrite: whatever flame graph answer protobuf reads from any
// bytes, the codec reads it as proto.Unmarshal does and writes it byte for
// byte as proto.Marshal does.
func FuzzProtoCodecWrite(f *testing.F) {
	for _, m := range protoCases() {
		if b, err := proto.Marshal(m); err == nil && len(b) < 1<<16 {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, m := range []func() proto.Message{
			func() proto.Message { return new(fsv1.GetFlameGraphResponse) },
			func() proto.Message { return new(fsv1.GetSharedFlameGraphResponse) },
			func() proto.Message { return new(fsv1.GetFleetFlameGraphResponse) },
			func() proto.Message { return new(fsv1.GetDiffFlameGraphResponse) },
		} {
			want, got := m(), m()
			werr := proto.Unmarshal(b, want)
			gerr := protoCodec{}.Unmarshal(b, got)
			if (werr == nil) != (gerr == nil) {
				t.Fatalf("%T: error %v, proto.Unmarshal's %v", got, gerr, werr)
			}
			if werr != nil {
				continue
			}
			if !proto.Equal(got, want) {
				t.Fatalf("%T: read\n%v\nproto.Unmarshal read\n%v", got, got, want)
			}
			out, err := protoCodec{}.Marshal(got)
			if err != nil {
				t.Fatalf("%T: writing what was read: %v", got, err)
			}
			if want, _ := proto.Marshal(got); !bytes.Equal(out, want) {
				t.Fatalf("%T: written differently from proto.Marshal:\n%v", got, got)
			}
		}
	})
}
