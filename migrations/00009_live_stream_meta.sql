-- +goose Up
-- A live stream keeps its first batch's metadata and format: a later
-- batch with others is refused (it would move the stream, or be dropped
-- when the segments' text is joined). updated_at finds idle streams;
-- ended closes one to batches before its segments are joined.
ALTER TABLE live_streams
  ADD COLUMN app text NOT NULL DEFAULT '',
  ADD COLUMN host text NOT NULL DEFAULT '',
  ADD COLUMN labels jsonb NOT NULL DEFAULT '{}',
  ADD COLUMN input_format text NOT NULL DEFAULT '',
  ADD COLUMN format text NOT NULL DEFAULT '',
  ADD COLUMN ended boolean NOT NULL DEFAULT false;
UPDATE live_streams SET ended = true WHERE profile_id IS NOT NULL;
CREATE INDEX live_streams_idle ON live_streams (updated_at) WHERE profile_id IS NULL OR segments <> '{}';

-- +goose Down
DROP INDEX live_streams_idle;
ALTER TABLE live_streams DROP COLUMN app, DROP COLUMN host, DROP COLUMN labels, DROP COLUMN input_format, DROP COLUMN format, DROP COLUMN ended;
