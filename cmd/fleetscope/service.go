package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/api"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/api/server"
	"github.com/fleetscope/fleetscope/cmd/fleetscope/agent"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/store/blob"
	"github.com/fleetscope/fleetscope/store/postgres"
)

// serverCmd runs the service. Configuration comes from FLEETSCOPE_*
// variables; flags override them.
func serverCmd() *cobra.Command {
	var addr, dbURL, blobURL string
	var selfProfile bool
	c := &cobra.Command{
		Use:   "server",
		Short: "Serve the API, ingest endpoint, UI, /metrics and /healthz",
		Args:  args(0, 0),
		RunE: func(c *cobra.Command, a []string) error {
			cfg, err := server.FromEnv(nil)
			if err != nil {
				return usageError{err}
			}
			for flag, p := range map[string]*string{"addr": &cfg.Addr, "database-url": &cfg.DatabaseURL, "blob-url": &cfg.BlobURL} {
				if c.Flags().Changed(flag) {
					*p = map[string]string{"addr": addr, "database-url": dbURL, "blob-url": blobURL}[flag]
				}
			}
			// A long-lived server serving concurrent uploads: the Go
			// defaults, not the batch commands' tight memory limit (which
			// made it collect constantly under 8 concurrent uploads).
			debug.SetGCPercent(100)
			debug.SetMemoryLimit(math.MaxInt64)
			log, err := server.NewLogger(cfg.LogLevel)
			if err != nil {
				return usageError{err}
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			s, err := server.New(ctx, cfg, log)
			if err != nil {
				return err
			}
			if selfProfile { // the server's own CPU profiles, sent to itself (pyroscope-go)
				stopProfiling, err := agent.SelfProfile(cfg.Addr, cfg.SelfProfileKey, cfg.SelfProfileApp, 15*time.Second, log)
				if err != nil {
					return usageError{err}
				}
				defer stopProfiling()
			}
			return s.ListenAndServe(ctx)
		},
	}
	f := c.Flags()
	f.StringVar(&addr, "addr", "", "listen address (FLEETSCOPE_ADDR, default 127.0.0.1:8080)")
	f.StringVar(&dbURL, "database-url", "", "Postgres URL (FLEETSCOPE_DATABASE_URL)")
	f.StringVar(&blobURL, "blob-url", "", "blob store URL (FLEETSCOPE_BLOB_URL)")
	f.BoolVar(&selfProfile, "self-profile", false, "send the server's CPU profiles to itself (key: FLEETSCOPE_SELF_PROFILE_KEY, app: FLEETSCOPE_SELF_PROFILE_APP)")
	return c
}

func openDB(ctx context.Context) (*postgres.DB, error) {
	url := os.Getenv("FLEETSCOPE_DATABASE_URL")
	if url == "" {
		return nil, usageError{errors.New("FLEETSCOPE_DATABASE_URL is not set")}
	}
	return postgres.Open(ctx, url)
}

func migrateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Apply the database migrations to FLEETSCOPE_DATABASE_URL",
		Args:  args(0, 0),
		RunE: func(c *cobra.Command, a []string) error {
			db, err := openDB(c.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			return db.Migrate(c.Context())
		},
	}
}

// withDB runs fn with the database of FLEETSCOPE_DATABASE_URL, migrated.
func withDB(c *cobra.Command, fn func(db *postgres.DB) error) error {
	db, err := openDB(c.Context())
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(c.Context()); err != nil {
		return err
	}
	return fn(db)
}

