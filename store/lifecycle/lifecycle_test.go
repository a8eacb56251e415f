package lifecycle_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/blob/localfs"
	"github.com/fleetscope/fleetscope/store/lifecycle"
)

// index records the calls lifecycle makes (the methods a test does not
// use are the embedded nil interface's).
type index struct {
	lifecycle.Index
	calls   []string
	expired []fleetscope.ProfileRef
}

func (x *index) DeleteProfile(_ context.Context, _ int64, id, _ string) (string, error) {
	x.calls = append(x.calls, "delete "+id)
	return "blob-" + id, nil
}

func (x *index) BlobInUse(context.Context, string) (bool, error) { return false, nil }

func (x *index) Expired(context.Context, time.Time, int) ([]fleetscope.ProfileRef, error) {
	out := x.expired
	x.expired = nil
	return out, nil
}

func (x *index) LongestRetention(context.Context) (time.Duration, bool, error) { return 0, false, nil }

func (x *index) ReclaimDictionaries(context.Context) (fleetscope.Reclaimed, error) {
	x.calls = append(x.calls, "reclaim")
	return fleetscope.Reclaimed{Tenants: 1, Frames: 2}, nil
}

// TestDeletionsReclaimDictionaries: a deletion signals that a reclaim is
// due (once, however many deletions came before it is taken), and a
// retention sweep reclaims after deleting the expired profiles. Every
// deletion, asked for or by retention, is passed to Forget.
func TestDeletionsReclaimDictionaries(t *testing.T) {
	ctx := context.Background()
	blobs, err := localfs.New(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	x := &index{}
	s := &lifecycle.Service{DB: x, Blobs: blobs}
	s.Forget = func(tenant int64, id string) { x.calls = append(x.calls, fmt.Sprintf("forget %d %s", tenant, id)) }
	select {
	case <-s.Deleted():
		t.Fatal("a reclaim due before any deletion")
	default:
	}
	for _, id := range []string{"a", "b"} {
		if err := s.Delete(ctx, 1, id, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if want := []string{"delete a", "forget 1 a", "delete b", "forget 1 b"}; !slices.Equal(x.calls, want) {
		t.Fatalf("deletions called %v, want %v", x.calls, want)
	}
	select {
	case <-s.Deleted():
	default:
		t.Fatal("no reclaim due after deletions")
	}
	select {
	case <-s.Deleted():
		t.Fatal("two deletions signalled twice")
	default:
	}

	x.calls = nil
	x.expired = []fleetscope.ProfileRef{{Tenant: 1, ID: "old"}}
	if n, err := s.Sweep(ctx, time.Now()); err != nil || n != 1 {
		t.Fatalf("sweep: %d %v", n, err)
	}
	if want := []string{"delete old", "forget 1 old", "reclaim"}; !slices.Equal(x.calls, want) {
		t.Fatalf("sweep called %v, want %v", x.calls, want)
	}
}
