package api

import (
	"encoding/json"
	"reflect"
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
