-- Fleet cells as bytes: a fleet heatmap reads every (profile, unix second)
-- row of its window, 12,500 for 20 hosts over 10 minutes, and Postgres
-- sends an int[] an element at a time (each with its own length word):
-- 50 ms of the fleet benchmark's 60 ms heatmap went to that. The 50
-- counts of a row are now 50 big-endian int32 (int4send's bytes, back to
-- back): 200 bytes, sent as one value. Rows written before are converted.

-- +goose Up
ALTER TABLE fleet_seconds ADD COLUMN cells_packed bytea, ADD COLUMN idle_cells_packed bytea;
UPDATE fleet_seconds SET
  cells_packed = (SELECT string_agg(int4send(c), ''::bytea ORDER BY i) FROM unnest(cells) WITH ORDINALITY AS u(c, i)),
  idle_cells_packed = (SELECT string_agg(int4send(c), ''::bytea ORDER BY i) FROM unnest(idle_cells) WITH ORDINALITY AS u(c, i));
ALTER TABLE fleet_seconds DROP COLUMN cells, DROP COLUMN idle_cells;
ALTER TABLE fleet_seconds RENAME COLUMN cells_packed TO cells;
ALTER TABLE fleet_seconds RENAME COLUMN idle_cells_packed TO idle_cells;
ALTER TABLE fleet_seconds ALTER COLUMN cells SET NOT NULL, ALTER COLUMN idle_cells SET NOT NULL;

-- +goose Down
-- (<< and | bind alike in SQL: each shift in parentheses.)
ALTER TABLE fleet_seconds ADD COLUMN cells_array int[], ADD COLUMN idle_cells_array int[];
UPDATE fleet_seconds SET
  cells_array = ARRAY(SELECT (get_byte(cells, 4 * i) << 24) | (get_byte(cells, 4 * i + 1) << 16)
    | (get_byte(cells, 4 * i + 2) << 8) | get_byte(cells, 4 * i + 3) FROM generate_series(0, length(cells) / 4 - 1) AS i ORDER BY i),
  idle_cells_array = ARRAY(SELECT (get_byte(idle_cells, 4 * i) << 24) | (get_byte(idle_cells, 4 * i + 1) << 16)
    | (get_byte(idle_cells, 4 * i + 2) << 8) | get_byte(idle_cells, 4 * i + 3) FROM generate_series(0, length(idle_cells) / 4 - 1) AS i ORDER BY i);
ALTER TABLE fleet_seconds DROP COLUMN cells, DROP COLUMN idle_cells;
ALTER TABLE fleet_seconds RENAME COLUMN cells_array TO cells;
ALTER TABLE fleet_seconds RENAME COLUMN idle_cells_array TO idle_cells;
ALTER TABLE fleet_seconds ALTER COLUMN cells SET NOT NULL, ALTER COLUMN idle_cells SET NOT NULL;
