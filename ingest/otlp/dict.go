package otlp

import (
	"unicode/utf8"

	pb "go.opentelemetry.io/proto/slim/otlp/profiles/v1development"

	"github.com/fleetscope/fleetscope"
)

// dict is a request's dictionary with bounds-checked lookups: an index out
// of range is EINVALID naming the table and the index.
type dict struct{ d *pb.ProfilesDictionary }

func outOfRange(table string, i int32, n int) error {
	return fleetscope.Errorf(fleetscope.EINVALID, "dictionary.%s index %d is out of range (the table has %d entries)", table, i, n)
}

// str returns string_table[i], checked to be text without control
// characters (frame, process and label names go into perf script text and
// the index).
func (d dict) str(i int32) (string, error) {
	t := d.d.GetStringTable()
	if i < 0 || int(i) >= len(t) {
		return "", outOfRange("string_table", i, len(t))
	}
	s := t[i]
	if !utf8.ValidString(s) {
		return "", fleetscope.Errorf(fleetscope.EINVALID, "dictionary.string_table[%d] is not UTF-8 text", i)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return "", fleetscope.Errorf(fleetscope.EINVALID, "dictionary.string_table[%d] %.80q holds a control character (%U)", i, s, r)
		}
	}
	return s, nil
}

func (d dict) stack(i int32) (*pb.Stack, error) {
	t := d.d.GetStackTable()
	if i < 0 || int(i) >= len(t) {
		return nil, outOfRange("stack_table", i, len(t))
	}
	return t[i], nil
}

func (d dict) location(i int32) (*pb.Location, error) {
	t := d.d.GetLocationTable()
	if i < 0 || int(i) >= len(t) {
		return nil, outOfRange("location_table", i, len(t))
	}
	return t[i], nil
}

func (d dict) function(i int32) (*pb.Function, error) {
	t := d.d.GetFunctionTable()
	if i < 0 || int(i) >= len(t) {
		return nil, outOfRange("function_table", i, len(t))
	}
	return t[i], nil
}

func (d dict) mapping(i int32) (*pb.Mapping, error) {
	t := d.d.GetMappingTable()
	if i < 0 || int(i) >= len(t) {
		return nil, outOfRange("mapping_table", i, len(t))
	}
	return t[i], nil
}

func (d dict) attribute(i int32) (*pb.KeyValueAndUnit, error) {
	t := d.d.GetAttributeTable()
	if i < 0 || int(i) >= len(t) {
		return nil, outOfRange("attribute_table", i, len(t))
	}
	return t[i], nil
}

// check refuses a dictionary whose string table does not begin with the
// empty string the protocol requires: a sender of another version of the
// protocol, or not a dictionary at all. (The other tables' entry 0, the
// zero value, is not required: an index into them is checked when used.)
func (d dict) check() error {
	if d.d == nil {
		return fleetscope.Errorf(fleetscope.EINVALID, "the request has profiles but no dictionary")
	}
	if t := d.d.GetStringTable(); len(t) == 0 || t[0] != "" {
		return fleetscope.Errorf(fleetscope.EINVALID, `dictionary.string_table[0] must be "" and present`)
	}
	return nil
}
