package postgres_test

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/fleetscope/fleetscope/store/postgres"
	"github.com/fleetscope/fleetscope/store/postgres/pgtest"
)

// citusLayout describes how Citus holds each table of the schema: "hash
// tenant_id group N", "reference" or "local".
func citusLayout(t *testing.T, c *pgx.Conn) map[string]string {
	t.Helper()
	rows, err := c.Query(context.Background(), `
		SELECT c.oid::regclass::text,
		       CASE WHEN d.logicalrelid IS NULL THEN 'local'
		            WHEN d.partmethod = 'n' AND d.repmodel = 't' THEN 'reference'
		            WHEN d.partmethod = 'h' THEN 'hash ' || column_to_column_name(d.logicalrelid, d.partkey) || ' group ' || d.colocationid
		            ELSE 'other ' || d.partmethod::text END
		FROM pg_class c LEFT JOIN pg_dist_partition d ON d.logicalrelid = c.oid
		WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')`)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for rows.Next() {
		var table, how string
		if err := rows.Scan(&table, &how); err != nil {
			t.Fatal(err)
		}
		out[table] = how
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// tenantTables lists the tables (partitions included) with a tenant_id
// column.
func tenantTables(t *testing.T, c *pgx.Conn) []string {
	t.Helper()
	rows, err := c.Query(context.Background(), `
		SELECT c.oid::regclass::text FROM pg_class c
		JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = 'tenant_id' AND NOT a.attisdropped
		WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p') ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkDistributed fails unless every table with a tenant_id column is
// hash-distributed by tenant_id in profiles' co-location group, and
// tenants is a reference table.
func checkDistributed(t *testing.T, c *pgx.Conn) {
	t.Helper()
	layout := citusLayout(t, c)
	want := layout["profiles"]
	if !strings.HasPrefix(want, "hash tenant_id group ") {
		t.Fatalf("profiles: %s, want distributed by tenant_id", want)
	}
	tables := tenantTables(t, c)
	for _, known := range []string{"api_keys", "audit_log", "frames", "profile_stacks", "profiles", "seconds", "seconds_default", "share_links", "stacks"} {
		if !slices.Contains(tables, known) {
			t.Errorf("no tenant_id column found in %s", known)
		}
	}
	for _, table := range tables {
		if got := layout[table]; got != want {
			t.Errorf("%s: %s, want %s (co-located with profiles)", table, got, want)
		}
	}
	if got := layout["tenants"]; got != "reference" {
		t.Errorf("tenants: %s, want a reference table", got)
	}
}

// shardState is what a second Migrate must not change.
func shardState(t *testing.T, c *pgx.Conn) string {
	t.Helper()
	var shards, maxShard int64
	var constraints string
	err := c.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM pg_dist_shard), (SELECT max(shardid) FROM pg_dist_shard),
		(SELECT string_agg(conrelid::regclass::text || ' ' || conname::text || ' ' || pg_get_constraintdef(oid), '; ' ORDER BY 1)
		 FROM pg_constraint WHERE contype IN ('f', 'u') AND connamespace = 'public'::regnamespace AND conparentid = 0)`).Scan(&shards, &maxShard, &constraints)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%d shards up to %d; constraints: %s", shards, maxShard, constraints)
}

// TestCitusDistribution (make test-citus): after Migrate every tenant table
// is distributed by tenant_id and co-located, partitions too, and tenants
// is a reference table; a second Migrate does nothing; a tenant table added
// later (a later migration) is distributed by the next Migrate; partitions
// made later are distributed, and dropped with their shards; and a
// tenant's heatmap and flame graph reads are router queries: one task, on
// the node holding that tenant's shard.
func TestCitusDistribution(t *testing.T) {
	pgtest.RequireCitus(t)
	ctx := context.Background()
	db := newDB(t)
	c := conn(t, db)
	checkDistributed(t, c)
	var nodes, shards int
	if err := c.QueryRow(ctx, `SELECT count(DISTINCT nodeport), count(*) FROM citus_shards WHERE table_name = 'profiles'::regclass`).Scan(&nodes, &shards); err != nil {
		t.Fatal(err)
	}
	if nodes < 2 || shards != pgtest.CitusShards {
		t.Errorf("profiles: %d shards on %d nodes, want %d over the workers", shards, nodes, pgtest.CitusShards)
	}

	before := shardState(t, c)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if after := shardState(t, c); after != before {
		t.Errorf("a second Migrate changed the cluster:\nbefore %s\nafter  %s", before, after)
	}

	// A later migration's table, referring to tenants and with a unique
	// column of its own: Citus makes it a "local table" at once (a key to a
	// reference table), the next Migrate distributes it.
	if _, err := c.Exec(ctx, `CREATE TABLE later_notes (
		tenant_id bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
		id bigint NOT NULL, token bytea NOT NULL UNIQUE, PRIMARY KEY (tenant_id, id))`); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	checkDistributed(t, c)
	var keys int
	var unique string
	if err := c.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_constraint WHERE conrelid = 'later_notes'::regclass AND contype = 'f'),
		(SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = 'later_notes'::regclass AND contype = 'u')`).Scan(&keys, &unique); err != nil {
		t.Fatal(err)
	}
	if keys != 1 || unique != "UNIQUE (tenant_id, token)" {
		t.Errorf("later_notes after distribution: %d foreign keys, %s; want its key to tenants back and UNIQUE (tenant_id, token)", keys, unique)
	}

	// Partitions made later (EnsurePartitions) and dropped (retention).
	var shardsBefore int
	c.QueryRow(ctx, `SELECT count(*) FROM pg_dist_shard`).Scan(&shardsBefore)
	old := time.Now().AddDate(0, 0, -400)
	if err := db.EnsurePartitions(ctx, old, 0); err != nil {
		t.Fatal(err)
	}
	checkDistributed(t, c) // the new partitions included
	// Two days (the day before and the day) of each partitioned table.
	dropped, err := db.DropPartitionsBefore(ctx, old.AddDate(0, 0, 30))
	if err != nil || len(dropped) != 2*len(postgres.Partitioned) {
		t.Fatalf("dropped %v, %v; want the two old days of %v", dropped, err, postgres.Partitioned)
	}
	var shardsAfter int
	c.QueryRow(ctx, `SELECT count(*) FROM pg_dist_shard`).Scan(&shardsAfter)
	if shardsAfter != shardsBefore {
		t.Errorf("%d shards after making and dropping old partitions, %d before", shardsAfter, shardsBefore)
	}

	// Router queries.
	a, _ := db.CreateTenant(ctx, "a", false)
	b, _ := db.CreateTenant(ctx, "b", false)
	p, _ := store(t, db, a, "api", sample)
	store(t, db, b, "api", sample)
	var port int
	if err := c.QueryRow(ctx, `SELECT nodeport FROM citus_shards WHERE shardid = get_shard_id_for_distribution_column('seconds', $1::bigint)`, a).Scan(&port); err != nil {
		t.Fatal(err)
	}
	for _, q := range []struct {
		name string
		sql  string
		args []any
	}{
		{"heatmap (Cells)", postgres.SecondsQuery(false, false), []any{a, p.ID, 0}},
		{"flame graph (Seconds of a range)", postgres.SecondsQuery(true, true), []any{a, p.ID, 0, 0, 1}},
	} {
		plan := explainAsTenant(t, c, a, q.sql, q.args...)
		t.Logf("EXPLAIN %s:\n%s", q.name, plan)
		if !strings.Contains(plan, "Task Count: 1\n") {
			t.Errorf("%s is not a router query (one task):\n%s", q.name, plan)
		}
		if m := regexp.MustCompile(`Node: host=\S+ port=(\d+)`).FindStringSubmatch(plan); m == nil || m[1] != fmt.Sprint(port) {
			t.Errorf("%s: not run on port %d, which holds tenant a's shard:\n%s", q.name, port, plan)
		}
	}
	if secs, err := db.Cells(ctx, a, p.ID, 0); err != nil || len(secs) == 0 {
		t.Fatalf("tenant a's heatmap: %d rows, %v", len(secs), err)
	}
}

// explainAsTenant returns EXPLAIN's text of q run as the tenant, as the
// store runs it.
func explainAsTenant(t *testing.T, c *pgx.Conn, tenant int64, q string, args ...any) string {
	t.Helper()
	ctx := context.Background()
	var lines []string
	err := pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if err := setTenant(ctx, tx, fmt.Sprint(tenant)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SET LOCAL ROLE fleetscope_tenant`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `EXPLAIN (COSTS OFF) `+q, args...)
		if err != nil {
			return err
		}
		lines, err = pgx.CollectRows(rows, pgx.RowTo[string])
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n") + "\n"
}