// withIngest also opens the blob store (FLEETSCOPE_BLOB_URL and S3 keys).
func withIngest(c *cobra.Command, fn func(s *ingest.Service) error) error {
	return withDB(c, func(db *postgres.DB) error {
		cfg, err := server.FromEnv(nil)
		if err != nil {
			return usageError{err}
		}
		blobs, err := blob.Open(c.Context(), cfg.BlobURL, cfg.S3AccessKey, cfg.S3SecretKey)
		if err != nil {
			return err
		}
		return fn(&ingest.Service{DB: db, Blobs: blobs})
	})
}

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
				fmt.Fprintln(tw, "NAME\tCREATED\tDISABLED\tRETENTION_DAYS\tMAX_UPLOAD\tMAX_RAW\tMAX_STORED\tRATE")
				for _, t := range ts {
					fmt.Fprintf(tw, "%s\t%s\t%v\t%d\t%d\t%d\t%d\t%d\n", t.Name, t.CreatedAt.Format(time.DateOnly), t.Disabled,
						t.RetentionDays, t.MaxUploadBytes, t.MaxRawBytes, t.MaxStoredBytes, t.RatePerSecond)
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
		Use:   "set-limits NAME [--retention-days N] [--max-upload-bytes N] [--max-raw-bytes N] [--max-stored-bytes N] [--rate N]",
		Short: "Set a tenant's quotas and retention (0: none of its own)",
		Args:  args(1, 1),
		RunE: func(c *cobra.Command, a []string) error {
			return withDB(c, func(db *postgres.DB) error { return db.SetTenantLimits(c.Context(), a[0], l) })
		},
	}
	lf := limits.Flags()
	lf.IntVar(&l.RetentionDays, "retention-days", 0, "delete profiles older than this many days")
	lf.Int64Var(&l.MaxUploadBytes, "max-upload-bytes", 0, "largest upload as sent")
	lf.Int64Var(&l.MaxRawBytes, "max-raw-bytes", 0, "largest upload once decompressed")
	lf.Int64Var(&l.MaxStoredBytes, "max-stored-bytes", 0, "total raw bytes kept")
	lf.IntVar(&l.RatePerSecond, "rate", 0, "requests per second (per server replica)")
	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a tenant and everything it owns (index rows and raw files)",
		Args:  args(1, 1),
		RunE: func(c *cobra.Command, a []string) error {
			return withIngest(c, func(s *ingest.Service) error {
				keys, err := s.DB.DeleteTenant(c.Context(), a[0])
				if err != nil {
					return err
				}
				for _, k := range keys {
					if err := s.Blobs.Delete(c.Context(), k); err != nil {
						return fmt.Errorf("tenant deleted from the index; raw file %s not deleted (run fleetscope check --fix): %w", k, err)
					}
				}
				fmt.Fprintf(os.Stderr, "deleted tenant %s: %d profiles\n", a[0], len(keys))
				return nil
			})
		},
	}
	t.AddCommand(create, list, state("disable", true), state("enable", false), limits, del)
	return t
}

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
				o := postgres.KeyOptions{Name: name, Scopes: strings.Split(scopes, ","), Actor: "cli"}
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

func checkCmd() *cobra.Command {
	var fix bool
	c := &cobra.Command{
		Use:   "check [--fix]",
		Short: "Compare blob store and index: report orphan blobs and missing raw files",
		Args:  args(0, 0),
		RunE: func(c *cobra.Command, a []string) error {
			return withIngest(c, func(s *ingest.Service) error {
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

// client talks to the server at FLEETSCOPE_URL with FLEETSCOPE_API_KEY.
type client struct {
	base   string
	ingest fleetscopev1connect.IngestServiceClient
	query  fleetscopev1connect.QueryServiceClient
	admin  fleetscopev1connect.AdminServiceClient
}

func newClient() (*client, error) {
	base := strings.TrimRight(os.Getenv("FLEETSCOPE_URL"), "/")
	if base == "" {
		base = "http://127.0.0.1:8080"
	}
	key := os.Getenv("FLEETSCOPE_API_KEY")
	if key == "" {
		return nil, usageError{errors.New("FLEETSCOPE_API_KEY is not set")}
	}
	hc := api.HTTPClient(base)
	auth := connect.WithInterceptors(api.Bearer(key))
	return &client{
		base:   base,
		ingest: fleetscopev1connect.NewIngestServiceClient(hc, base, auth),
		query:  fleetscopev1connect.NewQueryServiceClient(hc, base, auth),
		admin:  fleetscopev1connect.NewAdminServiceClient(hc, base, auth),
	}, nil
}

// permalink is the dashboard URL of a profile.
func (c *client) permalink(id string) string { return c.base + "/p/" + id }

// remoteErr turns a Connect error into a one-line message.
func remoteErr(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		if ce.Code() == connect.CodeUnavailable {
			return fmt.Errorf("server unavailable: %s", ce.Message())
		}
		return api.FromConnect(err)
	}
	return err
}
