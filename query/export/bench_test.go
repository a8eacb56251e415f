package export_test

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/fleetscope/fleetscope/query/export"
)

// synthetic returns n stacks of depth frames, made the same way every run:
// a process name, then at each level one of 40 functions, the first few far
// more often than the rest, so there are wide frames over a long tail of
// narrow ones, as in a real profile. Values are 1-100.
func synthetic(n, depth int) []export.Stack {
	r := rand.New(rand.NewPCG(1, 2))
	names := make([][]string, depth)
	for d := range names {
		for k := range 40 {
			names[d] = append(names[d], fmt.Sprintf("github.com/acme/service/layer%02d.(*Handler%02d).Serve", d, k))
		}
	}
	procs := []string{"service", "worker", "java", "swapper"}
	stacks := make([]export.Stack, n)
	for i := range stacks {
		frames := make([]string, depth)
		frames[0] = procs[r.IntN(len(procs))]
		for d := 1; d < depth; d++ {
			frames[d] = names[d][min(int(r.ExpFloat64()*1.5), 39)]
		}
		stacks[i] = export.Stack{Frames: frames, Value: 1 + r.Uint64N(100)}
	}
	return stacks
}

// syntheticDiff returns synthetic stacks as B, and A with values that
// moved by up to ±50%.
func syntheticDiff(n, depth int) []export.DiffStack {
	r := rand.New(rand.NewPCG(3, 4))
	stacks := synthetic(n, depth)
	out := make([]export.DiffStack, len(stacks))
	for i, s := range stacks {
		out[i] = export.DiffStack{Frames: s.Frames, A: s.Value * (50 + r.Uint64N(101)) / 100, B: s.Value}
	}
	return out
}

// countingWriter counts the bytes written to it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

const (
	benchStacks = 20_000
	benchDepth  = 30
)

// bench runs write over the synthetic stacks and reports stacks/s and the
// output's size.
func bench(b *testing.B, n int, write func(io.Writer) error) {
	var w countingWriter
	runs := 0
	for b.Loop() {
		if err := write(&w); err != nil {
			b.Fatal(err)
		}
		runs++
	}
	b.ReportMetric(float64(n)*float64(runs)/b.Elapsed().Seconds(), "stacks/s")
	b.ReportMetric(float64(w.n)/float64(runs)/1e6, "MB/op")
}

func BenchmarkSVG(b *testing.B) {
	stacks := synthetic(benchStacks, benchDepth)
	bench(b, len(stacks), func(w io.Writer) error { return export.WriteSVG(w, stacks, export.SVGOptions{}) })
}

func BenchmarkDiffSVG(b *testing.B) {
	stacks := syntheticDiff(benchStacks, benchDepth)
	bench(b, len(stacks), func(w io.Writer) error {
		return export.WriteDiffSVG(w, stacks, export.SVGOptions{Normalize: true})
	})
}

func BenchmarkPprof(b *testing.B) {
	stacks := synthetic(benchStacks, benchDepth)
	bench(b, len(stacks), func(w io.Writer) error { return export.WritePprof(w, stacks, export.PprofOptions{}) })
}

func BenchmarkSpeedscope(b *testing.B) {
	stacks := synthetic(benchStacks, benchDepth)
	bench(b, len(stacks), func(w io.Writer) error { return export.WriteSpeedscope(w, stacks, export.SpeedscopeOptions{}) })
}

func BenchmarkDiffFolded(b *testing.B) {
	stacks := syntheticDiff(benchStacks, benchDepth)
	bench(b, len(stacks), func(w io.Writer) error { return export.WriteDiffFolded(w, stacks, true) })
}

func BenchmarkDiffTable(b *testing.B) {
	stacks := syntheticDiff(benchStacks, benchDepth)
	runs := 0
	for b.Loop() {
		export.Top(export.Functions(stacks), export.ByTotal, 20)
		runs++
	}
	b.ReportMetric(float64(len(stacks))*float64(runs)/b.Elapsed().Seconds(), "stacks/s")
}

// TestSynthetic checks the benchmarks' input: the promised size, and the
// graph it makes is not trivial (many frames, some of them drawn).
func TestSynthetic(t *testing.T) {
	stacks := synthetic(benchStacks, benchDepth)
	if len(stacks) != benchStacks || len(stacks[0].Frames) != benchDepth {
		t.Fatalf("%d stacks of depth %d", len(stacks), len(stacks[0].Frames))
	}
	var w countingWriter
	if err := export.WriteSVG(&w, stacks, export.SVGOptions{}); err != nil {
		t.Fatal(err)
	}
	if w.n < 1e6 {
		t.Errorf("the synthetic SVG is only %d bytes", w.n)
	}
}
