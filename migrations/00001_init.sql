-- The index: tenants and their keys, profiles, a per-tenant deduplicated
-- frame and stack dictionary, and per (profile, event, second) rows.
-- Every tenant-owned table leads its primary key with tenant_id (ready for
-- Citus distribution by tenant_id); frame and stack ids are content hashes,
-- so no sequence is shared across tenants on the ingest path.

-- +goose Up
-- +goose StatementBegin
DO $$
BEGIN
  CREATE ROLE fleetscope_tenant NOLOGIN;
EXCEPTION WHEN duplicate_object OR unique_violation THEN
  NULL; -- roles are cluster-wide: another database created it
END
$$;
-- +goose StatementEnd

CREATE TABLE tenants (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  name       text NOT NULL UNIQUE CHECK (name ~ '^[a-z0-9][a-z0-9_.-]{0,62}$'),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE api_keys (
  tenant_id    bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id           text NOT NULL,            -- the key's visible prefix
  secret_hash  bytea NOT NULL UNIQUE,    -- SHA-256 of the whole key
  scopes       text[] NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  last_used_at timestamptz,
  PRIMARY KEY (tenant_id, id)
);

CREATE TABLE profiles (
  tenant_id       bigint NOT NULL REFERENCES tenants (id),
  id              uuid NOT NULL,
  sha256          bytea NOT NULL,
  app             text NOT NULL,
  host            text NOT NULL DEFAULT '',
  labels          jsonb NOT NULL DEFAULT '{}',
  format          text NOT NULL,
  filename        text NOT NULL DEFAULT '',
  events          jsonb NOT NULL,          -- [{name, samples, period}], by event id
  default_event   smallint NOT NULL,
  samples         bigint NOT NULL,
  timed           boolean NOT NULL,
  start_second    bigint NOT NULL,         -- floor(first timestamp), profile clock
  duration_nanos  bigint NOT NULL,
  time_unit_nanos bigint NOT NULL,         -- unit of the stored offsets
  start_time      timestamptz NOT NULL,    -- start_second in absolute time
  end_time        timestamptz NOT NULL,
  time_source     text NOT NULL,           -- realtime | anchored | upload
  size_bytes      bigint NOT NULL,
  blob_key        text NOT NULL,
  meta            jsonb NOT NULL DEFAULT '{}',
  day             date NOT NULL,           -- ingest day: partition of its seconds
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, id),
  UNIQUE (tenant_id, sha256)
);
CREATE INDEX profiles_app_time ON profiles (tenant_id, app, start_time DESC, id);
CREATE INDEX profiles_time ON profiles (tenant_id, start_time DESC, id);
CREATE INDEX profiles_labels ON profiles USING gin (labels jsonb_path_ops);

CREATE TABLE frames (
  tenant_id bigint NOT NULL,
  id        bigint NOT NULL,   -- hash of (kind, name)
  name      text NOT NULL,
  kind      smallint NOT NULL,
  PRIMARY KEY (tenant_id, id)
);

CREATE TABLE stacks (
  tenant_id bigint NOT NULL,
  id        bigint NOT NULL,   -- hash of the frame ids
  frames    bigint[] NOT NULL, -- root (the process) first
  idle      boolean NOT NULL,
  PRIMARY KEY (tenant_id, id)
);

-- A profile's own stack list: the stored samples refer to stacks by their
-- index in this array.
CREATE TABLE profile_stacks (
  tenant_id  bigint NOT NULL,
  profile_id uuid NOT NULL,
  stacks     bigint[] NOT NULL,
  PRIMARY KEY (tenant_id, profile_id),
  FOREIGN KEY (tenant_id, profile_id) REFERENCES profiles (tenant_id, id) ON DELETE CASCADE
);

-- One row per (profile, event, second): the heatmap column at 50 rows and
-- every sample's offset and stack (see store/index). Partitioned by ingest
-- day so retention drops whole partitions.
CREATE TABLE seconds (
  tenant_id  bigint NOT NULL,
  profile_id uuid NOT NULL,
  event      smallint NOT NULL,
  second     bigint NOT NULL,  -- relative to the profile's start_second
  day        date NOT NULL,
  samples    int NOT NULL,
  cells      int[] NOT NULL,
  idle_cells int[] NOT NULL,
  offsets    bytea NOT NULL,
  stacks     bytea NOT NULL,
  periods    bytea,
  PRIMARY KEY (tenant_id, profile_id, event, second, day)
) PARTITION BY RANGE (day);
CREATE TABLE seconds_default PARTITION OF seconds DEFAULT;

-- Row-level security: the second wall behind the application's own tenant
-- filters. Tenant queries run as fleetscope_tenant with the tenant id in a
-- transaction-local setting; without it they see nothing.
GRANT USAGE ON SCHEMA public TO fleetscope_tenant;
GRANT SELECT, INSERT, UPDATE, DELETE ON profiles, frames, stacks, profile_stacks, seconds TO fleetscope_tenant;
ALTER TABLE profiles ENABLE ROW LEVEL SECURITY;
ALTER TABLE frames ENABLE ROW LEVEL SECURITY;
ALTER TABLE stacks ENABLE ROW LEVEL SECURITY;
ALTER TABLE profile_stacks ENABLE ROW LEVEL SECURITY;
ALTER TABLE seconds ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON profiles TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);
CREATE POLICY tenant_isolation ON frames TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);
CREATE POLICY tenant_isolation ON stacks TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);
CREATE POLICY tenant_isolation ON profile_stacks TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);
CREATE POLICY tenant_isolation ON seconds TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);

-- +goose Down
DROP TABLE seconds;
DROP TABLE profile_stacks;
DROP TABLE stacks;
DROP TABLE frames;
DROP TABLE profiles;
DROP TABLE api_keys;
DROP TABLE tenants;
