// Package postgres is the Postgres index (pgx/v5): tenants and their API
// keys, profiles, the per-tenant frame and stack dictionary, and the per
// (profile, event, second) rows of store/index. Everything tenant-owned is
// read and written inside a transaction that runs as the NOLOGIN role
// fleetscope_tenant with the tenant in a transaction-local setting, so
// row-level security stands behind every query's own tenant filter.
// Driver errors are translated to fleetscope errors here; nothing above
// store/ imports pgx.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/migrations"
)

// DB is the index.
type DB struct {
	pool    *pgxpool.Pool
	known   known        // dictionary entries stored (see writeDictionary)
	numbers numbers      // stack keys by number (see ProfileStacks)
	lost    atomic.Int64 // when a connection was last found broken (Unix nanoseconds)
	rerun   atomic.Int64 // operations run again after their connection broke

	reclaimHook func(point string) // tests: called at named points of a reclaim
}

// Retried counts the operations run again on a fresh connection after
// theirs broke (killed sessions, a restarted database): work that would
// otherwise have failed.
func (db *DB) Retried() int64 { return db.rerun.Load() }

// suspectFor is how long after a broken connection every connection the
// pool hands out is pinged first: what broke one (a restarted server,
// killed sessions) has usually broken the idle others too.
const suspectFor = 5 * time.Second

// Open connects to the database at url.
func Open(ctx context.Context, url string) (*DB, error) {
	if url == "" {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "no database URL (set FLEETSCOPE_DATABASE_URL)")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "database URL: %v", err)
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = 16 // queries are short; more than pgx's default of 4 on 2 cores
	}
	db := &DB{}
	cfg.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool {
		return p.IdleDuration > time.Second || time.Since(time.Unix(0, db.lost.Load())) < suspectFor
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres %s@%s/%s: %w", cfg.ConnConfig.User, cfg.ConnConfig.Host, cfg.ConnConfig.Database, err)
	}
	db.pool = pool
	return db, nil
}

// Close closes the pool.
func (db *DB) Close() { db.pool.Close() }

// Ping checks the database answers. A pooled connection that died (its
// backend killed, the server restarted) is dropped and another tried, so
// one stale connection does not fail a health check.
func (db *DB) Ping(ctx context.Context) error {
	return db.retry(ctx, func() error {
		return db.withConn(ctx, func(c *pgx.Conn) error { return c.Ping(ctx) })
	})
}

// migrateLock is the advisory lock key Migrate holds ("fleetmig" in ASCII;
// not distributeLock, which distribute takes inside it on another
// connection).
const migrateLock int64 = 0x666c6565746d6967

// Migrate applies the embedded migrations (goose) and, on Citus,
// distributes the tables (citus.go). Servers starting together on a new
// database (a deployment's replicas) take turns, under a session-level
// advisory lock: each would otherwise create the same types and tables,
// and all but one fail.
func (db *DB) Migrate(ctx context.Context) error {
	if db.pool.Config().MaxConns < 2 {
		return db.migrate(ctx) // no second connection to migrate with while one holds the lock
	}
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer c.Release()
	if _, err := c.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLock); err != nil {
		return fmt.Errorf("migrate: waiting for another server's migration: %w", err)
	}
	defer func() {
		if _, err := c.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, migrateLock); err != nil {
			c.Conn().Close(context.Background()) // the lock ends with the session
		}
	}()
	return db.migrate(ctx)
}

func (db *DB) migrate(ctx context.Context) error {
	sqldb := stdlib.OpenDBFromPool(db.pool)
	defer sqldb.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, sqldb, migrations.FS, migrations.Options()...)
	if err != nil {
		return fmt.Errorf("migrations: %w", err)
	}
	if _, err := p.Up(ctx); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := db.distribute(ctx); err != nil {
		return err
	}
	return db.EnsurePartitions(ctx, time.Now(), 7)
}

