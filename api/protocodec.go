package api

import (
	"encoding/binary"
	"fmt"
	"slices"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// ProtoCodec is Connect's protobuf binary codec with a fast path for
// writing the flame graph answers, for servers and clients. protobuf-go
// writes a packed field of numbers in three passes through function tables
// (its size, then its size again for the length prefix, then its bytes):
// most of a whole profile's answer (141k nodes). Here each of a tree's
// columns is written in one pass: 2-3x faster than proto.Marshal into
// Connect's pooled buffer, 1.4x into a fresh one (BenchmarkCodecs,
// docs/architecture.md "Wire codecs"). The bytes written are
// proto.Marshal's (fields in number order). Reading is proto.Unmarshal's.
func ProtoCodec() connect.Option { return connect.WithCodec(protoCodec{}) }

type protoCodec struct{}

func (protoCodec) Name() string { return "proto" }

func (c protoCodec) Marshal(m any) ([]byte, error) { return c.MarshalAppend(nil, m) }

func (protoCodec) MarshalAppend(dst []byte, m any) ([]byte, error) {
	switch m := m.(type) {
	case *fsv1.GetFlameGraphResponse:
		if fastFlame(m) {
			return appendFlameProto(dst, m)
		}
	case *fsv1.GetSharedFlameGraphResponse:
		if fastFlame(m.GetFlameGraph()) {
			return appendWrapped(dst, m, &m.FlameGraph)
		}
	case *fsv1.GetFleetFlameGraphResponse:
		if fastFlame(m.GetFlameGraph()) {
			return appendWrapped(dst, m, &m.FlameGraph)
		}
	case *fsv1.GetDiffFlameGraphResponse:
		if t := m.GetTree(); t != nil && known(m) && plain(t, t.GetNames()) {
			return appendDiffProto(dst, m)
		}
	}
	pm, err := protoMessage(m)
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{}.MarshalAppend(dst, pm)
}

func protoMessage(m any) (proto.Message, error) {
	pm, ok := m.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("proto codec: %T is not a protobuf message", m)
	}
	return pm, nil
}

