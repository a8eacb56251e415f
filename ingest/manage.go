package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/blob"
)

// Delete removes one of a tenant's profiles: its index rows in one
// transaction, then its raw file unless another profile still uses it.
// Returns ENOTFOUND for a profile the tenant does not have.
func (s *Service) Delete(ctx context.Context, tenant int64, id, actor string) error {
	key, err := s.DB.DeleteProfile(ctx, tenant, id, actor)
	if err != nil {
		return err
	}
	s.dropBlob(key)
	return nil
}

// Sweep deletes the profiles past their tenant's retention at now, and the
// daily partitions of per-second rows that every tenant's retention has
// passed. It returns how many profiles it deleted.
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
	longest, ok, err := s.DB.LongestRetention(ctx)
	if err != nil || !ok {
		return n, err
	}
	dropped, err := s.DB.DropPartitionsBefore(ctx, now.Add(-longest-24*time.Hour))
	if len(dropped) > 0 {
		s.logf("retention dropped partitions", "partitions", dropped)
	}
	return n, err
}

// Check compares the blob store with the index: blobs no profile refers
// to (orphans, e.g. left by a crash between the two) and profiles whose
// blob is missing. With fix, orphan blobs are deleted.
func (s *Service) Check(ctx context.Context, fix bool) (orphans, missing []string, err error) {
	keys, err := s.DB.BlobKeys(ctx)
	if err != nil {
		return nil, nil, err
	}
	seen := map[string]bool{}
	err = s.Blobs.List(ctx, "", func(i blob.Info) error {
		seen[i.Key] = true
		if !keys[i.Key] {
			orphans = append(orphans, i.Key)
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list blobs: %w", err)
	}
	for k := range keys {
		if !seen[k] {
			missing = append(missing, k)
		}
	}
	if fix {
		for _, k := range orphans {
			if used, err := s.DB.BlobInUse(ctx, k); err == nil && !used { // recheck: an upload may have landed
				if err := s.Blobs.Delete(ctx, k); err != nil {
					return orphans, missing, err
				}
			}
		}
	}
	return orphans, missing, nil
}
