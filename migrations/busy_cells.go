package migrations

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/pressly/goose/v3"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/index"
)

// busyCells is migration 21: a second's busy heatmap cells are no longer
// stored. They are its samples' cells less the idle ones, and its offsets
// (with its periods, for a weighted event) give its samples' cells
// (index.FillCells), so dropping the column loses nothing (Postgres drops
// it in the catalog; the rows keep their bytes until rewritten). Going
// down counts them again from the offsets, with the profile's time unit
// and events, and stores them in the column the code before reads.
var busyCells = goose.NewGoMigration(21,
	&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `ALTER TABLE seconds DROP COLUMN cells`)
		return err
	}},
	&goose.GoFunc{RunTx: func(ctx context.Context, tx *sql.Tx) error {
		if err := sequential(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `ALTER TABLE seconds ADD COLUMN cells bytea`); err != nil {
			return err
		}
		if err := untilDone(ctx, tx, countBusyCells); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `ALTER TABLE seconds ALTER COLUMN cells SET NOT NULL`)
		return err
	}},
)

// countBusyCells stores the busy cells of up to limit rows that have none
// and returns how many it stored.
func countBusyCells(ctx context.Context, tx *sql.Tx, limit int) (int, error) {
	type row struct {
		key    secondKey
		unit   sql.NullInt64
		events sql.NullString
		idle   []byte
		s      index.Second
	}
	rs, err := tx.QueryContext(ctx, `SELECT `+keyColumns+`, s.samples, s.idle_cells, s.offsets, s.varint_offsets IS TRUE, s.periods,
			p.time_unit_nanos, p.events::text
		FROM seconds s LEFT JOIN profiles p ON p.tenant_id = s.tenant_id AND p.id = s.profile_id
		WHERE s.cells IS NULL LIMIT $1`, limit)
	if err != nil {
		return 0, err
	}
	var rows []row
	for rs.Next() {
		var r row
		if err := rs.Scan(append(r.key.fields(), &r.s.Samples, &r.idle, &r.s.Offsets, &r.s.VarintOffsets, &r.s.Periods, &r.unit, &r.events)...); err != nil {
			rs.Close()
			return 0, err
		}
		rows = append(rows, r)
	}
	if err := rs.Err(); err != nil {
		return 0, err
	}
	for _, r := range rows {
		var events []fleetscope.EventInfo
		if !r.unit.Valid || !r.events.Valid {
			return 0, fmt.Errorf("%s: its profile is not stored", &r.key)
		}
		if err := json.Unmarshal([]byte(r.events.String), &events); err != nil || int(r.key.event) >= len(events) || r.key.event < 0 {
			return 0, fmt.Errorf("%s: the profile's events %q do not name it (%v)", &r.key, r.events.String, err)
		}
		r.s.IdleCells = make([]int32, index.Rows)
		if err := index.ReadCells(r.s.IdleCells, r.idle); err != nil {
			return 0, fmt.Errorf("%s: idle cells: %w", &r.key, err)
		}
		ev := events[r.key.event]
		if err := index.FillCells(&r.s, r.unit.Int64, ev.Period, ev.Weighted); err != nil {
			return 0, fmt.Errorf("%s: %w", &r.key, err)
		}
		if err := r.key.update(ctx, tx, `cells = $6`, index.AppendCells([]byte{}, r.s.Cells)); err != nil {
			return 0, err
		}
	}
	return len(rows), nil
}
