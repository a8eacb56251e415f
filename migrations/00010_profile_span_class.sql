-- A time index for fleet windows. Selecting the profiles that overlap
-- [from, to) by end_time >= from AND start_time < to walks, in either
-- B-tree, every profile on one side of the window: half an app's day for
-- a mid-day window. Each profile now has a span class, the first k with
-- duration_nanos <= 4^k seconds (1 s, 4 s, 16 s, ... 4^10 s: 12 days; 11
-- beyond), and a profile of class k that overlaps the window started at
-- most 4^k s before it: per class, one range of start_time in
-- (tenant_id, app, span_class, start_time) (store/postgres/fleet.go,
-- overlap). Why not a GiST index on tstzrange(start_time, end_time): its
-- operator && is not leakproof, so under row-level security (every tenant
-- query) Postgres cannot use it as an index condition before the policy;
-- B-tree comparisons of timestamps are leakproof. No extension either
-- (btree_gist), so nothing more for Citus to install. A generated column:
-- every writer gets it, and the duration never changes after ingest.
-- Adding it rewrites profiles (one row per profile, not per second).

-- +goose Up
ALTER TABLE profiles ADD COLUMN span_class smallint NOT NULL GENERATED ALWAYS AS (CASE
  WHEN duration_nanos <= 1000000000 THEN 0
  WHEN duration_nanos <= 4000000000 THEN 1
  WHEN duration_nanos <= 16000000000 THEN 2
  WHEN duration_nanos <= 64000000000 THEN 3
  WHEN duration_nanos <= 256000000000 THEN 4
  WHEN duration_nanos <= 1024000000000 THEN 5
  WHEN duration_nanos <= 4096000000000 THEN 6
  WHEN duration_nanos <= 16384000000000 THEN 7
  WHEN duration_nanos <= 65536000000000 THEN 8
  WHEN duration_nanos <= 262144000000000 THEN 9
  WHEN duration_nanos <= 1048576000000000 THEN 10
  ELSE 11 END) STORED;
CREATE INDEX profiles_app_span ON profiles (tenant_id, app, span_class, start_time);
-- Windows over every app (FleetLabelSets without one).
CREATE INDEX profiles_span ON profiles (tenant_id, span_class, start_time);

-- +goose Down
DROP INDEX profiles_span;
DROP INDEX profiles_app_span;
ALTER TABLE profiles DROP COLUMN span_class;
