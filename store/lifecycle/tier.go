package lifecycle

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// Tier is what the sample tier needs of the index (store/postgres
// implements it).
type Tier interface {
	// SamplesDue lists up to limit profiles due to leave the sample tier
	// at now (moved false), or moved before cutoff with their rows still
	// stored (moved true).
	SamplesDue(ctx context.Context, now, cutoff time.Time, moved bool, limit int) ([]fleetscope.ProfileRef, error)
	// MoveSamples has a profile's samples read from its raw file from now
	// on, used only if they hash to digest (nil: from its rows, for good).
	MoveSamples(ctx context.Context, tenant int64, id string, now time.Time, digest []byte) error
	// DropMovedSamples deletes the rows of a moved profile.
	DropMovedSamples(ctx context.Context, tenant int64, id string) error
	Profile(ctx context.Context, tenant int64, id string) (*fleetscope.ProfileInfo, error)
	// Seconds reads an event's stored rows (from > to: all).
	Seconds(ctx context.Context, tenant int64, id string, event int, from, to int64) ([]index.Second, error)
}

// Moved counts what MoveSamples did: profiles moved out of the tier,
// kept in it for good, and whose rows were deleted.
type Moved struct{ Moved, Kept, Dropped int }

// MovedGrace is how long a moved profile's rows stay stored: longer than
// any query that began before the move (and read the profile as still in
// the tier) takes (a call is bounded by a minute, api.UnaryTimeout), and
// than a server trusts cached profile metadata (seconds).
const MovedGrace = 15 * time.Minute

// MoveSamples moves the profiles past their tenant's sample tier at now
// out of it: for each, its raw file is parsed again (Reindex), and only
// if that gives back exactly its stored rows, event by event and byte for
// byte, is it marked as read from the raw file; otherwise its rows are
// kept for good, and logged. The rows of profiles moved more than
// MovedGrace before now are then deleted. Nothing is lost at any point: a
// profile is read from its rows until it is marked, and its rows go only
// after the mark (each step one transaction).
func (s *Service) MoveSamples(ctx context.Context, now time.Time) (r Moved, err error) {
	if s.Tier == nil || s.Reindex == nil {
		return r, nil
	}
	for {
		due, err := s.Tier.SamplesDue(ctx, now, now, false, 100)
		if err != nil {
			return r, err
		}
		var cs []checked
		var stop error
		for _, ref := range due {
			p, digest, differs, err := s.differs(ctx, ref)
			if fleetscope.ErrorCode(err) == fleetscope.ENOTFOUND {
				continue // deleted meanwhile
			}
			if err != nil {
				stop = err // the blob store or the index: the next sweep tries again
				break
			}
			if differs != "" {
				digest = nil
				if s.Log != nil {
					s.Log.Warn("sample tier: the raw file does not give back the stored rows; they are kept", "tenant", ref.Tenant, "profile", ref.ID, "why", differs)
				}
			}
			cs = append(cs, checked{ref, p, digest})
		}
		if err := s.move(ctx, now, cs, &r); err != nil {
			return r, err
		}
		if stop != nil {
			return r, stop
		}
		if len(due) < 100 {
			break
		}
	}
	for {
		due, err := s.Tier.SamplesDue(ctx, now, now.Add(-MovedGrace), true, 500)
		if err != nil {
			return r, err
		}
		for _, ref := range due {
			if err := s.Tier.DropMovedSamples(ctx, ref.Tenant, ref.ID); err != nil && fleetscope.ErrorCode(err) != fleetscope.ENOTFOUND {
				return r, err
			}
			r.Dropped++
		}
		if len(due) < 500 {
			return r, nil
		}
	}
}

// checked is a profile whose raw file was compared with its rows: digest
// nil if they differ.
type checked struct {
	ref    fleetscope.ProfileRef
	p      *fleetscope.ProfileInfo
	digest []byte
}

