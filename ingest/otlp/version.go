package otlp

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/fleetscope/fleetscope"
)

// Version is the OpenTelemetry profiles protocol fleetscope accepts: the
// v1development messages as opentelemetry-proto v1.10.0 defines them.
const Version = "opentelemetry-proto v1.10.0 (profiles v1development)"

// CheckVersion refuses a message holding fields this version does not
// define: a sender of another version of the protocol, whose data would
// otherwise be read wrong or in part. It names the first such field.
func CheckVersion(m protoreflect.Message) error {
	if where := unknown(m, string(m.Descriptor().Name())); where != "" {
		return fleetscope.Errorf(fleetscope.EINVALID, "%s holds fields unknown to %s, the version fleetscope accepts: the sender speaks another version of the profiles protocol (see docs/opentelemetry.md)", where, Version)
	}
	return nil
}

// unknown returns where the first unknown field is, or "".
func unknown(m protoreflect.Message, where string) string {
	if len(m.GetUnknown()) > 0 {
		return where
	}
	found := ""
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd.Kind() != protoreflect.MessageKind && fd.Kind() != protoreflect.GroupKind {
			return true
		}
		switch {
		case fd.IsList():
			l := v.List()
			for i := range l.Len() {
				if found = unknown(l.Get(i).Message(), fmt.Sprintf("%s.%s[%d]", where, fd.Name(), i)); found != "" {
					return false
				}
			}
		case fd.IsMap():
			return true // none in these messages
		default:
			found = unknown(v.Message(), where+"."+string(fd.Name()))
		}
		return found == ""
	})
	return found
}
