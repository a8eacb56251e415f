-- Stack rollups: a host's samples of one event in an hour or a day of unix
-- time, counted by tenant stack key, as fleet_stack_buckets holds them per
-- ten minutes. A merged flame graph over a week reads 70 day rows of ten
-- hosts instead of 10,080 ten-minute rows, and it needs no list of the
-- week's profiles (100,800 of them): query/fleet_long.go.
--
-- A rollup row cannot be wrong either, but it cannot name its profiles by
-- a hash of the list (that list is what the window must not read). It
-- names a version instead: fleet_versions counts, per (app, host, hour),
-- the changes to that host's samples in that hour. Every write that adds,
-- removes or moves a profile's samples (an upload, a deletion, a change of
-- app or host) increments the versions of the hours its minute rows touch,
-- in its own transaction. A row's version is the sum of its host's hour
-- versions over its span when it was counted: versions only grow, so the
-- row serves a query only while the sum is the same. A count that a write
-- raced is not stored (the versions are read before and after it).
-- Deleting a profile also deletes the rollup rows its hours fall in, in
-- its transaction, so no count of deleted samples is kept. tenant_id
-- first (Citus).

-- +goose Up
CREATE TABLE fleet_versions (
  tenant_id bigint NOT NULL,
  app       text NOT NULL,
  host      text NOT NULL,
  hour      bigint NOT NULL, -- unix second of its start (a multiple of 3600)
  version   bigint NOT NULL, -- changes to the host's samples in the hour
  PRIMARY KEY (tenant_id, app, hour, host)
);

CREATE TABLE fleet_stack_rollups (
  tenant_id bigint NOT NULL,
  app       text NOT NULL,
  event     text NOT NULL,   -- base name
  width     int NOT NULL CHECK (width IN (3600, 86400)),
  bucket    bigint NOT NULL, -- unix second of its start (a multiple of width)
  host      text NOT NULL,
  version   bigint NOT NULL, -- the sum of the host's fleet_versions over the span when counted
  samples   bigint NOT NULL, -- its samples (idle included)
  stacks    bytea NOT NULL,  -- index.EncodeStacks: (key, count, weight) by key
  PRIMARY KEY (tenant_id, app, event, width, bucket, host)
);

-- Profiles stored before: their hours, each at version 1, so that a rollup
-- counted from them serves until they change.
INSERT INTO fleet_versions (tenant_id, app, host, hour, version)
SELECT DISTINCT tenant_id, app, host, minute - ((minute % 3600) + 3600) % 3600, 1 FROM fleet_minutes;

GRANT SELECT, INSERT, UPDATE, DELETE ON fleet_versions, fleet_stack_rollups TO fleetscope_tenant;
ALTER TABLE fleet_versions ENABLE ROW LEVEL SECURITY;
ALTER TABLE fleet_stack_rollups ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON fleet_versions TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);
CREATE POLICY tenant_isolation ON fleet_stack_rollups TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);

-- +goose Down
DROP TABLE fleet_stack_rollups;
DROP TABLE fleet_versions;
