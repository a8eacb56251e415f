package index_test

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"reflect"
	"slices"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// FuzzIndexExact: for any samples (times on and off cell boundaries, a few
// stacks, two events, periods and threads that vary), the stored rows
// decode to exactly the samples added, and every heatmap cell, the stored
// 50 rows and any other row count, equals the count of its range's
// samples: the heatmap and the flame graph of a cell agree. Each 6 bytes
// are a sample: 3 of time, its stack, its event and a byte of period and
// thread.
func FuzzIndexExact(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 0, 128, 56, 1, 2, 1, 17, 0, 113, 2, 3, 0, 34, 128, 56, 1, 130, 0, 0}, uint16(50), false)
	f.Add([]byte{255, 255, 255, 0, 1, 1, 0, 56, 1, 4, 0, 0, 1, 0, 0, 5, 1, 2}, uint16(7), true)
	f.Fuzz(func(t *testing.T, data []byte, rows uint16, micro bool) {
		in, ix := fuzzIndex(t, data, micro)
		if len(in) == 0 {
			return
		}
		var out []fleetscope.Sample
		var err error
		for i := range ix.Seconds {
			s := &ix.Seconds[i]
			ev := ix.Events[s.Event]
			first := len(out)
			if out, err = index.Decode(out, s, ix.StartSecond, ix.TimeUnitNanos, ix.Timed, ev.Period, ix.Threads, 8); err != nil {
				t.Fatal(err)
			}
			if ix.Timed {
				sameAsVarint(t, ix, s, out[first:])
			}
			stored := *s // as stored: no busy cells
			stored.Cells = nil
			if err := index.FillCells(&stored, ix.TimeUnitNanos, ev.Period, ev.Weighted); err != nil || !slices.Equal(stored.Cells, s.Cells) {
				t.Fatalf("second %d: busy cells from the offsets %v (%v), built %v", s.Second, stored.Cells, err, s.Cells)
			}
			col := s.Second // the row's second, relative to the start second
			counter := index.Counter{UnitNanos: ix.TimeUnitNanos, Timed: true, Period: ev.Period}
			counts := make([]uint64, 8)
			cellsOf := func(n int) []int64 {
				cells := make([]int64, n)
				for r := range cells {
					counter.Range = cellRange(int(col), r, n)
					clear(counts)
					if err := counter.Count(s, counts); err != nil {
						t.Fatal(err)
					}
					for _, c := range counts {
						cells[r] += int64(c)
					}
				}
				return cells
			}
			for r, c := range cellsOf(index.Rows) {
				if stored := s.Cells[r] + s.IdleCells[r]; int64(stored) != c {
					t.Fatalf("second %d, row %d: stored %d, the range counts %d", col, r, stored, c)
				}
			}
			n := 1 + int(rows)%1000
			cells := make([]int64, n)
			if err := counter.Cells(s, n, nil, cells); err != nil {
				t.Fatal(err)
			}
			if want := cellsOf(n); !slices.Equal(cells, want) {
				t.Fatalf("second %d at %d rows: cells %v, the ranges count %v", col, n, cells, want)
			}
		}
		// The busy cells as stored rows give them back, event "other"
		// weighted (each sample counts as its period) too.
		wb := index.NewBuilder()
		if err := wb.Add(in); err != nil {
			t.Fatal(err)
		}
		wix, err := wb.Build(fuzzIdle, fuzzEvents, func(e fleetscope.EventID) bool { return e == 1 })
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range wix.Seconds {
			ev, built := wix.Events[s.Event], s.Cells
			s.Cells = nil
			if err := index.FillCells(&s, wix.TimeUnitNanos, ev.Period, ev.Weighted); err != nil || !slices.Equal(s.Cells, built) {
				t.Fatalf("%s (weighted %v) second %d: busy cells from the offsets %v (%v), built %v", ev.Name, ev.Weighted, s.Second, s.Cells, err, built)
			}
		}
		order := func(a, b fleetscope.Sample) int {
			return cmp.Or(cmp.Compare(a.TimeNanos, b.TimeNanos), cmp.Compare(a.Event, b.Event), cmp.Compare(a.Stack, b.Stack),
				cmp.Compare(a.Period, b.Period), cmp.Compare(a.PID, b.PID))
		}
		slices.SortFunc(in, order)
		slices.SortFunc(out, order)
		if !slices.Equal(in, out) {
			t.Fatalf("decoded\n%v\nwant\n%v", out, in)
		}
	})
}

