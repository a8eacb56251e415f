package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/pprof/profile"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/ingest/corpus"
)

// TestUploadSaysWhereInTime: upload prints, on stderr, where each profile
// sits in wall-clock time (UTC, to the millisecond, as GetProfile has it),
// how long it lasts and which clock placed it, so a profile recorded days
// ago on an epoch clock, which `profiles --since 2h` leaves out, is no
// surprise. stdout keeps its one line per file.
func TestUploadSaysWhereInTime(t *testing.T) {
	s := startService(t, serviceOpts{})
	ctx := context.Background()
	_, q := s.clients()
	epoch := plant(t, "--seed", "45", "--seconds", "5", "--epoch")
	boot := plant(t, "--seed", "46", "--seconds", "3")
	pprofPath := corpus.Path(t, "corpus/pprof/go-sha-sort.cpu.pprof")
	out, errOut, code := s.cli("upload", "--app", "test", epoch, boot, pprofPath)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) != 3 {
		t.Fatalf("upload of 3 files: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	said := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		file, rest, _ := strings.Cut(l, ": ")
		said[file] = rest
	}
	raw, _ := os.ReadFile(pprofPath)
	pp, err := profile.Parse(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		path, clock, why string
		duration         string // as printed
		ago              bool
	}{
		{epoch, "realtime", "the profile's own wall-clock timestamps", "", true},
		{boot, "upload", "no wall clock in the profile: placed as ending at upload time", "", false},
		{pprofPath, "span", "no per-sample times: the span its profiler recorded", fmt.Sprintf("%.3f s", time.Duration(pp.DurationNanos).Round(time.Millisecond).Seconds()), true},
	} {
		id := strings.Fields(lines[i])[0]
		res, err := q.GetProfile(ctx, connect.NewRequest(&fsv1.GetProfileRequest{Id: id}))
		if err != nil {
			t.Fatal(err)
		}
		p := res.Msg.GetProfile()
		start, end := p.GetStartTime().AsTime().UTC().Round(time.Millisecond), p.GetEndTime().AsTime().UTC().Round(time.Millisecond)
		if c.duration == "" {
			c.duration = fmt.Sprintf("%.3f s", time.Duration(p.GetDurationNanos()).Round(time.Millisecond).Seconds())
		} else if p.GetDurationNanos() != pp.DurationNanos {
			t.Errorf("%s: GetProfile duration %d ns, the pprof file says %d", c.path, p.GetDurationNanos(), pp.DurationNanos)
		}
		endText := end.Format("15:04:05.000")
		if end.Format("2006-01-02") != start.Format("2006-01-02") {
			endText = end.Format("2006-01-02 15:04:05.000")
		}
		want := fmt.Sprintf("%s–%s UTC, %s, clock %s (%s)", start.Format("2006-01-02 15:04:05.000"), endText, c.duration, c.clock, c.why)
		got := said[c.path]
		if !strings.HasPrefix(got, want) || p.GetTimeSource() != c.clock {
			t.Errorf("%s: upload said\n%q\nwant it to begin\n%q (GetProfile: %s)", c.path, got, want, p.GetTimeSource())
		}
		if ago := strings.Contains(got, " ago"); ago != c.ago {
			t.Errorf("%s: %q: says how long ago it ended: %v, want %v", c.path, got, ago, c.ago)
		}
	}
	// The pprof profile's duration is the one `profiles` prints too.
	for _, l := range strings.Split(s.mustCLI("profiles", "--app", "test"), "\n") {
		if strings.HasPrefix(l, strings.Fields(lines[2])[0]) && !strings.Contains(l, " "+time.Duration(pp.DurationNanos).Round(time.Millisecond).String()+" ") {
			t.Errorf("profiles lists the pprof profile as %q, want its duration %v", l, time.Duration(pp.DurationNanos).Round(time.Millisecond))
		}
	}
	// The epoch profile ended days ago: the line says so, and indeed a
	// search of the last 2 hours does not find it (the boot-clock one, placed
	// at upload time, it finds).
	if !strings.Contains(said[epoch], " d ") {
		t.Errorf("epoch profile: %q: want how many days ago it ended", said[epoch])
	}
	recent := s.mustCLI("profiles", "--since", "2h", "--json")
	if strings.Contains(recent, strings.Fields(lines[0])[0]) || !strings.Contains(recent, strings.Fields(lines[1])[0]) {
		t.Errorf("profiles --since 2h: %s", recent)
	}
}

// TestPlacementWording: the clock kinds and how long ago, to the minute.
func TestPlacementWording(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{time.Minute, "1 min"}, {59*time.Minute + 59*time.Second, "59 min"}, {61 * time.Minute, "1 h 01 min"},
		{26*time.Hour + 5*time.Minute, "1 d 2 h"}, {5 * 24 * time.Hour, "5 d 0 h"},
	} {
		if got := roughly(c.d); got != c.want {
			t.Errorf("roughly(%v) = %q, want %q", c.d, got, c.want)
		}
	}
	for _, src := range []string{"realtime", "anchored", "upload", "span"} {
		if clocks[src] == "" {
			t.Errorf("time source %q has no wording", src)
		}
	}
}
