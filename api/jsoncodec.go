package api

import (
	"bytes"
	"slices"
	"strconv"
	"unicode/utf8"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// JSONCodec is Connect's JSON codec (protojson) with a fast path for the
// flame graph answers and the heatmaps: their trees are flat arrays of up
// to millions of numbers, their cells thousands, which protojson writes
// through reflection a value at a time (most of a whole-profile answer's
// time). The tree or the cells are written by hand in the same proto3 JSON
// form (64-bit integers as strings, lowerCamelCase names) and the rest of
// the message by protojson; decoders cannot tell.
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
	case *fsv1.GetHeatmapResponse:
		if len(m.Columns) > 0 {
			return spliceColumns(dst, m, &m.Columns)
		}
	case *fsv1.GetFleetHeatmapResponse:
		if len(m.Columns) > 0 {
			return spliceColumns(dst, m, &m.Columns)
		}
	case *fsv1.GetDiffFlameGraphResponse:
		dst = roomForFolded(dst, m.GetFolded())
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

// roomForFolded makes room in dst for an answer's folded lines and their
// escaped newlines at once: protojson would grow it by doubling, copying
// megabytes over and over.
func roomForFolded(dst []byte, folded string) []byte {
	if n := len(folded); n > 0 {
		return slices.Grow(dst, n+n/16+1024)
	}
	return dst
}

// appendFlame writes a flame graph answer, its tree by hand.
func appendFlame(dst []byte, m *fsv1.GetFlameGraphResponse) ([]byte, error) {
	dst = roomForFolded(dst, m.GetFolded())
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

// spliceColumns writes m with its heatmap's columns (*cols) by hand.
func spliceColumns(dst []byte, m proto.Message, cols *[]*fsv1.Column) ([]byte, error) {
	c := *cols
	*cols = nil
	defer func() { *cols = c }()
	return splice(dst, m, "columns", func(b []byte) []byte { return appendColumns(b, c) })
}

// appendColumns writes a heatmap's columns: {"counts": [...]} each, {}
// when empty, as protojson does.
func appendColumns(b []byte, cols []*fsv1.Column) []byte {
	b = append(b, '[')
	for i, c := range cols {
		if i > 0 {
			b = append(b, ',')
		}
		if len(c.GetCounts()) == 0 {
			b = append(b, "{}"...)
			continue
		}
		b = append(b, `{"counts":[`...)
		for j, x := range c.GetCounts() {
			if j > 0 {
				b = append(b, ',')
			}
			b = append(strconv.AppendInt(append(b, '"'), x, 10), '"')
		}
		b = append(b, "]}"...)
	}
	return append(b, ']')
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
// backslashes and control characters need escaping), the runs between
// them copied whole.
func appendString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		if c < 0x20 {
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		} else {
			b = append(b, '\\', c)
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// appendUint32s and appendUint64s write arrays of up to millions of
// numbers (a whole profile's tree), so they write into room made once,
// two digits at a time, rather than through an append per number
// (strconv.AppendUint: a third of a whole flame graph's encoding).
func appendUint32s(b []byte, v []uint32) []byte {
	b, n := room(b, len(v), decimalLen(uint64(largest(v))))
	for i, x := range v {
		if i > 0 {
			b[n] = ','
			n++
		}
		n = putDecimal(b, n, uint64(x))
	}
	b[n] = ']'
	return b[:n+1]
}

// appendUint64s writes uint64s as proto3 JSON does: quoted.
func appendUint64s(b []byte, v []uint64) []byte {
	b, n := room(b, len(v), 2+decimalLen(largest(v)))
	for i, x := range v {
		if i > 0 {
			b[n] = ','
			n++
		}
		b[n] = '"'
		n = putDecimal(b, n+1, x)
		b[n] = '"'
		n++
	}
	b[n] = ']'
	return b[:n+1]
}

// room grows b for an array of count numbers of at most width bytes each
// (the widest's: room is cleared when made), writes its '[' and returns b
// at full length and where to write next.
func room(b []byte, count, width int) ([]byte, int) {
	n := len(b)
	b = slices.Grow(b, 2+count*(width+1))
	b = b[:cap(b)]
	b[n] = '['
	return b, n + 1
}

func largest[T uint32 | uint64](v []T) T {
	if len(v) == 0 {
		return 0
	}
	return slices.Max(v)
}

const digitPairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// putDecimal writes x in decimal at b[n:] (room made) and returns its end.
func putDecimal(b []byte, n int, x uint64) int {
	end := n + decimalLen(x)
	i := end
	for x >= 100 {
		q := x / 100
		r := (x - q*100) * 2
		i -= 2
		b[i], b[i+1] = digitPairs[r], digitPairs[r+1]
		x = q
	}
	if x >= 10 {
		b[i-2], b[i-1] = digitPairs[2*x], digitPairs[2*x+1]
	} else {
		b[i-1] = byte('0' + x)
	}
	return end
}

// decimalLen is how many decimal digits x has (dividing measured faster
// than an estimate from its bit length).
func decimalLen(x uint64) int {
	n := 1
	for x >= 10 {
		x /= 10
		n++
	}
	return n
}
