package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"

	"github.com/fleetscope/fleetscope/store/index"
)

// zstdRows is migration 24. A seconds row's offsets and stacks may be
// stored as zstd frames (store/index/zstd.go), which the new column zstd
// says (true; NULL: as they were). Rows already there stay as they are.
// Going down decompresses the rows that are, the only form the code before
// reads, then drops the column. It is Go, not SQL, for that.
var zstdRows = goose.NewGoMigration(24,
	&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `ALTER TABLE seconds ADD COLUMN zstd boolean`)
		return err
	}},
	rewriteThenDrop(unzstdRows, "zstd"),
)

// unzstdRows decompresses up to limit compressed rows and returns how many
// it rewrote.
func unzstdRows(ctx context.Context, tx *sql.Tx, limit int) (int, error) {
	rows, err := readSeconds(ctx, tx, `s.samples, s.offsets, s.stacks`, `s.zstd`, limit,
		func(s *index.Second) []any { return []any{&s.Samples, &s.Offsets, &s.Stacks} })
	if err != nil {
		return 0, err
	}
	for _, r := range rows {
		if err := r.s.Unzstd(); err != nil {
			return 0, fmt.Errorf("%s: %w", &r.key, err)
		}
		if err := r.key.update(ctx, tx, `offsets = $6, stacks = $7, zstd = NULL`, r.s.Offsets, r.s.Stacks); err != nil {
			return 0, err
		}
	}
	return len(rows), nil
}
