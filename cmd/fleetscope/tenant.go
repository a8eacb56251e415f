package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/lifecycle"
	"github.com/fleetscope/fleetscope/store/postgres"
	"github.com/spf13/cobra"
)

func tenantCmd() *cobra.Command {
	t := &cobra.Command{Use: "tenant", Short: "Manage tenants (talks to FLEETSCOPE_DATABASE_URL directly)"}
	var ifNotExists bool
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a tenant",
		Args:  args(1, 1),
		RunE: func(c *cobra.Command, a []string) error {
			return withDB(c, func(db *postgres.DB) error {
				_, err := db.CreateTenant(c.Context(), a[0], ifNotExists)
				return err
			})
		},
	}
	create.Flags().BoolVar(&ifNotExists, "if-not-exists", false, "succeed quietly if the tenant exists")
	list := &cobra.Command{
		Use:   "list",
		Short: "List tenants with their limits",
		Args:  args(0, 0),
		RunE: func(c *cobra.Command, a []string) error {
			return withDB(c, func(db *postgres.DB) error {
				ts, err := db.Tenants(c.Context())
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tCREATED\tDISABLED\tRETENTION_DAYS\tSAMPLE_DAYS\tMAX_UPLOAD\tMAX_RAW\tMAX_STORED\tRATE\tMAX_STACKS\tMAX_DEPTH")
				for _, t := range ts {
					fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", t.Name, t.CreatedAt.Format(time.DateOnly), t.Disabled,
						t.RetentionDays, t.SampleDays, t.MaxUploadBytes, t.MaxRawBytes, t.MaxStoredBytes, t.RatePerSecond, t.MaxStacks, t.MaxDepth)
				}
				return tw.Flush()
			})
		},
	}
	state := func(use string, disabled bool) *cobra.Command {
		return &cobra.Command{
			Use:   use + " NAME",
			Short: map[bool]string{true: "Disable a tenant: its keys stop working", false: "Enable a disabled tenant"}[disabled],
			Args:  args(1, 1),
			RunE: func(c *cobra.Command, a []string) error {
				return withDB(c, func(db *postgres.DB) error { return db.SetTenantDisabled(c.Context(), a[0], disabled) })
			},
		}
	}
	var l fleetscope.Limits
	limits := &cobra.Command{
		Use:   "set-limits NAME [--retention-days N] [--sample-days N] [--max-upload-bytes N] [--max-raw-bytes N] [--max-stored-bytes N] [--rate N] [--max-stacks N] [--max-depth N]",
		Short: "Set a tenant's quotas and retention (0: none of its own)",
		Args:  args(1, 1),
		RunE: func(c *cobra.Command, a []string) error {
			return withDB(c, func(db *postgres.DB) error { return db.SetTenantLimits(c.Context(), a[0], l) })
		},
	}
	lf := limits.Flags()
	lf.IntVar(&l.RetentionDays, "retention-days", 0, "delete profiles older than this many days")
	lf.IntVar(&l.SampleDays, "sample-days", 0, "keep per-sample rows in Postgres this many days; older profiles' samples are read from their raw files")
	lf.Int64Var(&l.MaxUploadBytes, "max-upload-bytes", 0, "largest upload as sent")
	lf.Int64Var(&l.MaxRawBytes, "max-raw-bytes", 0, "largest upload once decompressed")
	lf.Int64Var(&l.MaxStoredBytes, "max-stored-bytes", 0, "total bytes kept: raw files and dictionary rows")
	lf.IntVar(&l.RatePerSecond, "rate", 0, "requests per second (per server replica)")
	lf.IntVar(&l.MaxStacks, "max-stacks", 0, "distinct stacks in one profile (default: the server's)")
	lf.IntVar(&l.MaxDepth, "max-depth", 0, "frames in one stack (default: the server's)")
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a tenant and everything it owns (index rows and raw files)",
		Args:  args(1, 1),
		RunE: func(c *cobra.Command, a []string) error {
			return withLifecycle(c, func(s *lifecycle.Service) error {
				n, err := s.DeleteTenant(c.Context(), a[0])
				if err != nil {
					return err
				}
				fmt.Fprintf(os.Stderr, "deleted tenant %s: %d profiles\n", a[0], n)
				return nil
			})
		},
	}
	t.AddCommand(create, list, state("disable", true), state("enable", false), limits, del)
	return t
}
