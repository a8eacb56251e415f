package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"github.com/fleetscope/fleetscope/cmd/fleetscope/agent"
	"github.com/fleetscope/fleetscope/cmd/fleetscope/server"
	"github.com/spf13/cobra"
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
			cfg, err := config()
			if err != nil {
				return err
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
			if os.Getenv("GOMEMLIMIT") == "" {
				debug.SetMemoryLimit(serverMemoryLimit(cfg.CacheBytes))
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			s, err := server.New(ctx, cfg, log)
			if err != nil {
				return err
			}
			if selfProfile { // the server's own CPU profiles, sent to itself (pyroscope-go)
				stopProfiling, err := agent.SelfProfile(s.Addr(), cfg.SelfProfileKey, cfg.SelfProfileApp, 15*time.Second, log)
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

// serverMemoryLimit is the server's soft memory limit unless GOMEMLIMIT
// sets one: its caches' budget and 160 MiB for the requests in flight. Go
// then collects garbage before the heap reaches it rather than at twice
// the live heap (a cache kept full held the server at 800 MB); a live heap
// above it costs collections, never a failure. Once the cache is full the
// resident set stays at about this limit, plus what requests in flight
// hold beyond it: with the default budget, 352 MiB, which keeps a day of
// ten hosts' continuous fleet under 512 MB (docs/benchmarks.md).
func serverMemoryLimit(cacheBytes int64) int64 { return cacheBytes + 160<<20 }
