package main

// End-to-end tests of `fleetscope agent`: the real binary against a real
// server (Postgres, blob directory). Real perf records where this machine
// permits it; elsewhere (and wherever a test needs control over what perf
// records) testdata/agent/fake-perf stands in for it.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/types/known/timestamppb"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/cmd/fleetscope/agent"
	"github.com/fleetscope/fleetscope/ingest/corpus"
)

func fakePerf(t testing.TB) string {
	t.Helper()
	p, err := filepath.Abs("../../testdata/agent/fake-perf")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// replayPerf returns a perf for the agent that records replay's samples
// (fake-perf, FAKEPERF_REPLAY), so a recording holds them however long it
// ran, and a condition: a recording (not perf's probe) has started, its
// signal handlers set, so that a stop from then on ends it with its file
// written. Tests wait on it, not on time passing.
func replayPerf(t testing.TB, replay string) (string, func() bool) {
	t.Helper()
	dir := t.TempDir()
	bin, started := filepath.Join(dir, "perf"), filepath.Join(dir, "started")
	script := fmt.Sprintf("#!/bin/sh\nFAKEPERF_REPLAY='%s' FAKEPERF_STARTED='%s' exec '%s' \"$@\"\n", replay, started, fakePerf(t))
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, func() bool {
		_, err := os.Stat(started)
		return err == nil
	}
}

// realPerf skips the test, saying why, unless perf can record the whole
// system here.
func realPerf(t testing.TB) {
	t.Helper()
	skip := t.Skipf
	if corpus.Required() { // CI: make test installs linux-perf, and perf record -a works as root
		skip = t.Fatalf
	}
	bin, err := exec.LookPath("perf")
	if err != nil {
		skip("real perf: not installed here (apt-get install linux-perf, or make perf); the spool, retry and clock tests use testdata/agent/fake-perf and still run")
	}
	out := filepath.Join(t.TempDir(), "probe.data")
	if b, err := exec.Command(bin, "record", "-q", "-F", "49", "-a", "-g", "-o", out, "--", "true").CombinedOutput(); err != nil {
		skip("real perf: perf record -a is not permitted here (%v: %s); the spool, retry and clock tests use testdata/agent/fake-perf and still run",
			err, strings.Join(strings.Fields(string(b)), " "))
	}
}

// agentProc is a running `fleetscope agent`, its JSON log lines collected.
type agentProc struct {
	t      testing.TB
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	more   chan struct{} // closed and replaced on each new line
	exited chan struct{}
	err    error
}

func startAgent(t testing.TB, env []string, args ...string) *agentProc {
	t.Helper()
	a := &agentProc{t: t, more: make(chan struct{}), exited: make(chan struct{})}
	a.cmd = exec.Command(fsBin, append([]string{"agent"}, args...)...)
	a.cmd.Env = append(os.Environ(), env...)
	stderr, err := a.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			a.mu.Lock()
			a.lines = append(a.lines, sc.Text())
			close(a.more)
			a.more = make(chan struct{})
			a.mu.Unlock()
		}
		a.err = a.cmd.Wait()
		close(a.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-a.exited:
		default:
			a.cmd.Process.Kill()
			<-a.exited
		}
		if t.Failed() {
			t.Logf("agent log:\n%s", tail(a.log(), 6000))
		}
	})
	return a
}

func (a *agentProc) log() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.lines, "\n")
}

// count counts the log lines with message msg.
func (a *agentProc) count(msg string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, l := range a.lines {
		if strings.Contains(l, `"msg":"`+msg+`"`) {
			n++
		}
	}
	return n
}

// await waits until cond holds (checked at each log line and every 50 ms).
func (a *agentProc) await(what string, timeout time.Duration, cond func() bool) {
	a.t.Helper()
	deadline := time.After(timeout)
	for !cond() {
		a.mu.Lock()
		more := a.more
		a.mu.Unlock()
		select {
		case <-more:
		case <-time.After(50 * time.Millisecond):
		case <-a.exited:
			if !cond() {
				a.t.Fatalf("agent exited (%v) before %s", a.err, what)
			}
		case <-deadline:
			a.t.Fatalf("no %s within %s", what, timeout)
		}
	}
}

// wait waits for the agent to exit and returns its exit code.
func (a *agentProc) wait(timeout time.Duration) int {
	a.t.Helper()
	select {
	case <-a.exited:
	case <-time.After(timeout):
		a.t.Fatalf("agent still running after %s", timeout)
	}
	if ee, ok := a.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if a.err != nil {
		a.t.Fatal(a.err)
	}
	return 0
}

// field returns a field of the first log line with message msg ("" if
// there is none yet).
func (a *agentProc) field(msg, name string) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, l := range a.lines {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["msg"] == msg {
			return fmt.Sprint(m[name])
		}
	}
	return ""
}

