-- +goose Up
-- Live recordings (fleetscope agent --live). Each batch is stored at once
-- as a segment profile (labels live=STREAM, live_seq=N), so queries see it;
-- next_seq makes every batch count once, in order, across reconnects;
-- segments lists them in order. At the end the segments' text becomes one
-- profile (profile_id) and the segments are deleted.
CREATE TABLE live_streams (
  tenant_id  bigint NOT NULL REFERENCES tenants (id) ON DELETE CASCADE,
  stream     text NOT NULL,
  next_seq   bigint NOT NULL DEFAULT 0,
  segments   uuid[] NOT NULL DEFAULT '{}',
  profile_id uuid,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (tenant_id, stream)
);

GRANT SELECT, INSERT, UPDATE, DELETE ON live_streams TO fleetscope_tenant;
ALTER TABLE live_streams ENABLE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON live_streams TO fleetscope_tenant
  USING (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint)
  WITH CHECK (tenant_id = nullif(current_setting('fleetscope.tenant_id', true), '')::bigint);

-- +goose Down
DROP TABLE live_streams;
