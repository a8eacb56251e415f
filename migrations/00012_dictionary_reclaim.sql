-- The tenant dictionary shrinks and is billed (see "The dictionary's
-- lifetime" in docs/architecture.md). Rows no profile uses are reclaimed
-- after deletions and retention; a tenant's usage counts every dictionary
-- row: the bytes each profile's upload added (profile_stacks.dict_bytes,
-- written in the upload's transaction) plus the bytes of rows that outlived
-- the profile that added them (dictionaries.bytes, moved there when the
-- profile is deleted, lowered as rows are reclaimed). A row's bytes are a
-- fixed measure of its content: a frame 80 bytes plus its name's, a stack
-- 104 bytes plus 8 per frame (tuple header, columns, line pointer and
-- primary-key index entry). tenant_id first (Citus).

-- +goose Up
CREATE TABLE dictionaries (
  tenant_id  bigint PRIMARY KEY REFERENCES tenants (id) ON DELETE CASCADE,
  generation bigint NOT NULL DEFAULT 0,       -- raised by each reclaim: replicas forget the keys they remember from before
  reclaiming boolean NOT NULL DEFAULT false,  -- a reclaim is under way: uploads pin the keys they use (dictionary_pins)
  bytes      bigint NOT NULL DEFAULT 0,       -- dictionary bytes no stored profile accounts for
  deletions  bigint NOT NULL DEFAULT 0,       -- profiles deleted so far
  reclaimed  bigint NOT NULL DEFAULT 0        -- deletions the last finished reclaim saw: one is due while fewer
);

-- The keys an upload used (written in its transaction) while a reclaim was
-- under way: the reclaim keeps them, whether or not the profile outlives it.
CREATE TABLE dictionary_pins (
  tenant_id  bigint NOT NULL,
  profile_id uuid NOT NULL,
  stacks     bigint[] NOT NULL,
  frames     bigint[] NOT NULL,
  PRIMARY KEY (tenant_id, profile_id)
);

ALTER TABLE profile_stacks ADD COLUMN dict_bytes bigint NOT NULL DEFAULT 0; -- the dictionary bytes its upload added

GRANT SELECT, INSERT, UPDATE, DELETE ON dictionaries, dictionary_pins TO fleetscope_tenant;
ALTER TABLE dictionaries ENABLE ROW LEVEL SECURITY;
ALTER TABLE dictionary_pins ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON dictionaries TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);
CREATE POLICY tenant_isolation ON dictionary_pins TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);

-- Dictionaries stored before: all their bytes unattributed, and a reclaim
-- due (rows left by profiles deleted before now).
INSERT INTO dictionaries (tenant_id, bytes, deletions)
SELECT t.id, coalesce(f.bytes, 0) + coalesce(s.bytes, 0), 1
FROM tenants t
LEFT JOIN (SELECT tenant_id, sum(octet_length(name) + 80) AS bytes FROM frames GROUP BY 1) f ON f.tenant_id = t.id
LEFT JOIN (SELECT tenant_id, sum(8 * cardinality(frames) + 104) AS bytes FROM stacks GROUP BY 1) s ON s.tenant_id = t.id;

-- +goose Down
ALTER TABLE profile_stacks DROP COLUMN dict_bytes;
DROP TABLE dictionary_pins;
DROP TABLE dictionaries;
