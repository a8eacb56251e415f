package main

import (
	"bytes"
	"strings"
	"testing"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// TestWriteFlameFoldedLines: the server's folded lines are written as
// text; lines that are not well formed, or an answer without lines (a
// server older than the format), are an error naming the cause, with
// nothing written.
func TestWriteFlameFoldedLines(t *testing.T) {
	names := []string{"main", "f", "g"}
	for _, tc := range []struct {
		name  string
		lines *fsv1.FoldedLines
		text  string // what is written, or
		err   string // the error's words
	}{
		{"lines", &fsv1.FoldedLines{Names: names, Shared: []uint32{0, 1, 0}, Added: []uint32{2, 1, 1}, Frame: []uint32{0, 1, 2, 2}, Value: []uint64{3, 1, 4}},
			"main;f 3\nmain;g 1\ng 4\n", ""},
		{"none", &fsv1.FoldedLines{}, "", ""},
		{"keeps more than the line before has", &fsv1.FoldedLines{Names: names, Shared: []uint32{0, 3}, Added: []uint32{2, 1}, Frame: []uint32{0, 1, 2}, Value: []uint64{1, 1}},
			"", "malformed folded lines: flame: malformed lines: line 1: keeps 3 frames of 2"},
		{"a name beyond the names", &fsv1.FoldedLines{Names: names, Shared: []uint32{0}, Added: []uint32{1}, Frame: []uint32{7}, Value: []uint64{1}},
			"", "malformed folded lines: flame: malformed lines: frame 0: name 7 of 3"},
		{"frames left over", &fsv1.FoldedLines{Names: names, Shared: []uint32{0}, Added: []uint32{1}, Frame: []uint32{0, 1}, Value: []uint64{1}},
			"", "malformed folded lines"},
		{"columns of different lengths", &fsv1.FoldedLines{Names: names, Shared: []uint32{0}, Value: []uint64{1}},
			"", "malformed folded lines"},
		{"no lines at all", nil, "", "the server sent no folded lines"},
	} {
		var out bytes.Buffer
		err := writeFlame(&out, &fsv1.GetFlameGraphResponse{Lines: tc.lines}, "folded")
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) || out.Len() > 0 {
				t.Errorf("%s: error %v, wrote %q; want an error saying %q and nothing written", tc.name, err, out.String(), tc.err)
			}
			continue
		}
		if err != nil || out.String() != tc.text {
			t.Errorf("%s: wrote %q, %v; want %q", tc.name, out.String(), err, tc.text)
		}
	}
}
