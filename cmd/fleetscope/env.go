package main

import (
	"errors"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/fleetscope/fleetscope/api/server"
	"github.com/fleetscope/fleetscope/store/blob"
	_ "github.com/fleetscope/fleetscope/store/blob/localfs" // file:// URLs
	_ "github.com/fleetscope/fleetscope/store/blob/s3"      // s3:// URLs
	"github.com/fleetscope/fleetscope/store/lifecycle"
	"github.com/fleetscope/fleetscope/store/postgres"
)

// The one place the command line reads its environment: the server's
// FLEETSCOPE_* configuration (server.FromEnv) for the server and the
// bootstrap commands, and FLEETSCOPE_URL / FLEETSCOPE_API_KEY for the
// clients (client.go).

// config reads the server configuration from the environment.
func config() (server.Config, error) {
	cfg, err := server.FromEnv(os.Getenv)
	if err != nil {
		return cfg, usageError{err}
	}
	return cfg, nil
}

// withDB runs fn with the database of FLEETSCOPE_DATABASE_URL, migrated.
func withDB(c *cobra.Command, fn func(db *postgres.DB) error) error {
	cfg, err := config()
	if err != nil {
		return err
	}
	if cfg.DatabaseURL == "" {
		return usageError{errors.New("FLEETSCOPE_DATABASE_URL is not set")}
	}
	db, err := postgres.Open(c.Context(), cfg.DatabaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Migrate(c.Context()); err != nil {
		return err
	}
	return fn(db)
}

// withLifecycle also opens the blob store (FLEETSCOPE_BLOB_URL and S3 keys)
// for the commands that delete or check raw files.
func withLifecycle(c *cobra.Command, fn func(s *lifecycle.Service) error) error {
	return withDB(c, func(db *postgres.DB) error {
		cfg, err := config()
		if err != nil {
			return err
		}
		blobs, err := blob.Open(c.Context(), cfg.BlobURL, cfg.S3AccessKey, cfg.S3SecretKey)
		if err != nil {
			return err
		}
		return fn(&lifecycle.Service{DB: db, Blobs: blobs})
	})
}

// clientEnv returns the server URL (FLEETSCOPE_URL, default
// http://127.0.0.1:8080) and API key (FLEETSCOPE_API_KEY) of the clients.
func clientEnv() (url, key string, err error) {
	url = serverURL()
	key = os.Getenv("FLEETSCOPE_API_KEY")
	if key == "" {
		return "", "", usageError{errors.New("FLEETSCOPE_API_KEY is not set: " + keyHint)}
	}
	return url, key, nil
}

// serverURL is the clients' server: FLEETSCOPE_URL, default
// http://127.0.0.1:8080.
func serverURL() string {
	if url := strings.TrimRight(os.Getenv("FLEETSCOPE_URL"), "/"); url != "" {
		return url
	}
	return "http://127.0.0.1:8080"
}
