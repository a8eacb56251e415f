package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// A fleet query whose answer counts nothing says so: which selection
// matched nothing in which window, and when the app's profiles (and each
// named host's) do lie, so that the next query can aim at them. Exit
// status 3 (emptyAnswer).

// maxHostSpans is how many named hosts get their own span in the message.
const maxHostSpans = 5

// emptyFleet is the error of a fleet answer that counted nothing. Its
// message is one line: what matched, and where the profiles are.
func (cl *client) emptyFleet(ctx context.Context, sel *fsv1.FleetSelection, acc *fsv1.Accounting) error {
	what := describeSelection(sel)
	window := fmt.Sprintf("[%s, %s)", formatTime(sel.GetFrom().AsTime()), formatTime(sel.GetTo().AsTime()))
	if n := acc.GetProfiles(); n > 0 {
		msg := fmt.Sprintf("%d %s of %s in %s, but none of their samples counted", n, plural(int(n), "profile", "profiles"), what, window)
		if ev := acc.GetEvent(); ev != "" {
			msg += " (event " + ev
			if sel.GetFilter() != nil {
				msg += ", after the sample filters"
			}
			msg += ")"
		}
		return emptyAnswer{fmt.Errorf("%s%s", msg, leftOut(acc))}
	}
	msg := fmt.Sprintf("0 profiles of %s in %s%s", what, window, leftOut(acc))
	first, last, ok, err := cl.span(ctx, sel.GetApp(), "")
	switch {
	case err != nil:
		msg += fmt.Sprintf("; when the app's profiles lie is unknown (%v)", remoteErr(err))
	case !ok:
		msg += fmt.Sprintf("; app %s has no profiles at all (fleetscope profiles lists the stored ones)", sel.GetApp())
	default:
		msg += fmt.Sprintf("; the app's profiles span %s", spanText(first, last))
		if hosts := sel.GetHosts(); len(hosts) <= maxHostSpans {
			for _, h := range hosts {
				first, last, ok, err := cl.span(ctx, sel.GetApp(), h)
				switch {
				case err != nil:
				case !ok:
					msg += fmt.Sprintf("; host %s has none", h)
				default:
					msg += fmt.Sprintf("; host %s's profiles span %s", h, spanText(first, last))
				}
			}
		}
	}
	return emptyAnswer{fmt.Errorf("%s", msg)}
}

// describeSelection names a selection: "app checkout, host web-7, label
// env=prod".
func describeSelection(sel *fsv1.FleetSelection) string {
	parts := []string{"app " + sel.GetApp()}
	if hosts := sel.GetHosts(); len(hosts) > 0 {
		parts = append(parts, plural(len(hosts), "host", "hosts")+" "+strings.Join(hosts, " or "))
	}
	for _, l := range sel.GetLabels() {
		op := "="
		if l.GetNotEqual() {
			op = "!="
		}
		parts = append(parts, "label "+l.GetName()+op+l.GetValue())
	}
	return strings.Join(parts, ", ")
}

// formatTime writes an instant in UTC as --from and --to read it, to the
// nanosecond when it has a fraction.
func formatTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// spanText writes a span to the second, outwards: "2026-11-23T10:00:00Z
// to 2026-11-23T10:05:00Z".
func spanText(first, last time.Time) string {
	end := last.UTC().Truncate(time.Second)
	if end.Before(last) {
		end = end.Add(time.Second)
	}
	return first.UTC().Truncate(time.Second).Format(time.RFC3339) + " to " + end.Format(time.RFC3339)
}

// span returns when the profiles of app (on host, if not empty) begin,
// to the second, and when the last to begin ends; ok is false when there
// are none. Profiles are searched newest first, so the first is found by
// searching for ever earlier ones: one search when they fit on one page,
// else a few dozen searches of one profile each (galloping back, then
// halving the interval).
func (cl *client) span(ctx context.Context, app, host string) (first, last time.Time, ok bool, err error) {
	search := func(until time.Time, size int32) (*fsv1.SearchProfilesResponse, error) {
		req := &fsv1.SearchProfilesRequest{App: app, Host: host, PageSize: size}
		if !until.IsZero() {
			req.Until = timestamppb.New(until)
		}
		res, err := cl.query.SearchProfiles(ctx, connect.NewRequest(req))
		if err != nil {
			return nil, err
		}
		return res.Msg, nil
	}
	page, err := search(time.Time{}, 1000)
	if err != nil || len(page.GetProfiles()) == 0 {
		return first, last, false, err
	}
	ps := page.GetProfiles()
	last = slices.MaxFunc(ps, func(a, b *fsv1.Profile) int { return a.GetEndTime().AsTime().Compare(b.GetEndTime().AsTime()) }).GetEndTime().AsTime()
	hi := ps[len(ps)-1].GetStartTime().AsTime() // the newest first: the earliest start of the page
	if page.GetNextPageToken() == "" {
		return hi, last, true, nil
	}
	// A profile begins at hi; is there an earlier one?
	before := func(t time.Time) (time.Time, bool, error) {
		m, err := search(t, 1)
		if err != nil || len(m.GetProfiles()) == 0 {
			return time.Time{}, false, err
		}
		return m.GetProfiles()[0].GetStartTime().AsTime(), true, nil
	}
	epoch := time.Unix(0, 0)
	var lo time.Time // none begins before lo
	for step := time.Second; ; step *= 2 {
		t := hi.Add(-step)
		if t.Before(epoch) || step > 100*365*24*time.Hour {
			t = epoch
		}
		s, found, err := before(t)
		if err != nil {
			return first, last, false, err
		}
		if !found {
			lo = t
			break
		}
		hi = s
		if t.Equal(epoch) {
			return hi, last, true, nil
		}
	}
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		s, found, err := before(mid)
		if err != nil {
			return first, last, false, err
		}
		if found {
			hi = s
		} else {
			lo = mid
		}
	}
	return hi, last, true, nil
}