// FuzzWallSeconds: placed in wall-clock time by any shift (whole seconds,
// which moves the stored cells, or not, which bins every sample again),
// each second's cells count exactly the samples whose shifted time falls in
// them. The samples are FuzzIndexExact's. The reference is plain
// arithmetic on the heatmap's documented geometry (a second's 50 rows are
// 20 ms each, row 0 from the second's start), not the package's own
// helpers: a sample at t ns (positive here) is in second t/1e9 and row
// (t mod 1e9)/20e6.
func FuzzWallSeconds(f *testing.F) {
	if index.Rows != 50 {
		f.Fatalf("index.Rows is %d: the reference below draws 50 rows of 20 ms", index.Rows)
	}
	f.Add([]byte{0, 0, 0, 1, 0, 0, 128, 56, 1, 2, 1, 17, 255, 255, 255, 0, 0, 1}, int64(3e9))
	f.Add([]byte{0, 0, 0, 1, 0, 0, 128, 56, 1, 130, 1, 17, 0, 113, 2, 3, 0, 34}, int64(-1_234_567_891))
	f.Add([]byte{128, 56, 1, 1, 0, 0, 0, 113, 2, 3, 0, 34}, int64(-1)) // a sample shifted to a nanosecond before a boundary
	f.Fuzz(func(t *testing.T, data []byte, shift int64) {
		shift %= 1e12
		in, ix := fuzzIndex(t, data, false)
		got, err := index.WallSeconds(ix, shift, fuzzIdle)
		if err != nil {
			t.Fatal(err)
		}
		type cell struct {
			event       string
			second, row int64
			idle        bool
		}
		want := map[cell]int32{}
		for _, s := range in {
			at := s.TimeNanos + shift // ~1.7e18 ± 1e12: positive
			if at <= 0 {
				t.Fatalf("sample at %d ns: the reference is for positive times", at)
			}
			const cellNanos = 20_000_000
			want[cell{fuzzEvents[s.Event], at / 1_000_000_000, at % 1_000_000_000 / cellNanos, fuzzIdle(s.Stack)}]++
		}
		for _, w := range got {
			for r := range index.Rows {
				for _, c := range []struct {
					idle bool
					n    int32
				}{{false, w.Cells[r]}, {true, w.IdleCells[r]}} {
					k := cell{w.Event, w.Second, int64(r), c.idle}
					if c.n != want[k] {
						t.Fatalf("%s second %d row %d idle %v: %d, want %d (shift %d ns)", w.Event, w.Second, r, c.idle, c.n, want[k], shift)
					}
					delete(want, k)
				}
			}
		}
		if len(want) > 0 {
			t.Fatalf("cells with samples missing from the wall seconds: %v", want)
		}
		checkTens(t, got)
	})
}

// checkTens: the wall seconds packed by their tens (fleet_tens) read back
// as exactly those seconds, and each slot's sums are its seconds'.
func checkTens(t *testing.T, secs []index.WallSecond) {
	t.Helper()
	tens, packed, err := index.RollupTens(secs)
	if err != nil {
		t.Fatal(err)
	}
	var back []index.WallSecond
	for i, ten := range tens {
		w := index.WallSecond{Event: ten.Event, Cells: make([]int32, index.Rows), IdleCells: make([]int32, index.Rows)}
		var samples, idle int32
		err := index.EachTenSecond(packed[i], ten.Second, &w, func() error {
			samples, idle = samples+w.Samples, idle+w.Idle
			back = append(back, index.WallSecond{Event: w.Event, Second: w.Second, Samples: w.Samples, Idle: w.Idle,
				Cells: slices.Clone(w.Cells), IdleCells: slices.Clone(w.IdleCells)})
			return nil
		})
		if err != nil {
			t.Fatalf("slot %s@%d: %v", ten.Event, ten.Second, err)
		}
		if samples != ten.Samples || idle != ten.Idle {
			t.Fatalf("slot %s@%d: its seconds hold %d busy and %d idle samples, its sums %d and %d", ten.Event, ten.Second, samples, idle, ten.Samples, ten.Idle)
		}
	}
	if !reflect.DeepEqual(back, secs) {
		t.Fatalf("seconds read back from their tens:\n%v\nwant\n%v", back, secs)
	}
}

