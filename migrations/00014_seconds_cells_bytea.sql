-- A profile's heatmap cells per second as bytes, as fleet_seconds holds
-- them: a second of the continuous fleet benchmark (~47 samples over 50
-- rows) stored its two int[] of 50 in 448 bytes, more than its samples.
-- New rows hold the compact encoding of index.AppendCells (a bitmap of
-- the cells that are not zero, then their counts as uvarints; nothing for
-- a column without samples): about 40 bytes for that second. Rows written
-- before are converted in place to the fixed encoding that index.ReadCells
-- also reads (50 big-endian int32, as migration 00008 converted
-- fleet_seconds, and by the same built-in functions). fleet_seconds and
-- fleet_minutes, already bytes, get the compact encoding for new rows
-- from this version on.

-- +goose Up
ALTER TABLE seconds
  ALTER COLUMN cells TYPE bytea
    USING decode(regexp_replace(substr(encode(array_send(cells), 'hex'), 41), '00000004(.{8})', '\1', 'g'), 'hex'),
  ALTER COLUMN idle_cells TYPE bytea
    USING decode(regexp_replace(substr(encode(array_send(idle_cells), 'hex'), 41), '00000004(.{8})', '\1', 'g'), 'hex');

-- +goose Down
-- Back to the fixed encoding everywhere (fleet_seconds and fleet_minutes
-- got the compact one with this version too; migration 00011 reads the
-- fixed one), by a function that reads index.AppendCells' bytes, and
-- seconds back to int[] of 50.
-- +goose StatementBegin
CREATE FUNCTION fleetscope_fixed_cells(b bytea) RETURNS bytea LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  fixed bytea := '';
  pos   int := 7; -- the counts follow the bitmap of 50 bits
  v     bigint;
  shift int;
  c     int;
BEGIN
  IF length(b) = 200 THEN
    RETURN b;
  END IF;
  FOR i IN 0..49 LOOP
    v := 0;
    IF length(b) > 0 AND get_byte(b, i / 8) & (1 << (i % 8)) <> 0 THEN
      shift := 0;
      LOOP
        c := get_byte(b, pos);
        pos := pos + 1;
        v := v | ((c & 127)::bigint << shift);
        shift := shift + 7;
        EXIT WHEN c < 128;
      END LOOP;
    END IF;
    IF v > 2147483647 THEN -- a cell's 32 bits, as they were stored
      v := v - 4294967296;
    END IF;
    fixed := fixed || int4send(v::int);
  END LOOP;
  RETURN fixed;
END
$$;
-- +goose StatementEnd
UPDATE seconds SET cells = fleetscope_fixed_cells(cells), idle_cells = fleetscope_fixed_cells(idle_cells)
  WHERE length(cells) <> 200 OR length(idle_cells) <> 200;
UPDATE fleet_seconds SET cells = fleetscope_fixed_cells(cells), idle_cells = fleetscope_fixed_cells(idle_cells)
  WHERE length(cells) <> 200 OR length(idle_cells) <> 200;
UPDATE fleet_minutes SET cells = fleetscope_fixed_cells(cells), idle_cells = fleetscope_fixed_cells(idle_cells)
  WHERE length(cells) <> 200 OR length(idle_cells) <> 200;
DROP FUNCTION fleetscope_fixed_cells(bytea);
ALTER TABLE seconds
  ALTER COLUMN cells TYPE int[]
    USING string_to_array(rtrim(regexp_replace(encode(cells, 'hex'), '(.{8})', 'x\1,', 'g'), ','), ',')::bit(32)[]::int[],
  ALTER COLUMN idle_cells TYPE int[]
    USING string_to_array(rtrim(regexp_replace(encode(idle_cells, 'hex'), '(.{8})', 'x\1,', 'g'), ','), ',')::bit(32)[]::int[];
