-- Where a profile's samples are read from (the sample tier, migration 16):
--
-- profiles.samples_tier:
--   0  from `seconds`;
--   1  from the raw file since samples_moved_at; the rows are still there
--      for queries that began before, and are deleted by a sweep after a
--      grace;
--   2  from the raw file, the rows deleted;
--   3  the raw file did not give back the stored rows: they are kept.
--
-- profiles.samples_digest: for tiers 1 and 2, the SHA-256 of the rows
-- (index.Digest) as they were checked: rows parsed again are used only
-- when they hash the same (a later parser that reads the file otherwise
-- is an error, never another answer).

-- +goose Up
ALTER TABLE profiles ADD COLUMN samples_tier smallint NOT NULL DEFAULT 0, ADD COLUMN samples_moved_at timestamptz,
  ADD COLUMN samples_digest bytea;
ALTER TABLE profiles ADD CONSTRAINT profiles_samples_tier_check CHECK (samples_tier BETWEEN 0 AND 3);
-- The sweeper's candidates, oldest first: profiles still in the tier, and
-- moved profiles whose rows are still there. Others leave the index.
CREATE INDEX profiles_samples_tier ON profiles (tenant_id, samples_tier, created_at) WHERE samples_tier IN (0, 1);

-- +goose Down
DROP INDEX profiles_samples_tier;
ALTER TABLE profiles DROP COLUMN samples_digest, DROP COLUMN samples_moved_at, DROP COLUMN samples_tier;
