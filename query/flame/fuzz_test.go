package flame_test

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/flame"
)

// fuzzNames are frame names that order awkwardly around the separators:
// prefixes of each other followed by bytes below and above ';' and ' ',
// names holding ';', empty, non-ASCII.
var fuzzNames = []string{"a", "b", "a b", "a!", "a:x", "a;b", "ab", "a\t", "a\x7f", "", "x;", "ä", "b;", "a<", "A", "b a"}

// FuzzFoldedFromStacks: the flame graph tree and the lines of any stacks
// give the same folded lines as the counts they were built from
// (TestFoldedOrder, for stacks the fuzzer chooses). Each 3 bytes are a frame: its name, and
// whether a stack ends after it (and its count).
func FuzzFoldedFromStacks(f *testing.F) {
	f.Add([]byte{0, 0, 1, 1, 0, 2, 0, 1, 0, 3, 0, 0, 6, 1, 3, 4, 0, 5, 2, 1, 1})
	f.Add([]byte{0, 0, 0, 2, 1, 1, 0, 0, 0, 3, 1, 2, 0, 0, 0, 6, 1, 9, 0, 1, 4, 11, 1, 7})
	f.Fuzz(func(t *testing.T, data []byte) {
		d := fleetscope.NewDict()
		counts := &flame.Counts{}
		var stack []fleetscope.FrameID
		for ; len(data) >= 3; data = data[3:] {
			name := fuzzNames[int(data[0])%len(fuzzNames)]
			kind := fleetscope.FrameKind(0)
			if data[0]&0x80 != 0 {
				kind = fleetscope.KindKernel
			}
			stack = append(stack, d.Frame(fleetscope.Frame{Name: name, Kind: kind}))
			if data[1]&1 != 0 || len(stack) == 12 {
				counts.AddStack(d.Stack(stack), uint64(data[2])+1)
				stack = stack[:0]
			}
		}
		check(t, d, counts)
	})
}

// FuzzLinesWriteFolded: any lines, as a server might send them, are
// written without a panic; lines Check refuses are an error with nothing
// written, and lines it accepts are written as each line's frames joined
// by ';' and its value. Each 3 bytes are a line (frames kept from the line
// before, frames added, value), followed by the added frames' names (some
// beyond the names).
func FuzzLinesWriteFolded(f *testing.F) {
	f.Add([]byte{0, 2, 5, 0, 1, 1, 1, 3, 2, 0, 2, 1, 1, 1, 9, 0, 3, 7, 9, 12})
	f.Add([]byte{0, 1, 1, 9, 0, 3, 2, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		ls := &flame.Lines{Names: fuzzNames}
		for len(data) >= 3 {
			keep, add, v := data[0]%8, int(data[1]%4), data[2]
			data = data[3:]
			ls.Shared, ls.Added, ls.Value = append(ls.Shared, uint32(keep)), append(ls.Added, uint32(add)), append(ls.Value, uint64(v))
			for ; add > 0 && len(data) > 0; add-- {
				ls.Frame = append(ls.Frame, uint32(data[0])%uint32(len(fuzzNames)+1))
				data = data[1:]
			}
		}
		var got bytes.Buffer
		err := ls.WriteFolded(&got)
		if ls.Check() != nil {
			if err == nil || got.Len() > 0 {
				t.Fatalf("lines Check refuses: error %v, wrote %q", err, got.String())
			}
			return
		}
		if err != nil {
			t.Fatalf("WriteFolded: %v", err)
		}
		var want strings.Builder
		var stack []string
		frames := ls.Frame
		for i, v := range ls.Value {
			stack = stack[:ls.Shared[i]]
			for _, f := range frames[:ls.Added[i]] {
				stack = append(stack, ls.Names[f])
			}
			frames = frames[ls.Added[i]:]
			want.WriteString(strings.Join(stack, ";") + " " + strconv.FormatUint(v, 10) + "\n")
		}
		if got.String() != want.String() {
			t.Fatalf("lines %+v\nwrote\n%q\nwant\n%q", ls, got.String(), want.String())
		}
		if n := ls.FoldedSize(); n != got.Len() {
			t.Fatalf("FoldedSize %d, wrote %d bytes", n, got.Len())
		}
	})
}
