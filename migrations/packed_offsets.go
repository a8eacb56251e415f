package migrations

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/pressly/goose/v3"

	"github.com/fleetscope/fleetscope/store/index"
)

// packedOffsets is migration 20. A second's offsets are stored packed
// (store/index/offsets.go): about log2 of the spread of the steps between
// samples a sample instead of whole-byte uvarints. Rows stored before hold
// uvarint steps and say so: the default gives the rows already there
// varint_offsets true without rewriting them (a column default Postgres
// keeps in the catalog); rows written from then on leave it NULL. Going
// down writes the packed rows' offsets as uvarint steps again, the only
// encoding the code before reads, then drops the column. It is Go, not
// SQL, for that: the encoding is store/index's.
var packedOffsets = goose.NewGoMigration(20,
	&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `ALTER TABLE seconds ADD COLUMN varint_offsets boolean DEFAULT true`); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `ALTER TABLE seconds ALTER COLUMN varint_offsets DROP DEFAULT`)
		return err
	}},
	rewriteThenDrop(unpackOffsets, "varint_offsets"),
)

// unpackOffsets rewrites up to limit rows of packed offsets as uvarint
// steps and returns how many it rewrote.
func unpackOffsets(ctx context.Context, tx *sql.Tx, limit int) (int, error) {
	rows, err := readSeconds(ctx, tx, `s.samples, s.offsets`, `s.varint_offsets IS NULL`, limit,
		func(s *index.Second) []any { return []any{&s.Samples, &s.Offsets} })
	if err != nil {
		return 0, err
	}
	for _, r := range rows {
		offs, ok := index.CanonicalOffsets(&r.s)
		if !ok {
			return 0, fmt.Errorf("%s: corrupt packed offsets", &r.key)
		}
		if err := r.key.update(ctx, tx, `offsets = $6, varint_offsets = true`, offs); err != nil {
			return 0, err
		}
	}
	return len(rows), nil
}
