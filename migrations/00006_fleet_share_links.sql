-- +goose Up
-- Share links to a fleet selection (app, hosts, labels, window, event,
-- function filter) as well as to a profile's range: profile_id is NULL for
-- them and fleet holds the selection. Exactly one of the two is set.
ALTER TABLE share_links ALTER COLUMN profile_id DROP NOT NULL;
ALTER TABLE share_links ADD COLUMN fleet jsonb;
ALTER TABLE share_links ADD CONSTRAINT share_links_one_subject CHECK ((profile_id IS NULL) <> (fleet IS NULL));

-- +goose Down
DELETE FROM share_links WHERE fleet IS NOT NULL;
ALTER TABLE share_links DROP CONSTRAINT share_links_one_subject;
ALTER TABLE share_links DROP COLUMN fleet;
ALTER TABLE share_links ALTER COLUMN profile_id SET NOT NULL;
