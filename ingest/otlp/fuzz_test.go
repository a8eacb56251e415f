package otlp_test

import (
	"bytes"
	"testing"

	collpb "go.opentelemetry.io/proto/slim/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/proto"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/otlp"
	"github.com/fleetscope/fleetscope/ingest/perf"
)

// FuzzConvert: no request makes the version check or the conversion
// panic; each is refused as EINVALID or ETOOLARGE, or becomes batches
// whose text the perf parser reads as exactly the samples counted.
func FuzzConvert(f *testing.F) {
	seed, _ := proto.Marshal(baseRequest(3, func(i int) string { return "v" }))
	f.Add(seed)
	f.Add(pdataRequest(&testing.T{}))
	f.Fuzz(func(t *testing.T, data []byte) {
		var req collpb.ExportProfilesServiceRequest
		if proto.Unmarshal(data, &req) != nil {
			return
		}
		if err := otlp.CheckVersion(&req); err != nil {
			return
		}
		res, err := otlp.Convert(&req)
		if err != nil {
			if c := fleetscope.ErrorCode(err); c != fleetscope.EINVALID && c != fleetscope.ETOOLARGE {
				t.Fatalf("%v: want EINVALID or ETOOLARGE", err)
			}
			return
		}
		for _, b := range res.Batches {
			n := 0
			_, err := perf.Parse(bytes.NewReader(b.Text), func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
				n += len(batch)
				return nil
			})
			if err != nil || n != b.Samples {
				t.Fatalf("batch of %d samples parses as %d: %v\n%s", b.Samples, n, err, b.Text)
			}
		}
	})
}
