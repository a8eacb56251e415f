// Package pgtest gives each test its own throw-away database on a real
// Postgres server, migrated, and drops it afterwards. The server is
// FLEETSCOPE_TEST_DATABASE_URL (default: the local cluster as postgres).
// Without a server the test is skipped, unless FLEETSCOPE_TEST_REQUIRE=1
// (as in make test), when it fails.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
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
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, admin)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
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
