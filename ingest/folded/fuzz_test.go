package folded

import (
	"testing"

	"github.com/fleetscope/fleetscope/ingest/internal/fstest"
)

// FuzzParse: no input makes Detect or Parse panic; Parse either fails with
// EINVALID or delivers consistent samples, timed if the first line is.
func FuzzParse(f *testing.F) {
	fstest.Seeds(f, []string{"corpus", "perf", "collapsed", "perf-java-stacks-01.all.folded"}, []string{"corpus", "perf", "collapsed", "flamescope-perf.test01.default.folded"})
	f.Add([]byte("# c\n1.5 app;main;a 2\r\n\n2.000000001 app;b 1"))
	f.Add([]byte("a;b c;d 3\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		fstest.FuzzOnce(t, Detect, Parse, data)
		fstest.FuzzOnce(t, Detect, Options{Weighted: true}.Parse, data)
	})
}
