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
// the cache never holds more than its budget, nor a numbering over half of
// it; a numbering that outgrows that is replaced by a new one, and
// translations stay exact.
func TestDenseNumberingBounded(t *testing.T) {
	const budget = 64 << 10
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
		if n := s.cache.Bytes(); n > budget {
			t.Fatalf("%d bytes cached, over the budget %d", n, budget)
		}
		if d, ok := s.dense.Get(7); ok && d.sizeBytes()*2 > budget {
			t.Fatalf("numbering cached: %d bytes, over half the budget %d", d.sizeBytes(), budget)
		}
	})
	if len(gens) < 20 { // ~600 keys a numbering at most: 30 or more
		t.Fatalf("%d numberings for 20,000 keys in a %d-byte budget: one grew past it", len(gens), budget)
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
