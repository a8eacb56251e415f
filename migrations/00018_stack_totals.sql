-- A profile's stack totals (store/index/totals.go): its samples counted
-- whole, by event and stack of its stack list. A fleet count adds them for
-- a profile whose every sample lies inside the window instead of reading
-- its per-second rows. NULL for profiles stored before: they are counted
-- from their rows. They stay with the stack list until retention, past the
-- sample tier too.

-- +goose Up
ALTER TABLE profile_stacks ADD COLUMN totals bytea;

-- +goose Down
ALTER TABLE profile_stacks DROP COLUMN totals;
