package main

import (
	"github.com/fleetscope/fleetscope/store/postgres"
	"github.com/spf13/cobra"
)

func migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply the database migrations to FLEETSCOPE_DATABASE_URL",
		Args:  args(0, 0),
		RunE: func(c *cobra.Command, a []string) error {
			return withDB(c, func(*postgres.DB) error { return nil }) // withDB migrates
		},
	}
}
