package postgres_test

import (
	"github.com/fleetscope/fleetscope/api"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/store/lifecycle"
	"github.com/fleetscope/fleetscope/store/postgres"
)

// The index implements the interfaces its consumers own. (The checks live
// in a test file: store/ must not import the packages above it.)
var (
	_ ingest.Index       = (*postgres.DB)(nil)
	_ ingest.LiveIndex   = (*postgres.DB)(nil)
	_ lifecycle.Index    = (*postgres.DB)(nil)
	_ query.Source       = (*postgres.DB)(nil)
	_ query.StackBuckets = (*postgres.DB)(nil)
	_ query.ColumnTotals = (*postgres.DB)(nil)
	_ api.Authenticator  = (*postgres.DB)(nil)
	_ api.AdminStore     = (*postgres.DB)(nil)
	_ api.ShareLinks     = (*postgres.DB)(nil)
)
