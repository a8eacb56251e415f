package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/postgres"
	"github.com/spf13/cobra"
)

func keyCmd() *cobra.Command {
	var tenant, scopes, name string
	var expires time.Duration
	k := &cobra.Command{Use: "key", Short: "Manage API keys (talks to FLEETSCOPE_DATABASE_URL directly)"}
	create := &cobra.Command{
		Use:   "create --tenant NAME --scope ingest,read",
		Short: "Create an API key and print its secret (shown only once)",
		Args:  args(0, 0),
		RunE: func(c *cobra.Command, a []string) error {
			if tenant == "" {
				return usageError{errors.New("--tenant is required")}
			}
			return withDB(c, func(db *postgres.DB) error {
				id, err := db.TenantID(c.Context(), tenant)
				if err != nil {
					return err
				}
				o := fleetscope.KeyOptions{Name: name, Scopes: strings.Split(scopes, ","), Actor: "cli"}
				if expires > 0 {
					o.ExpiresAt = time.Now().Add(expires)
				}
				secret, _, err := db.NewKey(c.Context(), id, o)
				if err != nil {
					return err
				}
				fmt.Println(secret)
				return nil
			})
		},
	}
	create.Flags().StringVar(&tenant, "tenant", "", "tenant name")
	create.Flags().StringVar(&scopes, "scope", "ingest,read", "comma-separated scopes: ingest, read, admin")
	create.Flags().StringVar(&name, "name", "", "a name to recognise the key by")
	create.Flags().DurationVar(&expires, "expires-in", 0, "the key expires after this long (e.g. 720h); default never")
	list := &cobra.Command{
		Use:   "list --tenant NAME",
		Short: "List a tenant's keys (never their secrets)",
		Args:  args(0, 0),
		RunE: func(c *cobra.Command, a []string) error {
			return withDB(c, func(db *postgres.DB) error {
				id, err := db.TenantID(c.Context(), tenant)
				if err != nil {
					return err
				}
				keys, err := db.Keys(c.Context(), id)
				if err != nil {
					return err
				}
				tw := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "ID\tNAME\tSCOPES\tCREATED\tLAST_USED\tEXPIRES\tREVOKED")
				when := func(t time.Time) string {
					if t.IsZero() {
						return "-"
					}
					return t.Format(time.RFC3339)
				}
				for _, k := range keys {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Name, strings.Join(k.Scopes, ","), when(k.CreatedAt), when(k.LastUsedAt), when(k.ExpiresAt), when(k.RevokedAt))
				}
				return tw.Flush()
			})
		},
	}
	list.Flags().StringVar(&tenant, "tenant", "", "tenant name")
	revoke := &cobra.Command{
		Use:   "revoke --tenant NAME KEY_ID",
		Short: "Revoke a key (within 5 s on every server)",
		Args:  args(1, 1),
		RunE: func(c *cobra.Command, a []string) error {
			return withDB(c, func(db *postgres.DB) error {
				id, err := db.TenantID(c.Context(), tenant)
				if err != nil {
					return err
				}
				return db.RevokeKey(c.Context(), id, a[0], "cli")
			})
		},
	}
	revoke.Flags().StringVar(&tenant, "tenant", "", "tenant name")
	k.AddCommand(create, list, revoke)
	return k
}