// move marks checked profiles: moved (a digest) or kept. The stack buckets
// of those moving are stored first, by tenant (BeforeMove).
func (s *Service) move(ctx context.Context, now time.Time, cs []checked, r *Moved) error {
	if s.BeforeMove != nil {
		byTenant := map[int64][]*fleetscope.ProfileInfo{}
		for _, c := range cs {
			if c.digest != nil {
				byTenant[c.ref.Tenant] = append(byTenant[c.ref.Tenant], c.p)
			}
		}
		for tenant, ps := range byTenant {
			if err := s.BeforeMove(ctx, tenant, ps); err != nil && s.Log != nil {
				s.Log.Warn("sample tier: stack buckets not stored before the move (queries count them)", "tenant", tenant, "profiles", len(ps), "err", err)
			}
		}
	}
	for _, c := range cs {
		if err := s.Tier.MoveSamples(ctx, c.ref.Tenant, c.ref.ID, now, c.digest); err != nil {
			return err
		}
		if s.Forget != nil {
			s.Forget(c.ref.Tenant, c.ref.ID) // its metadata now says where its samples are
		}
		if c.digest != nil {
			r.Moved++
		} else {
			r.Kept++
		}
	}
	return nil
}

// differs returns a profile and the digest of its stored rows
// (index.Digest), and says how its raw file, parsed again, does not give
// them back exactly ("": it does). An error is a failure to find out (the
// blob store, the index), not an answer.
func (s *Service) differs(ctx context.Context, ref fleetscope.ProfileRef) (*fleetscope.ProfileInfo, []byte, string, error) {
	p, err := s.Tier.Profile(ctx, ref.Tenant, ref.ID)
	if err != nil {
		return nil, nil, "", err
	}
	ix, err := s.Reindex(ctx, p)
	var fe *fleetscope.Error
	if errors.As(err, &fe) && fe.Code == fleetscope.EINTERNAL {
		return p, nil, err.Error(), nil // missing, or no longer parses
	}
	if err != nil {
		return nil, nil, "", err
	}
	if err := ix.Reunit(p.TimeUnitNanos); err != nil { // stored before its unit was found
		return p, nil, err.Error(), nil
	}
	if len(ix.Events) != len(p.Events) || ix.StartSecond != p.StartSecond || ix.Timed != p.Timed || ix.TimeUnitNanos != p.TimeUnitNanos {
		return p, nil, "its events or clock differ", nil
	}
	built := ix.ByEvent(len(ix.Events))
	stored := make([][]index.Second, len(ix.Events))
	for ev := range ix.Events {
		if ix.Events[ev].Name != p.Events[ev].Name || ix.Events[ev].Samples != p.Events[ev].Samples {
			return p, nil, fmt.Sprintf("event %d differs", ev), nil
		}
		if stored[ev], err = s.Tier.Seconds(ctx, ref.Tenant, ref.ID, ev, 0, -1); err != nil {
			return nil, nil, "", err
		}
		// (stored without their busy cells)
		if err := index.FillMissingCells(stored[ev], p.TimeUnitNanos, p.Events[ev].Period, p.Events[ev].Weighted); err != nil {
			return p, nil, fmt.Sprintf("event %d %v", ev, err), nil
		}
		if err := sameRows(stored[ev], built[ev]); err != nil {
			return p, nil, fmt.Sprintf("event %d: %v", ev, err), nil
		}
	}
	digest := index.Digest(stored)
	return p, digest[:], "", nil
}

// sameRows compares stored rows with rows built again, field by field.
func sameRows(stored, built []index.Second) error {
	if len(stored) != len(built) {
		return fmt.Errorf("%d rows stored, %d built", len(stored), len(built))
	}
	for i := range stored {
		a, b := &stored[i], &built[i]
		// (offsets compared as uvarint steps: rows stored before packed
		// offsets hold those, rows built again are packed)
		ao, aok := index.CanonicalOffsets(a)
		bo, bok := index.CanonicalOffsets(b)
		if a.Second != b.Second || a.Samples != b.Samples || !slices.Equal(a.Cells, b.Cells) || !slices.Equal(a.IdleCells, b.IdleCells) ||
			!aok || !bok || !bytes.Equal(ao, bo) || !bytes.Equal(a.Stacks, b.Stacks) || !bytes.Equal(a.Periods, b.Periods) || !bytes.Equal(a.Threads, b.Threads) {
			return fmt.Errorf("second %d differs", a.Second)
		}
	}
	return nil
}
