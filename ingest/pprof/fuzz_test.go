package pprof

import (
	"bytes"
	"os"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/fleetscope/fleetscope/ingest/internal/fstest"
)

// FuzzParse: no input makes Detect or Parse panic; Parse either fails with
// EINVALID or delivers consistent samples.
func FuzzParse(f *testing.F) {
	// The corpus profile cut to a few samples, uncompressed: small seeds
	// fuzz faster (a new input is minimised before it counts).
	if data, err := os.ReadFile(fstest.Shared("corpus", "pprof", "go-sha-sort.cpu.pprof")); err == nil {
		if p, err := profile.ParseData(data); err == nil {
			p.Sample = p.Sample[:min(len(p.Sample), 4)]
			var buf bytes.Buffer
			if p.Compact().WriteUncompressed(&buf) == nil {
				f.Add(buf.Bytes())
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) { fstest.FuzzOnce(t, Detect, Parse, data) })
}
