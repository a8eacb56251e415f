-- Hardening: per-tenant bounds on a profile's shape, and row-level security
-- on api_keys (authentication reads keys through the owner's connection,
-- the narrow path; everything a tenant does with its keys runs as
-- fleetscope_tenant like the rest).

-- +goose Up
ALTER TABLE tenants
  ADD COLUMN max_stacks int CHECK (max_stacks > 0),  -- distinct stacks in one profile; NULL: the server's
  ADD COLUMN max_depth  int CHECK (max_depth > 0);   -- frames in one stack; NULL: the server's

GRANT SELECT, INSERT, UPDATE, DELETE ON api_keys TO fleetscope_tenant;
ALTER TABLE api_keys ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON api_keys TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);

-- +goose Down
DROP POLICY tenant_isolation ON api_keys;
ALTER TABLE api_keys DISABLE ROW LEVEL SECURITY;
REVOKE ALL ON api_keys FROM fleetscope_tenant;
ALTER TABLE tenants DROP COLUMN max_stacks, DROP COLUMN max_depth;
