package query

import (
	"context"
	"sync"
	"sync/atomic"
)

// translateParts numbers the parts' stacks in d and, withCounts, gives
// each zeroed counts and the threads the fleet's filter keeps.
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
			pt.threads, err = s.keepThreads(ctx, tenant, pt.p.ID, f.filter)
		}
		return err
	})
}

// profileStacks returns a profile's stack keys, cached.
func (s *Service) profileStacks(ctx context.Context, tenant int64, id string) ([]int64, error) {
	k := profileKey{tenant, id}
	if ids, ok := s.stacks.Get(k); ok {
		return ids, nil
	}
	ids, err := s.src.ProfileStacks(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	s.stacks.Put(k, ids)
	return ids, nil
}

// denseIDs numbers a tenant's stack keys densely (0, 1, 2, ... in the order
// first seen), so that merging profiles' counts is adding arrays. A
// numbering only grows; past maxDense keys the tenant gets a new one (with
// a new generation), while queries holding the old one finish with it.
type denseIDs struct {
	gen   uint64 // unique among numberings
	mu    sync.Mutex
	byKey map[int64]int32
	keys  []int64
}

const maxDense = 4 << 20

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

// translate numbers keys.
func (d *denseIDs) translate(keys []int64) []int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
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
	return out
}

// denseGen numbers numberings.
var denseGen atomic.Uint64

// denseIDs returns a tenant's numbering (a new one once it is full).
func (s *Service) denseIDs(tenant int64) *denseIDs {
	s.denseMu.Lock()
	defer s.denseMu.Unlock()
	d, ok := s.dense[tenant]
	if !ok || d.len() > maxDense {
		d = &denseIDs{gen: denseGen.Add(1), byKey: map[int64]int32{}}
		s.dense[tenant] = d
	}
	return d
}

// translated is a profile's stacks as ids of one numbering.
type translated struct {
	gen uint64
	ids []int32
}

// translation returns a profile's stacks as ids of numbering d, cached.
func (s *Service) translation(ctx context.Context, tenant int64, id string, d *denseIDs) ([]int32, error) {
	k := profileKey{tenant, id}
	if t, ok := s.trans.Get(k); ok && t.gen == d.gen {
		return t.ids, nil
	}
	keys, err := s.profileStacks(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	ids := d.translate(keys)
	s.trans.Put(k, translated{d.gen, ids})
	return ids, nil
}
