package query

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// Stack buckets. A merged flame graph over hours would read every second
// of samples of every profile in its window. Instead, the window's whole
// ten-minute buckets (index.BucketSeconds, aligned in unix time) are read
// as one stored row per host and bucket: that host's samples of the event
// in the bucket, counted by tenant stack key (index.StackBucket). Only the
// window's edges, at most ten minutes each side, are counted from the
// per-second rows, exactly as before. A day of ten hosts is 1,440 rows
// instead of 864,000 seconds.
//
// A stored bucket names the profiles it counted: the SHA-256 of their ids
// and clock shifts. It serves a query only when the profiles the query
// selected for that host and bucket hash the same, so an upload, deletion
// or change of app or host since it was counted is never served stale:
// the bucket is counted from the per-second rows then (exact, as always),
// and stored again, once it is sealed (its end more than bucketGrace in
// the past: a bucket still being recorded would be rewritten at every
// query). Label conditions (which choose profiles, not whole hosts) and
// thread filters (which a bucket does not keep) leave the buckets unread.

// StackBuckets stores stack buckets. A Source that has them serves merged
// flame graphs over hours from them; the Postgres store does, a local
// file's memory store needs none.
type StackBuckets interface {
	// FleetStackBuckets returns the stored buckets of app's event (base
	// name) starting in the unix seconds [from, to), on any of hosts (none:
	// all).
	FleetStackBuckets(ctx context.Context, tenant int64, app, event string, hosts []string, from, to int64) ([]index.StackBucket, error)
	// PutFleetStackBuckets stores buckets, each replacing its host and
	// bucket's.
	PutFleetStackBuckets(ctx context.Context, tenant int64, app, event string, bs []index.StackBucket) error
}

// bucketGrace is how long after its end a bucket is sealed: stored once
// counted. Later uploads into it are still counted exactly (its profiles
// then hash differently); they only cost a recount.
const bucketGrace = 2 * time.Minute

// bucketPlan is how a flame graph's window is counted: whole buckets from
// stored rows (hits), or counted again and stored (misses); the edges, and
// every bucket when none is read, from the per-second rows.
type bucketPlan struct {
	from, to int64 // unix seconds of the whole buckets [from, to)
	hits     []index.StackBucket
	misses   []bucketMiss
}

// bucketMiss is a bucket to count from the per-second rows: its profiles,
// and the parts counting them while it is counted.
type bucketMiss struct {
	index.StackBucket
	profiles []*fleetscope.ProfileInfo
	parts    []*part
}

// planBuckets returns how to count the selection's window, or nil when no
// bucket serves it (the source keeps none, the window holds no whole
// bucket, or the selection chooses what buckets do not keep).
func (s *Service) planBuckets(ctx context.Context, tenant int64, f *fleet) (*bucketPlan, error) {
	sb, ok := s.src.(StackBuckets)
	if !ok || s.noBuckets || len(f.sel.Labels) > 0 || f.filter.m != nil && f.filter.f.ByThread() || len(f.timed) == 0 {
		return nil, nil
	}
	const w = index.BucketSeconds
	b := &bucketPlan{from: -index.FloorTo(-f.sel.From, w*1e9) / 1e9, to: index.FloorTo(f.sel.To, w*1e9) / 1e9}
	if b.from >= b.to {
		return nil, nil
	}
	// Each host's profiles with samples in each bucket.
	type hostBucket struct {
		host   string
		bucket int64
	}
	byBucket := map[hostBucket][]*fleetscope.ProfileInfo{}
	for _, p := range f.timed {
		start, end := fleetscope.WallSpan(p)
		// end inclusive: a bucket that may hold a sample (a profile with
		// none there only changes the hash, never a count)
		lo, hi := max(index.FloorTo(index.FloorTo(start, 1e9)/1e9, w), b.from), min(index.FloorTo(index.FloorTo(end, 1e9)/1e9, w), b.to-w)
		for bk := lo; bk <= hi; bk += w {
			k := hostBucket{p.Host, bk}
			byBucket[k] = append(byBucket[k], p)
		}
	}
	if len(byBucket) == 0 {
		return b, nil
	}
	stored, err := sb.FleetStackBuckets(ctx, tenant, f.sel.App, f.event, f.sel.Hosts, b.from, b.to)
	if err != nil {
		return nil, err
	}
	have := map[hostBucket]*index.StackBucket{}
	for i := range stored {
		have[hostBucket{stored[i].Host, stored[i].Bucket}] = &stored[i]
	}
	for k, ps := range byBucket {
		sum := profilesHash(ps)
		if h, ok := have[k]; ok && h.Profiles == sum {
			b.hits = append(b.hits, *h)
			continue
		}
		b.misses = append(b.misses, bucketMiss{StackBucket: index.StackBucket{Host: k.host, Bucket: k.bucket, Profiles: sum}, profiles: ps})
	}
	slices.SortFunc(b.hits, func(x, y index.StackBucket) int { return cmpBucket(&x, &y) })
	slices.SortFunc(b.misses, func(x, y bucketMiss) int { return cmpBucket(&x.StackBucket, &y.StackBucket) })
	return b, nil
}

