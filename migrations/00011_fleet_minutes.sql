-- Fleet rollups by the minute: a profile's samples, idle samples and
-- heatmap cells per (event, unix minute), as fleet_seconds holds them per
-- second. A fleet heatmap, host strip or timeline over hours or days reads
-- a row per profile-minute instead of one per profile-second: 60 times
-- fewer for long recordings, about 30 times fewer for one profile a host
-- and minute. Rows are a profile's own (never shared), written in the
-- profile's transaction, updated and deleted with its other rows and
-- partitioned by ingest day like them, so every answer read from them is
-- exactly what its seconds would give. tenant_id first (Citus).

-- +goose Up
CREATE TABLE fleet_minutes (
  tenant_id  bigint NOT NULL,
  app        text NOT NULL,
  event      text NOT NULL,   -- the event's base name
  minute     bigint NOT NULL, -- unix second of the minute's start (a multiple of 60)
  profile_id uuid NOT NULL,
  host       text NOT NULL,
  day        date NOT NULL,   -- ingest day, as the profile's seconds
  samples    int NOT NULL,    -- non-idle
  idle       int NOT NULL,
  cells      bytea NOT NULL,  -- non-idle per row (50 rows): 50 big-endian int32, as fleet_seconds
  idle_cells bytea NOT NULL,
  PRIMARY KEY (tenant_id, app, event, minute, profile_id, day)
) PARTITION BY RANGE (day);
CREATE TABLE fleet_minutes_default PARTITION OF fleet_minutes DEFAULT;
CREATE INDEX fleet_minutes_profile ON fleet_minutes (tenant_id, profile_id);

GRANT SELECT, INSERT, UPDATE, DELETE ON fleet_minutes TO fleetscope_tenant;
ALTER TABLE fleet_minutes ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON fleet_minutes TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);

-- Profiles stored before: their minutes, from their seconds (each of the
-- 50 packed counts read as an int4 through bit(32), summed, and packed
-- again with int4send; a minute is the floor, below 0 too).
INSERT INTO fleet_minutes (tenant_id, app, event, minute, profile_id, host, day, samples, idle, cells, idle_cells)
SELECT tenant_id, app, event, minute, profile_id, host, day, max(samples), max(idle),
  string_agg(int4send(c::int), ''::bytea ORDER BY i), string_agg(int4send(ic::int), ''::bytea ORDER BY i)
FROM (
  SELECT tenant_id, app, event, second - ((second % 60) + 60) % 60 AS minute, profile_id, host, day, i,
    sum(samples) AS samples, sum(idle) AS idle,
    sum(('x' || encode(substring(cells FROM 4 * i + 1 FOR 4), 'hex'))::bit(32)::int) AS c,
    sum(('x' || encode(substring(idle_cells FROM 4 * i + 1 FOR 4), 'hex'))::bit(32)::int) AS ic
  FROM fleet_seconds CROSS JOIN generate_series(0, 49) AS i
  GROUP BY tenant_id, app, event, 4, profile_id, host, day, i
) per_row
GROUP BY tenant_id, app, event, minute, profile_id, host, day;

-- +goose Down
DROP TABLE fleet_minutes;
