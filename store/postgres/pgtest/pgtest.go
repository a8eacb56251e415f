// Package pgtest gives each test its own throw-away database on a real
// Postgres server, migrated, and drops it afterwards. The server is
// FLEETSCOPE_TEST_DATABASE_URL (default: the local cluster as postgres).
// Without a server the test is skipped, unless FLEETSCOPE_TEST_REQUIRE=1
// (as in make test), when it fails.
//
// A Citus coordinator (its admin database has the citus extension and lists
// workers, as tools/citus.sh sets it up) gets the same: the database is
// created on every node (citus.enable_create_database_propagation), with
// the extension on each, and the new database's coordinator learns its
// workers, so Migrate distributes the tables there. make test-citus sets
// FLEETSCOPE_TEST_CITUS=1: the server must then be one.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope/store/postgres"
)

// DefaultURL is the machine's cluster.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ServerURL returns the admin URL of the test server.
func ServerURL() string {
	if u := os.Getenv("FLEETSCOPE_TEST_DATABASE_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// NewURL creates an empty database and returns its URL; it is dropped when
// the test ends.
func NewURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := ServerURL()
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		if os.Getenv("FLEETSCOPE_TEST_REQUIRE") == "1" {
			t.Fatalf("postgres at %s: %v (make test starts it)", admin, err)
		}
		t.Skipf("no postgres at %s: %v", admin, err)
	}
	defer conn.Close(ctx)
	var b [6]byte
	rand.Read(b[:])
	name := "fleetscope_test_" + hex.EncodeToString(b[:])
	workers, err := citusWorkers(ctx, conn)
	if err != nil {
		t.Fatalf("postgres at %s: %v", admin, err)
	}
	if workers == nil && os.Getenv("FLEETSCOPE_TEST_CITUS") == "1" {
		t.Fatalf("FLEETSCOPE_TEST_CITUS=1 but %s is not a Citus coordinator with workers (make test-citus starts one)", admin)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := dropDatabase(ctx, admin, workers, name); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	if workers != nil {
		if err := addCitus(ctx, conn, u, workers); err != nil {
			t.Fatalf("citus in database %s: %v", name, err)
		}
	}
	return u.String()
}

// dropDatabase drops the database name from the server at admin and, on
// Citus, from each worker. On Citus each node drops its own copy: FORCE
// ends the database's sessions but not a Citus maintenance daemon busy at
// that moment, so a drop can fail on one node after succeeding on others,
// and a propagated DROP DATABASE cannot be retried then (Citus first locks
// the database by name on the first worker, where it may be gone). Each
// node's drop is retried, IF EXISTS. A local drop on the coordinator also
// removes Citus's record of the database.
func dropDatabase(ctx context.Context, admin string, workers []string, name string) error {
	nodes := []string{admin}
	for _, w := range workers {
		u, err := url.Parse(admin)
		if err != nil {
			return err
		}
		u.Host = w
		nodes = append(nodes, u.String())
	}
	for _, node := range nodes {
		for attempt := 1; ; attempt++ {
			err := execAt(ctx, node, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
			if err == nil {
				break
			}
			if workers == nil || attempt == 20 || ctx.Err() != nil {
				return err
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	return nil
}

// RequireCitus skips the test unless the test server is a Citus
// coordinator with workers; under FLEETSCOPE_TEST_CITUS=1 (make
// test-citus, where Citus is expected) it fails instead.
func RequireCitus(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	admin := ServerURL()
	expected := os.Getenv("FLEETSCOPE_TEST_CITUS") == "1"
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		if expected || os.Getenv("FLEETSCOPE_TEST_REQUIRE") == "1" {
			t.Fatalf("postgres at %s: %v", admin, err)
		}
		t.Skipf("no postgres at %s: %v", admin, err)
	}
	defer conn.Close(ctx)
	workers, err := citusWorkers(ctx, conn)
	switch {
	case err != nil:
		t.Fatalf("postgres at %s: %v", admin, err)
	case workers == nil && expected:
		t.Fatalf("FLEETSCOPE_TEST_CITUS=1 but %s is not a Citus coordinator with workers (make test-citus starts one)", admin)
	case workers == nil:
		t.Skipf("needs a Citus coordinator with workers, and %s is not one: make test-citus runs this test", admin)
	}
}

// citusWorkers returns the workers (host:port) the admin database's Citus
// metadata lists, or nil if the server is not a Citus coordinator. On one,
// it turns on database propagation for conn's session, so CREATE DATABASE
// creates the database on the workers too.
func citusWorkers(ctx context.Context, conn *pgx.Conn) ([]string, error) {
	var citus bool
	if err := conn.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')`).Scan(&citus); err != nil || !citus {
		return nil, err
	}
	rows, err := conn.Query(ctx, `SELECT nodename || ':' || nodeport FROM pg_dist_node
		WHERE groupid <> 0 AND noderole = 'primary' AND isactive ORDER BY nodeid`)
	if err != nil {
		return nil, err
	}
	workers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(workers) == 0 {
		return nil, err // Citus on a single node: nothing to add
	}
	_, err = conn.Exec(ctx, "SET citus.enable_create_database_propagation TO on")
	return workers, err
}

// CitusShards is the shard count of a test database's distributed tables:
// fewer than Citus's 32, so that migrating (every table and daily partition
// made 32 times) takes about a second instead of six; two per worker still
// spread each table over the cluster.
const CitusShards = 4

// addCitus creates the citus extension in the new database at u on every
// worker and on the coordinator, registers the coordinator and the workers
// in its metadata (Citus keeps them per database) and sets its shard count.
func addCitus(ctx context.Context, admin *pgx.Conn, u *url.URL, workers []string) error {
	name := strings.TrimPrefix(u.Path, "/")
	if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s SET citus.shard_count = %d", name, CitusShards)); err != nil {
		return err
	}
	for _, w := range workers {
		wu := *u
		wu.Host = w
		if err := execAt(ctx, wu.String(), "CREATE EXTENSION citus"); err != nil {
			return fmt.Errorf("worker %s: %w", w, err)
		}
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		host, port = u.Hostname(), "5432"
	}
	stmts := []string{"CREATE EXTENSION citus", fmt.Sprintf("SELECT citus_set_coordinator_host('%s', %s)", host, port)}
	for _, w := range workers {
		h, p, err := net.SplitHostPort(w)
		if err != nil {
			return err
		}
		stmts = append(stmts, fmt.Sprintf("SELECT citus_add_node('%s', %s)", h, p))
	}
	return execAt(ctx, u.String(), stmts...)
}

func execAt(ctx context.Context, url string, stmts ...string) error {
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return nil
}

// New returns an open, migrated index in a fresh database.
func New(t testing.TB) *postgres.DB {
	t.Helper()
	ctx := context.Background()
	db, err := postgres.Open(ctx, NewURL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}