func cmpBucket(x, y *index.StackBucket) int {
	return cmp.Or(cmp.Compare(x.Bucket, y.Bucket), cmp.Compare(x.Host, y.Host))
}

// profilesHash names a set of profiles: their ids and clock shifts, in id
// order (what a bucket counts of them depends on nothing else: a stored
// profile's samples never change).
func profilesHash(ps []*fleetscope.ProfileInfo) [32]byte {
	ps = slices.Clone(ps)
	slices.SortFunc(ps, func(a, b *fleetscope.ProfileInfo) int { return cmp.Compare(a.ID, b.ID) })
	h := sha256.New()
	var b [8]byte
	for _, p := range ps {
		h.Write([]byte(p.ID))
		binary.LittleEndian.PutUint64(b[:], uint64(p.WallShiftNanos))
		h.Write(b[:])
	}
	var out [32]byte
	h.Sum(out[:0])
	return out
}

// edgeParts is the parts that count the window under plan b apart from
// its buckets: the edges of every timed profile, and the untimed profiles.
func (f *fleet) edgeParts(b *bucketPlan) partSet {
	var ps partSet
	ps.timed(f, f.timed, f.sel.From, b.from*1e9)
	ps.timed(f, f.timed, b.to*1e9, f.sel.To)
	ps.untimed(f)
	return ps
}

// missGroup bounds the profile parts counted at once for missed buckets
// (each holds two counts a stack of its profile).
const missGroup = 512

// countMisses counts the missed buckets from their profiles' per-second
// rows, a group of them at a time (one round trip each), into stack
// buckets added to the hits, and stores the sealed ones. Storing is an
// optimisation: a bucket that cannot be stored now (a read-only replica,
// a lost connection) is counted again next time, so its error is not the
// answer's.
func (s *Service) countMisses(ctx context.Context, tenant int64, f *fleet, b *bucketPlan, d *denseIDs, now time.Time) error {
	var sum, weights []uint64 // by dense id, zero between buckets
	var touched []int32
	for i := 0; i < len(b.misses); {
		var ps partSet
		first := i
		for ; i < len(b.misses) && (i == first || len(ps.parts) < missGroup); i++ {
			m := &b.misses[i]
			n := len(ps.parts)
			ps.timed(f, m.profiles, m.Bucket*1e9, (m.Bucket+index.BucketSeconds)*1e9)
			m.parts = ps.parts[n:]
			for _, pt := range m.parts {
				pt.weights = []uint64{} // sized by translateParts
			}
		}
		if err := s.translateParts(ctx, tenant, f, ps.parts, d, true); err != nil {
			return err
		}
		if err := s.countParts(ctx, tenant, f, ps.parts, ps.reqs, ps.owner, false); err != nil {
			return err
		}
		if n := d.len(); len(sum) < n {
			sum, weights = make([]uint64, n), make([]uint64, n)
		}
		for k := first; k < i; k++ {
			m := &b.misses[k]
			for _, pt := range m.parts {
				for j, c := range pt.counts {
					if c != 0 || pt.weights[j] != 0 {
						id := pt.trans[j]
						if sum[id] == 0 && weights[id] == 0 {
							touched = append(touched, id)
						}
						sum[id] += c
						weights[id] += pt.weights[j]
					}
				}
			}
			keys := d.keysOf(touched)
			slices.SortFunc(keys, func(x, y keyID) int { return cmp.Compare(x.key, y.key) })
			for _, k := range keys {
				m.Keys, m.Counts, m.Weights = append(m.Keys, k.key), append(m.Counts, sum[k.id]), append(m.Weights, weights[k.id])
				sum[k.id], weights[k.id] = 0, 0
			}
			touched, m.parts, m.profiles = touched[:0], nil, nil
		}
	}
	sealed := now.Add(-bucketGrace).Unix()
	var store []index.StackBucket
	for _, m := range b.misses {
		if m.Bucket+index.BucketSeconds <= sealed {
			store = append(store, m.StackBucket)
		}
		b.hits = append(b.hits, m.StackBucket)
	}
	_ = s.src.(StackBuckets).PutFleetStackBuckets(ctx, tenant, f.sel.App, f.event, store)
	return nil
}

