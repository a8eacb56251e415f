package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/pressly/goose/v3"

	"github.com/fleetscope/fleetscope/store/index"
)

// tenSeconds is migration 22: a profile's cells per unix second move from
// fleet_seconds, a row each, into the fleet_tens row of their ten seconds
// (index.AppendTenSeconds). A second's row cost about 150 bytes of key,
// header and totals beside 50 of cells, and two index entries; a ten's
// row now carries its seconds' cells, and its key is shared. Going down
// makes fleet_seconds again (its daily partitions those of fleet_tens) and
// unpacks every ten's seconds into it.
var tenSeconds = goose.NewGoMigration(22,
	&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		if err := sequential(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `ALTER TABLE fleet_tens ADD COLUMN seconds bytea`); err != nil {
			return err
		}
		if err := untilDone(ctx, tx, packTens); err != nil {
			return err
		}
		return execAll(ctx, tx, `ALTER TABLE fleet_tens ALTER COLUMN seconds SET NOT NULL`, `DROP TABLE fleet_seconds`)
	}},
	&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		if err := sequential(ctx, tx); err != nil {
			return err
		}
		if err := createFleetSeconds(ctx, tx); err != nil {
			return err
		}
		if err := unpackTens(ctx, tx); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `ALTER TABLE fleet_tens DROP COLUMN seconds`)
		return err
	}},
)

// profileKey is a profile's key in the fleet tables.
type profileKey struct {
	tenant  int64
	profile string
}

func (k *profileKey) String() string { return "profile " + k.profile }

// tenOf is a fleet_tens row's key within its profile.
type tenOf struct {
	app, event, day string
	ten             int64
}

// packTens packs the seconds of the fleet_tens rows of up to limit/10
// profiles that have rows without, from the profiles' fleet_seconds rows,
// and returns how many profiles it did. Each profile's rows are read by
// its key (one shard on Citus).
func packTens(ctx context.Context, tx *sql.Tx, limit int) (int, error) {
	profiles, err := profilesOf(ctx, tx, `SELECT DISTINCT tenant_id, profile_id::text FROM fleet_tens WHERE seconds IS NULL LIMIT $1`, limit/10)
	if err != nil {
		return 0, err
	}
	for _, p := range profiles {
		rs, err := tx.QueryContext(ctx, `SELECT app, event, day::text, second, samples, idle, cells, idle_cells
			FROM fleet_seconds WHERE tenant_id = $1 AND profile_id = $2::uuid ORDER BY app, event, day, second`, p.tenant, p.profile)
		if err != nil {
			return 0, err
		}
		seconds := map[tenOf][]index.WallSecond{}
		for rs.Next() {
			var k tenOf
			var cells, idleCells []byte
			w := index.WallSecond{Cells: make([]int32, index.Rows), IdleCells: make([]int32, index.Rows)}
			if err := rs.Scan(&k.app, &k.event, &k.day, &w.Second, &w.Samples, &w.Idle, &cells, &idleCells); err != nil {
				rs.Close()
				return 0, err
			}
			if err := errors.Join(index.ReadCells(w.Cells, cells), index.ReadCells(w.IdleCells, idleCells)); err != nil {
				rs.Close()
				return 0, fmt.Errorf("%s: %s second %d: %w", &p, k.event, w.Second, err)
			}
			w.Event, k.ten = k.event, index.FloorTo(w.Second, index.Tens)
			seconds[k] = append(seconds[k], w)
		}
		if err := rs.Err(); err != nil {
			return 0, err
		}
		rs, err = tx.QueryContext(ctx, `SELECT app, event, day::text, ten FROM fleet_tens WHERE tenant_id = $1 AND profile_id = $2::uuid`, p.tenant, p.profile)
		if err != nil {
			return 0, err
		}
		var tens []tenOf
		for rs.Next() {
			var k tenOf
			if err := rs.Scan(&k.app, &k.event, &k.day, &k.ten); err != nil {
				rs.Close()
				return 0, err
			}
			tens = append(tens, k)
		}
		if err := rs.Err(); err != nil {
			return 0, err
		}
		for _, k := range tens {
			packed, err := index.AppendTenSeconds([]byte{}, k.ten, seconds[k])
			if err != nil {
				return 0, fmt.Errorf("%s: %w", &p, err)
			}
			delete(seconds, k)
			if _, err := tx.ExecContext(ctx, `UPDATE fleet_tens SET seconds = $6
				WHERE tenant_id = $1 AND profile_id = $2::uuid AND app = $3 AND event = $4 AND day = $5::date AND ten = $7`,
				p.tenant, p.profile, k.app, k.event, k.day, packed, k.ten); err != nil {
				return 0, err
			}
		}
		for k := range seconds {
			return 0, fmt.Errorf("%s: seconds of %s from %d without their fleet_tens row", &p, k.event, k.ten)
		}
	}
	return len(profiles), nil
}

