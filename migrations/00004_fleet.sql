-- Fleet queries: every profile placed exactly in absolute time, and its
-- heatmap cells per (event, unix second) kept in that time, so that a fleet
-- heatmap sums stored cells and never decodes a sample. Written in the same
-- transaction as the profile (in every aggregate or in none), partitioned by
-- ingest day like seconds (retention drops both), tenant_id first (Citus).

-- +goose Up
ALTER TABLE profiles ADD COLUMN wall_shift_nanos bigint NOT NULL DEFAULT 0;
-- Profiles stored before: their start time, to the microsecond.
UPDATE profiles SET wall_shift_nanos = round(extract(epoch FROM start_time) * 1e6)::bigint * 1000 - start_second * 1000000000
  WHERE timed;
CREATE INDEX profiles_app_end ON profiles (tenant_id, app, end_time);

CREATE TABLE fleet_seconds (
  tenant_id  bigint NOT NULL,
  app        text NOT NULL,
  event      text NOT NULL,   -- the event's base name (perf's modifiers stripped)
  second     bigint NOT NULL, -- unix second
  profile_id uuid NOT NULL,
  host       text NOT NULL,
  day        date NOT NULL,   -- ingest day, as the profile's seconds
  samples    int NOT NULL,    -- non-idle
  idle       int NOT NULL,
  cells      int[] NOT NULL,  -- non-idle per row (50 rows)
  idle_cells int[] NOT NULL,
  PRIMARY KEY (tenant_id, app, event, second, profile_id, day)
) PARTITION BY RANGE (day);
CREATE TABLE fleet_seconds_default PARTITION OF fleet_seconds DEFAULT;
CREATE INDEX fleet_seconds_profile ON fleet_seconds (tenant_id, profile_id);

GRANT SELECT, INSERT, UPDATE, DELETE ON fleet_seconds TO fleetscope_tenant;
ALTER TABLE fleet_seconds ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON fleet_seconds TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);

-- +goose Down
DROP TABLE fleet_seconds;
DROP INDEX profiles_app_end;
ALTER TABLE profiles DROP COLUMN wall_shift_nanos;
