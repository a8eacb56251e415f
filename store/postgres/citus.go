package postgres

// Citus: when the database has the citus extension, Migrate distributes the
// schema after the migrations: every table of the schema with a tenant_id
// column is hash-distributed by tenant_id, all co-located (shard i of every
// table holds the same tenants, so a tenant's joins, foreign keys and
// transactions stay on one worker), and the tables they refer to that have
// no tenant_id (tenants) become reference tables, copied to every node. The
// tables are found in the catalog, so tables added by later migrations are
// distributed the same way; partitions follow their parent (and partitions
// created later by EnsurePartitions are distributed by Citus as they are
// created). Nothing is done when everything is already distributed.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// distributeLock serialises replicas distributing at once (an advisory
// lock key: "fleetscp" in ASCII).
const distributeLock = 0x666c656574736370

// Citus reports whether the database has the citus extension.
func (db *DB) Citus(ctx context.Context) (bool, error) {
	var ok bool
	err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus')`).Scan(&ok)
	return ok, err
}

// citusPlan is what distribute has left to do.
type citusPlan struct {
	distribute []string // tenant tables not yet distributed by hash
	reference  []string // tables they refer to, without tenant_id, not yet reference tables
	colocate   string   // a tenant table already distributed, if any
	login      bool     // fleetscope_tenant cannot log in yet
}

func (p citusPlan) empty() bool { return len(p.distribute) == 0 && len(p.reference) == 0 && !p.login }

// querier is a pool or a transaction.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// planCitus reads the catalog: tables of the current schema (not
// partitions: they follow their parent) with a tenant_id column, and the
// tables their foreign keys refer to.
func planCitus(ctx context.Context, q querier) (citusPlan, error) {
	var p citusPlan
	rows, err := q.Query(ctx, `
		SELECT c.oid::regclass::text, coalesce(d.partmethod = 'h', false),
		       coalesce(d.partmethod = 'h' AND column_to_column_name(d.logicalrelid, d.partkey) = 'tenant_id', false)
		FROM pg_class c
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
		LEFT JOIN pg_dist_partition d ON d.logicalrelid = c.oid
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND NOT c.relispartition
		ORDER BY c.oid`)
	if err != nil {
		return p, fmt.Errorf("tenant tables: %w", err)
	}
	var all []string
	for rows.Next() {
		var name string
		var hashed, byTenant bool
		if err := rows.Scan(&name, &hashed, &byTenant); err != nil {
			return p, err
		}
		all = append(all, name)
		switch {
		case hashed && !byTenant:
			rows.Close()
			return p, fmt.Errorf("table %s is distributed by a column other than tenant_id: undistribute it first", name)
		case hashed:
			if p.colocate == "" {
				p.colocate = name
			}
		default:
			p.distribute = append(p.distribute, name)
		}
	}
	if err := rows.Err(); err != nil {
		return p, err
	}
	rows, err = q.Query(ctx, `
		SELECT DISTINCT f.confrelid::regclass::text
		FROM pg_constraint f
		WHERE f.contype = 'f' AND f.conrelid = ANY ($1::text[]::regclass[])
		  AND NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = f.confrelid AND a.attname = 'tenant_id' AND NOT a.attisdropped)
		  AND NOT EXISTS (SELECT FROM pg_dist_partition d WHERE d.logicalrelid = f.confrelid AND d.partmethod = 'n' AND d.repmodel = 't')
		ORDER BY 1`, all)
	if err != nil {
		return p, fmt.Errorf("referenced tables: %w", err)
	}
	if p.reference, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
		return p, err
	}
	err = q.QueryRow(ctx, `SELECT NOT rolcanlogin FROM pg_roles WHERE rolname = 'fleetscope_tenant'`).Scan(&p.login)
	return p, err
}

