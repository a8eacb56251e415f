package query

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/heatmap"
	"github.com/fleetscope/fleetscope/store/index"
)

// maxCellSamples bounds the profiles whose stackCells are cached: past
// it, filtered heatmaps count the stored rows each time.
const maxCellSamples = 1 << 19

// stackCells is an event's samples of one profile summed by (stack,
// thread, cell): what a heatmap filtered by function, process, thread or
// CPU counts, without reading or decoding the stored rows again. Entry i
// adds values[i] to cell cells[i] (relative second × index.Rows + row) for
// a sample of its stack on thread threads[i] (threads is nil for a profile
// of one thread); stack st's entries are [stackOff[st], stackOff[st+1]).
type stackCells struct {
	stackOff       []uint32
	threads, cells []uint32
	values         []int64
}

func (c *stackCells) sizeBytes() int64 {
	return 128 + int64(len(c.values))*16 + 4*int64(len(c.stackOff))
}

type cellsKey struct {
	profileKey
	event int
}

// stackCells returns a profile event's stackCells (d: the profile's
// dictionary), cached; nil when the profile is too large to hold them
// (maxCellSamples).
func (s *Service) stackCells(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, ev int, d *fleetscope.Dict) (*stackCells, error) {
	if info.Events[ev].Samples > maxCellSamples {
		return nil, nil
	}
	return s.cellTables.Load(ctx, cellsKey{profileKey{tenant, info.ID}, ev}, func() (*stackCells, error) {
		return s.countStackCells(ctx, tenant, info, ev, d)
	})
}

// countStackCells sums a profile event's stored samples by (stack, thread,
// cell).
func (s *Service) countStackCells(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, ev int, d *fleetscope.Dict) (*stackCells, error) {
	secs, err := s.storedSeconds(ctx, tenant, info, ev, 0, -1)
	if err != nil {
		return nil, err
	}
	type entry struct{ stack, thread, cell uint32 }
	sums := map[entry]int64{}
	weighted := info.Events[ev].Weighted
	threaded := false
	for i := range secs {
		if i%secondsPerCheck == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		sec := &secs[i]
		threaded = threaded || sec.Threads != nil
		if sec.Second < 0 || sec.Second >= math.MaxUint32/index.Rows {
			return nil, fmt.Errorf("profile %s: stored second %d outside its span", info.ID, sec.Second)
		}
		var bad bool
		err := sec.Walk(info.Events[ev].Period, func(offset, stack, thread, period uint64) {
			off := index.Nanos(info.TimeUnitNanos, offset)
			if off < 0 || off >= 1e9 || stack > math.MaxUint32 || thread > math.MaxUint32 {
				bad = true
				return
			}
			v := int64(1)
			if weighted {
				v = int64(min(period, math.MaxInt64))
			}
			sums[entry{uint32(stack), uint32(thread), uint32(sec.Second)*index.Rows + uint32(fleetscope.Row(off, index.Rows))}] += v
		})
		if err != nil || bad {
			return nil, fleetscope.Errorf(fleetscope.EINTERNAL, "profile %s: corrupt index row", info.ID)
		}
	}
	es := make([]entry, 0, len(sums))
	for e := range sums {
		es = append(es, e)
	}
	slices.SortFunc(es, func(a, b entry) int {
		return cmp.Or(cmp.Compare(a.stack, b.stack), cmp.Compare(a.cell, b.cell), cmp.Compare(a.thread, b.thread))
	})
	c := &stackCells{cells: make([]uint32, len(es)), values: make([]int64, len(es))}
	if threaded {
		c.threads = make([]uint32, len(es))
	}
	if len(es) > 0 {
		if int(es[len(es)-1].stack) >= d.NumStacks() {
			return nil, fleetscope.Errorf(fleetscope.EINTERNAL, "profile %s: corrupt index row", info.ID)
		}
		c.stackOff = make([]uint32, es[len(es)-1].stack+2)
	}
	for i, e := range es {
		c.stackOff[e.stack+1] = uint32(i + 1)
		c.cells[i], c.values[i] = e.cell, sums[e]
		if threaded {
			c.threads[i] = e.thread
		}
	}
	for st := 1; st < len(c.stackOff); st++ { // stacks without samples: empty
		c.stackOff[st] = max(c.stackOff[st], c.stackOff[st-1])
	}
	return c, nil
}

var errCorruptCells = errors.New("a stored stack, thread or second out of the profile's bounds")

// count adds into h (index.Rows rows) the entries of the stacks keep
// marks (nil: all), idle ones (by d, the profile's dictionary) only with
// idle, on the threads threads marks (nil: all); startSecond is the
// profile's. A stack, thread or second out of bounds is corrupt.
func (c *stackCells) count(h *heatmap.Heatmap, d *fleetscope.Dict, startSecond int64, keep, threads []bool, idle bool) error {
	all, none := index.ThreadsKept(threads, c.threads != nil)
	if none {
		return nil
	}
	if all {
		threads = nil
	}
	stacks := max(len(c.stackOff)-1, 0)
	if keep != nil && len(keep) < stacks { // (d holds them all: checked when built)
		return errCorruptCells
	}
	var col []int64
	colSec := int64(math.MinInt64)
	for st := range stacks {
		if keep != nil && !keep[st] || !idle && d.Idle(fleetscope.StackID(st)) {
			continue
		}
		for i := c.stackOff[st]; i < c.stackOff[st+1]; i++ {
			if threads != nil {
				if int(c.threads[i]) >= len(threads) {
					return errCorruptCells
				}
				if !threads[c.threads[i]] {
					continue
				}
			}
			if sec := int64(c.cells[i] / index.Rows); sec != colSec {
				if colSec, col = sec, h.Column(startSecond+sec); col == nil {
					return errCorruptCells
				}
			}
			col[c.cells[i]%index.Rows] += c.values[i]
		}
	}
	return nil
}
