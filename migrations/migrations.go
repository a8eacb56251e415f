// Package migrations holds the numbered migrations of the Postgres index,
// embedded in the binary and applied by goose at server start and by
// `fleetscope migrate`: SQL files, and in Go the few that need the index's
// encodings (Options gives goose those). Migrations are never edited once
// released: add one.
package migrations

import (
	"embed"

	"github.com/pressly/goose/v3"
)

// FS holds the *.sql migrations (the Go ones: Options).
//
//go:embed *.sql
var FS embed.FS

// Options are the goose provider options these migrations need: the ones
// written in Go (packed_offsets.go, busy_cells.go, ten_seconds.go,
// stack_seqs.go, zstd_rows.go).
func Options() []goose.ProviderOption {
	return []goose.ProviderOption{goose.WithGoMigrations(packedOffsets, busyCells, tenSeconds, stackSeqs, zstdRows)}
}