// entries maps each logged entry name to the messages logged about it.
func (a *agentProc) entries() map[string][]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[string][]string{}
	for _, l := range a.lines {
		var m struct{ Msg, Entry string }
		if json.Unmarshal([]byte(l), &m) == nil && m.Entry != "" {
			out[m.Entry] = append(out[m.Entry], m.Msg)
		}
	}
	return out
}

func (s *service) agentEnv(url string) []string {
	return append(slices.Clone(s.env), "FLEETSCOPE_URL="+url, "FLEETSCOPE_API_KEY="+s.key)
}

// switchProxy forwards loopback TCP to the server and can play a server
// that is down (every connection dropped at once) or comes back. It keeps
// its one listener from start to cleanup, so its port is never released
// for another process to take.
type switchProxy struct {
	target string
	ln     net.Listener
	mu     sync.Mutex
	on     bool
	conns  map[net.Conn]bool
}

func newSwitchProxy(t testing.TB, target string) *switchProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &switchProxy{target: strings.TrimPrefix(target, "http://"), ln: ln, conns: map[net.Conn]bool{}}
	t.Cleanup(func() { ln.Close(); p.down() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			on := p.on
			p.mu.Unlock()
			if !on {
				c.Close()
				continue
			}
			go p.pipe(c)
		}
	}()
	return p
}

func (p *switchProxy) url() string { return "http://" + p.ln.Addr().String() }

func (p *switchProxy) up(t testing.TB) {
	p.mu.Lock()
	p.on = true
	p.mu.Unlock()
}

func (p *switchProxy) pipe(c net.Conn) {
	s, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	p.conns[c], p.conns[s] = true, true
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { io.Copy(s, c); done <- struct{}{} }()
	go func() { io.Copy(c, s); done <- struct{}{} }()
	<-done
	c.Close()
	s.Close()
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, s)
	p.mu.Unlock()
}

func (p *switchProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.on = false
	for c := range p.conns {
		c.Close()
	}
}

// spooled returns the SHA-256 (hex) of the upload bytes of each entry in
// a spool's queue.
func spooled(t testing.TB, spool string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(spool, "queue", "*.fsp"))
	var out []string
	for _, f := range files {
		_, body, _, err := agent.OpenEntry(f)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		io.Copy(h, body)
		body.Close()
		out = append(out, hex.EncodeToString(h.Sum(nil)))
	}
	slices.Sort(out)
	return out
}

// storedSHA256 returns the SHA-256 of every stored profile, sorted (with
// repeats, if there were any).
func (s *service) storedSHA256(app string) []string {
	s.t.Helper()
	var out []string
	err := s.sql(func(c *pgx.Conn) error {
		rows, err := c.Query(context.Background(), "SELECT encode(sha256, 'hex') FROM profiles WHERE app = $1 ORDER BY 1", app)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		s.t.Fatal(err)
	}
	return out
}

func (s *service) search(app string) []*fsv1.Profile {
	s.t.Helper()
	_, q := s.clients()
	res, err := q.SearchProfiles(context.Background(), connect.NewRequest(&fsv1.SearchProfilesRequest{App: app, PageSize: 1000}))
	if err != nil {
		s.t.Fatal(err)
	}
	return res.Msg.GetProfiles()
}

// TestAgentRecordsWithRealPerf: a short real perf recording, uploaded by
// the agent, is stored with its app, host and labels, placed at the time it
// was recorded, and has a non-empty heatmap.
func TestAgentRecordsWithRealPerf(t *testing.T) {
	realPerf(t)
	s := startService(t, serviceOpts{})
	before := time.Now()
	a := startAgent(t, s.agentEnv(s.url), "--app", "realperf", "--host", "agent-host-1", "--label", "team=perf",
		"--spool", t.TempDir(), "--duration", "2s", "--count", "1")
	if code := a.wait(90 * time.Second); code != 0 {
		t.Fatalf("agent exit %d", code)
	}
	after := time.Now()
	ps := s.search("realperf")
	if len(ps) != 1 {
		t.Fatalf("%d profiles, want 1", len(ps))
	}
	p := ps[0]
	if p.GetHost() != "agent-host-1" || p.GetLabels()["team"] != "perf" || p.GetFormat() != "perf" || p.GetSamples() == 0 {
		t.Fatalf("stored profile: %v", p)
	}
	start := p.GetStartTime().AsTime()
	if start.Before(before.Add(-2*time.Second)) || start.After(after) {
		t.Fatalf("profile placed at %s (%s), recorded between %s and %s", start, p.GetTimeSource(), before, after)
	}
	_, q := s.clients()
	h, err := q.GetHeatmap(context.Background(), connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: p.GetId(), IncludeIdle: true}))
	if err != nil {
		t.Fatal(err)
	}
	if h.Msg.GetTotal() == 0 {
		t.Fatal("empty heatmap")
	}
	t.Logf("real perf: %d samples over %.1f s, clock %s, placed at %s (recorded %s..%s), heatmap total %d",
		p.GetSamples(), float64(p.GetDurationNanos())/1e9, p.GetTimeSource(), start.Format(time.RFC3339Nano),
		before.Format("15:04:05.000"), after.Format("15:04:05.000"), h.Msg.GetTotal())
}

