package query

import (
	"context"
	"sync"
	"sync/atomic"
)

// translateParts numbers the parts' stacks in d and, withCounts, gives
// each zeroed counts (and weights, to those that have them) and the
// threads the fleet's filter keeps.
func (s *Service) translateParts(ctx context.Context, tenant int64, f *fleet, parts []*part, d *denseIDs, withCounts bool) error {
	return parallel(len(parts), fleetWorkers, func(i int) error {
		pt := parts[i]
		trans, err := s.translation(ctx, tenant, pt.p.ID, d)
		if err != nil {
			return err
		}
		pt.trans = trans
		if withCounts {
			pt.counts = make([]uint64, len(trans))
			if pt.weights != nil {
				pt.weights = make([]uint64, len(trans))
			}
			pt.threads, err = s.keepThreads(ctx, tenant, pt.p.ID, f.filter)
		}
		return err
	})
}

// profileStacks returns a profile's stack keys, cached.
func (s *Service) profileStacks(ctx context.Context, tenant int64, id string) ([]int64, error) {
	return s.stacks.Load(ctx, profileKey{tenant, id}, func() ([]int64, error) {
		return s.src.ProfileStacks(ctx, tenant, id)
	})
}

// denseIDs numbers a tenant's stack keys densely (0, 1, 2, ... in the order
// first seen), so that merging profiles' counts is adding arrays. A
// numbering only grows. It is cached, in the numberings table, and
// measured again each time it grows: once it is evicted, or outgrows what
// the cache keeps (half its budget) or maxDense keys, the tenant gets a
// new one (with a new generation, so that translations into the old one
// are not used), while queries holding the old one finish with it.
type denseIDs struct {
	gen   uint64 // unique among numberings
	mu    sync.Mutex
	byKey map[int64]int32
	keys  []int64
}

const maxDense = 4 << 20

// sizeBytes estimates the memory a numbering holds: its keys, and their
// map entries at about 40 bytes a key (Go's maps measured 32-44).
func (d *denseIDs) sizeBytes() int64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return 64 + 8*int64(cap(d.keys)) + 40*int64(len(d.keys))
}

func (d *denseIDs) len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.keys)
}

// keyID is a stack key and its number.
type keyID struct {
	key int64
	id  int32
}

// keysOf returns ids with their keys.
func (d *denseIDs) keysOf(ids []int32) []keyID {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]keyID, len(ids))
	for i, id := range ids {
		out[i] = keyID{d.keys[id], id}
	}
	return out
}

// translate numbers keys; grew tells whether some were new.
func (d *denseIDs) translate(keys []int64) (ids []int32, grew bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := len(d.keys)
	out := make([]int32, len(keys))
	for i, k := range keys {
		id, ok := d.byKey[k]
		if !ok {
			id = int32(len(d.keys))
			d.byKey[k] = id
			d.keys = append(d.keys, k)
		}
		out[i] = id
	}
	return out, len(d.keys) > n
}

// denseGen numbers numberings.
var denseGen atomic.Uint64

// denseIDs returns a tenant's numbering: the cached one, or a new one if
// there is none or it is full.
// (Not a cache Load: a full numbering is replaced, and a growing one is
// measured again, under denseMu.)
func (s *Service) denseIDs(tenant int64) *denseIDs {
	s.denseMu.Lock()
	defer s.denseMu.Unlock()
	d, ok := s.dense.Get(tenant)
	if !ok || d.len() > maxDense {
		d = &denseIDs{gen: denseGen.Add(1), byKey: map[int64]int32{}}
		s.dense.Put(tenant, d)
	}
	return d
}

// grown measures a tenant's numbering again after it grew, if it is still
// the cached one: the cache then evicts what its size needs (the numbering
// itself, if it outgrew the cache).
func (s *Service) grown(tenant int64, d *denseIDs) {
	s.denseMu.Lock()
	defer s.denseMu.Unlock()
	if cur, ok := s.dense.Get(tenant); ok && cur == d {
		s.dense.Put(tenant, d)
	}
}

// transKey names a profile's stacks as ids of one numbering (gen).
type transKey struct {
	profileKey
	gen uint64
}

// translation returns a profile's stacks as ids of numbering d, cached.
func (s *Service) translation(ctx context.Context, tenant int64, id string, d *denseIDs) ([]int32, error) {
	return s.trans.Load(ctx, transKey{profileKey{tenant, id}, d.gen}, func() ([]int32, error) {
		keys, err := s.profileStacks(ctx, tenant, id)
		if err != nil {
			return nil, err
		}
		ids, grew := d.translate(keys)
		if grew {
			s.grown(tenant, d)
		}
		return ids, nil
	})
}
