package main

import (
	"fmt"

	"github.com/fleetscope/fleetscope/store/lifecycle"
	"github.com/spf13/cobra"
)

func checkCmd() *cobra.Command {
	var fix bool
	c := &cobra.Command{
		Use:   "check [--fix]",
		Short: "Compare blob store and index: report orphan blobs and missing raw files",
		Args:  args(0, 0),
		RunE: func(c *cobra.Command, a []string) error {
			return withLifecycle(c, func(s *lifecycle.Service) error {
				orphans, missing, err := s.Check(c.Context(), fix)
				if err != nil {
					return err
				}
				for _, k := range orphans {
					fmt.Printf("orphan blob %s%s\n", k, map[bool]string{true: " (deleted)", false: ""}[fix])
				}
				for _, k := range missing {
					fmt.Printf("missing blob %s\n", k)
				}
				if len(missing) > 0 || (len(orphans) > 0 && !fix) {
					return fmt.Errorf("%d orphan blobs, %d missing blobs", len(orphans), len(missing))
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&fix, "fix", false, "delete orphan blobs")
	return c
}