// MarshalStable and IsBinary make it a stable codec (Connect's GET
// requests), as Connect's own.
func (protoCodec) MarshalStable(m any) ([]byte, error) {
	pm, err := protoMessage(m)
	if err != nil {
		return nil, err
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(pm)
}

func (protoCodec) IsBinary() bool { return true }

// Unmarshal is proto.Unmarshal: reading by hand measured 0.94-1.3x its
// time (BenchmarkCodecs), 1-3 ms of the CLI's read of a whole profile's
// answer, not worth a second reader.
func (protoCodec) Unmarshal(b []byte, m any) error {
	pm, err := protoMessage(m)
	if err != nil {
		return err
	}
	if err := proto.Unmarshal(b, pm); err != nil {
		return fmt.Errorf("unmarshal into %T: %w", m, err)
	}
	return nil
}

// fastFlame reports whether a flame graph answer takes the fast path: it
// has a tree or lines, their names are valid UTF-8 (proto.Marshal refuses
// others: let it say so), and neither they nor the answer hold fields
// unknown here (a message read from elsewhere: proto.Marshal keeps them,
// the answer's after its last field).
func fastFlame(m *fsv1.GetFlameGraphResponse) bool {
	t, ls := m.GetTree(), m.GetLines()
	return (t != nil || ls != nil) && known(m) && (t == nil || plain(t, t.GetNames())) && (ls == nil || plain(ls, ls.GetNames()))
}

// known reports whether m (not nil) holds no fields unknown here.
func known(m proto.Message) bool { return len(m.ProtoReflect().GetUnknown()) == 0 }

// plain reports whether a tree or lines message (m, with its names) can be
// written by hand: its names are valid UTF-8 and it holds no unknown
// fields.
func plain(m proto.Message, names []string) bool {
	return validNames(names) && known(m)
}

// Field numbers of the messages written by hand (query.proto,
// compare.proto).
const (
	flameTree   protowire.Number = 4 // GetFlameGraphResponse.tree
	flameExport protowire.Number = 5 // GetFlameGraphResponse.export
	flameLines  protowire.Number = 6 // GetFlameGraphResponse.lines
	wrappedBody protowire.Number = 1 // flame_graph of the shared and fleet answers
	diffTree    protowire.Number = 5 // GetDiffFlameGraphResponse.tree
	diffExport  protowire.Number = 6 // GetDiffFlameGraphResponse.export
)

// appendFlameProto writes a flame graph answer as proto.Marshal does:
// fields 1-3 by proto.Marshal, then the tree by hand, the export, and the
// lines by hand.
func appendFlameProto(dst []byte, m *fsv1.GetFlameGraphResponse) ([]byte, error) {
	t, export, ls := m.Tree, m.Export, m.Lines
	m.Tree, m.Export, m.Lines = nil, nil, nil
	defer func() { m.Tree, m.Export, m.Lines = t, export, ls }()
	dst, err := proto.MarshalOptions{}.MarshalAppend(dst, m)
	if err != nil {
		return nil, err
	}
	if t != nil {
		dst = appendTree(dst, flameTree, t.Names, func(b []byte) []byte {
			return appendPacked(appendPacked(appendPacked(b, 2, t.Name), 3, t.Value), 4, t.Depth)
		})
	}
	dst = appendBytesField(dst, flameExport, export)
	if ls != nil {
		dst = appendTree(dst, flameLines, ls.Names, func(b []byte) []byte {
			return appendPacked(appendPacked(appendPacked(appendPacked(b, 2, ls.Shared), 3, ls.Added), 4, ls.Frame), 5, ls.Value)
		})
	}
	return dst, nil
}

// appendWrapped writes m, whose field 1 is the flame graph *g, as
// proto.Marshal would: *g by hand, then the rest (m without it).
func appendWrapped(dst []byte, m proto.Message, g **fsv1.GetFlameGraphResponse) ([]byte, error) {
	flame := *g
	*g = nil
	defer func() { *g = flame }()
	at := openField(&dst)
	dst, err := appendFlameProto(dst, flame)
	if err != nil {
		return nil, err
	}
	dst = closeField(dst, at, wrappedBody)
	return proto.MarshalOptions{}.MarshalAppend(dst, m)
}

// appendDiffProto writes a diff answer as proto.Marshal does: fields 1-4,
// the tree, the export, then fields 7 and 8.
func appendDiffProto(dst []byte, m *fsv1.GetDiffFlameGraphResponse) ([]byte, error) {
	t, export, bySelf, byTotal := m.Tree, m.Export, m.ChangesBySelf, m.ChangesByTotal
	m.Tree, m.Export, m.ChangesBySelf, m.ChangesByTotal = nil, nil, nil, nil
	defer func() { m.Tree, m.Export, m.ChangesBySelf, m.ChangesByTotal = t, export, bySelf, byTotal }()
	dst, err := proto.MarshalOptions{}.MarshalAppend(dst, m)
	if err != nil {
		return nil, err
	}
	dst = appendTree(dst, diffTree, t.Names, func(b []byte) []byte {
		return appendPacked(appendPacked(appendPacked(appendPacked(b, 2, t.Name), 3, t.ValueA), 4, t.ValueB), 5, t.Depth)
	})
	dst = appendBytesField(dst, diffExport, export)
	return proto.MarshalOptions{}.MarshalAppend(dst, &fsv1.GetDiffFlameGraphResponse{ChangesBySelf: bySelf, ChangesByTotal: byTotal})
}

// A length-delimited field is written in one pass: openField leaves room
// for its tag and the longest length, the contents are appended, and
// closeField writes the tag and the actual length and moves the contents
// up against them (a copy: cheaper than sizing the contents first, a pass
// over every number).
const fieldHead = 1 + binary.MaxVarintLen64 // field numbers below 16: a one-byte tag

func openField(b *[]byte) int {
	at := len(*b)
	*b = append(*b, make([]byte, fieldHead)...)
	return at
}

func closeField(b []byte, at int, field protowire.Number) []byte {
	body := b[at+fieldHead:]
	var head [fieldHead]byte
	h := protowire.AppendVarint(protowire.AppendTag(head[:0], field, protowire.BytesType), uint64(len(body)))
	n := copy(b[at:], h)
	n += copy(b[at+n:], body)
	return b[:at+n]
}

// appendPacked writes v as packed field f (nothing when empty).
func appendPacked[T uint32 | uint64](b []byte, f protowire.Number, v []T) []byte {
	if len(v) == 0 {
		return b
	}
	at := openField(&b)
	n := len(b)
	b = slices.Grow(b, len(v)*protowire.SizeVarint(uint64(^T(0))))
	b = b[:cap(b)]
	for _, x := range v {
		for x >= 0x80 {
			b[n] = byte(x) | 0x80
			x >>= 7
			n++
		}
		b[n] = byte(x)
		n++
	}
	return closeField(b[:n], at, f)
}

// appendTree writes a tree (or lines) message as field f: its names
// (field 1, one field each), then the packed columns cols appends.
func appendTree(b []byte, f protowire.Number, names []string, cols func([]byte) []byte) []byte {
	at := openField(&b)
	for _, s := range names {
		b = protowire.AppendTag(b, 1, protowire.BytesType)
		b = protowire.AppendString(b, s)
	}
	return closeField(cols(b), at, f)
}

func appendBytesField(b []byte, field protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}
