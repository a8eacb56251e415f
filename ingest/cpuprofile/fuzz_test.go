package cpuprofile

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/fleetscope/fleetscope/ingest/internal/fstest"
)

// FuzzParse: no input makes Detect or Parse panic; Parse either fails with
// EINVALID or delivers consistent samples.
func FuzzParse(f *testing.F) {
	// The corpus profile cut to its first samples: small seeds fuzz faster
	// (a new input is minimised before it counts).
	if data, err := os.ReadFile(fstest.Shared("corpus", "cpuprofile", "node20-phases.cpuprofile")); err == nil {
		var m map[string]any
		if json.Unmarshal(data, &m) == nil {
			for _, k := range []string{"samples", "timeDeltas"} {
				if a, ok := m[k].([]any); ok && len(a) > 40 {
					m[k] = a[:40]
				}
			}
			if seed, err := json.Marshal(m); err == nil {
				f.Add(seed)
			}
		}
	}
	f.Add([]byte(`{"nodes":[{"id":1,"callFrame":{"functionName":"(root)"},"children":[2]},{"id":2,"callFrame":{"functionName":"(idle)"}}],"samples":[2,1],"timeDeltas":[5,-1.5],"startTime":10}`))
	f.Add([]byte(`{"samples":[2],"nodes":[{"id":2,"parent":1,"callFrame":{}},{"id":1,"callFrame":{}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) { fstest.FuzzOnce(t, Detect, Parse, data) })
}
