-- Fleet cells as bytes: a fleet heatmap reads every (profile, unix second)
-- row of its window, 12,500 for 20 hosts over 10 minutes, and Postgres
-- sends an int[] an element at a time (each with its own length word):
-- 50 ms of the fleet benchmark's 60 ms heatmap went to that. The 50
-- counts of a row are now 50 big-endian int32 (int4send's bytes, back to
-- back): 200 bytes, sent as one value. Rows written before are converted
-- in place by one ALTER of built-in functions (tested on a distributed
-- table too, make test-citus): the bytes of a one-dimensional int[]
-- without NULLs are array_send's after its 20-byte header, less each
-- element's length word (00000004).

-- +goose Up
ALTER TABLE fleet_seconds
  ALTER COLUMN cells TYPE bytea
    USING decode(regexp_replace(substr(encode(array_send(cells), 'hex'), 41), '00000004(.{8})', '\1', 'g'), 'hex'),
  ALTER COLUMN idle_cells TYPE bytea
    USING decode(regexp_replace(substr(encode(array_send(idle_cells), 'hex'), 41), '00000004(.{8})', '\1', 'g'), 'hex');

-- +goose Down
-- Each 8 hex digits back to an int4, through bit(32).
ALTER TABLE fleet_seconds
  ALTER COLUMN cells TYPE int[]
    USING string_to_array(rtrim(regexp_replace(encode(cells, 'hex'), '(.{8})', 'x\1,', 'g'), ','), ',')::bit(32)[]::int[],
  ALTER COLUMN idle_cells TYPE int[]
    USING string_to_array(rtrim(regexp_replace(encode(idle_cells, 'hex'), '(.{8})', 'x\1,', 'g'), ','), ',')::bit(32)[]::int[];
