package lifecycle_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	ix "github.com/fleetscope/fleetscope/store/index"
	"github.com/fleetscope/fleetscope/store/lifecycle"
)

// tier is a sample tier over profiles in memory: each profile's stored
// rows, what its raw file gives (or fails with), and the calls made.
type tier struct {
	stored map[string][]ix.Second
	built  map[string]*ix.Index
	fail   map[string]error
	tiers  map[string]int
	moved  map[string]time.Time
	calls  []string
}

func (x *tier) SamplesDue(_ context.Context, now, cutoff time.Time, moved bool, limit int) ([]fleetscope.ProfileRef, error) {
	var out []fleetscope.ProfileRef
	for _, id := range slices.Sorted(func(yield func(string) bool) {
		for id := range x.stored {
			if !yield(id) {
				return
			}
		}
	}) {
		if !moved && x.tiers[id] == 0 || moved && x.tiers[id] == 1 && x.moved[id].Before(cutoff) {
			out = append(out, fleetscope.ProfileRef{Tenant: 1, ID: id})
		}
	}
	return out[:min(len(out), limit)], nil
}

func (x *tier) MoveSamples(_ context.Context, _ int64, id string, now time.Time, digest []byte) error {
	kept := digest == nil
	if !kept {
		if d := ix.Digest([][]ix.Second{x.stored[id]}); !bytes.Equal(digest, d[:]) {
			return fmt.Errorf("%s moved with digest %x, not its rows' %x", id, digest, d)
		}
	}
	x.calls = append(x.calls, fmt.Sprintf("move %s kept=%v", id, kept))
	x.tiers[id], x.moved[id] = 1, now
	if kept {
		x.tiers[id] = 3
	}
	return nil
}

func (x *tier) DropMovedSamples(_ context.Context, _ int64, id string) error {
	x.calls = append(x.calls, "drop "+id)
	x.tiers[id] = 2
	return nil
}

func (x *tier) Profile(_ context.Context, _ int64, id string) (*fleetscope.ProfileInfo, error) {
	return &fleetscope.ProfileInfo{ID: id, Events: []fleetscope.EventInfo{{Name: "cpu", Samples: 3}}, TimeUnitNanos: 1000, Timed: true}, nil
}

func (x *tier) Seconds(_ context.Context, _ int64, id string, _ int, _, _ int64) ([]ix.Second, error) {
	return x.stored[id], nil
}

func (x *tier) reindex(_ context.Context, p *fleetscope.ProfileInfo) (*ix.Index, error) {
	if err := x.fail[p.ID]; err != nil {
		return nil, err
	}
	return x.built[p.ID], nil
}

