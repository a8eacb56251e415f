package nflx

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	nflxv1 "github.com/fleetscope/fleetscope/api/gen/nflxprofile/v1"
	"github.com/fleetscope/fleetscope/ingest/internal/fstest"
)

// FuzzParse: no input makes Detect or Parse panic; Parse either fails with
// EINVALID or delivers consistent samples; and the hand decoder agrees with
// proto.Unmarshal (refDecode) on every input: both refuse it, or both
// decode the same message and Parse gives the same profile and samples.
func FuzzParse(f *testing.F) {
	// The small corpus file only: a new input is minimised before it
	// counts, slowly for large ones.
	fstest.Seeds(f, []string{"corpus", "nflxprofile", "nodejs1.nflxprofile"})
	small, _ := proto.Marshal(&nflxv1.Profile{
		StartTime: proto.Float64(1), EndTime: proto.Float64(2), Samples: []uint32{1, 2}, TimeDeltas: []float64{0.1, 0.2},
		Params: map[string]string{"has_parent": "true"},
		Nodes: map[uint32]*nflxv1.Profile_Node{
			1: {FunctionName: proto.String("app")},
			2: {FunctionName: proto.String("LazyCompile:*f a.js:1"), Parent: proto.Uint32(1)},
		},
	})
	f.Add(small)
	f.Add(slices.Concat(small, entry(uv(1, 2), value(str(1, "x"), tagged(10, protowire.BytesType, lenp(str(1, "f")))), uv(1, 3)), tagged(8, protowire.BytesType, lenp(str(1, "has_node_stack"), str(2, "true")))))
	f.Fuzz(func(t *testing.T, data []byte) {
		fstest.FuzzOnce(t, Detect, Parse, data)
		agree(t, data, 1<<16)
	})
}