// distribute makes the schema distributed if the database has Citus (see
// the top of this file). Foreign keys among the tables being converted are
// dropped first and added back after (Citus converts a table only when its
// foreign keys point at tables already converted, and a table with a key
// to a reference table becomes a "Citus local table" that cannot then be
// co-located). A UNIQUE constraint without tenant_id cannot be enforced by
// Citus across shards: it is replaced by the same constraint led by
// tenant_id plus a plain index on its columns for lookups (secret and token
// hashes: their global uniqueness rests on their 200 random bits). The
// tenant role gets LOGIN: Citus opens its connections to the workers as the
// current role, and row-level security is enforced there (the workers'
// pg_hba.conf must let only the coordinator log in as it). It all runs in
// one transaction: a failure leaves the schema as it was.
func (db *DB) distribute(ctx context.Context) error {
	if ok, err := db.Citus(ctx); err != nil || !ok {
		return err
	}
	if p, err := planCitus(ctx, db.pool); err != nil || p.empty() {
		return err // nothing to do: a second Migrate writes nothing
	}
	err := pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(distributeLock)); err != nil {
			return err
		}
		p, err := planCitus(ctx, tx) // again, under the lock: another replica may have done it
		if err != nil || p.empty() {
			return err
		}
		// One connection per node for the whole transaction: adding a
		// foreign key to a reference table after the parallel DDL of
		// create_distributed_table is refused otherwise ("cannot modify
		// table ... because there was a parallel operation").
		if _, err := tx.Exec(ctx, `SET LOCAL citus.multi_shard_modify_mode TO sequential`); err != nil {
			return err
		}
		if p.login {
			if _, err := tx.Exec(ctx, `ALTER ROLE fleetscope_tenant LOGIN`); err != nil {
				return fmt.Errorf("fleetscope_tenant LOGIN: %w", err)
			}
		}
		converting := append(slices.Clone(p.distribute), p.reference...)
		if len(converting) == 0 {
			return nil
		}
		type fk struct{ Table, Name, Def string }
		rows, err := tx.Query(ctx, `
			SELECT conrelid::regclass::text, conname, pg_get_constraintdef(oid)
			FROM pg_constraint
			WHERE contype = 'f' AND conparentid = 0
			  AND (conrelid = ANY ($1::text[]::regclass[]) OR confrelid = ANY ($1::text[]::regclass[]))
			ORDER BY oid`, converting)
		if err != nil {
			return err
		}
		fks, err := pgx.CollectRows(rows, pgx.RowToStructByPos[fk])
		if err != nil {
			return err
		}
		for _, k := range fks {
			if _, err := tx.Exec(ctx, `ALTER TABLE `+k.Table+` DROP CONSTRAINT `+pgx.Identifier{k.Name}.Sanitize()); err != nil {
				return fmt.Errorf("drop foreign key %s of %s: %w", k.Name, k.Table, err)
			}
		}
		for _, t := range p.distribute {
			if err := leadUniqueWithTenant(ctx, tx, t); err != nil {
				return err
			}
		}
		for _, t := range p.reference {
			if _, err := tx.Exec(ctx, `SELECT create_reference_table($1)`, t); err != nil {
				return fmt.Errorf("reference table %s: %w", t, err)
			}
		}
		colocate := p.colocate
		for _, t := range p.distribute {
			var err error
			if colocate == "" {
				_, err = tx.Exec(ctx, `SELECT create_distributed_table($1, 'tenant_id')`, t)
				colocate = t
			} else {
				_, err = tx.Exec(ctx, `SELECT create_distributed_table($1, 'tenant_id', colocate_with => $2)`, t, colocate)
			}
			if err != nil {
				return fmt.Errorf("distribute %s by tenant_id: %w", t, err)
			}
		}
		for _, k := range fks {
			if _, err := tx.Exec(ctx, `ALTER TABLE `+k.Table+` ADD CONSTRAINT `+pgx.Identifier{k.Name}.Sanitize()+` `+k.Def); err != nil {
				return fmt.Errorf("foreign key %s of %s: %w", k.Name, k.Table, err)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("citus: %w", err)
	}
	return nil
}

// leadUniqueWithTenant replaces each UNIQUE constraint of table that does
// not include tenant_id by the same constraint led by tenant_id, and keeps
// a plain index on the original columns. Unique indexes that are not
// constraints, or on expressions, are refused: a migration must lead them
// with tenant_id.
func leadUniqueWithTenant(ctx context.Context, tx pgx.Tx, table string) error {
	rows, err := tx.Query(ctx, `
		SELECT i.indexrelid::regclass::text, coalesce(c.conname, ''), coalesce(c.contype, 'i'),
		       i.indexprs IS NOT NULL OR i.indpred IS NOT NULL,
		       array(SELECT a.attname::text FROM unnest(i.indkey) WITH ORDINALITY k(attnum, n)
		             JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum ORDER BY k.n)
		FROM pg_index i LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid AND c.conrelid = i.indrelid
		WHERE i.indrelid = $1::regclass AND i.indisunique
		  AND NOT EXISTS (SELECT FROM pg_attribute a WHERE a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey) AND a.attname = 'tenant_id')
		ORDER BY 1`, table)
	if err != nil {
		return err
	}
	type unique struct {
		Index, Constraint, Kind string
		Expr                    bool
		Cols                    []string
	}
	us, err := pgx.CollectRows(rows, pgx.RowToStructByPos[unique])
	if err != nil {
		return err
	}
	for _, u := range us {
		if u.Kind != "u" || u.Expr {
			return fmt.Errorf("%s: unique index %s does not include tenant_id, and Citus cannot enforce it across shards: lead it with tenant_id in a migration", table, u.Index)
		}
		cols := make([]string, len(u.Cols))
		for i, c := range u.Cols {
			cols[i] = pgx.Identifier{c}.Sanitize()
		}
		name := pgx.Identifier{u.Constraint}.Sanitize()
		lookup := pgx.Identifier{truncateIdent(u.Constraint + "_lookup")}.Sanitize()
		if _, err := tx.Exec(ctx, fmt.Sprintf(`ALTER TABLE %s DROP CONSTRAINT %s, ADD CONSTRAINT %s UNIQUE (tenant_id, %s)`,
			table, name, name, strings.Join(cols, ", "))); err != nil {
			return fmt.Errorf("%s: lead %s with tenant_id: %w", table, u.Constraint, err)
		}
		if _, err := tx.Exec(ctx, fmt.Sprintf(`CREATE INDEX %s ON %s (%s)`, lookup, table, strings.Join(cols, ", "))); err != nil {
			return fmt.Errorf("%s: index for %s: %w", table, u.Constraint, err)
		}
	}
	return nil
}

// truncateIdent keeps a name within Postgres's 63 bytes.
func truncateIdent(s string) string {
	if len(s) > 63 {
		return s[:63]
	}
	return s
}