// TestAgentSpoolsWhileServerDown: with the server unreachable, recordings
// pile up in the spool while uploads are retried; once it is back, every
// recording is stored exactly once (by content hash) and the spool empties.
func TestAgentSpoolsWhileServerDown(t *testing.T) {
	s := startService(t, serviceOpts{})
	px := newSwitchProxy(t, s.url) // down
	spool := t.TempDir()
	const n = 3
	a := startAgent(t, s.agentEnv(px.url()), "--app", "down", "--perf", fakePerf(t), "--spool", spool,
		"--duration", "1s", "--count", strconv.Itoa(n), "--retry-min", "50ms", "--retry-max", "400ms")
	a.await(fmt.Sprintf("%d recordings spooled and retries failing", n), 30*time.Second, func() bool {
		return a.count("recording spooled") == n && a.count("upload failed: will retry") >= 3
	})
	want := spooled(t, spool)
	if len(want) != n || s.count("profiles") != 0 {
		t.Fatalf("server down: %d spooled, %d profiles; want %d and 0", len(want), s.count("profiles"), n)
	}
	failures := a.count("upload failed: will retry")
	px.up(t)
	if code := a.wait(30 * time.Second); code != 0 {
		t.Fatalf("agent exit %d", code)
	}
	got := s.storedSHA256("down")
	if !slices.Equal(got, want) {
		t.Fatalf("stored sha256 %v, spooled %v", got, want)
	}
	if left := spooled(t, spool); len(left) != 0 {
		t.Fatalf("%d entries left in the spool", len(left))
	}
	if c := a.count("uploaded"); c != n {
		t.Fatalf("%d uploads logged, want %d", c, n)
	}
	t.Logf("server down: %d recordings spooled, %d failed attempts retried with backoff; server up: %d stored, each once (sha256 match), spool empty",
		n, failures, len(got))
}

