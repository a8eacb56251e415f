package api

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/ingest"
)

// TestAnchorOutOfRange: an anchor that is sent is checked, whatever its
// wall time: one in the year 1 (the zero time.Time) or without a wall time
// is refused, not taken for no anchor, and a clock reading of MinInt64 is
// named as the number it is. The service has no index and no blob store:
// an upload reaching them would panic.
func TestAnchorOutOfRange(t *testing.T) {
	s := &ingest.Service{TempDir: t.TempDir()}
	p := fleetscope.Principal{TenantID: 1, Scopes: []string{fleetscope.ScopeIngest}}
	body := "main;f 1\n"
	for _, tc := range []struct {
		name   string
		anchor *fsv1.ClockAnchor
		want   string
	}{
		{"year 1", &fsv1.ClockAnchor{ClockNanos: 1, WallTime: timestamppb.New(time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC))}, "the clock anchor's wall time 0001-01-01T00:00:00Z is outside"},
		{"no wall time", &fsv1.ClockAnchor{ClockNanos: 1}, "the clock anchor's wall time"},
		{"clock MinInt64", &fsv1.ClockAnchor{ClockNanos: math.MinInt64, WallTime: timestamppb.New(time.Unix(1795000000, 0))}, "timestamp -9223372036.854775808 s is outside"},
	} {
		m := metaFrom(&fsv1.UploadMetadata{App: "a", Anchor: tc.anchor})
		_, _, err := s.Ingest(context.Background(), p, m, strings.NewReader(body))
		if fleetscope.ErrorCode(err) != fleetscope.EINVALID || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("anchor %s: %v, want EINVALID saying %q", tc.name, err, tc.want)
		}
	}
}
