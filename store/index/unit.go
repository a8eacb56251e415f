package index

import (
	"fmt"
	"math"
)

// A profile's time unit (Index.TimeUnitNanos) is the step of its stored
// offsets within the second:
//   - 1000 (1 µs) when every timestamp is a whole microsecond, as perf
//     prints them;
//   - -m, the grid of 2^-m s (m in [1, 29]), when every offset within its
//     second is a point of that grid rounded to the ns: the times of
//     formats that carry seconds as doubles (nflxprofile's start_time plus
//     time_deltas) are such points, 2^-22 s (~238 ns) apart near today's
//     unix seconds, so their offsets take 22 bits rather than 30;
//   - else 1 (1 ns).
//
// Either way the unit is exact: Build keeps a unit only when every offset,
// converted to units and back (Nanos), is itself.

// gridNone is the grid exponent past which no grid is worth keeping:
// 2^30 steps a second are more than 10^9 ns.
const gridNone = 30

// gridNanos[m] is a step of the grid of 2^-m s in ns, exactly.
var gridNanos = func() (g [gridNone]float64) {
	for m := range g {
		g[m] = math.Ldexp(1e9, -m)
	}
	return g
}()

// step is a step of the grid unit (< 0) in ns.
func step(unit int64) float64 {
	if unit > -gridNone {
		return gridNanos[-unit]
	}
	return math.Ldexp(1e9, int(max(unit, -1100))) // not a unit Build makes
}

// Nanos is the offset u, in time unit unit, in ns.
func Nanos(unit int64, u uint64) int64 {
	if unit > 0 {
		return int64(u) * unit
	}
	return int64(math.Round(float64(u) * step(unit)))
}

// Units is the offset off (ns within its second) in time unit unit,
// rounded to the nearest unit: exact when off is a point of the unit.
func Units(unit, off int64) uint64 {
	if unit > 0 {
		return uint64(off / unit)
	}
	return uint64(math.Round(float64(off) / step(unit)))
}

// inUnit is the offset off (ns within its second) in time unit unit, and
// whether it is a point of the unit: whether it converts back to itself.
func inUnit(unit, off int64) (u uint64, ok bool) {
	u = Units(unit, off)
	return u, Nanos(unit, u) == off
}

// onGrid says whether off (ns within its second) is a point of the grid of
// 2^-m s, rounded to the ns.
func onGrid(off int64, m int) bool {
	_, ok := inUnit(int64(-m), off)
	return ok
}

// unitOf chooses a profile's time unit from what Builder.Add saw: whether
// every time is a whole µs, and the coarsest grid every offset is a point
// of (gridNone: none). The unit with fewer steps a second wins.
func unitOf(allMicro bool, grid int) int64 {
	switch {
	case grid < gridNone && (!allMicro || 1<<grid < 1_000_000):
		return int64(-grid)
	case allMicro:
		return 1000
	}
	return 1
}

// Reunit stores the index's offsets in unit instead, as an index stored in
// that unit holds them: a profile indexed before its unit was found is
// read again from its raw file in its stored unit. It is an error, and the
// index is unchanged, if an offset is not a point of unit.
func (ix *Index) Reunit(unit int64) error {
	if unit == ix.TimeUnitNanos {
		return nil
	}
	offsets := make([][]byte, len(ix.Seconds))
	for i := range ix.Seconds {
		s := &ix.Seconds[i]
		o := offsetsOf(s)
		us := make([]uint64, 0, s.Samples)
		for range s.Samples {
			u, ok := o.next()
			if !ok {
				return errCorrupt
			}
			off := Nanos(ix.TimeUnitNanos, u)
			u, ok = inUnit(unit, off)
			if !ok {
				return fmt.Errorf("index: offset %d ns of second %d is not a point of time unit %d", off, s.Second, unit)
			}
			us = append(us, u)
		}
		offsets[i] = encodeOffsets(s, us)
	}
	for i := range ix.Seconds {
		ix.Seconds[i].Offsets, ix.Seconds[i].VarintOffsets = offsets[i], false
	}
	ix.TimeUnitNanos = unit
	return nil
}