// profilesOf runs q, which selects tenant ids and profile ids as text.
func profilesOf(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]profileKey, error) {
	rs, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []profileKey
	for rs.Next() {
		var k profileKey
		if err := rs.Scan(&k.tenant, &k.profile); err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rs.Err()
}

// createFleetSeconds makes fleet_seconds as migrations 00004 and 00008
// left it, with a partition for each of fleet_tens' days.
func createFleetSeconds(ctx context.Context, tx *sql.Tx) error {
	err := execAll(ctx, tx, `CREATE TABLE fleet_seconds (
		  tenant_id  bigint NOT NULL,
		  app        text NOT NULL,
		  event      text NOT NULL,
		  second     bigint NOT NULL,
		  profile_id uuid NOT NULL,
		  host       text NOT NULL,
		  day        date NOT NULL,
		  samples    int NOT NULL,
		  idle       int NOT NULL,
		  cells      bytea NOT NULL,
		  idle_cells bytea NOT NULL,
		  PRIMARY KEY (tenant_id, app, event, second, profile_id, day)
		) PARTITION BY RANGE (day)`,
		`CREATE TABLE fleet_seconds_default PARTITION OF fleet_seconds DEFAULT`,
		`CREATE INDEX fleet_seconds_profile ON fleet_seconds (tenant_id, profile_id)`,
		`GRANT SELECT, INSERT, UPDATE, DELETE ON fleet_seconds TO fleetscope_tenant`,
		`ALTER TABLE fleet_seconds ENABLE ROW LEVEL SECURITY`,
		`CREATE POLICY tenant_isolation ON fleet_seconds TO fleetscope_tenant
		  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
		  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)`)
	if err != nil {
		return err
	}
	rs, err := tx.QueryContext(ctx, `SELECT c.relname, pg_get_expr(c.relpartbound, c.oid)
		FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
		WHERE i.inhparent = 'fleet_tens'::regclass AND c.relname LIKE 'fleet\_tens\_%' AND c.relname <> 'fleet_tens_default'`)
	if err != nil {
		return err
	}
	var parts []string
	for rs.Next() {
		var name, bound string
		if err := rs.Scan(&name, &bound); err != nil {
			rs.Close()
			return err
		}
		parts = append(parts, fmt.Sprintf(`CREATE TABLE fleet_seconds_%s PARTITION OF fleet_seconds %s`, strings.TrimPrefix(name, "fleet_tens_"), bound))
	}
	if err := rs.Err(); err != nil {
		return err
	}
	for _, p := range parts {
		if _, err := tx.ExecContext(ctx, p); err != nil {
			return err
		}
	}
	return nil
}

// unpackTens writes every second packed in fleet_tens into fleet_seconds,
// a hundred profiles at a time in key order, each profile's rows read by
// its key.
func unpackTens(ctx context.Context, tx *sql.Tx) error {
	var after profileKey
	for first := true; ; first = false {
		profiles, err := profilesOf(ctx, tx, `SELECT DISTINCT tenant_id, profile_id::text FROM fleet_tens
			WHERE $3 OR (tenant_id, profile_id::text) > ($1, $2) ORDER BY 1, 2 LIMIT 100`, after.tenant, after.profile, first)
		if err != nil || len(profiles) == 0 {
			return err
		}
		for _, p := range profiles {
			if err := unpackProfile(ctx, tx, p); err != nil {
				return err
			}
		}
		after = profiles[len(profiles)-1]
	}
}

// unpackProfile writes a profile's packed seconds into fleet_seconds.
func unpackProfile(ctx context.Context, tx *sql.Tx, p profileKey) error {
	type ten struct {
		tenOf
		host    string
		seconds []byte
	}
	rs, err := tx.QueryContext(ctx, `SELECT app, event, day::text, ten, host, seconds FROM fleet_tens WHERE tenant_id = $1 AND profile_id = $2::uuid`, p.tenant, p.profile)
	if err != nil {
		return err
	}
	var tens []ten
	for rs.Next() {
		var t ten
		if err := rs.Scan(&t.app, &t.event, &t.day, &t.ten, &t.host, &t.seconds); err != nil {
			rs.Close()
			return err
		}
		tens = append(tens, t)
	}
	if err := rs.Err(); err != nil {
		return err
	}
	for _, t := range tens {
		w := index.WallSecond{Cells: make([]int32, index.Rows), IdleCells: make([]int32, index.Rows)}
		err := index.EachTenSecond(t.seconds, t.ten, &w, func() error {
			_, err := tx.ExecContext(ctx, `INSERT INTO fleet_seconds (tenant_id, app, event, second, profile_id, host, day, samples, idle, cells, idle_cells)
				VALUES ($1, $2, $3, $4, $5::uuid, $6, $7::date, $8, $9, $10, $11)`,
				p.tenant, t.app, t.event, w.Second, p.profile, t.host, t.day, w.Samples, w.Idle,
				index.AppendCells([]byte{}, w.Cells), index.AppendCells([]byte{}, w.IdleCells))
			return err
		})
		if err != nil {
			return fmt.Errorf("%s: %s from %d: %w", &p, t.event, t.ten, err)
		}
	}
	return nil
}
