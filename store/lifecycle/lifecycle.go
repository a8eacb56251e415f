// Package lifecycle ends what ingest began: it deletes profiles and tenants
// from the index and the blob store together (the index first, in one
// transaction, then the raw files no profile still uses), reclaims the
// dictionary rows no profile uses any more, runs retention and the sample
// tier (tier.go: a profile's per-sample rows leave the index once its raw
// file is checked to give them back), and checks that the two stores
// agree. It parses nothing itself (Reindex is ingest's) and answers no
// queries.
package lifecycle

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/blob"
	"github.com/fleetscope/fleetscope/store/index"
)

// Index is what lifecycle needs of the index (store/postgres implements it).
type Index interface {
	// DeleteProfile removes a profile's index rows in one transaction and
	// returns its blob key; ENOTFOUND if the tenant has no such profile.
	DeleteProfile(ctx context.Context, tenant int64, id, actor string) (string, error)
	// DeleteTenant removes a tenant and all it owns from the index and
	// returns the blob keys its profiles used.
	DeleteTenant(ctx context.Context, name string) ([]string, error)
	// Expired lists up to limit profiles past their tenant's retention.
	Expired(ctx context.Context, now time.Time, limit int) ([]fleetscope.ProfileRef, error)
	// LongestRetention is the longest retention of all tenants; false if
	// a tenant keeps its profiles forever.
	LongestRetention(ctx context.Context) (time.Duration, bool, error)
	// DropPartitionsBefore drops the daily partitions that end before cutoff.
	DropPartitionsBefore(ctx context.Context, cutoff time.Time) ([]string, error)
	// BlobKeys lists every blob key the index refers to.
	BlobKeys(ctx context.Context) (map[string]bool, error)
	// BlobInUse reports whether any profile refers to a blob key.
	BlobInUse(ctx context.Context, key string) (bool, error)
	// ReclaimDictionaries deletes the dictionary rows no profile uses, of
	// every tenant a profile was deleted from since its last reclaim.
	ReclaimDictionaries(ctx context.Context) (fleetscope.Reclaimed, error)
}

// Service deletes, expires and checks stored profiles.
type Service struct {
	DB    Index
	Blobs blob.Store
	Log   *slog.Logger
	// Forget, if set, is told of every profile Delete deletes, whoever
	// asked (a request, a live stream, retention): the server forgets what
	// its caches hold of it (query.Service.Forget).
	Forget func(tenant int64, id string)
	// Tier and Reindex, if both set, run the sample tier (MoveSamples):
	// Reindex parses a stored profile's raw file again
	// (ingest.Service.Reindex).
	Tier    Tier
	Reindex func(ctx context.Context, p *fleetscope.ProfileInfo) (*index.Index, error)
	// BeforeMove, if set, is called with a tenant's profiles about to
	// leave the sample tier (up to a hundred at a time), while their rows
	// are still read: the server stores the stack buckets their samples
	// fall in, so that merged flame graphs over them need not read their
	// raw files. A failure is logged, not fatal.
	BeforeMove func(ctx context.Context, tenant int64, ps []*fleetscope.ProfileInfo) error

	once    sync.Once
	deleted chan struct{} // a profile was deleted (see Deleted)
}

// Deleted signals that profiles were deleted since it last did: a
// dictionary reclaim is due (the server runs Reclaim then).
func (s *Service) Deleted() <-chan struct{} { return s.due() }

func (s *Service) due() chan struct{} {
	s.once.Do(func() { s.deleted = make(chan struct{}, 1) })
	return s.deleted
}

// Reclaim deletes the dictionary rows no profile uses, of every tenant
// that had profiles deleted since its last reclaim (or whose last reclaim
// did not finish).
func (s *Service) Reclaim(ctx context.Context) (fleetscope.Reclaimed, error) {
	r, err := s.DB.ReclaimDictionaries(ctx)
	if r.Frames+r.Stacks > 0 && s.Log != nil {
		s.Log.Info("dictionary rows reclaimed", "tenants", r.Tenants, "frames", r.Frames, "stacks", r.Stacks, "bytes", r.Bytes)
	}
	return r, err
}

// dropBlob removes a blob unless a profile refers to it (the same bytes
// stored again meanwhile).
func (s *Service) dropBlob(ctx context.Context, key string) error {
	return blob.DeleteUnused(ctx, s.Blobs, key, s.DB.BlobInUse)
}

