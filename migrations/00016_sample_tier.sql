-- The sample tier: a tenant may keep its profiles' per-sample rows
-- (`seconds`, the bulk of its Postgres bytes) for fewer days than the
-- profiles themselves. Past `sample_days` (by ingest time, as
-- `retention_days`) the sweeper re-reads a profile's raw file, checks that
-- it gives back exactly the stored rows, and only then moves the profile
-- out of the tier; the queries then read its samples from its raw file.
-- Everything else (the profile, its stack list, fleet_seconds, the
-- rollups) stays until retention, so every answer stays exact
-- (store/lifecycle/tier.go). The profiles' state is migration 17's: on
-- Citus, DDL on the reference table `tenants` and on the distributed
-- `profiles` cannot share a transaction, and neither table takes an ADD
-- COLUMN with a CHECK (the constraints are added apart).

-- +goose Up
ALTER TABLE tenants ADD COLUMN sample_days int; -- NULL: as long as the profiles
ALTER TABLE tenants ADD CONSTRAINT tenants_sample_days_check CHECK (sample_days > 0);

-- +goose Down
ALTER TABLE tenants DROP COLUMN sample_days;
