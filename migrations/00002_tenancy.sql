-- Tenancy and security: key lifecycle, tenant quotas and retention, the
-- audit log, and share links.

-- +goose Up
ALTER TABLE tenants
  ADD COLUMN disabled_at      timestamptz,
  ADD COLUMN retention_days   int CHECK (retention_days > 0),         -- NULL: keep forever
  ADD COLUMN max_upload_bytes bigint CHECK (max_upload_bytes > 0),    -- NULL: the server's limit
  ADD COLUMN max_raw_bytes    bigint CHECK (max_raw_bytes > 0),
  ADD COLUMN max_stored_bytes bigint CHECK (max_stored_bytes > 0),    -- raw bytes kept, all profiles
  ADD COLUMN rate_per_second  int CHECK (rate_per_second > 0);        -- requests per second per replica

ALTER TABLE api_keys
  ADD COLUMN name       text NOT NULL DEFAULT '',
  ADD COLUMN expires_at timestamptz,
  ADD COLUMN revoked_at timestamptz;
CREATE INDEX api_keys_id ON api_keys (id); -- authentication finds a key by its visible prefix

CREATE TABLE audit_log (
  tenant_id bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id        uuid NOT NULL,
  at        timestamptz NOT NULL DEFAULT now(),
  actor     text NOT NULL,   -- key id, "cli" or "retention"
  action    text NOT NULL,   -- e.g. key.create, key.revoke, profile.delete
  target    text NOT NULL,
  detail    jsonb NOT NULL DEFAULT '{}',
  PRIMARY KEY (tenant_id, id)
);
CREATE INDEX audit_log_time ON audit_log (tenant_id, at DESC);

CREATE TABLE share_links (
  tenant_id   bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  id          text NOT NULL,            -- visible prefix of the token
  token_hash  bytea NOT NULL UNIQUE,    -- SHA-256 of the token
  profile_id  uuid NOT NULL,
  event       text NOT NULL DEFAULT '',
  start_nanos bigint,
  end_nanos   bigint,
  created_by  text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  revoked_at  timestamptz,
  PRIMARY KEY (tenant_id, id),
  FOREIGN KEY (tenant_id, profile_id) REFERENCES profiles (tenant_id, id) ON DELETE CASCADE
);

GRANT SELECT, INSERT, UPDATE, DELETE ON audit_log, share_links TO fleetscope_tenant;
ALTER TABLE audit_log ENABLE ROW LEVEL SECURITY;
ALTER TABLE share_links ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON audit_log TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);
CREATE POLICY tenant_isolation ON share_links TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);

-- +goose Down
DROP TABLE share_links;
DROP TABLE audit_log;
ALTER TABLE api_keys DROP COLUMN name, DROP COLUMN expires_at, DROP COLUMN revoked_at;
ALTER TABLE tenants DROP COLUMN disabled_at, DROP COLUMN retention_days, DROP COLUMN max_upload_bytes,
  DROP COLUMN max_raw_bytes, DROP COLUMN max_stored_bytes, DROP COLUMN rate_per_second;