// bucketParts are stored counts by stack key (ten-minute buckets, hour
// and day rollups) as parts named by name, their stacks numbered in d,
// counting samples, or periods with byPeriod.
func (s *Service) bucketParts(tenant int64, bs []index.StackBucket, d *denseIDs, byPeriod bool, name func(*index.StackBucket) string) []*part {
	out := make([]*part, len(bs))
	for i := range bs {
		h := &bs[i]
		ids, grew := d.translate(h.Keys)
		if grew {
			s.grown(tenant, d)
		}
		c := h.Counts
		if byPeriod {
			c = h.Weights
		}
		out[i] = &part{id: name(h), trans: ids, counts: c}
	}
	return out
}

// hitParts are a plan's buckets (stored, and counted) as parts.
func (s *Service) hitParts(tenant int64, b *bucketPlan, d *denseIDs, byPeriod bool) []*part {
	return s.bucketParts(tenant, b.hits, d, byPeriod, func(h *index.StackBucket) string {
		return fmt.Sprintf("\x00bucket %s %d %x", h.Host, h.Bucket, h.Profiles[:8])
	})
}

// CompactBuckets counts and stores the sealed stack buckets of app's hosts
// that [from, to) (unix ns) touches and that are missing or stale, for
// every event of the app's profiles there, an hour at a time, so that the
// merged flame graphs asked for next read them rather than count them
// (the server calls it for the profiles it stored). It returns the buckets
// stored, and where the sealed buckets end (unix ns): the rest of the
// window is for a later call. Like a query's own counting, it is an
// optimisation that cannot make an answer wrong: a bucket is used only for
// the profiles it counted.
func (s *Service) CompactBuckets(ctx context.Context, tenant int64, app string, from, to int64, now time.Time) (stored int, sealed int64, err error) {
	const w, step = index.BucketSeconds * 1e9, 6 * index.BucketSeconds * 1e9
	sealed = index.FloorTo(now.Add(-bucketGrace).UnixNano(), w)
	if _, ok := s.src.(StackBuckets); !ok || s.noBuckets {
		return 0, sealed, nil
	}
	from, to = index.FloorTo(from, w), min(-index.FloorTo(-to, w), sealed)
	for lo := from; lo < to; lo += step {
		sel := fleetscope.FleetSelection{App: app, From: lo, To: min(lo+step, to), IncludeIdle: true}
		f, err := s.selectProfiles(ctx, tenant, sel)
		if err != nil {
			return stored, sealed, err
		}
		events := map[string]bool{}
		for _, p := range f.timed {
			for _, e := range p.Events {
				events[fleetscope.EventBase(e.Name)] = true
			}
		}
		for e := range events {
			f.event = e
			b, err := s.planBuckets(ctx, tenant, f)
			if err != nil {
				return stored, sealed, err
			}
			if b == nil {
				continue
			}
			if err := s.countMisses(ctx, tenant, f, b, s.denseIDs(tenant), now); err != nil {
				return stored, sealed, err
			}
			stored += len(b.misses)
		}
	}
	return stored, sealed, nil
}