// TestAgentKilledMidUploadLosesNothing: an agent killed (SIGKILL) again and
// again, each time during an upload, then restarted: every spooled
// recording is stored exactly once and the spool ends empty.
func TestAgentKilledMidUploadLosesNothing(t *testing.T) {
	s := startService(t, serviceOpts{})
	spool := t.TempDir()
	sp, err := agent.OpenSpool(spool, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	base := plant(t, "--seed", "41", "--seconds", "20", "--cpus", "8", "--hz", "199")
	body, err := os.ReadFile(base)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	for i := range n { // distinct bytes: a comment line per file
		b := append([]byte(fmt.Sprintf("# agent test file %d\n", i)), body...)
		if _, err := sp.Add(agent.Meta{App: "killed", Host: "h", RecordedAt: time.Now()}, func(w io.Writer, _ *agent.Meta) error {
			_, err := w.Write(b)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	sp.Close()
	want := spooled(t, spool)
	env := s.agentEnv(s.url)
	kills, midUpload, afterStore := 0, 0, 0
	for round := 0; round < 20 && len(spooled(t, spool)) > 0; round++ {
		a := startAgent(t, env, "--upload-only", "--spool", spool, "--retry-min", "50ms")
		// Kill during the k-th upload of this run, at a random moment.
		k := 1 + rand.IntN(2)
		started := false
		a.await("an upload to start", 30*time.Second, func() bool {
			started = a.count("upload started") >= k
			select {
			case <-a.exited:
				return true
			default:
				return started
			}
		})
		time.Sleep(time.Duration(rand.IntN(120)) * time.Millisecond)
		if a.cmd.Process.Signal(syscall.SIGKILL) == nil {
			kills++
		}
		a.wait(10 * time.Second)
		for _, msgs := range a.entries() {
			if slices.Contains(msgs, "upload started") && !slices.Contains(msgs, "uploaded") {
				midUpload++
			}
		}
	}
	// And a last run, left to finish.
	a := startAgent(t, env, "--upload-only", "--spool", spool)
	if code := a.wait(60 * time.Second); code != 0 {
		t.Fatalf("final agent exit %d", code)
	}
	for _, l := range strings.Split(a.log(), "\n") {
		if strings.Contains(l, `"created":false`) {
			afterStore++ // stored before a kill, the agent did not know
		}
	}
	got := s.storedSHA256("killed")
	if !slices.Equal(got, want) {
		t.Fatalf("stored %d profiles %v, spooled %d %v", len(got), got, len(want), want)
	}
	if left := spooled(t, spool); len(left) != 0 {
		t.Fatalf("%d entries left", len(left))
	}
	if midUpload == 0 {
		t.Fatalf("no kill landed during an upload (%d kills)", kills)
	}
	t.Logf("%d entries of %d MB raw; %d SIGKILLs, %d of them during an upload; %d re-uploads the server already had (answered created=false); stored: %d, each once",
		n, len(body)>>20, kills, midUpload, afterStore, len(got))
}

// TestAgentStopsCleanly: SIGTERM stops perf, spools the recording so far
// and uploads it before exiting; with the server down, the recording stays
// spooled and the next start uploads it.
func TestAgentStopsCleanly(t *testing.T) {
	s := startService(t, serviceOpts{})
	px := newSwitchProxy(t, s.url)
	px.up(t)
	spool := t.TempDir()
	// Each run records a planted file's samples (two runs, two files: the
	// same bytes would be one profile), and is stopped once recording.
	args := func(perf string) []string {
		return []string{"--app", "term", "--perf", perf, "--spool", spool, "--duration", "10m", "--shutdown-grace", "3s", "--retry-min", "50ms"}
	}
	perf, recording := replayPerf(t, plant(t, "--seed", "71", "--seconds", "2", "--epoch"))
	a := startAgent(t, s.agentEnv(px.url()), args(perf)...)
	a.await("perf to record", 20*time.Second, recording)
	stopped := time.Now()
	a.cmd.Process.Signal(syscall.SIGTERM)
	if code := a.wait(15 * time.Second); code != 0 {
		t.Fatalf("agent exit %d after SIGTERM", code)
	}
	took := time.Since(stopped)
	ps := s.search("term")
	if len(ps) != 1 || ps[0].GetSamples() == 0 {
		t.Fatalf("after SIGTERM: %d profiles, want the partial recording", len(ps))
	}

	// Server down: the stop keeps the recording in the spool.
	px.down()
	perf, recording = replayPerf(t, plant(t, "--seed", "72", "--seconds", "2", "--epoch"))
	a = startAgent(t, s.agentEnv(px.url()), args(perf)...)
	a.await("perf to record", 20*time.Second, recording)
	stopped = time.Now()
	a.cmd.Process.Signal(syscall.SIGTERM)
	if code := a.wait(15 * time.Second); code != 0 {
		t.Fatalf("agent exit %d after SIGTERM", code)
	}
	tookDown := time.Since(stopped)
	if left := spooled(t, spool); len(left) != 1 {
		t.Fatalf("server down at SIGTERM: %d spooled, want 1", len(left))
	}
	px.up(t)
	a = startAgent(t, s.agentEnv(px.url()), "--upload-only", "--spool", spool)
	if code := a.wait(30 * time.Second); code != 0 {
		t.Fatalf("agent exit %d", code)
	}
	if ps := s.search("term"); len(ps) != 2 {
		t.Fatalf("after restart: %d profiles, want 2", len(ps))
	}
	t.Logf("SIGTERM: recording stopped, spooled and uploaded, exit after %s; with the server down: exit after %s (grace 3 s), 1 entry kept, uploaded at the next start",
		took.Round(time.Millisecond), tookDown.Round(time.Millisecond))
}

// TestAgentWatchDir: files dropped in the watched directory are uploaded
// and removed; a file the server cannot read is set aside; names being
// written (.tmp) are left alone; perf.data goes through perf script when
// real perf is permitted.
func TestAgentWatchDir(t *testing.T) {
	s := startService(t, serviceOpts{})
	w, spool := t.TempDir(), t.TempDir()
	drop := func(name string, b []byte) {
		tmp := filepath.Join(w, name+".tmp")
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(w, name)); err != nil {
			t.Fatal(err)
		}
	}
	text, _ := os.ReadFile(plant(t, "--seed", "51", "--seconds", "3"))
	gz, _ := os.ReadFile(gzipFile(t, plant(t, "--seed", "52", "--seconds", "3")))
	want := map[string]bool{"a.perf": true, "b.perf.gz": true}
	perfData := false
	out := filepath.Join(t.TempDir(), "perf.data")
	if msg, err := exec.Command("perf", "record", "-q", "-F", "99", "-a", "-g", "-o", out, "--", "sleep", "0.5").CombinedOutput(); err == nil {
		b, _ := os.ReadFile(out)
		drop("c.perf.data", b)
		want["c.perf.data"], perfData = true, true
	} else if corpus.Required() {
		t.Fatalf("perf record for the perf.data case: %v %s (FLEETSCOPE_TEST_REQUIRE=1: it must run)", err, msg)
	} else {
		t.Logf("no perf.data case: perf record: %v %s", err, msg)
	}
	drop("a.perf", text)
	drop("b.perf.gz", gz)
	drop("junk.txt", []byte("hello, this is not a profile\n"))
	// Not UTF-8: refused for good (once reported as "unavailable, retry
	// later", which kept the agent retrying it before every other file).
	drop("latin1.perf", []byte("caf\xe9 1 100.000001: 1 cpu-clock:\n\t 1 main (/bin/app)\n\n"))
	os.WriteFile(filepath.Join(w, "d.perf.tmp"), text, 0o644) // being written: left alone
	a := startAgent(t, s.agentEnv(s.url), "--app", "watched", "--watch", w, "--watch-interval", "100ms", "--spool", spool, "--retry-min", "50ms")
	a.await("the watched files uploaded", 60*time.Second, func() bool {
		return a.count("uploaded") == len(want) && a.count("server refused a recording: moved to the spool's failed/ directory") == 2
	})
	a.cmd.Process.Signal(syscall.SIGTERM)
	if code := a.wait(20 * time.Second); code != 0 {
		t.Fatalf("agent exit %d", code)
	}
	var names []string
	s.sql(func(c *pgx.Conn) error {
		rows, _ := c.Query(context.Background(), "SELECT filename FROM profiles WHERE app = 'watched' ORDER BY 1")
		names, _ = pgx.CollectRows(rows, pgx.RowTo[string])
		return nil
	})
	var wantNames []string
	for n := range want {
		wantNames = append(wantNames, n)
	}
	slices.Sort(wantNames)
	if !slices.Equal(names, wantNames) {
		t.Fatalf("stored %v, want %v", names, wantNames)
	}
	left, _ := os.ReadDir(w)
	var leftNames []string
	for _, de := range left {
		leftNames = append(leftNames, de.Name())
	}
	if !slices.Equal(leftNames, []string{"d.perf.tmp"}) {
		t.Fatalf("left in the watched directory: %v", leftNames)
	}
	if failed, _ := os.ReadDir(filepath.Join(spool, "failed")); len(failed) != 2 {
		t.Fatalf("%d files in the spool's failed/, want the junk and the Latin-1 file", len(failed))
	}
	t.Logf("watch: %d files stored (%v), perf.data converted: %v; junk set aside; .tmp left alone", len(names), names, perfData)
}

// TestAgentPerfErrorsAreClear: perf missing, perf_event_open not
// permitted, and bad invocations each end with one clear line.
func TestAgentPerfErrorsAreClear(t *testing.T) {
	env := []string{"FLEETSCOPE_URL=http://127.0.0.1:1", "FLEETSCOPE_API_KEY=fsk_x"}
	lastLine := func(s string) string {
		l := strings.Split(strings.TrimSpace(s), "\n")
		return l[len(l)-1]
	}
	cases := []struct {
		name string
		env  []string
		args []string
		code int
		want []string
	}{
		{"perf missing", nil, []string{"--perf", "/nonexistent/perf"}, 1, []string{"perf is not installed", "apt-get install linux-perf"}},
		{"not permitted", []string{"FAKEPERF_DENY=1"}, []string{"--perf", fakePerf(t)}, 1, []string{"perf_event_open is not permitted", "perf_event_paranoid", "CAP_PERFMON"}},
		{"no key", []string{"FLEETSCOPE_API_KEY="}, []string{"--perf", fakePerf(t)}, 2, []string{"FLEETSCOPE_API_KEY"}},
		{"no app", nil, []string{"--perf", fakePerf(t), "--app", ""}, 2, []string{"--app"}},
		{"pid and cgroup", nil, []string{"--perf", fakePerf(t), "--pid", "1", "--cgroup", "x"}, 2, []string{"exclude each other"}},
	}
	for _, c := range cases {
		args := append([]string{"agent", "--app", "x", "--spool", t.TempDir()}, c.args...)
		_, errOut, code := run1(append(slices.Clone(env), c.env...), args...)
		line := lastLine(errOut)
		ok := code == c.code && strings.HasPrefix(line, "fleetscope: ")
		for _, w := range c.want {
			ok = ok && strings.Contains(line, w)
		}
		if !ok {
			t.Errorf("%s: exit %d, last line %q; want exit %d and %q", c.name, code, line, c.code, c.want)
		} else {
			t.Logf("%s: %s", c.name, line)
		}
	}
}

// TestAgentClockFallback: where perf cannot record wall-clock timestamps,
// the agent records with perf's monotonic clock (or its default one) and
// sends an anchor; the profile lands at the time it was recorded.
func TestAgentClockFallback(t *testing.T) {
	s := startService(t, serviceOpts{})
	for _, c := range []struct {
		name string
		env  []string
		args []string
		want string // anchor source logged
	}{
		{"monotonic, perf's reference time", nil, []string{"--clock", "monotonic"}, `"anchor":"perf"`},
		{"no -k at all, agent's reading", []string{"FAKEPERF_NO_CLOCKID=1"}, nil, `"anchor":"agent"`},
		{"auto picks realtime", nil, nil, `"anchor":"none (wall-clock timestamps)"`},
	} {
		app := "clock-" + strings.Fields(c.name)[0]
		before := time.Now()
		a := startAgent(t, append(s.agentEnv(s.url), c.env...), append([]string{"--app", app, "--perf", fakePerf(t),
			"--spool", t.TempDir(), "--duration", "1500ms", "--count", "1"}, c.args...)...)
		if code := a.wait(30 * time.Second); code != 0 {
			t.Fatalf("%s: agent exit %d", c.name, code)
		}
		after := time.Now()
		if !strings.Contains(a.log(), c.want) {
			t.Fatalf("%s: log lacks %s", c.name, c.want)
		}
		ps := s.search(app)
		if len(ps) != 1 {
			t.Fatalf("%s: %d profiles", c.name, len(ps))
		}
		// The recording's samples are taken after before and before the
		// agent exited; StartTime is the start of the first one's second
		// on the recording's clock, placed in wall-clock time: up to a
		// second before that sample when the clock is not the wall's.
		p := ps[0]
		first := p.GetStartTime().AsTime()
		if first.Before(before.Add(-time.Second)) || first.After(after) {
			t.Fatalf("%s: placed at %s (%s), recording ran within [%s, %s]", c.name, first, p.GetTimeSource(), before, after)
		}
		t.Logf("%s: time source %s, start second %s, recording started %s", c.name, p.GetTimeSource(),
			first.Format("15:04:05.000"), before.Format("15:04:05.000"))
	}
}

// TestClocksLineUp: two hosts whose boot clocks differ by a day and a
// quarter second record the same moments; a third records wall-clock time
// (-k CLOCK_REALTIME). Each agent anchors its clock at record time; the
// three profiles' samples land on the same absolute times, to the
// microsecond, and a search by date finds all three.
func TestClocksLineUp(t *testing.T) {
	s := startService(t, serviceOpts{})
	boot := plant(t, "--seed", "61", "--seconds", "6")
	epoch := plant(t, "--seed", "61", "--seconds", "6", "--epoch") // the same samples, epoch clock
	const (
		bootBase  = 51234      // planted.py's boot-clock base
		wallBase  = 1795000000 // and its epoch base: the same instant
		shiftSecs = "86400.25" // host B booted a day and a quarter second earlier
	)
	shift, _ := time.ParseDuration(shiftSecs + "s")
	// Host B's file: every timestamp shifted by its clock's offset.
	b, _ := os.ReadFile(boot)
	re := regexp.MustCompile(`(?m)^(\S.*?\s)(\d+)\.(\d{6}):`)
	shifted := re.ReplaceAllFunc(b, func(m []byte) []byte {
		sub := re.FindSubmatch(m)
		sec, _ := strconv.ParseInt(string(sub[2]), 10, 64)
		us, _ := strconv.ParseInt(string(sub[3]), 10, 64)
		t := sec*1e6 + us + shift.Microseconds()
		return fmt.Appendf(nil, "%s%d.%06d:", sub[1], t/1e6, t%1e6)
	})
	bootB := filepath.Join(t.TempDir(), "hostb.perf")
	os.WriteFile(bootB, shifted, 0o644)

	// Each "host" reads its own clocks: monotonic = boot clock; the wall
	// clock is the same on both (NTP-synchronised hosts).
	clockOf := func(offset time.Duration) func() agent.Anchor {
		return func() agent.Anchor {
			// any instant will do: bootBase+x on host A is wallBase+x
			x := 3 * time.Second
			return agent.Anchor{ClockNanos: int64(bootBase*time.Second + offset + x), Wall: time.Unix(wallBase, 0).Add(x), Source: "agent"}
		}
	}
	hosts := []struct {
		host, file, clock string
		offset            time.Duration
	}{
		{"host-a", boot, "default", 0},
		{"host-b", bootB, "default", shift},
		{"host-c", epoch, "realtime", 0},
	}
	for _, h := range hosts {
		wrapper := filepath.Join(t.TempDir(), "perf")
		os.WriteFile(wrapper, fmt.Appendf(nil, "#!/bin/sh\nFAKEPERF_REPLAY=%s exec %s \"$@\"\n", h.file, fakePerf(t)), 0o755)
		a, err := agent.New(agent.Config{
			App: "clocks", Host: h.host, SpoolDir: t.TempDir(),
			Perf: agent.Perf{Bin: wrapper}, Clock: h.clock, Duration: time.Second, Count: 1,
			Uploader: agent.NewConnectUploader(s.url, s.key), ReadClocks: clockOf(h.offset),
			Log: slog.New(slog.NewTextHandler(t.Output(), nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err = a.Run(ctx)
		cancel()
		a.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	ps := s.search("clocks")
	if len(ps) != 3 {
		t.Fatalf("%d profiles, want 3", len(ps))
	}
	// The absolute time of a sample that boot clock A stamped at ts.
	first, last := timestamps(t, boot)
	byHost := map[string]*fsv1.Profile{}
	for _, p := range ps {
		byHost[p.GetHost()] = p
	}
	abs := func(p *fsv1.Profile, ts int64) time.Time { // ts: µs on the profile's own clock
		return p.GetStartTime().AsTime().Add(time.Duration(ts-p.GetStartSecond()*1e6) * time.Microsecond)
	}
	own := map[string]int64{"host-a": 0, "host-b": shift.Microseconds(), "host-c": (wallBase - bootBase) * 1e6}
	for _, ts := range []int64{first, last, first + 2_500_000} {
		want := time.Unix(wallBase, 0).Add(time.Duration(ts-bootBase*1e6) * time.Microsecond)
		for _, h := range []string{"host-a", "host-b", "host-c"} {
			p := byHost[h]
			if got := abs(p, ts+own[h]); !got.Equal(want) {
				t.Fatalf("%s (%s): sample at boot time %d µs lands at %s, want %s", h, p.GetTimeSource(), ts, got.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
			}
		}
	}
	if byHost["host-a"].GetTimeSource() != "anchored" || byHost["host-b"].GetTimeSource() != "anchored" || byHost["host-c"].GetTimeSource() != "realtime" {
		t.Fatalf("time sources: %s %s %s", byHost["host-a"].GetTimeSource(), byHost["host-b"].GetTimeSource(), byHost["host-c"].GetTimeSource())
	}
	// A search by date around the profiles' middle finds all three.
	mid := time.Unix(wallBase+3, 0)
	_, q := s.clients()
	res, err := q.SearchProfiles(context.Background(), connect.NewRequest(&fsv1.SearchProfilesRequest{
		App: "clocks", Since: timestamppb.New(mid), Until: timestamppb.New(mid.Add(time.Second))}))
	if err != nil || len(res.Msg.GetProfiles()) != 3 {
		t.Fatalf("search %s: %v, %d profiles", mid, err, len(res.Msg.GetProfiles()))
	}
	t.Logf("3 hosts (boot clocks %s apart, and a wall-clock one): first, last and a middle sample land on the same instants (%s .. %s); start times %s / %s / %s",
		shift, time.Unix(0, (wallBase*1e6+first-bootBase*1e6)*1e3).UTC().Format("15:04:05.000000"),
		time.Unix(0, (wallBase*1e6+last-bootBase*1e6)*1e3).UTC().Format("15:04:05.000000"),
		byHost["host-a"].GetStartTime().AsTime().Format("15:04:05.000000"),
		byHost["host-b"].GetStartTime().AsTime().Format("15:04:05.000000"),
		byHost["host-c"].GetStartTime().AsTime().Format("15:04:05.000000"))
}

// timestamps returns the first and last sample timestamps of a perf
// script file, in µs.
func timestamps(t testing.TB, path string) (first, last int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\S.*?\s(\d+)\.(\d{6}):`)
	first = -1
	for _, m := range re.FindAllSubmatch(b, -1) {
		sec, _ := strconv.ParseInt(string(m[1]), 10, 64)
		us, _ := strconv.ParseInt(string(m[2]), 10, 64)
		ts := sec*1e6 + us
		if first < 0 || ts < first {
			first = ts
		}
		last = max(last, ts)
	}
	return first, last
}

// TestAgentSpoolBound: with the server away, a bounded spool keeps the
// newest recordings and drops the oldest, each drop logged and counted in
// the Prometheus metric the agent serves.
func TestAgentSpoolBound(t *testing.T) {
	s := startService(t, serviceOpts{})
	px := newSwitchProxy(t, s.url) // down throughout
	spool := t.TempDir()
	const bound = 6000 // bytes: two or three recordings of 1 s
	a := startAgent(t, s.agentEnv(px.url()), "--app", "bounded", "--perf", fakePerf(t), "--spool", spool,
		"--duration", "1s", "--max-spool", strconv.Itoa(bound), "--retry-min", "100ms", "--retry-max", "200ms", "--metrics-addr", "127.0.0.1:0")
	a.await("recordings dropped", 60*time.Second, func() bool { return a.count("spool full: dropped the oldest recording") >= 2 })
	res, err := http.Get("http://" + a.field("serving metrics", "addr") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	metric := func(name string) float64 {
		m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(body)
		if m == nil {
			t.Fatalf("metric %s missing:\n%s", name, body)
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	dropped, spoolBytes, files := metric("fleetscope_agent_spool_dropped_total"), metric("fleetscope_agent_spool_bytes"), metric("fleetscope_agent_spool_files")
	a.cmd.Process.Signal(syscall.SIGTERM)
	if code := a.wait(20 * time.Second); code != 0 {
		t.Fatalf("agent exit %d", code)
	}
	var onDisk int64
	entries, _ := filepath.Glob(filepath.Join(spool, "queue", "*.fsp"))
	for _, e := range entries {
		fi, _ := os.Stat(e)
		onDisk += fi.Size()
	}
	if dropped < 2 || spoolBytes > bound || onDisk > bound || len(entries) == 0 {
		t.Fatalf("dropped %v, spool %v bytes in %v files (on disk %d in %d), bound %d", dropped, spoolBytes, files, onDisk, len(entries), bound)
	}
	t.Logf("bound %d bytes: %v recordings dropped (logged and counted), %d kept (%d bytes)", bound, dropped, len(entries), onDisk)
}

// TestAgentSystemdUnit: deploy/fleetscope-agent.service starts the agent
// with flags it has, and systemd (where installed) finds the unit valid.
func TestAgentSystemdUnit(t *testing.T) {
	b, err := os.ReadFile("../../deploy/fleetscope-agent.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(b)
	m := regexp.MustCompile(`(?ms)^ExecStart=(.*?[^\\])$`).FindStringSubmatch(unit)
	if m == nil {
		t.Fatal("no ExecStart")
	}
	args := strings.Fields(strings.ReplaceAll(m[1], "\\\n", " "))
	if args[0] != "/usr/local/bin/fleetscope" || args[1] != "agent" {
		t.Fatalf("ExecStart runs %v", args[:2])
	}
	c := agentCmd()
	if err := c.ParseFlags(args[2:]); err != nil {
		t.Fatalf("ExecStart flags: %v", err)
	}
	for _, want := range []string{"KillMode=mixed", "AmbientCapabilities=CAP_PERFMON", "StateDirectory=fleetscope-agent"} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit lacks %s", want)
		}
	}
	if sa, err := exec.LookPath("systemd-analyze"); err == nil {
		tmp := filepath.Join(t.TempDir(), "fleetscope-agent.service")
		os.WriteFile(tmp, []byte(strings.ReplaceAll(unit, "/usr/local/bin/fleetscope", fsBin)), 0o644)
		if out, err := exec.Command(sa, "verify", tmp).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
		}
	} else {
		t.Log("systemd-analyze not installed: unit syntax not verified")
	}
}

// TestAgentKilledMidRecordingRecovers: an agent killed (SIGKILL) while perf
// records: perf, told by the kernel that its parent died, finishes its file,
// and the next start spools and uploads that recording.
func TestAgentKilledMidRecordingRecovers(t *testing.T) {
	s := startService(t, serviceOpts{})
	spool := t.TempDir()
	perf, recording := replayPerf(t, plant(t, "--seed", "73", "--seconds", "2", "--epoch"))
	a := startAgent(t, s.agentEnv(s.url), "--app", "recover", "--perf", perf, "--spool", spool, "--duration", "10m")
	a.await("perf to record", 20*time.Second, recording)
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.wait(10 * time.Second)
	a = startAgent(t, s.agentEnv(s.url), "--app", "recover", "--perf", fakePerf(t), "--spool", spool, "--duration", "1s", "--count", "1")
	if code := a.wait(60 * time.Second); code != 0 {
		t.Fatalf("agent exit %d", code)
	}
	if a.count("spooling a recording left by the previous run") != 1 {
		t.Fatal("the killed run's recording was not recovered")
	}
	ps := s.search("recover")
	if len(ps) != 2 {
		t.Fatalf("%d profiles, want the recovered recording and the new one", len(ps))
	}
	if left, _ := os.ReadDir(filepath.Join(spool, "work")); len(left) != 0 {
		t.Fatalf("work/ not cleaned: %d files", len(left))
	}
	t.Logf("killed mid-recording: perf finished its file (%d samples), spooled and uploaded at the next start", ps[len(ps)-1].GetSamples())
}
