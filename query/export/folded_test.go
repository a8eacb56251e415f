package export_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/export"
)

// st builds a Stack from folded text "a;b;c" and a value.
func st(folded string, v uint64) export.Stack {
	return export.Stack{Frames: strings.Split(folded, ";"), Value: v}
}

// dst builds a DiffStack from folded text and its two values.
func dst(folded string, a, b uint64) export.DiffStack {
	return export.DiffStack{Frames: strings.Split(folded, ";"), A: a, B: b}
}

func TestWriteFolded(t *testing.T) {
	stacks := []export.Stack{
		st("java;main;work", 3),
		st("java;main", 2),
		st("java;main;work", 4), // the same stack again: summed
		st("java;main;idle", 0), // zero: left out
		st("java;main!", 1),     // '!' sorts before ';' in the text
		st("bash;read line", 5), // spaces are fine
		{Frames: []string{"java", "main", "gc"}, Value: 1},
	}
	var out bytes.Buffer
	if err := export.WriteFolded(&out, stacks); err != nil {
		t.Fatal(err)
	}
	want := "bash;read line 5\n" +
		"java;main 2\n" +
		"java;main! 1\n" +
		"java;main;gc 1\n" +
		"java;main;work 7\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

func TestWriteFoldedEmpty(t *testing.T) {
	var out bytes.Buffer
	if err := export.WriteFolded(&out, nil); err != nil {
		t.Fatal(err)
	}
	if out.Len() != 0 {
		t.Errorf("no stacks wrote %q", out.String())
	}
}

func TestWriteFoldedUnrepresentable(t *testing.T) {
	for name, s := range map[string]export.Stack{
		"semicolon": {Frames: []string{"java", "Ljava/lang/String;"}, Value: 1},
		"newline":   {Frames: []string{"java", "a\nb"}, Value: 1},
		"no frames": {Frames: nil, Value: 1},
	} {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			err := export.WriteFolded(&out, []export.Stack{st("ok", 1), s})
			if code := fleetscope.ErrorCode(err); code != fleetscope.EINVALID {
				t.Fatalf("error %v has code %s, want %s", err, code, fleetscope.EINVALID)
			}
			if out.Len() != 0 {
				t.Errorf("wrote %q before failing", out.String())
			}
			err = export.WriteDiffFolded(&out, []export.DiffStack{{Frames: s.Frames, A: 1, B: 1}}, false)
			if code := fleetscope.ErrorCode(err); code != fleetscope.EINVALID {
				t.Fatalf("difffolded: error %v has code %s, want %s", err, code, fleetscope.EINVALID)
			}
		})
	}
}

func TestWriteDiffFolded(t *testing.T) {
	stacks := []export.DiffStack{
		dst("app;main;b", 0, 4),    // only in B
		dst("app;main;a", 6, 0),    // only in A
		dst("app;main", 2, 2),      // unchanged
		dst("app;main;a", 1, 0),    // the same stack again: summed
		dst("app;main;gone", 0, 0), // in neither: left out
	}
	var out bytes.Buffer
	if err := export.WriteDiffFolded(&out, stacks, false); err != nil {
		t.Fatal(err)
	}
	want := "app;main 2 2\n" +
		"app;main;a 7 0\n" +
		"app;main;b 0 4\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
}

// TestWriteDiffFoldedNormalize follows difffolded.pl -n: when the totals
// differ, each stack's A becomes int(A * totalB / totalA), rounded down per
// stack; a stack present only in A keeps its line even when it scales to 0.
func TestWriteDiffFoldedNormalize(t *testing.T) {
	stacks := []export.DiffStack{
		dst("p;x", 1, 0),   // 1*50/100 = 0.5 -> 0, still printed
		dst("p;y", 33, 20), // 33*50/100 = 16.5 -> 16
		dst("p;z", 66, 30), // 66*50/100 = 33
	}
	var out bytes.Buffer
	if err := export.WriteDiffFolded(&out, stacks, true); err != nil {
		t.Fatal(err)
	}
	want := "p;x 0 0\n" +
		"p;y 16 20\n" +
		"p;z 33 30\n"
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}

	// Equal totals: nothing changes.
	out.Reset()
	if err := export.WriteDiffFolded(&out, []export.DiffStack{dst("p;a", 3, 1), dst("p;b", 1, 3)}, true); err != nil {
		t.Fatal(err)
	}
	if want := "p;a 3 1\np;b 1 3\n"; out.String() != want {
		t.Errorf("equal totals: got %q, want %q", out.String(), want)
	}

	// No A at all: nothing to scale (difffolded.pl would divide by zero).
	out.Reset()
	if err := export.WriteDiffFolded(&out, []export.DiffStack{dst("p;a", 0, 5)}, true); err != nil {
		t.Fatal(err)
	}
	if want := "p;a 0 5\n"; out.String() != want {
		t.Errorf("no A: got %q, want %q", out.String(), want)
	}
}

