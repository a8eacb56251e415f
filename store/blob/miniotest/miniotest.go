// Package miniotest runs a real MinIO server for tests, so the S3 blob store
// is tested against the real thing and not a fake.
//
// The binary is $FLEETSCOPE_TEST_MINIO, else <module root>/bin/minio (built
// by `make tools`). Without it, tests skip, unless FLEETSCOPE_TEST_REQUIRE=1,
// when they fail. The server listens on loopback only, keeps its data in the
// test's temporary directory and is killed when the test ends.
//
// Its addresses (S3 API and console) are loopback ports this process
// holds from Start to the end of the test, on Linux: a socket bound to
// each, never listening, beside which MinIO binds its listeners each time
// it starts (its listeners set SO_REUSEADDR and SO_REUSEPORT). While the
// ports are held the kernel gives them to nobody asking for a free port,
// so no other test's server or client can pick them, before the first
// start or between Stop and Restart, and Restart finds its address free.
// What is not guaranteed: a process that binds one of these port numbers
// explicitly (a fixed port, or one it chose by binding, closing and
// handing over before Start held it) can take it while MinIO is down.
// That is detected, never served by mistake: a start whose MinIO exits or
// whose server does not take this one's secret (each Server has its own,
// checked by a signed request) fails; Start then tries new ports (5
// times), Restart fails the test (clients hold the address). Elsewhere
// than on Linux the ports are free ports chosen just before the first
// start and not held. This package is for tests only and knows nothing of
// blob stores.
package miniotest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// startTimeout bounds the wait for a starting server to answer.
const startTimeout = 30 * time.Second

// Server is a running MinIO server.
type Server struct {
	Endpoint  string // host:port of the S3 API, on 127.0.0.1
	AccessKey string
	SecretKey string

	t        testing.TB
	bin      string
	dataDir  string
	certsDir string
	console  string // host:port of the (disabled) web console
	log      tailBuffer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited
}

// Start starts a MinIO server with an empty data directory and returns once
// it answers its liveness check. It is stopped when t ends.
func Start(t testing.TB) *Server {
	t.Helper()
	secret := make([]byte, 16)
	rand.Read(secret)
	s := &Server{
		AccessKey: "fleetscope",
		SecretKey: "fleetscope-" + hex.EncodeToString(secret),
		t:         t,
		bin:       binary(t),
		dataDir:   t.TempDir(),
		certsDir:  t.TempDir(),
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("MinIO log tail:\n%s", s.log.tail(40))
		}
	})
	var err error
	for range 5 { // new addresses if another process took one (see the package doc)
		s.Endpoint, s.console = reserveAddr(t), reserveAddr(t)
		if err = s.start(); err == nil {
			return s
		}
	}
	t.Fatal(err)
	return nil
}

// URL returns the blob.Open URL of bucket on this server.
func (s *Server) URL(bucket string) string {
	return fmt.Sprintf("s3://%s?endpoint=%s&insecure=true", bucket, s.Endpoint)
}

// Stop kills the server abruptly (SIGKILL), as a crash would, and waits for
// it to exit. It is safe to call from any goroutine and more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Restart stops the server if it runs and starts it again on the same
// address with the same data; the address stays held meanwhile (the
// package doc). It fails the test if the server cannot start there or the
// one answering is not this one. Call it from the test's goroutine.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("miniotest: restart at %s: %v", s.Endpoint, err)
	}
}

func (s *Server) start() error {
	cmd := exec.Command(s.bin, "server", s.dataDir,
		"--address", s.Endpoint,
		"--console-address", s.console,
		"--certs-dir", s.certsDir)
	cmd.Env = append(environ(),
		"MINIO_ROOT_USER="+s.AccessKey,
		"MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
	)
	cmd.Stdout = &s.log
	cmd.Stderr = &s.log
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("miniotest: start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(done)
	}()
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	client := &http.Client{Timeout: time.Second}
	live := "http://" + s.Endpoint + "/minio/health/live"
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := client.Get(live)
		if err == nil {
			resp.Body.Close()
			// MinIO answers live before its object layer is up, and says
			// so in a header; S3 calls fail until then.
			if resp.StatusCode == http.StatusOK && resp.Header.Get("X-Minio-Server-Status") != "offline" {
				return s.ours()
			}
		}
		select {
		case <-done:
			s.Stop()
			return fmt.Errorf("miniotest: MinIO exited while starting (%v); log tail:\n%s", waitErr, s.log.tail(40))
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("miniotest: MinIO did not answer %s within %v; log tail:\n%s", live, startTimeout, s.log.tail(40))
		}
	}
}

// ours checks that the server answering at the endpoint is this one: it
// takes this server's secret (a signed request), and this process runs.
func (s *Server) ours() error {
	c, err := minio.New(s.Endpoint, &minio.Options{Creds: credentials.NewStaticV4(s.AccessKey, s.SecretKey, "")})
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_, err = c.ListBuckets(ctx)
	}
	if err != nil {
		s.Stop()
		return fmt.Errorf("miniotest: the server at %s is not the one started (%v); log tail:\n%s", s.Endpoint, err, s.log.tail(40))
	}
	return nil
}

// binary finds the MinIO binary or ends the test.
func binary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv("FLEETSCOPE_TEST_MINIO"); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			t.Fatalf("miniotest: FLEETSCOPE_TEST_MINIO: %v", err)
		}
		return bin
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatalf("miniotest: %v", err)
	}
	bin := filepath.Join(root, "bin", "minio")
	if _, err := os.Stat(bin); err != nil {
		msg := fmt.Sprintf("miniotest: no MinIO binary at %s: run make tools, or set FLEETSCOPE_TEST_MINIO", bin)
		if os.Getenv("FLEETSCOPE_TEST_REQUIRE") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return bin
}

// moduleRoot walks up from the working directory to the one holding go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// environ is the test's environment without MINIO_ variables, which would
// change how the server runs.
func environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MINIO_") {
			env = append(env, kv)
		}
	}
	return env
}

// tailBuffer keeps the last 64 KiB written to it.
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - 64<<10; over > 0 {
		b.buf = b.buf[over:]
	}
	return len(p), nil
}

// tail returns the last n lines written.
func (b *tailBuffer) tail(n int) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := strings.Split(strings.TrimRight(string(b.buf), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