// inTenant runs fn in a transaction as the tenant role with the tenant set,
// so row-level security applies to everything fn does.
func (db *DB) inTenant(ctx context.Context, tenant int64, fn func(pgx.Tx) error) error {
	return db.withConn(ctx, func(c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
			b := &pgx.Batch{} // one round trip
			queueTenant(b, tenant)
			if err := tx.SendBatch(ctx, b).Close(); err != nil {
				return err
			}
			return fn(tx)
		})
	})
}

// queueTenant queues the statements that make the open transaction the
// tenant's: the tenant id in a transaction-local setting, then the tenant
// role. They are SET LOCAL statements (not set_config) and each its own
// statement, in a transaction block, because that is what Citus forwards to
// the worker nodes, where the shards' row-level security policies read the
// setting; citus.propagate_set_commands asks it to (on plain Postgres the
// setting is an unused placeholder). The tenant id is an integer formatted
// here, so it is safe in the statement's text.
func queueTenant(b *pgx.Batch, tenant int64) {
	b.Queue(`SET LOCAL citus.propagate_set_commands TO local`)
	b.Queue(`SET LOCAL fleetscope.tenant_id TO '` + strconv.FormatInt(tenant, 10) + `'`)
	b.Queue(`SET LOCAL ROLE fleetscope_tenant`)
}

// errConnDropped marks a failure after which the connection was closed.
type errConnDropped struct{ err error }

func (e errConnDropped) Error() string { return e.err.Error() }
func (e errConnDropped) Unwrap() error { return e.err }

// errScan is an error of a read's scan function: a stored row it could not
// decode, say. The connection and the statement went well; the row did
// not, and reading it again would not help (translate: EINTERNAL).
type errScan struct{ err error }

func (e errScan) Error() string { return e.err.Error() }
func (e errScan) Unwrap() error { return e.err }

// withConn runs fn on a pooled connection. A failure that is neither the
// server's answer (a PgError) nor one of ours can leave the connection in
// a state the pool cannot see (a backend killed mid-pipeline has been seen
// to leave pgx's statement cache out of step): such a connection is closed,
// so the pool drops it, and the error marked for retry.
func (db *DB) withConn(ctx context.Context, fn func(*pgx.Conn) error) error {
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	err = fn(c.Conn())
	if err == nil {
		return nil
	}
	if c.Conn().IsClosed() || connectionLost(err) { // a broken socket, a killed backend
		// What broke it has likely broken the pool's idle connections too:
		// for a while they are pinged before use (ShouldPing, in Open).
		db.lost.Store(time.Now().UnixNano())
	}
	if c.Conn().IsClosed() {
		return errConnDropped{err}
	}
	var pe *pgconn.PgError
	var fe *fleetscope.Error
	var se errScan
	if !errors.As(err, &pe) && !errors.As(err, &fe) && !errors.As(err, &se) && !errors.Is(err, pgx.ErrNoRows) && ctx.Err() == nil {
		c.Conn().Close(context.Background())
		return errConnDropped{err}
	}
	return err
}

// readTenant runs one read query as the tenant role in a single round trip:
// BEGIN, the tenant's settings (queueTenant), the query and COMMIT go as
// one pipeline, so SET LOCAL holds for the query and ends with it. scan is
// called with the rows.
func (db *DB) readTenant(ctx context.Context, tenant int64, scan func(pgx.Rows) error, q string, args ...any) error {
	scanned := false // a retry after scan saw rows would hand it rows twice
	return db.retry(ctx, func() error {
		// A new batch each attempt: pgx records in a queued query the
		// prepared statement it used, by name, and a retry on another
		// connection would ask that one for statements it never prepared
		// ("prepared statement ... does not exist").
		b := &pgx.Batch{}
		b.Queue(`BEGIN`)
		queueTenant(b, tenant)
		b.Queue(q, args...).Query(func(rows pgx.Rows) error {
			scanned = true
			defer rows.Close()
			if err := scan(rows); err != nil {
				var fe *fleetscope.Error
				if errors.As(err, &fe) || errors.Is(err, pgx.ErrNoRows) || rows.Err() != nil || ctx.Err() != nil {
					return err
				}
				return errScan{err}
			}
			return rows.Err()
		})
		b.Queue(`COMMIT`)
		err := db.withConn(ctx, func(c *pgx.Conn) error {
			err := c.SendBatch(ctx, b).Close()
			if err != nil && !c.IsClosed() && c.PgConn().TxStatus() != 'I' {
				// The server refused a statement: the rest of the pipeline was
				// skipped and the transaction is left failed.
				if _, rerr := c.Exec(ctx, `ROLLBACK`); rerr != nil {
					return errors.Join(err, rerr)
				}
			}
			return err
		})
		if err != nil && ctx.Err() != nil {
			// The caller left or ran out of time, and pgx closed the
			// connection under the read: its context's error, not the
			// database's (a cached load shared with others is then loaded
			// again for them, not failed).
			return ctx.Err()
		}
		if err != nil && scanned && connectionLost(err) {
			return fleetscope.Errorf(fleetscope.EUNAVAILABLE, "database connection lost while reading, retry later")
		}
		return err
	})
}

