package otlp

import (
	"strconv"

	commonpb "go.opentelemetry.io/proto/slim/otlp/common/v1"

	"github.com/fleetscope/fleetscope"
)

// The attributes (OpenTelemetry semantic conventions) read for the app,
// host, process and thread; see docs/opentelemetry.md.
const (
	attrService  = "service.name"
	attrHostName = "host.name"
	attrHostID   = "host.id"
	attrPID      = "process.pid"
	attrTID      = "thread.id"
	attrThread   = "thread.name"
	attrExe      = "process.executable.name"
	attrCPU      = "cpu.logical_number"
)

// value returns an attribute's value as text: strings as they are,
// integers, booleans and doubles in decimal; arrays, key-value lists and
// bytes are not label material ("", false). A string given by its index
// into the string table is looked up (bounds-checked).
func (d dict) value(v *commonpb.AnyValue) (string, bool, error) {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue, true, nil
	case *commonpb.AnyValue_StringValueStrindex:
		s, err := d.str(x.StringValueStrindex)
		return s, err == nil, err
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10), true, nil
	case *commonpb.AnyValue_BoolValue:
		return strconv.FormatBool(x.BoolValue), true, nil
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64), true, nil
	}
	return "", false, nil
}

// resourceAttrs reads a resource's attributes into a map (the last of a
// key named twice wins, as OTLP leaves that undefined).
func (d dict) resourceAttrs(kvs []*commonpb.KeyValue) (map[string]string, error) {
	if len(kvs) > MaxAttributes {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "a resource with %d attributes: at most %d", len(kvs), MaxAttributes)
	}
	out := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		key := kv.GetKey()
		if key == "" && kv.GetKeyStrindex() != 0 {
			var err error
			if key, err = d.str(kv.GetKeyStrindex()); err != nil {
				return nil, err
			}
		}
		v, ok, err := d.value(kv.GetValue())
		if err != nil {
			return nil, err
		}
		if ok && key != "" {
			out[key] = v
		}
	}
	return out, nil
}

// attrs reads attribute_table entries by index (profile or sample
// attributes) into into, bounds-checked and bounded.
func (d dict) attrs(where string, idx []int32, into map[string]string) error {
	if len(idx) > MaxAttributes {
		return fleetscope.Errorf(fleetscope.EINVALID, "%s has %d attributes: at most %d (a label's cardinality is bounded: see docs/opentelemetry.md)", where, len(idx), MaxAttributes)
	}
	for _, i := range idx {
		a, err := d.attribute(i)
		if err != nil {
			return err
		}
		key, err := d.str(a.GetKeyStrindex())
		if err != nil {
			return err
		}
		v, ok, err := d.value(a.GetValue())
		if err != nil {
			return err
		}
		if ok && key != "" {
			into[key] = v
		}
	}
	return nil
}

// atoi32 reads a pid, tid or cpu: -1 when absent or not a number that fits.
func atoi32(s string) int32 {
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return -1
	}
	return int32(n)
}