// TestMoveSamplesOnlyWhatComesBack: a profile leaves the sample tier only
// when its raw file gives back its stored rows exactly; a file that is
// missing, does not parse or gives other rows keeps them for good (rows
// built again in a finer unit are compared in the stored one); a
// blob store failure moves nothing and stops the sweep, to be tried
// again. Moved profiles' rows are deleted only after the grace, and
// each move is passed to Forget.
func TestMoveSamplesOnlyWhatComesBack(t *testing.T) {
	ctx := context.Background()
	// A row of one or two samples at 1 and 3 µs: stored as uvarint steps
	// (before packed offsets), built again packed (the same offsets).
	row := func(sec int64, stacks ...byte) ix.Second {
		return ix.Second{Second: sec, Samples: int32(len(stacks)), Cells: []int32{int32(len(stacks))}, Offsets: []byte{1, 2}[:len(stacks)], VarintOffsets: true, Stacks: stacks}
	}
	rows := []ix.Second{row(0, 1, 2), row(1, 3)}
	built := func(rows ...ix.Second) *ix.Index {
		rows = slices.Clone(rows)
		for i := range rows {
			rows[i].Offsets, rows[i].VarintOffsets = []byte{1, 0, 2}[:2*rows[i].Samples-1], false // first 1, w 0, smallest step 2
		}
		return &ix.Index{Events: []ix.Event{{Name: "cpu", Samples: 3}}, Seconds: rows, TimeUnitNanos: 1000, Timed: true}
	}
	// The same rows built again in ns (as a profile stored before its
	// unit was found is), and rows whose 3.5 µs is no whole µs.
	inNanos := func(second uint64) *ix.Index {
		b := built(rows...)
		b.TimeUnitNanos = 1
		b.Seconds[0].Offsets = binary.AppendUvarint(append(binary.AppendUvarint(nil, 1000), 0), second-1000) // first, w 0, step
		b.Seconds[1].Offsets = binary.AppendUvarint(nil, 1000)
		return b
	}
	x := &tier{
		stored: map[string][]ix.Second{"same": rows, "other": rows, "fewer": rows, "gone": rows, "down": rows, "finer": rows, "offunit": rows},
		built: map[string]*ix.Index{"same": built(rows...), "other": built(row(0, 1, 2), row(1, 4)), "fewer": built(row(0, 1, 2)),
			"finer": inNanos(3000), "offunit": inNanos(3500)},
		fail: map[string]error{
			"gone": fleetscope.Errorf(fleetscope.EINTERNAL, "its raw file is missing"),
			"down": fleetscope.Errorf(fleetscope.EUNAVAILABLE, "blob store unavailable"),
		},
		tiers: map[string]int{}, moved: map[string]time.Time{},
	}
	var forgot []string
	var before [][]string
	s := &lifecycle.Service{Tier: x, Reindex: x.reindex, Forget: func(_ int64, id string) { forgot = append(forgot, id) },
		BeforeMove: func(_ context.Context, _ int64, ps []*fleetscope.ProfileInfo) error {
			var ids []string
			for _, p := range ps {
				ids = append(ids, p.ID)
			}
			before = append(before, ids)
			return nil
		}}
	now := time.Unix(1795000000, 0)

	// "down" sorts first: the sweep stops there, having moved nothing.
	if r, err := s.MoveSamples(ctx, now); fleetscope.ErrorCode(err) != fleetscope.EUNAVAILABLE || r != (lifecycle.Moved{}) {
		t.Fatalf("a blob store failure: %+v %v, want nothing moved and the failure", r, err)
	}
	if len(x.calls) != 0 {
		t.Fatalf("a blob store failure made calls %v", x.calls)
	}
	x.fail["down"] = nil
	x.built["down"] = built(rows...)
	r, err := s.MoveSamples(ctx, now)
	if err != nil || r != (lifecycle.Moved{Moved: 3, Kept: 4}) {
		t.Fatalf("moved %+v, %v; want 3 moved, 4 kept", r, err)
	}
	want := []string{"move down kept=false", "move fewer kept=true", "move finer kept=false", "move gone kept=true", "move offunit kept=true", "move other kept=true", "move same kept=false"}
	if !slices.Equal(x.calls, want) || !slices.Equal(forgot, []string{"down", "fewer", "finer", "gone", "offunit", "other", "same"}) {
		t.Fatalf("calls %v, forgot %v; want %v", x.calls, forgot, want)
	}
	// The buckets of the profiles moving (not of those kept) are stored
	// first, in one call for the batch.
	if len(before) != 1 || !slices.Equal(before[0], []string{"down", "finer", "same"}) {
		t.Fatalf("BeforeMove called with %v, want [[down finer same]]", before)
	}

	// Within the grace nothing is deleted; past it, only the moved rows.
	x.calls = nil
	if r, err := s.MoveSamples(ctx, now.Add(lifecycle.MovedGrace)); err != nil || r != (lifecycle.Moved{}) || len(x.calls) != 0 {
		t.Fatalf("within the grace: %+v %v %v", r, err, x.calls)
	}
	if r, err := s.MoveSamples(ctx, now.Add(lifecycle.MovedGrace+time.Second)); err != nil || r != (lifecycle.Moved{Dropped: 3}) {
		t.Fatalf("past the grace: %+v %v", r, err)
	}
	if want := []string{"drop down", "drop finer", "drop same"}; !slices.Equal(x.calls, want) {
		t.Fatalf("past the grace: calls %v, want %v", x.calls, want)
	}

	// Without a way to read raw files there is no tier.
	if r, err := (&lifecycle.Service{Tier: x}).MoveSamples(ctx, now); err != nil || r != (lifecycle.Moved{}) {
		t.Fatalf("without Reindex: %+v %v", r, err)
	}
}
