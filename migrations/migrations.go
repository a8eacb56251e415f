// Package migrations holds the numbered SQL migrations of the Postgres
// index, embedded in the binary and applied by goose at server start and by
// `fleetscope migrate`. Migrations are never edited once released: add one.
package migrations

import "embed"

// FS holds the *.sql migrations.
//
//go:embed *.sql
var FS embed.FS
