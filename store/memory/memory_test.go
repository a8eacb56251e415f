package memory_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/store/memory"
)

// The in-memory store serves the query service as the Postgres index does.
var _ query.Source = (*memory.Store)(nil)

const twoSeconds = `app 1 [000] 10.100000: 1 cpu-clock:
	1 main (/bin/app)

app 1 [000] 10.900000: 1 cpu-clock:
	2 f (/bin/app)
	1 main (/bin/app)

app 1 [000] 12.500000: 1 cpu-clock:
	1 main (/bin/app)

`

func TestSecondsAndSearch(t *testing.T) {
	ctx := context.Background()
	pr, err := ingest.ParseIndex(strings.NewReader(twoSeconds), "", 0, ingest.Shape{})
	if err != nil {
		t.Fatal(err)
	}
	st := memory.New()
	info := ingest.Describe(ingest.Meta{App: "a", Host: "h", Labels: map[string]string{"env": "prod"}}, pr, time.Unix(2e9, 0))
	id, err := st.Add(info, pr.Profile.Dict, pr.Index)
	if err != nil {
		t.Fatal(err)
	}
	all, err := st.Seconds(ctx, 0, id, 0, 0, -1)
	if err != nil || len(all) != 2 || all[0].Second != 0 || all[1].Second != 2 {
		t.Fatalf("all seconds: %+v, %v; want relative seconds 0 and 2", all, err)
	}
	if one, _ := st.Seconds(ctx, 0, id, 0, 1, 2); len(one) != 1 || one[0].Second != 2 || one[0].Samples != 1 {
		t.Fatalf("seconds [1, 2]: %+v", one)
	}
	if none, _ := st.Seconds(ctx, 0, id, 0, 1, 1); len(none) != 0 {
		t.Fatalf("seconds [1, 1]: %+v, want none", none)
	}
	if _, err := st.Profile(ctx, 0, "nope"); fleetscope.ErrorCode(err) != fleetscope.ENOTFOUND {
		t.Fatalf("unknown id: %v", err)
	}
	for _, tc := range []struct {
		f    fleetscope.ProfileFilter
		want int
	}{
		{fleetscope.ProfileFilter{App: "a"}, 1},
		{fleetscope.ProfileFilter{App: "b"}, 0},
		{fleetscope.ProfileFilter{Labels: map[string]string{"env": "prod"}}, 1},
		{fleetscope.ProfileFilter{Labels: map[string]string{"env": "dev"}}, 0},
		{fleetscope.ProfileFilter{Since: info.EndTime.Add(time.Second)}, 0},
		{fleetscope.ProfileFilter{Until: info.StartTime}, 0},
	} {
		got, _, _ := st.Search(ctx, 0, tc.f)
		if len(got) != tc.want {
			t.Errorf("search %+v: %d profiles, want %d", tc.f, len(got), tc.want)
		}
	}
}
