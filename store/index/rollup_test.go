package index

import (
	"fmt"
	"testing"
)

// TestRollup: a profile's wall seconds summed by unix slots of 10 and 60
// seconds, per event, a slot being the floor of its seconds (below 0
// too), with sums that wrap as int32.
func TestRollup(t *testing.T) {
	sec := func(event string, s int64, n int32) WallSecond {
		c := make([]int32, Rows)
		row := int(s+100) % Rows
		if n > 1<<20 {
			row = 0 // the large counts in one cell
		}
		c[row] = n
		return WallSecond{Event: event, Second: s, Samples: n, Idle: 1, Cells: c, IdleCells: make([]int32, Rows)}
	}
	secs := []WallSecond{sec("cpu", -11, 1), sec("cpu", -10, 2), sec("cpu", -1, 3), sec("cpu", 0, 4), sec("cpu", 9, 5), sec("cpu", 10, 6),
		sec("cpu", 59, 7), sec("cpu", 60, 8), sec("cs", 5, 9), sec("cpu", 61, 1<<31-1), sec("cpu", 62, 1<<31-1)}
	text := func(rows []WallSecond) string {
		out := ""
		for _, r := range rows {
			var cells int64
			for _, c := range r.Cells {
				cells += int64(c)
			}
			out += fmt.Sprintf("%s@%d:%d/%d/%d ", r.Event, r.Second, r.Samples, r.Idle, cells)
		}
		return out
	}
	for _, tc := range []struct {
		width int64
		want  string
	}{
		{Tens, "cpu@-20:1/1/1 cpu@-10:5/2/5 cpu@0:9/2/9 cpu@10:6/1/6 cpu@50:7/1/7 cpu@60:6/3/6 cs@0:9/1/9 "},
		{Minutes, "cpu@-60:6/3/6 cpu@0:22/4/22 cpu@60:6/3/6 cs@0:9/1/9 "},
	} {
		if got := text(Rollup(secs, tc.width)); got != tc.want {
			t.Errorf("by %d s: %s, want %s", tc.width, got, tc.want)
		}
	}
}