func TestNormalize(t *testing.T) {
	// Duplicates merge before scaling, as difffolded.pl sums a file's
	// lines per stack before it scales them.
	got := export.Normalize([]export.DiffStack{
		dst("p;b", 1, 0), dst("p;a", 1, 7), dst("p;b", 1, 0),
	})
	// totalA 3, totalB 7: a = 1*7/3 = 2.33 -> 2; b = 2*7/3 = 4.67 -> 4.
	want := []export.DiffStack{dst("p;a", 2, 7), dst("p;b", 4, 0)}
	if !equalDiff(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}

	// Exact on counts whose product overflows 64 bits.
	const big = 1 << 62
	got = export.Normalize([]export.DiffStack{dst("p;a", 3, big), dst("p;b", 1, big-1)})
	// totalA 4, totalB 2^63-1: a = floor(3*(2^63-1)/4), b = floor((2^63-1)/4).
	want = []export.DiffStack{dst("p;a", 6917529027641081855, big), dst("p;b", 2305843009213693951, big-1)}
	if !equalDiff(got, want) {
		t.Errorf("big: got %v, want %v", got, want)
	}
}

func equalDiff(x, y []export.DiffStack) bool {
	if len(x) != len(y) {
		return false
	}
	for i := range x {
		if strings.Join(x[i].Frames, ";") != strings.Join(y[i].Frames, ";") || x[i].A != y[i].A || x[i].B != y[i].B {
			return false
		}
	}
	return true
}

// TestOverflow: values that add up past what a writer's numbers hold are
// refused, not wrapped.
func TestOverflow(t *testing.T) {
	const max = ^uint64(0)
	stacks := []export.Stack{st("a;b", max), st("a;c", 1)}
	diff := []export.DiffStack{dst("a;b", max, 1), dst("a;c", 1, 1)}
	diffInt64 := []export.DiffStack{dst("a;b", 1, 1<<63), dst("a;c", 1, 1)}
	for name, err := range map[string]error{
		"folded":     export.WriteFolded(&bytes.Buffer{}, stacks),
		"difffolded": export.WriteDiffFolded(&bytes.Buffer{}, diff, true),
		"svg":        export.WriteSVG(&bytes.Buffer{}, stacks, export.SVGOptions{}),
		"diff svg":   export.WriteDiffSVG(&bytes.Buffer{}, diff, export.SVGOptions{}),
		"diff svg B": export.WriteDiffSVG(&bytes.Buffer{}, diffInt64, export.SVGOptions{}),
		"pprof":      export.WritePprof(&bytes.Buffer{}, stacks, export.PprofOptions{}),
		"speedscope": export.WriteSpeedscope(&bytes.Buffer{}, stacks, export.SpeedscopeOptions{}),
	} {
		if code := fleetscope.ErrorCode(err); code != fleetscope.EINVALID {
			t.Errorf("%s: error %v has code %s, want %s", name, err, code, fleetscope.EINVALID)
		}
	}
}

// growBuffer records what it was told to grow by.
type growBuffer struct {
	bytes.Buffer
	grown int
}

func (b *growBuffer) Grow(n int) { b.grown += n; b.Buffer.Grow(n) }

// TestWriteDiffFoldedSized: a buffer is grown once by exactly what is
// written, merged or not, sorted or not.
func TestWriteDiffFoldedSized(t *testing.T) {
	for _, stacks := range [][]export.DiffStack{
		{{Frames: []string{"a", "b"}, A: 1, B: 2}, {Frames: []string{"a"}, A: 1234567, B: 0}, {Frames: []string{"a", "b"}, A: 10, B: 0}, {Frames: []string{"a!x"}, B: 9}},
		{{Frames: []string{"a"}, A: 1}, {Frames: []string{"a", "b"}, B: 9223372036854775808}, {Frames: []string{"c"}, A: 100, B: 99}},
		nil,
	} {
		var b growBuffer
		if err := export.WriteDiffFolded(&b, stacks, false); err != nil {
			t.Fatal(err)
		}
		if b.grown != b.Len() {
			t.Fatalf("grown by %d, wrote %d bytes:\n%s", b.grown, b.Len(), b.String())
		}
	}
}