// retry runs fn again (up to twice more) when it failed because its
// connection broke (a restarted or killed backend, a dropped socket): the
// pool then hands out a fresh one. Callers' operations are idempotent: reads,
// and profile inserts keyed by content hash.
func (db *DB) retry(ctx context.Context, fn func() error) error {
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		if attempt > 0 {
			db.rerun.Add(1)
		}
		if err = fn(); err == nil || !connectionLost(err) || ctx.Err() != nil {
			return err
		}
	}
	return err
}

// connectionLost reports errors of a connection, not of the statement.
func connectionLost(err error) bool {
	var scan errScan
	if errors.As(err, &scan) {
		return false
	}
	var dropped errConnDropped
	if errors.As(err, &dropped) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ne net.Error
	return pgconn.SafeToRetry(err) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &ne)
}

// readTenantRow is readTenant for a query of one row; no row is
// pgx.ErrNoRows.
func (db *DB) readTenantRow(ctx context.Context, tenant int64, scan func(pgx.Row) error, q string, args ...any) error {
	return db.readTenant(ctx, tenant, func(rows pgx.Rows) error {
		if !rows.Next() {
			if err := rows.Err(); err != nil {
				return err
			}
			return pgx.ErrNoRows
		}
		return scan(rows)
	}, q, args...)
}

// translate maps driver errors to fleetscope errors, keeping the driver's
// error as the cause: no row is ENOTFOUND, a unique violation ECONFLICT,
// text Postgres cannot store (NUL bytes, invalid UTF-8) EINVALID, a lost
// connection or a full disk EUNAVAILABLE, a stored row that could not be
// decoded (errScan) EINTERNAL.
func translate(err error, what string) error {
	if err == nil {
		return nil
	}
	var fe *fleetscope.Error
	if errors.As(err, &fe) {
		return err
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fleetscope.Wrap(err, fleetscope.ENOTFOUND, what+" not found")
	}
	var se errScan
	if errors.As(err, &se) {
		return fleetscope.Wrap(err, fleetscope.EINTERNAL, what+": a stored row could not be read: "+err.Error())
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case pgerrcode.UniqueViolation:
			return fleetscope.Wrap(err, fleetscope.ECONFLICT, what+" already exists")
		case pgerrcode.CharacterNotInRepertoire, pgerrcode.UntranslatableCharacter, pgerrcode.InvalidTextRepresentation:
			return fleetscope.Wrap(err, fleetscope.EINVALID, what+": text with a NUL byte or invalid UTF-8")
		case pgerrcode.DiskFull, pgerrcode.InsufficientResources, pgerrcode.OutOfMemory:
			return fleetscope.Wrap(err, fleetscope.EUNAVAILABLE, "the database is out of disk or memory: nothing was stored, retry later")
		}
	}
	if connectionLost(err) {
		return fleetscope.Wrap(err, fleetscope.EUNAVAILABLE, "database unavailable, retry later")
	}
	return fmt.Errorf("%s: %w", what, err)
}
