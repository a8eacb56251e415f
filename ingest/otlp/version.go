package otlp

import (
	"fmt"

	collpb "go.opentelemetry.io/proto/slim/otlp/collector/profiles/v1development"
	pb "go.opentelemetry.io/proto/slim/otlp/profiles/v1development"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/fleetscope/fleetscope"
)

// Version is the OpenTelemetry profiles protocol fleetscope accepts: the
// v1development messages as opentelemetry-proto v1.10.0 defines them.
const Version = "opentelemetry-proto v1.10.0 (profiles v1development)"

// CheckVersion refuses a request holding fields this version does not
// define: a sender of another version of the protocol, whose data would
// otherwise be read wrong or in part. It names the first such field. The
// profiles messages are walked by type (a request holds millions of
// them); the few others (resources, scopes) by reflection.
func CheckVersion(req *collpb.ExportProfilesServiceRequest) error {
	if where := unknownIn(req); where != "" {
		return fleetscope.Errorf(fleetscope.EINVALID, "%s holds fields unknown to %s, the version fleetscope accepts: the sender speaks another version of the profiles protocol (see docs/opentelemetry.md)", where, Version)
	}
	return nil
}

func has(m proto.Message) bool { return len(m.ProtoReflect().GetUnknown()) > 0 }

func unknownIn(req *collpb.ExportProfilesServiceRequest) string {
	if has(req) {
		return "the request"
	}
	if d := req.GetDictionary(); d != nil {
		if has(d) {
			return "dictionary"
		}
		if w := each("dictionary.mapping_table", d.GetMappingTable()); w != "" {
			return w
		}
		for i, l := range d.GetLocationTable() {
			if has(l) {
				return fmt.Sprintf("dictionary.location_table[%d]", i)
			}
			if w := each(fmt.Sprintf("dictionary.location_table[%d].lines", i), l.GetLines()); w != "" {
				return w
			}
		}
		if w := each("dictionary.function_table", d.GetFunctionTable()); w != "" {
			return w
		}
		if w := each("dictionary.link_table", d.GetLinkTable()); w != "" {
			return w
		}
		if w := each("dictionary.stack_table", d.GetStackTable()); w != "" {
			return w
		}
		for i, a := range d.GetAttributeTable() {
			if has(a) {
				return fmt.Sprintf("dictionary.attribute_table[%d]", i)
			}
			if v := a.GetValue(); v != nil {
				if w := unknown(v.ProtoReflect(), fmt.Sprintf("dictionary.attribute_table[%d].value", i)); w != "" {
					return w
				}
			}
		}
	}
	for ri, rp := range req.GetResourceProfiles() {
		where := fmt.Sprintf("resource_profiles[%d]", ri)
		if has(rp) {
			return where
		}
		if r := rp.GetResource(); r != nil {
			if w := unknown(r.ProtoReflect(), where+".resource"); w != "" {
				return w
			}
		}
		for si, sp := range rp.GetScopeProfiles() {
			swhere := fmt.Sprintf("%s.scope_profiles[%d]", where, si)
			if has(sp) {
				return swhere
			}
			if sc := sp.GetScope(); sc != nil {
				if w := unknown(sc.ProtoReflect(), swhere+".scope"); w != "" {
					return w
				}
			}
			for pi, p := range sp.GetProfiles() {
				pwhere := fmt.Sprintf("%s.profiles[%d]", swhere, pi)
				if has(p) {
					return pwhere
				}
				for _, vt := range []*pb.ValueType{p.GetSampleType(), p.GetPeriodType()} {
					if vt != nil && has(vt) {
						return pwhere + " (a value type)"
					}
				}
				if w := each(pwhere+".samples", p.GetSamples()); w != "" {
					return w
				}
			}
		}
	}
	return ""
}

// each returns where the first of ms with unknown fields is, or "".
func each[M proto.Message](where string, ms []M) string {
	for i, m := range ms {
		if has(m) {
			return fmt.Sprintf("%s[%d]", where, i)
		}
	}
	return ""
}

// unknown returns where the first unknown field in m is, or "".
func unknown(m protoreflect.Message, where string) string {
	if len(m.GetUnknown()) > 0 {
		return where
	}
	found := ""
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind || fd.IsMap() {
			return true
		}
		if fd.IsList() {
			l := v.List()
			for i := range l.Len() {
				if found = unknown(l.Get(i).Message(), fmt.Sprintf("%s.%s[%d]", where, fd.Name(), i)); found != "" {
					return false
				}
			}
			return true
		}
		found = unknown(v.Message(), where+"."+string(fd.Name()))
		return found == ""
	})
	return found
}