// FuzzCorruptRow: whatever bytes a stored row holds (a database damaged or
// tampered with), reading it is an error or samples within the profile's
// stacks and threads, never a panic; so is reading them as a ten's
// seconds, as a stack list (no longer than its bytes) or as zstd columns
// (no longer than the row's samples could take).
func FuzzCorruptRow(f *testing.F) {
	f.Add([]byte{3, 1, 2, 3, 9, 1, 0}, uint8(3), uint8(3), true, true)
	f.Add([]byte{0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 2}, uint8(1), uint8(11), false, true)
	f.Fuzz(func(t *testing.T, data []byte, samples, cut uint8, periods, threads bool) {
		part := func() []byte { // the next cut bytes of data
			n := min(int(cut)%8+1, len(data))
			p := data[:n]
			data = data[n:]
			return p
		}
		s := index.Second{Samples: int32(samples), Offsets: part(), Stacks: part()}
		if periods {
			s.Periods = part()
		}
		ths := []fleetscope.Thread{{PID: 1, TID: 1, CPU: -1}}
		if threads {
			s.Threads = part()
			ths = append(ths, fleetscope.Thread{PID: 2, TID: 2, CPU: -1})
		}
		out, err := index.Decode(nil, &s, 0, 1000, true, 1, ths, 8)
		for _, smp := range out {
			if err == nil && smp.Stack >= 8 {
				t.Fatalf("stack %d decoded from a profile of 8", smp.Stack)
			}
		}
		s.VarintOffsets = cut&0x80 != 0 // rows stored before packed offsets
		c := index.Counter{UnitNanos: 1000, Timed: true, Period: 1, Range: fleetscope.Range{Start: 1, End: 5e8}, Threads: []bool{true, false}}
		_ = c.Count(&s, make([]uint64, 8))
		_ = c.Cells(&s, 50, make([]bool, 8), make([]int64, 50))
		_ = s.Walk(1, func(offset, stack, thread, period uint64) {})
		_, _ = index.CanonicalOffsets(&s)
		s.IdleCells = make([]int32, index.Rows)
		_ = index.FillCells(&s, 1000, 7, periods)
		z := index.Second{Samples: s.Samples, Offsets: s.Offsets, Stacks: s.Stacks}
		if err := z.Unzstd(); err == nil && (len(z.Offsets) > 16+10*int(z.Samples) || len(z.Stacks) > 16+10*int(z.Samples)) {
			t.Fatalf("%d bytes decompressed for a row of %d samples", max(len(z.Offsets), len(z.Stacks)), z.Samples)
		}
		if l, err := index.ReadStackList(s.Stacks); err == nil && len(l) > len(s.Stacks) {
			t.Fatalf("a stack list of %d stacks read from %d bytes", len(l), len(s.Stacks))
		}
		w := index.WallSecond{Cells: make([]int32, index.Rows), IdleCells: make([]int32, index.Rows)}
		_ = index.EachTenSecond(s.Offsets, 10, &w, func() error {
			if w.Second < 10 || w.Second >= 20 {
				t.Fatalf("second %d read from the ten seconds from 10", w.Second)
			}
			return nil
		})
	})
}

