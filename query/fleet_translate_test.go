package query

import (
	"context"
	"slices"
	"testing"
)

// stackSource serves profiles' stack keys, and nothing else.
type stackSource struct {
	Source // nil: only ProfileStacks is called
	keys   map[string][]int64
}

func (s stackSource) ProfileStacks(_ context.Context, _ int64, id string) ([]int64, error) {
	return s.keys[id], nil
}

// translateAll translates each profile of src in a tenant's numbering, as
// a fleet query does, and checks that the ids stand for the profile's
// keys; each returns the numbering's generation.
func translateAll(t *testing.T, s *Service, src stackSource, ids []string, each func(gen uint64)) {
	t.Helper()
	for _, id := range ids {
		d := s.denseIDs(7)
		got, err := s.translation(context.Background(), 7, id, d)
		if err != nil {
			t.Fatal(err)
		}
		keys := make([]int64, len(got))
		for i, k := range d.keysOf(got) {
			keys[i] = k.key
		}
		if !slices.Equal(keys, src.keys[id]) {
			t.Fatalf("profile %s: its ids stand for other keys", id)
		}
		each(d.gen)
	}
}

// TestDenseNumberingBounded: a tenant's numbering of its stack keys is
// held in the cache budget: with a small budget and many distinct stacks,
// the numberings cached never exceed their share, a numbering that
// outgrows it is replaced by a new one, and translations stay exact.
func TestDenseNumberingBounded(t *testing.T) {
	const budget = 1 << 20
	share := int64(budget) * 2 / 79 // the dense cache's share (New)
	src := stackSource{keys: map[string][]int64{}}
	var ids []string
	for p := range 200 { // 200 profiles of 100 stacks each, none shared: 20,000 keys
		id := string(rune('A'+p/26)) + string(rune('a'+p%26))
		for i := range 100 {
			src.keys[id] = append(src.keys[id], int64(p*1000+i))
		}
		ids = append(ids, id)
	}
	s := New(src, Options{CacheBytes: budget})
	gens := map[uint64]bool{}
	translateAll(t, s, src, ids, func(gen uint64) {
		gens[gen] = true
		if n := s.dense.Bytes(); n > share {
			t.Fatalf("numberings cached: %d bytes, over their share %d", n, share)
		}
		if d, ok := s.dense.Get(7); ok && d.sizeBytes()*2 > share {
			t.Fatalf("numbering cached: %d bytes, over half its share %d", d.sizeBytes(), share)
		}
	})
	if len(gens) < 20 { // ~250 keys a numbering at most: 80 or so
		t.Fatalf("%d numberings for 20,000 keys in a %d-byte share: one grew past it", len(gens), share)
	}
	// Within the budget, one numbering serves every profile.
	s = New(src, Options{})
	gens = map[uint64]bool{}
	translateAll(t, s, src, ids, func(gen uint64) { gens[gen] = true })
	translateAll(t, s, src, ids, func(gen uint64) { gens[gen] = true })
	if len(gens) != 1 {
		t.Fatalf("%d numberings within the budget, want 1", len(gens))
	}
}
