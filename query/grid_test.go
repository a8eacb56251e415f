package query

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// TestGridWidensToRollups: columns of 5 to 29 s are widened to whole tens
// of seconds and columns of 30 s or more to whole minutes, aligned in unix
// time (the first column starts at a multiple of the width and holds the
// window's first second), narrower ones are left as they are; below 0
// too.
func TestGridWidensToRollups(t *testing.T) {
	for _, tc := range []struct {
		window, minSPC int64 // seconds
		spc            int64
	}{
		{600, 0, 1}, {3600, 0, 4}, {4000, 0, 4}, {4001, 0, 10}, {3600, 5, 10}, {3600, 9, 10}, {3600, 11, 20},
		{7200, 0, 10}, {6 * 3600, 0, 30}, {3600, 22, 30}, {3600, 29, 30}, {3600, 30, 60},
		{29000, 0, 30}, {29001, 0, 60}, {9 * 3600, 0, 60}, {86400, 0, 120}, {3600, 61, 120}, {3600, 4, 4},
	} {
		for _, first := range []int64{1795000000, 1795000007, 1795000033, -1795000007, -17, 0} {
			f := newFleet(fleetscope.FleetSelection{From: first * 1e9, To: (first + tc.window) * 1e9})
			start, spc, columns := f.grid(tc.minSPC)
			name := fmt.Sprintf("%d s from %d, at least %d s a column", tc.window, first, tc.minSPC)
			if spc != tc.spc {
				t.Errorf("%s: %d-s columns, want %d", name, spc, tc.spc)
			}
			aligned := start == f.first
			if spc >= 5 {
				aligned = start%spc == 0 && start <= f.first && f.first < start+spc
			}
			if !aligned || start+int64(columns)*spc < f.end || start+int64(columns-1)*spc >= f.end {
				t.Errorf("%s: %d columns of %d s from %d do not cover [%d, %d) as they should", name, columns, spc, start, f.first, f.end)
			}
		}
	}
}

// TestSpans: a window's seconds are cut into whole minutes, whole tens of
// seconds and seconds, each slot of a rollup wholly inside both the
// window and its whole part, the widest first, covering every second
// once, for the rollups the columns allow; none without rollups.
func TestSpans(t *testing.T) {
	s := &Service{}
	rng := rand.New(rand.NewPCG(1, 2))
	for try := range 2000 {
		from := rng.Int64N(400) - 200
		to := from + rng.Int64N(300)
		wholeFrom, wholeTo := from+rng.Int64N(3), to-rng.Int64N(3)
		spc := []int64{1, 10, 20, 30, 60, 120}[try%6]
		sps := s.spans(from, to, wholeFrom, wholeTo, spc)
		at := from
		for i, sp := range sps {
			if sp.from != at || sp.from >= sp.to || i > 0 && sp.width == 1 && sps[i-1].width == 1 {
				t.Fatalf("[%d, %d) whole [%d, %d), %d-s columns: %v do not cover it once", from, to, wholeFrom, wholeTo, spc, sps)
			}
			at = sp.to
			if sp.width == 1 {
				continue
			}
			if spc%sp.width != 0 || sp.from%sp.width != 0 || sp.to%sp.width != 0 || sp.from < wholeFrom || sp.to > wholeTo {
				t.Fatalf("[%d, %d) whole [%d, %d), %d-s columns: %v", from, to, wholeFrom, wholeTo, spc, sps)
			}
		}
		if at != max(from, to) && from < to {
			t.Fatalf("[%d, %d): %v end at %d", from, to, sps, at)
		}
		// The seconds left are those no slot of an allowed rollup holds whole.
		for _, sp := range sps {
			if sp.width != 1 {
				continue
			}
			for _, w := range []int64{10, 60} {
				if spc%w != 0 {
					continue
				}
				lo, hi := max(sp.from, wholeFrom), min(sp.to, wholeTo)
				if c := -index.FloorTo(-lo, w); c+w <= hi {
					t.Fatalf("[%d, %d) whole [%d, %d), %d-s columns: %v read seconds [%d, %d) from the seconds", from, to, wholeFrom, wholeTo, spc, sps, c, c+w)
				}
			}
		}
	}
	got := s.spans(-95, 185, -95, 185, 60)
	want := []span{{1, -95, -90}, {10, -90, -60}, {60, -60, 180}, {1, 180, 185}}
	if !slices.Equal(got, want) {
		t.Fatalf("spans of [-95, 185): %v, want %v", got, want)
	}
	if got := (&Service{noRollups: true}).spans(-95, 185, -95, 185, 60); !slices.Equal(got, []span{{1, -95, 185}}) {
		t.Fatalf("without rollups: %v", got)
	}
}
