package main

// The Pyroscope-compatible ingest end to end: a real Go program
// instrumented with pyroscope-go (testdata/pyroscope-app) pushes to a
// running fleetscope; and the server profiles itself (--self-profile).

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"connectrpc.com/connect"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

func buildPyroApp(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "pyroscope-app")
	if out, err := exec.Command("go", "build", "-o", bin, "../../testdata/pyroscope-app").CombinedOutput(); err != nil {
		t.Fatalf("build testdata/pyroscope-app: %v\n%s", err, out)
	}
	return bin
}

// runPyroApp runs the instrumented program against url with key.
func runPyroApp(t *testing.T, bin, url, key, auth string, args ...string) (stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "PYRO_SERVER="+url, "PYRO_KEY="+key, "PYRO_AUTH="+auth)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("pyroscope-app: %v\n%s", err, errOut.String())
	}
	return errOut.String()
}

// TestPyroscopeGoProgram: an ordinary Go service instrumented with
// pyroscope-go sends its profiles to fleetscope unchanged: they are stored
// under its app name and tags, at their time span, their flame graphs show
// the program's functions; Basic auth works too; a wrong key is refused and
// stores nothing.
func TestPyroscopeGoProgram(t *testing.T) {
	s := startService(t, serviceOpts{})
	bin := buildPyroApp(t)
	started := time.Now()
	if errOut := runPyroApp(t, bin, s.url, s.key, "bearer", "-app", "pyroapp", "-tag", "env=test", "-tag", "region=eu", "-for", "3s", "-every", "1s"); errOut != "" {
		t.Fatalf("pyroscope-go reported errors:\n%s", errOut)
	}
	ended := time.Now()
	if errOut := runPyroApp(t, bin, s.url, s.key, "basic", "-app", "pyroapp", "-tag", "env=basic", "-for", "1500ms", "-every", "1s"); errOut != "" {
		t.Fatalf("pyroscope-go (basic auth) reported errors:\n%s", errOut)
	}
	errOut := runPyroApp(t, bin, s.url, "fsk_wrong", "bearer", "-app", "pyroapp-wrong", "-for", "1500ms", "-every", "1s")
	if !strings.Contains(errOut, "(401)") || !strings.Contains(errOut, "invalid API key") {
		t.Fatalf("wrong key: pyroscope-go logged %q, want a 401", errOut)
	}
	if n := len(s.search("pyroapp-wrong")); n != 0 {
		t.Fatalf("wrong key: %d profiles stored", n)
	}

	ctx := context.Background()
	_, q := s.clients()
	res, err := q.SearchProfiles(ctx, connect.NewRequest(&fsv1.SearchProfilesRequest{App: "pyroapp", Labels: map[string]string{"env": "test", "region": "eu"}}))
	if err != nil {
		t.Fatal(err)
	}
	var cpu []*fsv1.Profile
	kinds := map[string]int{}
	for _, p := range res.Msg.GetProfiles() {
		for k := range p.GetLabels() {
			if strings.HasPrefix(k, "__") {
				t.Errorf("reserved label %s kept", k)
			}
		}
		st := p.GetStartTime().AsTime()
		if p.GetFormat() != "pprof" || st.Before(started.Add(-time.Second)) || st.After(ended.Add(time.Second)) {
			t.Errorf("profile %s: format %s, placed at %s (ran %s..%s)", p.GetId(), p.GetFormat(), st, started, ended)
		}
		var evs []string
		for _, e := range p.GetEvents() {
			evs = append(evs, e.GetName())
		}
		if slices.Contains(evs, "cpu") {
			cpu = append(cpu, p)
			kinds["cpu"]++
		} else {
			kinds[strings.Join(evs, ",")]++
		}
	}
	if len(cpu) == 0 { // how many depends on the machine's pace: pyroscope-go uploads on a ticker and once at stop
		t.Fatalf("no CPU profile from a 3 s run uploading every second (profiles: %v)", kinds)
	}
	// The one with the most samples: the last upload, at stop, may cover
	// only the few milliseconds of pyroscope-go's own shutdown.
	busiest := slices.MaxFunc(cpu, func(a, b *fsv1.Profile) int { return cmp.Compare(a.GetSamples(), b.GetSamples()) })
	fg, err := q.GetFlameGraph(ctx, connect.NewRequest(&fsv1.GetFlameGraphRequest{ProfileId: busiest.GetId(), Event: "cpu", WeightByPeriod: true,
		Format: fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED}))
	if err != nil {
		t.Fatal(err)
	}
	if f := fg.Msg.GetFolded(); !strings.Contains(f, "main.burnSHA") && !strings.Contains(f, "main.burnSort") {
		t.Fatalf("CPU flame graph lacks the program's functions:\n%.2000s", f)
	}
	if _, err := q.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: busiest.GetId()})); connect.CodeOf(err) != connect.CodeInvalidArgument {
		t.Errorf("heatmap of a pprof time span: %v, want InvalidArgument (no per-sample times)", err)
	}
	basic := s.mustCLI("profiles", "--app", "pyroapp", "--label", "env=basic", "--json")
	if !strings.Contains(basic, `"app":"pyroapp"`) {
		t.Fatalf("basic-auth run not stored: %s", basic)
	}
	t.Logf("pyroscope-go: %d profiles from the 3 s run (%v), tagged env=test region=eu, placed in %s..%s; CPU flame graph %d ns total; basic auth stored; wrong key: 401, nothing stored",
		len(res.Msg.GetProfiles()), kinds, started.Format("15:04:05"), ended.Format("15:04:05"), fg.Msg.GetTotal())
}

