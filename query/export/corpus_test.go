package export_test

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope/query/export"
)

// corpusFolded lists the shared corpus's folded files (stackcollapse-perf.pl
// output with default flags), or skips the test when the corpus is absent
// (fails when FLEETSCOPE_TEST_REQUIRE=1).
func corpusFolded(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../../shared/corpus/perf/collapsed/*.default.folded")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		requireOrSkip(t, "no ../../../shared/corpus/perf/collapsed/*.default.folded: the shared corpus is not beside the repository")
	}
	return files
}

// readFolded parses folded text: "frame;frame;... count" lines, the count
// after the last space.
func readFolded(t *testing.T, data []byte) []export.Stack {
	t.Helper()
	var stacks []export.Stack
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			t.Fatalf("line %d %q has no count", n, line)
		}
		v, err := strconv.ParseUint(line[i+1:], 10, 64)
		if err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		stacks = append(stacks, export.Stack{Frames: strings.Split(line[:i], ";"), Value: v})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return stacks
}

// TestCorpus runs every writer on real folded profiles: folded output is
// byte-identical to stackcollapse's, the SVG holds every path with its
// exact count, pprof and speedscope read back to the same stacks and
// totals, and a profile compared with itself is unchanged everywhere.
func TestCorpus(t *testing.T) {
	schema := compileSpeedscopeSchema(t)
	for _, path := range corpusFolded(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			stacks := readFolded(t, data)
			total := export.Total(stacks)

			var out bytes.Buffer
			if err := export.WriteFolded(&out, stacks); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), data) {
				t.Errorf("folded output differs from the stackcollapse file")
			}

			out.Reset()
			if err := export.WriteSVG(&out, stacks, export.SVGOptions{MinWidth: 1e-9}); err != nil {
				t.Fatal(err)
			}
			doc := parseSVG(t, out.Bytes(), false)
			got := map[string]uint64{}
			for _, f := range doc.frames[1:] {
				got[strings.Join(f.path, "\x00")] += f.val // "f" and "f_[k]" show alike
			}
			if !mapsEqual(got, pathTotals(stacks)) {
				t.Errorf("SVG frames differ from the stacks' paths")
			}
			if doc.frames[0].val != total {
				t.Errorf("SVG root %d, want %d", doc.frames[0].val, total)
			}
			checkGeometry(t, doc, total, 1200)

			out.Reset()
			if err := export.WritePprof(&out, stacks, export.PprofOptions{}); err != nil {
				t.Fatal(err)
			}
			checkPprof(t, out.Bytes(), stacks)

			out.Reset()
			if err := export.WriteSpeedscope(&out, stacks, export.SpeedscopeOptions{Name: filepath.Base(path)}); err != nil {
				t.Fatal(err)
			}
			checkSpeedscope(t, out.Bytes(), stacks)
			if schema != nil {
				if err := validateJSON(schema, out.Bytes()); err != nil {
					t.Errorf("speedscope schema: %v", err)
				}
			}

			// Compared with itself: every line "stack n n", every frame white.
			same := make([]export.DiffStack, len(stacks))
			for i, s := range stacks {
				same[i] = export.DiffStack{Frames: s.Frames, A: s.Value, B: s.Value}
			}
			out.Reset()
			if err := export.WriteDiffFolded(&out, same, true); err != nil {
				t.Fatal(err)
			}
			want := doubleCounts(data)
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("difffolded of a profile with itself is not 'stack n n'")
			}
			out.Reset()
			if err := export.WriteDiffSVG(&out, same, export.SVGOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, f := range parseSVG(t, out.Bytes(), false).frames {
				if f.fill != "rgb(255,255,255)" {
					t.Errorf("unchanged frame %q is %s", f.title, f.fill)
					break
				}
			}
			if len(export.Top(export.Functions(same), export.ByTotal, 0)) != 0 {
				t.Error("a profile compared with itself has changed functions")
			}
		})
	}
}

// doubleCounts turns folded lines "stack n" into "stack n n".
func doubleCounts(folded []byte) []byte {
	var b bytes.Buffer
	for line := range strings.Lines(string(folded)) {
		line = strings.TrimSuffix(line, "\n")
		b.WriteString(line)
		b.WriteString(line[strings.LastIndexByte(line, ' '):])
		b.WriteByte('\n')
	}
	return b.Bytes()
}
