package query

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"slices"
	"sync"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/query/flame"
)

// mergeParts adds up the parts' counts over dict, where at places each
// profile's stacks (partsDict): the stacks the filter keeps, idle ones
// only with idle.
func (s *Service) mergeParts(ctx context.Context, parts []*part, at map[string][]int32, dict *fleetscope.Dict, flt filter, idle bool) (*flame.Counts, error) {
	total := make([]uint64, dict.NumStacks())
	for _, pt := range parts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		at := at[pt.id]
		for i, c := range pt.counts {
			if c != 0 {
				total[at[i]] += c
			}
		}
	}
	counts := &flame.Counts{}
	keep, err := s.keepStacks(ctx, dict, flt)
	if err != nil {
		return nil, err
	}
	for i, c := range total {
		if c != 0 && (idle || !dict.Idle(fleetscope.StackID(i))) && (keep == nil || keep[i]) {
			counts.AddStack(fleetscope.StackID(i), c)
		}
	}
	return counts, nil
}

// partsDict returns the dictionary of every stack the parts' profiles have,
// whatever the range, and where each profile's stacks sit in it (by
// profile id, then the profile's stack): one cached dictionary (and
// layout) serves every range of a selection, as a user drags across it.
func (s *Service) partsDict(ctx context.Context, tenant int64, parts []*part, d *denseIDs) (*mergedDict, map[string][]int32, error) {
	set := s.stackSet(tenant, parts, d)
	m, err := s.mergedDict(ctx, set)
	if err != nil {
		return nil, nil, err
	}
	return m, set.at, nil
}

// stackSet is the distinct stacks of a set of profiles, sorted by key: the
// stacks of their merged dictionary, in its order.
type stackSet struct {
	byKey []keyID
	// at is where each profile's stacks sit in the dictionary, by profile
	// id (the queries' own map from the tenant's dense ids was as large as
	// the tenant's numbering, up to 4M entries, each query).
	at   map[string][]int32
	dict mergedKey // names the dictionary
}

// sizeBytes estimates the memory it holds.
func (v *stackSet) sizeBytes() int64 {
	n := 64 + 16*int64(len(v.byKey))
	for id, at := range v.at {
		n += 64 + int64(len(id)) + 4*int64(len(at))
	}
	return n
}

// setKey names the stacks of a set of a tenant's profiles in one numbering.
type setKey struct {
	tenant   int64
	gen      uint64
	profiles [32]byte // SHA-256 of the profile ids, in order
}

// stackSet returns the stacks of the parts' profiles, cached by the
// profiles: every range of a selection has the same ones, and sorting them
// (50,000 for the fleet benchmark's 20 hosts) was a third of a 1-s merged
// flame graph.
func (s *Service) stackSet(tenant int64, parts []*part, d *denseIDs) *stackSet {
	h := sha256.New()
	for _, pt := range parts {
		h.Write([]byte(pt.id))
		h.Write([]byte{0})
	}
	k := setKey{tenant: tenant, gen: d.gen}
	h.Sum(k.profiles[:0])
	set, _ := s.stackSets.Load(context.Background(), k, func() (*stackSet, error) {
		return newStackSet(tenant, parts, d), nil
	})
	return set
}

// newStackSet sorts the stacks of the parts' profiles.
func newStackSet(tenant int64, parts []*part, d *denseIDs) *stackSet {
	pos := make([]int32, d.len()) // dense id -> its stack in the dictionary (-1: seen, not yet placed)
	var ids []int32
	for _, pt := range parts {
		for _, id := range pt.trans {
			if pos[id] == 0 {
				pos[id] = -1
				ids = append(ids, id)
			}
		}
	}
	set := &stackSet{byKey: d.keysOf(ids), at: map[string][]int32{}, dict: mergedKey{tenant: tenant}}
	slices.SortFunc(set.byKey, func(a, b keyID) int { return cmp.Compare(a.key, b.key) })
	for i, k := range set.byKey {
		pos[k.id] = int32(i)
	}
	for _, pt := range parts {
		if _, ok := set.at[pt.id]; !ok {
			at := make([]int32, len(pt.trans))
			for i, id := range pt.trans {
				at[i] = pos[id]
			}
			set.at[pt.id] = at
		}
	}
	h := sha256.New()
	var b [8]byte
	for _, k := range set.byKey {
		binary.LittleEndian.PutUint64(b[:], uint64(k.key))
		h.Write(b[:])
	}
	h.Sum(set.dict.keys[:0])
	return set
}

// mergedKey names a fleet dictionary: a tenant and its sorted stack keys.
type mergedKey struct {
	tenant int64
	keys   [32]byte // SHA-256 of the keys
}

// mergedDict is a dictionary of a set of a tenant's stacks, with its flame
// graph layouts.
type mergedDict struct {
	dict    *fleetscope.Dict
	mu      sync.Mutex
	layouts map[flame.Annotate]*flame.Layout
}

// layout returns the dictionary's layout for a, built once; a build that
// ctx ends is not kept (the next request builds it).
func (m *mergedDict) layout(ctx context.Context, a flame.Annotate) (*flame.Layout, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.layouts[a]; ok {
		return l, nil
	}
	l, err := flame.NewLayoutContext(ctx, m.dict, a)
	if err != nil {
		return nil, err
	}
	m.layouts[a] = l
	return l, nil
}

// sizeBytes estimates the memory it holds, with a layout or two to come.
func (m *mergedDict) sizeBytes() int64 { return 2 * m.dict.SizeBytes() }

// mergedDict returns the dictionary of a set of stacks, cached: the same
// selection asked for other ranges reuses it.
func (s *Service) mergedDict(ctx context.Context, set *stackSet) (*mergedDict, error) {
	return s.merged.Load(ctx, set.dict, func() (*mergedDict, error) {
		return s.loadMergedDict(ctx, set)
	})
}

// loadMergedDict reads the dictionary of a set of stacks.
func (s *Service) loadMergedDict(ctx context.Context, set *stackSet) (*mergedDict, error) {
	keys := make([]int64, len(set.byKey))
	for i, k := range set.byKey {
		keys[i] = k.key
	}
	d, err := s.src.StackDict(ctx, set.dict.tenant, keys)
	if err != nil {
		return nil, err
	}
	return &mergedDict{dict: d, layouts: map[flame.Annotate]*flame.Layout{}}, nil
}
