package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// restart kills the server with SIGKILL (no cleanup of any kind) and
// starts a new one on the same database, blobs and spool directory.
func (s *service) restart() {
	s.t.Helper()
	s.proc.Process.Kill()
	<-s.exited
	srv := runServer(s.t, append(s.env, "TMPDIR="+s.tmp), "server")
	s.proc, s.url, s.log, s.exited = srv.cmd, srv.url, srv.log, srv.exited
}

// healthy fails the test unless /healthz answers 200.
func (s *service) healthy(when string) {
	s.t.Helper()
	cl := &http.Client{Timeout: 10 * time.Second} // a failure, not a measurement
	res, err := cl.Get(s.url + "/healthz")
	if err != nil || res.StatusCode != 200 {
		s.t.Fatalf("/healthz %s: %v %v", when, res, err)
	}
	res.Body.Close()
}

// TestChaos: uploads under repeated kill -9 of the server (with restarts),
// killed database connections, a blob store that fails, and stalled
// clients. Afterwards nothing is lost (every file stored exactly once),
// nothing is half-visible (every heatmap equals its planted truth, the
// index is consistent), nothing is left behind (no spool files, no orphan
// blobs, no unfinished blob writes once checked) and /healthz answered
// throughout.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos takes a minute")
	}
	s := startService(t, serviceOpts{extra: []string{"FLEETSCOPE_BODY_IDLE_TIMEOUT=3s"}})
	ctx := context.Background()
	type file struct {
		path    string
		nonIdle int64
	}
	var files []file
	for i := range 8 {
		p := plant(t, "--seed", strings.Repeat("7", 1)+string(rune('0'+i)), "--seconds", "6")
		var tr struct {
			NonIdle int64 `json:"non_idle"`
		}
		b, _ := os.ReadFile(filepath.Join(filepath.Dir(p), "truth.json"))
		json.Unmarshal(b, &tr)
		files = append(files, file{p, tr.NonIdle})
	}
	uploadAll := func() (failed int) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, f := range files {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if _, _, code := s.cli("upload", "--app", "chaos", f.path); code != 0 {
					mu.Lock()
					failed++
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return failed
	}

	// kill -9 while uploads are in flight: the server has begun them once
	// its spool holds files.
	kills := 0
	for round := range 3 {
		done := make(chan int)
		go func() { done <- uploadAll() }()
		for s.spoolFiles() == 0 {
			select {
			case failed := <-done:
				t.Logf("round %d: all uploads ended (%d failed) before a kill", round, failed)
				done = nil
			case <-time.After(5 * time.Millisecond):
				continue
			}
			break
		}
		if done != nil {
			s.restart()
			kills++
			<-done
		}
		s.healthy("after a restart")
		if n := s.spoolFiles(); n != 0 {
			t.Fatalf("round %d: %d spool files survive the restart", round, n)
		}
	}
	if kills == 0 {
		t.Fatal("no upload was in flight at any kill: nothing was tested")
	}

	// Database connections killed mid-upload.
	stop := make(chan struct{})
	terminated := 0
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			s.sql(func(c *pgx.Conn) error {
				var n int
				err := c.QueryRow(ctx, `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
					WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&n)
				terminated += n
				return err
			})
		}
	}()
	uploadAll()
	close(stop)
	wg.Wait()
	if terminated == 0 {
		t.Fatal("no database connection was killed: nothing was tested")
	}

	// The blob store fails (its directory replaced by a file), then heals.
	dir := strings.TrimPrefix(s.blobURL, "file://")
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(dir, []byte("not a directory"), 0o644)
	p := plant(t, "--seed", "799", "--seconds", "3")
	_, errOut, code := s.cli("upload", "--app", "chaos", p)
	if code != 1 || !strings.Contains(errOut, "retry later") {
		t.Fatalf("upload with the blob store failing: exit %d %q; want a clean 'retry later'", code, errOut)
	}
	os.Remove(dir)
	os.Rename(dir+".away", dir)

	// Stalled clients hold uploads open: health and queries still answer.
	ing, q := s.clients()
	var stalled []*connect.ClientStreamForClient[fsv1.UploadRequest, fsv1.UploadResponse]
	for range 4 {
		st := ing.Upload(ctx)
		st.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Metadata{Metadata: &fsv1.UploadMetadata{App: "stalled"}}})
		st.Send(&fsv1.UploadRequest{Msg: &fsv1.UploadRequest_Chunk{Chunk: []byte("app 1 [000] 1.000000: 1 cpu-clock:\n")}})
		stalled = append(stalled, st)
	}
	s.healthy("with stalled uploads")
	if _, err := q.SearchProfiles(ctx, connect.NewRequest(&fsv1.SearchProfilesRequest{App: "chaos"})); err != nil {
		t.Fatalf("search with stalled uploads: %v", err)
	}

	for _, st := range stalled { // they end (incomplete input: refused)
		st.CloseAndReceive()
	}

	// Everything is stored, exactly once, in full.
	if failed := uploadAll(); failed != 0 {
		t.Fatalf("%d uploads failed on a healthy server", failed)
	}
	res, err := q.SearchProfiles(ctx, connect.NewRequest(&fsv1.SearchProfilesRequest{App: "chaos", PageSize: 100}))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(res.Msg.GetProfiles()); n != len(files) {
		t.Fatalf("%d profiles stored, want %d (each file once)", n, len(files))
	}
	for _, p := range res.Msg.GetProfiles() {
		hm, err := q.GetHeatmap(ctx, connect.NewRequest(&fsv1.GetHeatmapRequest{ProfileId: p.GetId()}))
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, f := range files {
			found = found || hm.Msg.GetTotal() == f.nonIdle
		}
		if !found {
			t.Errorf("profile %s: heatmap total %d matches no planted truth: half-written?", p.GetId(), hm.Msg.GetTotal())
		}
	}
	if bad, err := s.db.CheckConsistency(ctx); err != nil || len(bad) != 0 {
		t.Fatalf("inconsistent index: %v %v", bad, err)
	}

	// No residue: the server gone, check (no grace: nothing in flight)
	// finds no orphans, and removes what the kills left half-written.
	s.proc.Process.Signal(syscall.SIGTERM)
	err = <-s.exited
	s.exited <- err
	// check looks at the spools under the server's own TMPDIR.
	env := append(slices.Clone(s.env), "TMPDIR="+s.tmp)
	out, errOut, code := run1(env, "check", "--fix", "--grace", "0s")
	if code != 0 || strings.Contains(out, "orphan") || strings.Contains(out, "missing") {
		t.Fatalf("check --fix after the chaos: exit %d\n%s%s", code, out, errOut)
	}
	if out, _, code := run1(env, "check", "--grace", "0s"); code != 0 || out != "" {
		t.Fatalf("check after --fix: exit %d %q; want nothing left", code, out)
	}
	if n := s.spoolFiles(); n != 0 {
		t.Fatalf("%d spool files left", n)
	}
	t.Logf("%d kills during uploads, %d database connections killed; %d profiles stored once each, all whole; %s",
		kills, terminated, len(files), strings.TrimSpace(out))
}

// TestCheckRemovesDeadSpools: check reports the upload spool a server left
// when it died (its lock free, or without a lock its process gone) and
// check --fix removes it; a running server's spool is left alone.
func TestCheckRemovesDeadSpools(t *testing.T) {
	s := startService(t, serviceOpts{})
	dead := filepath.Join(s.tmp, "fleetscope-spool-2147483646") // no such process
	if err := os.MkdirAll(dead, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dead, "fleetscope-upload-1"), []byte("half an upload"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(slices.Clone(s.env), "TMPDIR="+s.tmp)
	out, _, code := run1(env, "check")
	if code != 1 || !strings.Contains(out, dead) || strings.Count(out, "upload spool") != 1 {
		t.Fatalf("check: exit %d %q, want the dead server's spool alone reported", code, out)
	}
	if out, errOut, code := run1(env, "check", "--fix"); code != 0 || !strings.Contains(out, "(deleted)") {
		t.Fatalf("check --fix: exit %d %q %q", code, out, errOut)
	}
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatalf("the dead server's spool is still there: %v", err)
	}
	if live, _ := filepath.Glob(filepath.Join(s.tmp, "fleetscope-spool-*")); len(live) != 1 {
		t.Fatalf("spools left: %v, want the running server's own", live)
	}
	if out, _, code := run1(env, "check"); code != 0 || out != "" {
		t.Fatalf("check after --fix: exit %d %q, want nothing (the running server's spool untouched)", code, out)
	}
}
