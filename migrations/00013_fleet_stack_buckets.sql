-- Stack buckets: a host's samples of one event in ten minutes of unix
-- time, counted by tenant stack key, over every profile of that host with
-- samples in those minutes. A merged flame graph over a day reads 144 rows
-- a host instead of 86,400 seconds of every profile's samples.
--
-- A row is a cache that cannot be wrong: `profiles` is the SHA-256 of the
-- ids and clock shifts of the profiles it counted, and a query uses the row
-- only when the profiles it selected for that host and bucket hash the
-- same; otherwise it counts the bucket from the per-second rows, and
-- writes the row again once the bucket is sealed (query/fleet_buckets.go).
-- An upload, a deletion or an `admin update-profile` that changes the
-- set is therefore never served a stale count, whatever order things
-- happen in and wherever a process is killed; a deletion also removes the
-- rows of its buckets in its own transaction, so no count of deleted
-- samples is kept. tenant_id first (Citus).

-- +goose Up
CREATE TABLE fleet_stack_buckets (
  tenant_id bigint NOT NULL,
  app       text NOT NULL,
  event     text NOT NULL,   -- base name
  bucket    bigint NOT NULL, -- unix second of its start (a multiple of 600)
  host      text NOT NULL,
  profiles  bytea NOT NULL,  -- SHA-256 of the profiles counted
  samples   bigint NOT NULL, -- their samples in the bucket (idle included)
  stacks    bytea NOT NULL,  -- index.EncodeStacks: (key, count, weight) by key
  PRIMARY KEY (tenant_id, app, event, bucket, host)
);

GRANT SELECT, INSERT, UPDATE, DELETE ON fleet_stack_buckets TO fleetscope_tenant;
ALTER TABLE fleet_stack_buckets ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON fleet_stack_buckets TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);

-- +goose Down
DROP TABLE fleet_stack_buckets;