// Delete removes one of a tenant's profiles: its index rows in one
// transaction, then its raw file unless another profile still uses it.
// Its dictionary rows go at the next Reclaim (Deleted signals one is due).
// Returns ENOTFOUND for a profile the tenant does not have.
func (s *Service) Delete(ctx context.Context, tenant int64, id, actor string) error {
	key, err := s.DB.DeleteProfile(ctx, tenant, id, actor)
	if s.Forget != nil {
		s.Forget(tenant, id) // whatever the outcome: forgetting is never wrong
	}
	if err != nil {
		return err
	}
	select {
	case s.due() <- struct{}{}:
	default: // already signalled
	}
	if err := s.dropBlob(ctx, key); err != nil && s.Log != nil {
		// The index no longer refers to it: check --fix removes it later.
		s.Log.Warn("raw file of a deleted profile not deleted", "key", key, "err", err)
	}
	return nil
}

// Sweep deletes the profiles past their tenant's retention at now, moves
// those past their sample tier out of it (MoveSamples), then deletes the
// dictionary rows no profile uses any more (Reclaim: those of these
// deletions and of any before), and the daily partitions of per-second rows
// that every tenant's retention has passed. It returns how many profiles
// it deleted.
func (s *Service) Sweep(ctx context.Context, now time.Time) (int, error) {
	n := 0
	for {
		expired, err := s.DB.Expired(ctx, now, 500)
		if err != nil {
			return n, err
		}
		for _, p := range expired {
			if err := s.Delete(ctx, p.Tenant, p.ID, "retention"); err != nil && fleetscope.ErrorCode(err) != fleetscope.ENOTFOUND {
				return n, err
			}
			n++
		}
		if len(expired) < 500 {
			break
		}
	}
	moved, tierErr := s.MoveSamples(ctx, now) // a failure holds up nothing else
	if moved != (Moved{}) && s.Log != nil {
		s.Log.Info("sample tier", "moved", moved.Moved, "kept", moved.Kept, "rows_deleted", moved.Dropped)
	}
	_, reclaimErr := s.Reclaim(ctx) // a failure does not hold up the partitions
	reclaimErr = errors.Join(tierErr, reclaimErr)
	longest, ok, err := s.DB.LongestRetention(ctx)
	if err != nil || !ok {
		return n, errors.Join(reclaimErr, err)
	}
	dropped, err := s.DB.DropPartitionsBefore(ctx, now.Add(-longest-24*time.Hour))
	if len(dropped) > 0 && s.Log != nil {
		s.Log.Info("retention dropped partitions", "partitions", dropped)
	}
	return n, errors.Join(reclaimErr, err)
}

// PartialGrace is how old an unfinished blob write must be before Check
// calls it residue: younger ones may belong to an upload in flight.
const PartialGrace = time.Hour

// Report is what Check found.
type Report struct {
	Orphans  []string    // blobs no profile refers to (a crash between the two stores)
	Missing  []string    // profiles' blobs that are not there
	Partials []blob.Info // unfinished blob writes older than PartialGrace (a crash mid-write)
}

// Check compares the blob store with the index: blobs no profile refers
// to, profiles whose blob is missing, and unfinished writes begun before
// olderThan (now less PartialGrace, unless no upload can be in flight).
// With fix, orphans and partials are deleted.
func (s *Service) Check(ctx context.Context, olderThan time.Time, fix bool) (Report, error) {
	var r Report
	keys, err := s.DB.BlobKeys(ctx)
	if err != nil {
		return r, err
	}
	seen := map[string]bool{}
	err = s.Blobs.List(ctx, "", func(i blob.Info) error {
		seen[i.Key] = true
		if !keys[i.Key] {
			r.Orphans = append(r.Orphans, i.Key)
		}
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("list blobs: %w", err)
	}
	for k := range keys {
		if !seen[k] {
			r.Missing = append(r.Missing, k)
		}
	}
	err = s.Blobs.Partials(ctx, olderThan, fix, func(i blob.Info) error {
		r.Partials = append(r.Partials, i)
		return nil
	})
	if err != nil {
		return r, fmt.Errorf("unfinished blob writes: %w", err)
	}
	if fix {
		for _, k := range r.Orphans {
			if err := s.dropBlob(ctx, k); err != nil { // rechecks: an upload may have landed
				return r, err
			}
		}
	}
	return r, nil
}

// DeleteTenant deletes a tenant and everything it owns: its index rows in
// one transaction, then its raw files. It returns how many profiles it
// deleted; a raw file that could not be deleted is reported (fleetscope
// check --fix removes it later).
func (s *Service) DeleteTenant(ctx context.Context, name string) (int, error) {
	keys, err := s.DB.DeleteTenant(ctx, name)
	if err != nil {
		return 0, err
	}
	for _, k := range keys {
		if err := s.dropBlob(ctx, k); err != nil {
			return len(keys), fmt.Errorf("tenant deleted from the index; raw file %s not deleted (run fleetscope check --fix): %w", k, err)
		}
	}
	return len(keys), nil
}
