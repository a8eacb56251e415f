-- The sample tier: a tenant may keep its profiles' per-sample rows
-- (`seconds`, the bulk of its Postgres bytes) for fewer days than the
-- profiles themselves. Past `sample_days` (by ingest time, as
-- `retention_days`) the sweeper re-reads a profile's raw file, checks that
-- it gives back exactly the stored rows, and only then moves the profile
-- out of the tier; the queries then read its samples from its raw file.
-- Everything else (the profile, its stack list, fleet_seconds, the
-- rollups) stays until retention, so every answer stays exact
-- (store/lifecycle).
--
-- profiles.samples_tier:
--   0  the samples are read from `seconds`;
--   1  they are read from the raw file since samples_moved_at; the rows
--      are still there for queries that began before, and are deleted
--      by a sweep after a grace;
--   2  read from the raw file, the rows deleted;
--   3  the raw file did not give back the stored rows: they are kept.

-- +goose Up
ALTER TABLE tenants ADD COLUMN sample_days int CHECK (sample_days > 0); -- NULL: as long as the profiles
ALTER TABLE profiles ADD COLUMN samples_tier smallint NOT NULL DEFAULT 0 CHECK (samples_tier BETWEEN 0 AND 3),
  ADD COLUMN samples_moved_at timestamptz;
-- The sweeper's candidates, oldest first: profiles still in the tier, and
-- moved profiles whose rows are still there. Others leave the index.
CREATE INDEX profiles_samples_tier ON profiles (tenant_id, samples_tier, created_at) WHERE samples_tier IN (0, 1);

-- +goose Down
DROP INDEX profiles_samples_tier;
ALTER TABLE profiles DROP COLUMN samples_moved_at, DROP COLUMN samples_tier;
ALTER TABLE tenants DROP COLUMN sample_days;
