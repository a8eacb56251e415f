package postgres

import (
	"context"

	"github.com/jackc/pgx/v5"
)

// RememberStack records a stack key as stored with a content check, as a
// committed upload would (tests: a collision the memory must catch).
func (db *DB) RememberStack(tenant, key int64, check uint64) {
	db.known.remember(tenant, db.known.generation(tenant), nil, map[int64]knownEntry{key: {check: check}})
}

// SecondsQuery is the query of Cells (samples false) and Seconds, for the
// tests that EXPLAIN it.
var SecondsQuery = secondsQuery

// ReadTenant is readTenant, for tests.
func (db *DB) ReadTenant(ctx context.Context, tenant int64, scan func(pgx.Rows) error, q string, args ...any) error {
	return db.readTenant(ctx, tenant, scan, q, args...)
}

// Partitioned are the tables partitioned by ingest day.
var Partitioned = partitioned

// Distribute is distribute (on Citus; nothing elsewhere), for a test that
// migrates a database distributed at an older version.
func (db *DB) Distribute(ctx context.Context) error { return db.distribute(ctx) }

// The time index's span classes (migration 00010), and the queries that
// use it, for the tests that place profiles at the classes' bounds and
// EXPLAIN the queries.
const SpanClasses = spanClasses

var (
	SpanBound           = spanBound
	FleetProfilesQuery  = fleetProfilesQuery
	FleetLabelSetsQuery = fleetLabelSetsQuery
)

// SetReclaimHook has fn called at named points of every reclaim (tests that
// interleave uploads with a reclaim).
func (db *DB) SetReclaimHook(fn func(point string)) { db.reclaimHook = fn }

// DictLock is the advisory lock key of a tenant's dictionary.
var DictLock = dictLock
