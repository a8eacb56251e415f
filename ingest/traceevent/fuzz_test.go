package traceevent

import (
	"testing"

	"github.com/fleetscope/fleetscope/ingest/internal/fstest"
)

// FuzzParse: no input makes Detect or Parse panic; Parse either fails with
// EINVALID or delivers consistent samples.
func FuzzParse(f *testing.F) {
	f.Add([]byte(`{"traceEvents":[{"ph":"M","name":"thread_name","pid":7,"tid":9,"args":{"name":"W"}},` +
		`{"ph":"P","name":"Profile","id":"0x2","pid":7,"tid":9,"ts":5,"args":{"data":{"startTime":1000}}},` +
		`{"ph":"P","name":"ProfileChunk","id":"0x2","pid":7,"tid":11,"ts":6,"args":{"data":{"cpuProfile":{"nodes":[{"id":1,"callFrame":{"functionName":"(root)"}},{"id":2,"parent":1,"callFrame":{"functionName":"main"}}],"samples":[2,1]},"timeDeltas":[10,5]}}}]}`))
	f.Add([]byte(`[{"ph":"I","name":"CpuProfile","pid":3,"tid":4,"args":{"data":{"cpuProfile":{"nodes":[{"id":1,"callFrame":{},"children":[2]},{"id":2,"callFrame":{}}],"samples":[2],"startTime":50,"timeDeltas":[1]}}}},`))
	f.Add([]byte(`[{"ph":"P","name":"ProfileChunk","pid":"a","id2":{"local":"1"},"args":{"data":{"cpuProfile":{"nodes":[{"id":1,"callFrame":{}}],"samples":[1]},"timeDeltas":[1]}}}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		fstest.FuzzOnce(t, Detect, Parse, data)
		fstest.FuzzOnce(t, Detect, Options{PID: "7", TID: "9"}.Parse, data)
	})
}
