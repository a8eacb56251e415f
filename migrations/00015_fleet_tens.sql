-- Fleet rollups by ten seconds: a profile's samples, idle samples and
-- heatmap cells per (event, ten unix seconds), as fleet_minutes holds them
-- per minute. A fleet heatmap, host strip or timeline over about 1 to 8
-- hours has columns of 5 to 29 seconds, too narrow for the minute rows:
-- they are widened to whole tens of seconds, read from here, a row per
-- profile and ten seconds instead of ten (about 8.6 times fewer for one
-- profile a host and minute). Rows are a profile's own (never shared),
-- written in the profile's transaction, updated and deleted with its other
-- rows and partitioned by ingest day like them, so every answer read from
-- them is exactly what its seconds would give. tenant_id first (Citus).

-- +goose Up
CREATE TABLE fleet_tens (
  tenant_id  bigint NOT NULL,
  app        text NOT NULL,
  event      text NOT NULL,   -- the event's base name
  ten        bigint NOT NULL, -- unix second of the ten seconds' start (a multiple of 10)
  profile_id uuid NOT NULL,
  host       text NOT NULL,
  day        date NOT NULL,   -- ingest day, as the profile's seconds
  samples    int NOT NULL,    -- non-idle
  idle       int NOT NULL,
  cells      bytea NOT NULL,  -- non-idle per row (50 rows), as fleet_seconds (index.AppendCells)
  idle_cells bytea NOT NULL,
  PRIMARY KEY (tenant_id, app, event, ten, profile_id, day)
) PARTITION BY RANGE (day);
CREATE TABLE fleet_tens_default PARTITION OF fleet_tens DEFAULT;
CREATE INDEX fleet_tens_profile ON fleet_tens (tenant_id, profile_id);

GRANT SELECT, INSERT, UPDATE, DELETE ON fleet_tens TO fleetscope_tenant;
ALTER TABLE fleet_tens ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON fleet_tens TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);

-- Profiles stored before: their tens of seconds, from their seconds. A
-- second's cells are bytes in either encoding index.ReadCells reads (the
-- compact one of index.AppendCells, or 50 big-endian int32 for rows
-- converted by migration 00008); fleetscope_sum_cells sums the cells of
-- the seconds it is given, each as its 32 bits (a sum wraps as Go's int32
-- does), and writes the sums in the compact encoding, byte for byte what
-- ingest writes. A slot is the floor to a multiple of 10, below 0 too.
-- +goose StatementBegin
CREATE FUNCTION fleetscope_sum_cells(rows bytea[]) RETURNS bytea LANGUAGE plpgsql IMMUTABLE STRICT AS $$
DECLARE
  sums   bigint[] := array_fill(0::bigint, ARRAY[50]);
  b      bytea;
  pos    int;
  v      bigint;
  shift  int;
  c      int;
  bitmap bytea := '\x00000000000000'::bytea; -- a bit for each of 50 cells
  counts bytea := ''::bytea;
BEGIN
  FOREACH b IN ARRAY rows LOOP
    IF length(b) = 200 THEN
      FOR i IN 0..49 LOOP
        sums[i + 1] := sums[i + 1] + ((get_byte(b, 4 * i)::bigint << 24) | (get_byte(b, 4 * i + 1) << 16) | (get_byte(b, 4 * i + 2) << 8) | get_byte(b, 4 * i + 3));
      END LOOP;
    ELSIF length(b) > 0 THEN
      pos := 7; -- the counts follow the bitmap
      FOR i IN 0..49 LOOP
        IF get_byte(b, i / 8) & (1 << (i % 8)) <> 0 THEN
          v := 0;
          shift := 0;
          LOOP
            c := get_byte(b, pos);
            pos := pos + 1;
            v := v | ((c & 127)::bigint << shift);
            shift := shift + 7;
            EXIT WHEN c < 128;
          END LOOP;
          sums[i + 1] := sums[i + 1] + v;
        END IF;
      END LOOP;
    END IF;
  END LOOP;
  FOR i IN 0..49 LOOP
    v := sums[i + 1] % 4294967296;
    IF v <> 0 THEN
      bitmap := set_byte(bitmap, i / 8, get_byte(bitmap, i / 8) | (1 << (i % 8)));
      WHILE v >= 128 LOOP
        counts := counts || set_byte('\x00'::bytea, 0, ((v & 127) | 128)::int);
        v := v >> 7;
      END LOOP;
      counts := counts || set_byte('\x00'::bytea, 0, v::int);
    END IF;
  END LOOP;
  IF length(counts) = 0 THEN
    RETURN ''::bytea;
  ELSIF length(counts) + 7 = 200 THEN -- never the length of the fixed encoding
    RETURN bitmap || counts || '\x00'::bytea;
  END IF;
  RETURN bitmap || counts;
END
$$;
-- +goose StatementEnd
INSERT INTO fleet_tens (tenant_id, app, event, ten, profile_id, host, day, samples, idle, cells, idle_cells)
SELECT tenant_id, app, event, second - ((second % 10) + 10) % 10, profile_id, host, day,
  ((sum(samples) % 4294967296 + 6442450944) % 4294967296 - 2147483648)::int,
  ((sum(idle) % 4294967296 + 6442450944) % 4294967296 - 2147483648)::int,
  fleetscope_sum_cells(array_agg(cells)), fleetscope_sum_cells(array_agg(idle_cells))
FROM fleet_seconds
GROUP BY tenant_id, app, event, 4, profile_id, host, day;
DROP FUNCTION fleetscope_sum_cells(bytea[]);

-- +goose Down
DROP TABLE fleet_tens;
