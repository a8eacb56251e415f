package flame_test

import (
	"compress/gzip"
	"io"
	"os"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/ingest/perf"
	"github.com/fleetscope/fleetscope/query/flame"
)

func loadBench(b *testing.B) (*fleetscope.Profile, []fleetscope.Sample) {
	f, err := os.Open(corpus.Path(b, "bench/perf-mixed-60s.txt.gz"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	zr, _ := gzip.NewReader(f)
	var samples []fleetscope.Sample
	p, err := perf.Parse(zr, func(_ *fleetscope.Profile, batch []fleetscope.Sample) error {
		samples = append(samples, batch...)
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return p, samples
}

// BenchmarkTreeFull builds the whole benchmark profile's flame graph tree.
func BenchmarkTreeFull(b *testing.B) {
	p, samples := loadBench(b)
	sel := fleetscope.Selection{Range: fleetscope.All}
	b.ResetTimer()
	for b.Loop() {
		var c flame.Counts
		c.Add(p.Dict, &sel, samples, false)
		flame.Tree(p.Dict, &c, flame.Annotate{})
	}
}

// BenchmarkFoldedFull renders the whole profile as folded text.
func BenchmarkFoldedFull(b *testing.B) {
	p, samples := loadBench(b)
	sel := fleetscope.Selection{Range: fleetscope.All}
	b.ResetTimer()
	for b.Loop() {
		var c flame.Counts
		c.Add(p.Dict, &sel, samples, false)
		flame.Folded(p.Dict, &c, flame.Annotate{})
	}
}

// benchLayout is the whole benchmark profile's layout and the counts of
// all its samples.
func benchLayout(b *testing.B) (*flame.Layout, *flame.Counts) {
	p, samples := loadBench(b)
	sel := fleetscope.Selection{Range: fleetscope.All}
	var c flame.Counts
	c.Add(p.Dict, &sel, samples, false)
	return flame.NewLayout(p.Dict, flame.Annotate{}), &c
}

// BenchmarkFlatCached builds the whole profile's flat tree from a cached
// layout, as the server does for every range.
func BenchmarkFlatCached(b *testing.B) {
	l, c := benchLayout(b)
	b.ResetTimer()
	for b.Loop() {
		l.Flat(c)
	}
}

// BenchmarkLayout builds the whole profile's layout, its text order
// included (once per profile and annotation choice, then cached).
func BenchmarkLayout(b *testing.B) {
	p, _ := loadBench(b)
	b.ResetTimer()
	for b.Loop() {
		flame.NewLayout(p.Dict, flame.Annotate{})
	}
}

// BenchmarkLines builds the whole profile's folded lines from a cached
// layout, as the server does for the CLI's folded answer.
func BenchmarkLines(b *testing.B) {
	l, c := benchLayout(b)
	b.ResetTimer()
	for b.Loop() {
		l.Lines(c)
	}
}

// BenchmarkLinesWriteFolded writes the whole profile's lines as text (what
// the CLI does with the server's lines).
func BenchmarkLinesWriteFolded(b *testing.B) {
	l, c := benchLayout(b)
	ls := l.Lines(c)
	b.ResetTimer()
	for b.Loop() {
		ls.WriteFolded(io.Discard)
	}
}
