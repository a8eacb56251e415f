package deploy

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// stub stands in for ./bin/fleetscope: it logs each call and, for `server`,
// the FLEETSCOPE_* environment it was given, then exits. STUB_FAIL names a
// subcommand to fail; STUB_KEY is what `key create` prints.
const stub = `#!/usr/bin/env bash
log=$(dirname "$0")/../calls.log
echo "call $*" >> "$log"
[[ ${STUB_FAIL:-} == "$1" ]] && { echo "fleetscope: $1: stub failure" >&2; exit 1; }
case $1 in
key) printf '%s\n' "${STUB_KEY-fsk_stub_secret}" ;;
server) env | grep '^FLEETSCOPE_' | sort | sed 's/^/env /' >> "$log" ;;
esac
exit 0
`

// checkout is a copy of what run-local.sh needs: the script and a stub
// binary, in a directory other users (the postgres system user) can reach.
type checkout struct {
	t    *testing.T
	root string
}

func newCheckout(t *testing.T) checkout {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		skipOrFail(t, "no bash")
	}
	dir, err := os.MkdirTemp("", "run-local-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	// The repository path has a space, as a checkout may.
	root := filepath.Join(dir, "fleet scope")
	script, err := os.ReadFile("run-local.sh")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, root, filepath.Join(root, "deploy"), filepath.Join(root, "bin")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "deploy", "run-local.sh"), script, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "fleetscope"), []byte(stub), 0o755); err != nil {
		t.Fatal(err)
	}
	makefile, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "Makefile"), makefile, 0o644); err != nil {
		t.Fatal(err)
	}
	return checkout{t: t, root: root}
}

// make runs a target of the repository's Makefile in the checkout, as
// make stop is run, from its root.
func (c checkout) make(target string) (stdout, stderr string, err error) {
	c.t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		skipOrFail(c.t, "no make")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "make", "--no-print-directory", target)
	cmd.Dir = c.root
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// run runs deploy/run-local.sh with args in the checkout, from another
// directory, with no FLEETSCOPE_* variables but those in env.
func (c checkout) run(env []string, args ...string) (stdout, stderr string, err error) {
	c.t.Helper()
	// Not t.Context(): that is canceled before the cleanup that stops the cluster.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(c.root, "deploy", "run-local.sh")}, args...)...)
	cmd.Dir = os.TempDir()
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "FLEETSCOPE_") && !strings.HasPrefix(kv, "STUB_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err = cmd.Run()
	return o.String(), e.String(), err
}

// calls returns and clears the stub's log.
func (c checkout) calls() []string {
	c.t.Helper()
	path := filepath.Join(c.root, "calls.log")
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		c.t.Fatal(err)
	}
	os.Remove(path)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

var wantCalls = []string{
	"call migrate",
	"call tenant create default --if-not-exists",
	"call key create --tenant default --scope ingest,read,admin",
	"call server",
}

