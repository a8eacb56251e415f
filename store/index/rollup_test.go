package index

import (
	"fmt"
	"math"
	"reflect"
	"slices"
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

// TestTenSeconds: a ten's seconds packed in its row read back as they were
// (cells over 127 bytes, sums that wrap, seconds of idle samples only), and
// seconds that are not of the slot, out of order or whose totals are not
// their cells' are refused, as are rows cut short or out of order, and
// seconds handed to RollupTens out of order.
func TestTenSeconds(t *testing.T) {
	cells := func(n ...int32) []int32 { return append(n, make([]int32, Rows-len(n))...) }
	wide := make([]int32, Rows)
	for i := range wide {
		wide[i] = 1<<31 - 1 - int32(i) // five bytes each: 257 bytes of cells
	}
	secs := []WallSecond{
		{Event: "cpu", Second: 20, Samples: 3, Cells: cells(1, 2), IdleCells: cells()},
		{Event: "cpu", Second: 23, Samples: cellSum(wide), Idle: -1, Cells: wide, IdleCells: cells(-1)},
		{Event: "cpu", Second: 29, Idle: 4, Cells: cells(), IdleCells: cells(0, 0, 4)},
	}
	b, err := AppendTenSeconds(nil, 20, secs)
	if err != nil {
		t.Fatal(err)
	}
	w := WallSecond{Event: "cpu", Cells: make([]int32, Rows), IdleCells: make([]int32, Rows)}
	var back []WallSecond
	err = EachTenSecond(b, 20, &w, func() error {
		back = append(back, WallSecond{Event: w.Event, Second: w.Second, Samples: w.Samples, Idle: w.Idle, Cells: slices.Clone(w.Cells), IdleCells: slices.Clone(w.IdleCells)})
		return nil
	})
	if err != nil || !reflect.DeepEqual(back, secs) {
		t.Fatalf("read back %v (%v), want %v", back, err, secs)
	}
	for _, bad := range [][]WallSecond{
		{secs[0], secs[0]}, // a second twice
		{secs[1], secs[0]}, // out of order
		{{Event: "cpu", Second: 30, Cells: cells(), IdleCells: cells()}}, // the next slot
		{{Event: "cpu", Second: 19, Cells: cells(), IdleCells: cells()}}, // the one before
		{secs[0], {Event: "cs", Second: 21, Cells: cells(), IdleCells: cells()}},
		{{Event: "cpu", Second: 21, Samples: 2, Cells: cells(1), IdleCells: cells()}},
	} {
		if _, err := AppendTenSeconds(nil, 20, bad); err == nil {
			t.Errorf("%v packed", bad)
		}
	}
	if _, _, err := RollupTens([]WallSecond{secs[2], secs[0]}); err == nil {
		t.Error("seconds out of order rolled up by tens")
	}
	for _, bad := range [][]byte{
		b[:len(b)-1],       // cut short
		{10, 0, 0},         // a second past the slot
		{3, 0, 0, 3, 0, 0}, // a second twice
		{3, 0, 0, 2, 0, 0}, // out of order
		{0, 9, 1, 1},       // a length past the end
		{0, 0x80, 0x80},    // a length that does not end
	} {
		if err := EachTenSecond(bad, 20, &w, func() error { return nil }); err == nil {
			t.Errorf("% x read", bad)
		}
	}
}

// TestStackList: a stack list reads back as written (consecutive numbers,
// jumps both ways, the extremes), a run of new stacks takes a byte each,
// and lists cut short, with bytes more or a count past their length are
// refused.
func TestStackList(t *testing.T) {
	lists := [][]int64{nil, {1}, {5, 6, 7, 8}, {1000, 3, 999_999, 1}, {math.MaxInt64, math.MinInt64, 0}}
	for _, l := range lists {
		b := AppendStackList(nil, l)
		got, err := ReadStackList(b)
		if err != nil || !slices.Equal(got, l) || (l == nil) != (len(got) == 0) {
			t.Errorf("%v: read back %v, %v", l, got, err)
		}
	}
	run := make([]int64, 100)
	for i := range run {
		run[i] = 200 + int64(i)
	}
	if n := len(AppendStackList(nil, run)); n != 1+2+99 {
		t.Errorf("100 consecutive stacks from 200: %d bytes, want 102", n)
	}
	good := AppendStackList(nil, []int64{5, 6, 700})
	for _, bad := range [][]byte{good[:len(good)-1], append(slices.Clone(good), 0), {9, 2}, {}, {0x80}} {
		if l, err := ReadStackList(bad); err == nil {
			t.Errorf("% x read as %v", bad, l)
		}
	}
}
