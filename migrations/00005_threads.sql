-- +goose Up
-- Where each sample ran (process, thread, CPU), for --pid/--tid/--cpu
-- filters and the by-thread/CPU/process heatmap: a profile's distinct
-- (pid, tid, cpu) triples, flattened, beside its stack list; each second
-- row's samples index them (NULL when the profile has only one).
ALTER TABLE profile_stacks ADD COLUMN threads int[] NOT NULL DEFAULT '{}';
ALTER TABLE seconds ADD COLUMN threads bytea;

-- +goose Down
ALTER TABLE seconds DROP COLUMN threads;
ALTER TABLE profile_stacks DROP COLUMN threads;
