package main

import (
	"fmt"
	"time"

	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/store/lifecycle"
	"github.com/spf13/cobra"
)

func checkCmd() *cobra.Command {
	var fix bool
	var grace time.Duration
	c := &cobra.Command{
		Use:   "check [--fix]",
		Short: "Compare blob store and index: report orphan blobs, missing raw files and unfinished writes; and upload spools of servers that are gone",
		Args:  args(0, 0),
		RunE: func(c *cobra.Command, a []string) error {
			return withLifecycle(c, func(s *lifecycle.Service) error {
				r, err := s.Check(c.Context(), time.Now().Add(-grace), fix)
				if err != nil {
					return err
				}
				deleted := map[bool]string{true: " (deleted)", false: ""}[fix]
				for _, k := range r.Orphans {
					fmt.Printf("orphan blob %s%s\n", k, deleted)
				}
				for _, k := range r.Missing {
					fmt.Printf("missing blob %s\n", k)
				}
				for _, p := range r.Partials {
					fmt.Printf("unfinished blob write %s (%d bytes, begun %s)%s\n", p.Key, p.Size, p.Modified.UTC().Format(time.RFC3339), deleted)
				}
				// Upload spools of servers gone (a crash) on this machine, under
				// $TMPDIR: no running server's spool is ever touched.
				spools, err := ingest.CleanSpools("", fix)
				if err != nil {
					return err
				}
				for _, sp := range spools {
					fmt.Printf("upload spool of a server that is gone %s (%d files)%s\n", sp.Dir, sp.Files, deleted)
				}
				if len(r.Missing) > 0 || (len(r.Orphans)+len(r.Partials)+len(spools) > 0 && !fix) {
					return fmt.Errorf("%d orphan blobs, %d missing blobs, %d unfinished writes, %d spools left by servers that are gone",
						len(r.Orphans), len(r.Missing), len(r.Partials), len(spools))
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&fix, "fix", false, "delete orphan blobs and unfinished writes older than --grace, and spools of servers that are gone")
	c.Flags().DurationVar(&grace, "grace", lifecycle.PartialGrace, "unfinished blob writes younger than this may be uploads in flight: left alone (0 when no server runs)")
	return c
}