// TestRunLocalBootstrap runs the script against a given database URL (no
// Postgres needed) and checks what it asks of the fleetscope binary.
func TestRunLocalBootstrap(t *testing.T) {
	c := newCheckout(t)
	dbURL := "postgres://app:hunter22@db.invalid:5432/fs?sslmode=disable"
	stdout, stderr, err := c.run([]string{"FLEETSCOPE_DATABASE_URL=" + dbURL})
	if err != nil {
		t.Fatalf("run-local.sh: %v\n%s", err, stderr)
	}
	calls := c.calls()
	var commands, env []string
	for _, l := range calls {
		if strings.HasPrefix(l, "env ") {
			env = append(env, strings.TrimPrefix(l, "env "))
		} else {
			commands = append(commands, l)
		}
	}
	if !slices.Equal(commands, wantCalls) {
		t.Errorf("fleetscope calls:\n%s\nwant:\n%s", strings.Join(commands, "\n"), strings.Join(wantCalls, "\n"))
	}
	for _, kv := range []string{"FLEETSCOPE_DATABASE_URL=" + dbURL, "FLEETSCOPE_BLOB_URL=file://./.data/blobs"} {
		if !slices.Contains(env, kv) {
			t.Errorf("the server ran without %s (its FLEETSCOPE_* env: %q)", kv, env)
		}
	}
	for _, want := range []string{"http://127.0.0.1:8080", "fsk_stub_secret", "FLEETSCOPE_API_KEY=fsk_stub_secret ./bin/fleetscope upload --app myapp", "make stop", "deploy/run-local.sh stop", "make install"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("banner lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout+stderr, "hunter22") {
		t.Errorf("the output shows the database password:\n%s%s", stdout, stderr)
	}
	if b, err := os.ReadFile(filepath.Join(c.root, ".data", "api-key")); err != nil || strings.TrimSpace(string(b)) != "fsk_stub_secret" {
		t.Errorf(".data/api-key = %q, %v; want the key", b, err)
	}

	// Settings given are kept, and the banner follows the address.
	stdout, stderr, err = c.run([]string{
		"FLEETSCOPE_DATABASE_URL=" + dbURL,
		"FLEETSCOPE_BLOB_URL=s3://b?endpoint=m:9000&insecure=true",
		"FLEETSCOPE_ADDR=0.0.0.0:9090",
	})
	if err != nil {
		t.Fatalf("run-local.sh: %v\n%s", err, stderr)
	}
	if calls := c.calls(); !slices.Contains(calls, "env FLEETSCOPE_BLOB_URL=s3://b?endpoint=m:9000&insecure=true") {
		t.Errorf("FLEETSCOPE_BLOB_URL was not kept: %q", calls)
	}
	if !strings.Contains(stdout, "FLEETSCOPE_URL=http://127.0.0.1:9090 FLEETSCOPE_API_KEY=") {
		t.Errorf("banner does not point the CLI at 127.0.0.1:9090:\n%s", stdout)
	}
}

// TestRunLocalFailures checks that each failing step stops the script
// before the server runs, with a message.
func TestRunLocalFailures(t *testing.T) {
	c := newCheckout(t)
	db := "FLEETSCOPE_DATABASE_URL=postgres://u@db.invalid/x"
	for _, tc := range []struct {
		name, msg string
		env       []string
		args      []string
	}{
		{"migrate", "fleetscope migrate failed", []string{db, "STUB_FAIL=migrate"}, nil},
		{"tenant", "fleetscope tenant create default failed", []string{db, "STUB_FAIL=tenant"}, nil},
		{"key", "fleetscope key create failed", []string{db, "STUB_FAIL=key"}, nil},
		{"no key", "printed no key", []string{db, "STUB_KEY="}, nil},
		{"chatty key", "printed more than a key", []string{db, "STUB_KEY=created key abc"}, nil},
		{"usage", "usage: deploy/run-local.sh", nil, []string{"frobnicate"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := checkout{t: t, root: c.root}
			_, stderr, err := c.run(tc.env, tc.args...)
			if err == nil {
				t.Fatalf("run-local.sh succeeded, want a failure")
			}
			if !strings.Contains(stderr, tc.msg) {
				t.Errorf("stderr %q lacks %q", stderr, tc.msg)
			}
			if slices.Contains(c.calls(), "call server") {
				t.Errorf("the server ran after the failure")
			}
		})
	}

	if err := os.Remove(filepath.Join(c.root, "bin", "fleetscope")); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := c.run([]string{db}); err == nil || !strings.Contains(stderr, "make build") {
		t.Errorf("without bin/fleetscope: %v, %q; want a failure naming make build", err, stderr)
	}
}

// TestRunLocalPostgres brings up the private cluster for real: create,
// reuse while running, stop, start again. It needs PostgreSQL's server
// binaries (and, as root, the postgres system user).
func TestRunLocalPostgres(t *testing.T) {
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb")
	if len(bins) == 0 && os.Getenv("PG_BIN") == "" {
		skipOrFail(t, "no PostgreSQL server binaries under /usr/lib/postgresql (apt-get install postgresql)")
	}
	c := newCheckout(t)
	// Far from run-local's default port, so a developer's cluster keeps its own.
	env := []string{"FLEETSCOPE_PG_PORT=55329"}
	t.Cleanup(func() {
		if _, stderr, err := c.run(nil, "stop"); err != nil {
			t.Errorf("run-local.sh stop: %v\n%s", err, stderr)
		}
	})

	start := func(what string) string {
		t.Helper()
		_, stderr, err := c.run(env)
		if err != nil {
			t.Fatalf("%s: run-local.sh: %v\n%s", what, err, stderr)
		}
		calls := c.calls()
		if !slices.Equal(slices.DeleteFunc(slices.Clone(calls), func(s string) bool { return strings.HasPrefix(s, "env ") }), wantCalls) {
			t.Fatalf("%s: fleetscope calls %q", what, calls)
		}
		for _, l := range calls {
			if u, ok := strings.CutPrefix(l, "env FLEETSCOPE_DATABASE_URL="); ok {
				return u
			}
		}
		t.Fatalf("%s: the server got no FLEETSCOPE_DATABASE_URL: %q", what, calls)
		return ""
	}
	psql := func(dbURL, query string) string {
		t.Helper()
		out, err := exec.Command(filepath.Join(filepath.Dir(bins[len(bins)-1]), "psql"), "-X", "-tA", "-c", query, dbURL).CombinedOutput()
		if err != nil {
			t.Fatalf("psql %s: %v\n%s", dbURL, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	status := func() string {
		t.Helper()
		out, stderr, err := c.run(nil, "status")
		if err != nil {
			t.Fatalf("run-local.sh status: %v\n%s", err, stderr)
		}
		return out
	}

	first := start("first run")
	if !strings.HasPrefix(first, "postgres://postgres@127.0.0.1:") || !strings.HasSuffix(first, "/fleetscope?sslmode=disable") {
		t.Fatalf("FLEETSCOPE_DATABASE_URL = %q", first)
	}
	if got := psql(first, "SELECT current_database() || ' ' || current_setting('listen_addresses')"); got != "fleetscope 127.0.0.1" {
		t.Errorf("database, listen_addresses = %q, want fleetscope on 127.0.0.1 only", got)
	}
	socket, _ := filepath.Glob(filepath.Join(c.root, ".data", "pg", ".s.PGSQL.*"))
	if len(socket) == 0 {
		t.Errorf("no unix socket in .data/pg")
	}
	psql(first, "CREATE TABLE kept (x int)")

	if again := start("second run"); again != first {
		t.Errorf("second run: FLEETSCOPE_DATABASE_URL %q, want the running cluster's %q", again, first)
	}
	if s := status(); !strings.HasPrefix(s, "running: "+first) {
		t.Errorf("status = %q", s)
	}

	// make stop stops it (the server's Ctrl-C does not).
	if _, stderr, err := c.make("stop"); err != nil || !strings.Contains(stderr, "stopped the private PostgreSQL") {
		t.Fatalf("make stop: %v\n%s", err, stderr)
	}
	if s := status(); !strings.HasPrefix(s, "stopped") {
		t.Errorf("status after stop = %q", s)
	}
	if _, stderr, err := c.run(nil, "stop"); err != nil || !strings.Contains(stderr, "not running") {
		t.Errorf("second stop: %v, %q; want success, saying it is not running", err, stderr)
	}

	third := start("run after stop")
	if third != first {
		t.Errorf("after stop: FLEETSCOPE_DATABASE_URL %q, want the same port again, %q", third, first)
	}
	if got := psql(third, "SELECT count(*) FROM kept"); got != "0" {
		t.Errorf("the cluster lost its data across stop and start: %q", got)
	}
}

// skipOrFail skips t for a missing prerequisite, or fails it when
// FLEETSCOPE_TEST_REQUIRE=1 (CI) asks for every test to run.
func skipOrFail(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("FLEETSCOPE_TEST_REQUIRE") == "1" {
		t.Fatal(why + " (FLEETSCOPE_TEST_REQUIRE=1: every test must run)")
	}
	t.Skip(why + " (skipped; FLEETSCOPE_TEST_REQUIRE=1 makes this a failure)")
}