// TestPyroscopeSelfProfile: `fleetscope server --self-profile` sends its
// own CPU profiles to itself (a second replica of the service here, on the
// same database and blobs).
func TestPyroscopeSelfProfile(t *testing.T) {
	s := startService(t, serviceOpts{})
	srv := runServer(t, append(slices.Clone(s.env), "FLEETSCOPE_SELF_PROFILE_KEY="+s.key,
		"FLEETSCOPE_SELF_PROFILE_APP=fleetscope-self", "TMPDIR="+t.TempDir()), "server", "--self-profile")
	// Keep it busy so its CPU profiles have samples (a profile of an idle
	// stretch holds none and is not stored): uploads of a planted profile
	// through the self-profiling replica, one after another, until it logs
	// that it stored a profile of its own (pyroscope-go uploads every 15 s).
	path := plant(t, "--seed", "71", "--seconds", "10")
	stop, busy := make(chan struct{}), make(chan error, 1)
	go func() {
		for {
			select {
			case <-stop:
				busy <- nil
				return
			default:
			}
			out, errs, code := run1(append(slices.Clone(s.env), "FLEETSCOPE_URL="+srv.url, "FLEETSCOPE_API_KEY="+s.key), "upload", "--app", "busy", path)
			if code != 0 {
				busy <- fmt.Errorf("upload to the self-profiling server: %s %s", out, errs)
				return
			}
		}
	}()
	// A hang guard, not a duration checked: four of pyroscope-go's rounds.
	srv.log.await(t, 0, time.Minute, func(l map[string]any) bool {
		return l["msg"] == "profile stored" && l["app"] == "fleetscope-self"
	})
	close(stop)
	if err := <-busy; err != nil {
		t.Fatal(err)
	}
	ps := s.search("fleetscope-self")
	if len(ps) == 0 {
		t.Fatal("the self-profiling replica logged its profile stored, but a search finds none")
	}
	p := ps[0]
	if p.GetFormat() != "pprof" || p.GetLabels()["host"] == "" || p.GetLabels()["pid"] != strconv.Itoa(srv.cmd.Process.Pid) {
		t.Fatalf("self-profile: %v", p)
	}
	t.Logf("self-profile stored: %d samples, labels %v", p.GetSamples(), p.GetLabels())
}