// sameAsVarint: row s, whose samples decoded to smps, reads exactly the
// same when its offsets are uvarint steps, as rows stored before packed
// offsets hold them (encoded here from the decoded times): the samples,
// every count, the cells, the walk and the digest.
func sameAsVarint(t *testing.T, ix *index.Index, s *index.Second, smps []fleetscope.Sample) {
	t.Helper()
	old := *s
	old.VarintOffsets, old.Offsets = true, nil
	base, prev := (ix.StartSecond+s.Second)*1e9, int64(0)
	for _, smp := range smps {
		u := int64(index.Units(ix.TimeUnitNanos, smp.TimeNanos-base))
		old.Offsets = binary.AppendUvarint(old.Offsets, uint64(u-prev))
		prev = u
	}
	if got, ok := index.CanonicalOffsets(s); !ok || !bytes.Equal(got, old.Offsets) {
		t.Fatalf("second %d: canonical offsets %x (ok %v), want %x", s.Second, got, ok, old.Offsets)
	}
	ev := ix.Events[s.Event]
	got, err := index.Decode(nil, &old, ix.StartSecond, ix.TimeUnitNanos, true, ev.Period, ix.Threads, 8)
	if err != nil || !slices.Equal(got, smps) {
		t.Fatalf("second %d with uvarint offsets: %v (%v), want %v", s.Second, got, err, smps)
	}
	walk := func(r *index.Second) (w [][4]uint64) {
		if err := r.Walk(ev.Period, func(o, st, th, p uint64) { w = append(w, [4]uint64{o, st, th, p}) }); err != nil {
			t.Fatal(err)
		}
		return w
	}
	if a, b := walk(s), walk(&old); !slices.Equal(a, b) {
		t.Fatalf("second %d: walks %v and %v", s.Second, a, b)
	}
	for _, r := range []fleetscope.Range{{Start: base, End: base + 1e9}, {Start: base + 3e8, End: base + 7e8 + 1}, {Start: base + 1, End: base + 999_999_999}} {
		for _, outside := range []bool{false, true} {
			c := index.Counter{UnitNanos: ix.TimeUnitNanos, Timed: true, Period: ev.Period, ByPeriod: true, Range: r, Outside: outside}
			a, aw, b, bw := make([]uint64, 8), make([]uint64, 8), make([]uint64, 8), make([]uint64, 8)
			if err := c.CountWeights(s, a, aw); err != nil {
				t.Fatal(err)
			}
			if err := c.CountWeights(&old, b, bw); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(a, b) || !slices.Equal(aw, bw) {
				t.Fatalf("second %d, range %v outside %v: counts %v %v, with uvarint offsets %v %v", s.Second, r, outside, a, aw, b, bw)
			}
		}
	}
	c := index.Counter{UnitNanos: ix.TimeUnitNanos, Timed: true, Period: ev.Period}
	a, b := make([]int64, 97), make([]int64, 97)
	if err := c.Cells(s, 97, nil, a); err != nil {
		t.Fatal(err)
	}
	if err := c.Cells(&old, 97, nil, b); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a, b) {
		t.Fatalf("second %d: 97 cells %v, with uvarint offsets %v", s.Second, a, b)
	}
	if index.Digest([][]index.Second{{*s}}) != index.Digest([][]index.Second{{old}}) {
		t.Fatalf("second %d: the digest depends on how the offsets are stored", s.Second)
	}
}

// fuzzEvents and fuzzIdle are the fuzz targets' profile: two events, and
// stack 0 idle.
var fuzzEvents = []string{"cpu", "other"}

func fuzzIdle(s fleetscope.StackID) bool { return s == 0 }

// fuzzIndex makes samples of data and indexes them. Each 6 bytes are a
// sample: 3 of time (2^24 steps of 250 ns span ~4.2 s, 80,000 steps are a
// 20-ms cell; of 1 µs when micro), the high bit of the next a nanosecond
// earlier (before a boundary; not when micro), its stack, its event and a
// byte of period and thread.
func fuzzIndex(t *testing.T, data []byte, micro bool) ([]fleetscope.Sample, *index.Index) {
	const base = int64(1_700_000_000) * 1e9
	step, early := int64(250), int64(1)
	if micro {
		step, early = 1000, 0 // whole microseconds: stored in µs
	}
	var in []fleetscope.Sample
	for ; len(data) >= 6; data = data[6:] {
		v := int64(data[0]) | int64(data[1])<<8 | int64(data[2])<<16
		in = append(in, fleetscope.Sample{TimeNanos: base + v*step - early*int64(data[3]>>7), Stack: fleetscope.StackID(data[3] % 8),
			Event: fleetscope.EventID(data[4] % 2), Period: 1 + uint64(data[5]%3), PID: int32(data[5] >> 6), TID: int32(data[5] >> 6), CPU: -1})
	}
	b := index.NewBuilder()
	if err := b.Add(in); err != nil {
		t.Fatal(err)
	}
	ix, err := b.Build(fuzzIdle, fuzzEvents, nil)
	if err != nil {
		t.Fatal(err)
	}
	return in, ix
}

// cellRange is the half-open range of relative time, in ns, that heatmap
// cell (col, row) covers: the offsets fleetscope.Row puts in row, within
// second col (the domain package's geometry).
func cellRange(col, row, rows int) fleetscope.Range {
	lo := (int64(row)*1e9 + int64(rows) - 1) / int64(rows)
	hi := (int64(row+1)*1e9 + int64(rows) - 1) / int64(rows)
	base := int64(col) * 1e9
	return fleetscope.Range{Start: base + lo, End: base + hi}
}
