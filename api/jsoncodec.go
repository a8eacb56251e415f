package api

import (
	"bytes"
	"strconv"
	"unicode/utf8"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// JSONCodec is Connect's JSON codec (protojson) with a fast path for the
// flame graph answers: their trees are flat arrays of up to millions of
// numbers, which protojson writes through reflection a value at a time
// (most of a whole-profile answer's time). The tree is written by hand in
// the same proto3 JSON form (uint64 as strings, lowerCamelCase names) and
// the rest of the message by protojson; decoders cannot tell.
func JSONCodec() connect.Option { return connect.WithCodec(jsonCodec{}) }

type jsonCodec struct{}

func (jsonCodec) Name() string { return "json" }

func (jsonCodec) Unmarshal(data []byte, m any) error {
	return protojson.UnmarshalOptions{DiscardUnknown: true}.Unmarshal(data, m.(proto.Message))
}

func (c jsonCodec) Marshal(m any) ([]byte, error) { return c.MarshalAppend(nil, m) }

func (jsonCodec) MarshalAppend(dst []byte, m any) ([]byte, error) {
	switch m := m.(type) {
	case *fsv1.GetFlameGraphResponse:
		return appendFlame(dst, m)
	case *fsv1.GetFleetFlameGraphResponse:
		if m.GetFlameGraph().GetTree() == nil {
			break
		}
		dst = append(dst, `{"flameGraph":`...)
		dst, err := appendFlame(dst, m.GetFlameGraph())
		if err != nil {
			return nil, err
		}
		if m.Accounting != nil {
			dst = append(dst, `,"accounting":`...)
			if dst, err = (protojson.MarshalOptions{}).MarshalAppend(dst, m.Accounting); err != nil {
				return nil, err
			}
		}
		return append(dst, '}'), nil
	case *fsv1.GetDiffFlameGraphResponse:
		if t := m.GetTree(); t != nil && validNames(t.GetNames()) {
			m.Tree = nil
			defer func() { m.Tree = t }()
			return splice(dst, m, "tree", func(b []byte) []byte {
				b = appendNames(append(b, `{"names":`...), t.GetNames())
				b = appendUint32s(append(b, `,"name":`...), t.GetName())
				b = appendUint64s(append(b, `,"valueA":`...), t.GetValueA())
				b = appendUint64s(append(b, `,"valueB":`...), t.GetValueB())
				return append(appendUint32s(append(b, `,"depth":`...), t.GetDepth()), '}')
			})
		}
	}
	return (protojson.MarshalOptions{}).MarshalAppend(dst, m.(proto.Message))
}

// appendFlame writes a flame graph answer, its tree by hand.
func appendFlame(dst []byte, m *fsv1.GetFlameGraphResponse) ([]byte, error) {
	t := m.GetTree()
	if t == nil || !validNames(t.GetNames()) { // protojson refuses bad UTF-8: let it say so
		return (protojson.MarshalOptions{}).MarshalAppend(dst, m)
	}
	m.Tree = nil
	defer func() { m.Tree = t }()
	return splice(dst, m, "tree", func(b []byte) []byte {
		b = appendNames(append(b, `{"names":`...), t.GetNames())
		b = appendUint32s(append(b, `,"name":`...), t.GetName())
		b = appendUint64s(append(b, `,"value":`...), t.GetValue())
		return append(appendUint32s(append(b, `,"depth":`...), t.GetDepth()), '}')
	})
}

// splice writes m with protojson and adds field name, written by value.
func splice(dst []byte, m proto.Message, name string, value func([]byte) []byte) ([]byte, error) {
	start := len(dst)
	dst, err := (protojson.MarshalOptions{}).MarshalAppend(dst, m)
	if err != nil {
		return nil, err
	}
	obj := bytes.TrimRight(dst[start:], " \n") // protojson may add spaces
	dst = dst[:start+len(obj)-1]               // without the closing brace
	if len(bytes.TrimSpace(obj[1:len(obj)-1])) > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, '"')
	dst = append(dst, name...)
	dst = append(dst, `":`...)
	return append(value(dst), '}'), nil
}

func validNames(names []string) bool {
	for _, s := range names {
		if !utf8.ValidString(s) {
			return false
		}
	}
	return true
}

func appendNames(b []byte, names []string) []byte {
	b = append(b, '[')
	for i, s := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendString writes s as a JSON string (valid UTF-8: only quotes,
// backslashes and control characters need escaping).
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

func appendUint32s(b []byte, v []uint32) []byte {
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(x), 10)
	}
	return append(b, ']')
}

// appendUint64s writes uint64s as proto3 JSON does: quoted.
func appendUint64s(b []byte, v []uint64) []byte {
	b = append(b, '[')
	for i, x := range v {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = strconv.AppendUint(b, x, 10)
		b = append(b, '"')
	}
	return append(b, ']')
}
