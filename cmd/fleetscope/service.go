package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	"github.com/fleetscope/fleetscope/api"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/api/server"
	"github.com/fleetscope/fleetscope/store/postgres"
)

// serverCmd runs the service. Configuration comes from FLEETSCOPE_*
// variables; flags override them.
func serverCmd() *cobra.Command {
	var addr, dbURL, blobURL string
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
			return s.ListenAndServe(ctx)
		},
	}
	f := c.Flags()
	f.StringVar(&addr, "addr", "", "listen address (FLEETSCOPE_ADDR, default 127.0.0.1:8080)")
	f.StringVar(&dbURL, "database-url", "", "Postgres URL (FLEETSCOPE_DATABASE_URL)")
	f.StringVar(&blobURL, "blob-url", "", "blob store URL (FLEETSCOPE_BLOB_URL)")
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

func tenantCmd() *cobra.Command {
	var ifNotExists bool
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a tenant (talks to FLEETSCOPE_DATABASE_URL directly)",
		Args:  args(1, 1),
		RunE: func(c *cobra.Command, a []string) error {
			db, err := openDB(c.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			if err := db.Migrate(c.Context()); err != nil {
				return err
			}
			_, err = db.CreateTenant(c.Context(), a[0], ifNotExists)
			return err
		},
	}
	create.Flags().BoolVar(&ifNotExists, "if-not-exists", false, "succeed quietly if the tenant exists")
	t := &cobra.Command{Use: "tenant", Short: "Manage tenants"}
	t.AddCommand(create)
	return t
}

func keyCmd() *cobra.Command {
	var tenant, scopes string
	create := &cobra.Command{
		Use:   "create --tenant NAME --scope ingest,read",
		Short: "Create an API key and print its secret (shown only once)",
		Args:  args(0, 0),
		RunE: func(c *cobra.Command, a []string) error {
			if tenant == "" {
				return usageError{errors.New("--tenant is required")}
			}
			db, err := openDB(c.Context())
			if err != nil {
				return err
			}
			defer db.Close()
			if err := db.Migrate(c.Context()); err != nil {
				return err
			}
			secret, err := db.CreateKey(c.Context(), tenant, strings.Split(scopes, ","))
			if err != nil {
				return err
			}
			fmt.Println(secret)
			return nil
		},
	}
	create.Flags().StringVar(&tenant, "tenant", "", "tenant name")
	create.Flags().StringVar(&scopes, "scope", "ingest,read", "comma-separated scopes: ingest, read, admin")
	k := &cobra.Command{Use: "key", Short: "Manage API keys"}
	k.AddCommand(create)
	return k
}

// client talks to the server at FLEETSCOPE_URL with FLEETSCOPE_API_KEY.
type client struct {
	base   string
	ingest fleetscopev1connect.IngestServiceClient
	query  fleetscopev1connect.QueryServiceClient
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
	// HTTP/2 without TLS for http:// URLs, so client streams flow both ways.
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if strings.HasPrefix(base, "http://") {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = p
		tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return nil, errors.New("TLS dial on an http:// URL")
		}
	}
	hc := &http.Client{Transport: tr}
	auth := connect.WithInterceptors(bearer(key))
	return &client{
		base:   base,
		ingest: fleetscopev1connect.NewIngestServiceClient(hc, base, auth),
		query:  fleetscopev1connect.NewQueryServiceClient(hc, base, auth),
	}, nil
}

// permalink is the dashboard URL of a profile.
func (c *client) permalink(id string) string { return c.base + "/p/" + id }

type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return conn
	}
}

func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

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
