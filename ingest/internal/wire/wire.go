// Package wire checks, for content detection, whether leading bytes are a
// plausible protobuf message of a known shape: each field's number and wire
// type must be ones the schema allows. It decodes nothing into messages;
// the protobuf formats' parsers do that.
package wire

import (
	"io"

	"google.golang.org/protobuf/encoding/protowire"
)

// Check is called for each field. val is the field's payload for
// length-delimited fields, complete unless truncated is set (the input
// ended inside it); nil for other wire types. It returns whether the field
// fits the schema.
type Check func(num protowire.Number, typ protowire.Type, val []byte, truncated bool) bool

// Scan walks the fields of b, a message or its first bytes. It returns how
// many fields were seen (including one cut off by the end of b), whether
// b ended exactly at a field boundary, and false if a field does not fit
// check or the bytes are not protobuf at all.
func Scan(b []byte, check Check) (fields int, whole, ok bool) {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fields, false, protowire.ParseError(n) == io.ErrUnexpectedEOF
		}
		fields++
		b = b[n:]
		if typ == protowire.BytesType {
			v, m := protowire.ConsumeBytes(b)
			if m < 0 {
				if protowire.ParseError(m) != io.ErrUnexpectedEOF {
					return fields, false, false
				}
				// Cut off: hand over what there is of the payload.
				_, l := protowire.ConsumeVarint(b)
				var rest []byte
				if l > 0 {
					rest = b[l:]
				}
				return fields, false, check(num, typ, rest, true)
			}
			if !check(num, typ, v, false) {
				return fields, false, false
			}
			b = b[m:]
			continue
		}
		if !check(num, typ, nil, false) {
			return fields, false, false
		}
		m := protowire.ConsumeFieldValue(num, typ, b)
		if m < 0 {
			return fields, false, protowire.ParseError(m) == io.ErrUnexpectedEOF
		}
		b = b[m:]
	}
	return fields, true, true
}

// Packed reports whether val (a length-delimited field's payload) is a
// packed run of values of wire type typ; a truncated run may end mid-value.
func Packed(val []byte, typ protowire.Type, truncated bool) bool {
	for len(val) > 0 {
		var n int
		switch typ {
		case protowire.VarintType:
			_, n = protowire.ConsumeVarint(val)
		case protowire.Fixed64Type:
			_, n = protowire.ConsumeFixed64(val)
		case protowire.Fixed32Type:
			_, n = protowire.ConsumeFixed32(val)
		default:
			return false
		}
		if n < 0 {
			return truncated && protowire.ParseError(n) == io.ErrUnexpectedEOF
		}
		val = val[n:]
	}
	return true
}
