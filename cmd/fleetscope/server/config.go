package server

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/fleetscope/fleetscope/ingest"
)

// Config is the server's configuration. Each field has an environment
// variable (Env); command-line flags override them.
type Config struct {
	Addr                string // FLEETSCOPE_ADDR: listen address
	DatabaseURL         string // FLEETSCOPE_DATABASE_URL: Postgres URL
	BlobURL             string // FLEETSCOPE_BLOB_URL: file:///dir or s3://bucket?endpoint=host:port&insecure=true
	S3AccessKey         string // FLEETSCOPE_S3_ACCESS_KEY
	S3SecretKey         string // FLEETSCOPE_S3_SECRET_KEY
	PublicURL           string // FLEETSCOPE_PUBLIC_URL: base of permalinks (default http://ADDR)
	MaxUploadBytes      int64  // FLEETSCOPE_MAX_UPLOAD_BYTES: largest upload, as sent
	MaxRawBytes         int64  // FLEETSCOPE_MAX_RAW_BYTES: largest upload once decompressed
	BrowserUploadBytes  int64  // FLEETSCOPE_BROWSER_UPLOAD_BYTES: largest single-message upload
	LogLevel            string // FLEETSCOPE_LOG_LEVEL: debug, info, warn, error
	SweepInterval       string // FLEETSCOPE_SWEEP_INTERVAL: how often retention runs (Go duration)
	SelfProfileKey      string // FLEETSCOPE_SELF_PROFILE_KEY: ingest key for server --self-profile
	SelfProfileApp      string // FLEETSCOPE_SELF_PROFILE_APP: app name of the server's own profiles
	MaxConns            int64  // FLEETSCOPE_MAX_CONNS: open connections (0: the file limit less 512)
	MaxConnsPerIP       int64  // FLEETSCOPE_MAX_CONNS_PER_IP: open connections from one address
	MaxUploads          int64  // FLEETSCOPE_MAX_UPLOADS: uploads in flight, the whole server
	MaxUploadsPerKey    int64  // FLEETSCOPE_MAX_UPLOADS_PER_KEY: uploads in flight with one key
	MaxUploadsPerTenant int64  // FLEETSCOPE_MAX_UPLOADS_PER_TENANT: uploads in flight of one tenant, whatever its keys
	MinBodyRate         int64  // FLEETSCOPE_MIN_BODY_RATE: bytes a second an upload's body must average once waited for FLEETSCOPE_BODY_IDLE_TIMEOUT
	MaxStacks           int64  // FLEETSCOPE_MAX_STACKS: distinct stacks in one profile
	MaxDepth            int64  // FLEETSCOPE_MAX_DEPTH: frames in one stack
	BodyIdleTimeout     string // FLEETSCOPE_BODY_IDLE_TIMEOUT: a request body sending nothing this long is cut off
	IngestCPUs          int64  // FLEETSCOPE_INGEST_CPUS: cores all uploads' parsing may take together (0: all but one)
	CacheBytes          int64  // FLEETSCOPE_CACHE_BYTES: memory of the query caches together
	DebugAddr           string // FLEETSCOPE_DEBUG_ADDR: Go's /debug/pprof/ on a separate address (off when empty)
	MaxLiveStreams      int64  // FLEETSCOPE_MAX_LIVE_STREAMS: open live streams of one tenant
	LiveIdleTimeout     string // FLEETSCOPE_LIVE_IDLE_TIMEOUT: a live stream with no batch this long is ended, its batches kept
	CompactInterval     string // FLEETSCOPE_COMPACT_INTERVAL: how often the stack buckets of newly stored profiles are counted
}

// Env lists the environment variables Config reads, in field order.
var Env = []string{
	"FLEETSCOPE_ADDR",
	"FLEETSCOPE_DATABASE_URL",
	"FLEETSCOPE_BLOB_URL",
	"FLEETSCOPE_S3_ACCESS_KEY",
	"FLEETSCOPE_S3_SECRET_KEY",
	"FLEETSCOPE_PUBLIC_URL",
	"FLEETSCOPE_MAX_UPLOAD_BYTES",
	"FLEETSCOPE_MAX_RAW_BYTES",
	"FLEETSCOPE_BROWSER_UPLOAD_BYTES",
	"FLEETSCOPE_LOG_LEVEL",
	"FLEETSCOPE_SWEEP_INTERVAL",
	"FLEETSCOPE_SELF_PROFILE_KEY",
	"FLEETSCOPE_SELF_PROFILE_APP",
	"FLEETSCOPE_MAX_CONNS",
	"FLEETSCOPE_MAX_CONNS_PER_IP",
	"FLEETSCOPE_MAX_UPLOADS",
	"FLEETSCOPE_MAX_UPLOADS_PER_KEY",
	"FLEETSCOPE_MAX_UPLOADS_PER_TENANT",
	"FLEETSCOPE_MIN_BODY_RATE",
	"FLEETSCOPE_MAX_STACKS",
	"FLEETSCOPE_MAX_DEPTH",
	"FLEETSCOPE_BODY_IDLE_TIMEOUT",
	"FLEETSCOPE_INGEST_CPUS",
	"FLEETSCOPE_DEBUG_ADDR",
	"FLEETSCOPE_CACHE_BYTES",
	"FLEETSCOPE_MAX_LIVE_STREAMS",
	"FLEETSCOPE_LIVE_IDLE_TIMEOUT",
	"FLEETSCOPE_COMPACT_INTERVAL",
}

// Defaults are the embedded defaults.
func Defaults() Config {
	return Config{
		Addr:                "127.0.0.1:8080",
		BlobURL:             "file://./.data/blobs",
		MaxUploadBytes:      4 << 30,
		MaxRawBytes:         16 << 30,
		BrowserUploadBytes:  64 << 20,
		LogLevel:            "info",
		SweepInterval:       "1h",
		SelfProfileApp:      "fleetscope",
		MaxConnsPerIP:       1024,
		MaxUploads:          64,
		MaxUploadsPerKey:    8,
		MaxUploadsPerTenant: 16,
		MinBodyRate:         1024,
		MaxStacks:           250_000,
		MaxDepth:            4096,
		BodyIdleTimeout:     "30s",
		CacheBytes:          192 << 20,
		MaxLiveStreams:      ingest.DefaultMaxLiveStreams,
		LiveIdleTimeout:     ingest.DefaultLiveIdleTimeout.String(),
		CompactInterval:     "1m",
	}
}

// FromEnv returns the defaults overridden by the environment (getenv is
// os.Getenv in production).
func FromEnv(getenv func(string) string) (Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	c := Defaults()
	str := map[string]*string{
		"FLEETSCOPE_ADDR":              &c.Addr,
		"FLEETSCOPE_DATABASE_URL":      &c.DatabaseURL,
		"FLEETSCOPE_BLOB_URL":          &c.BlobURL,
		"FLEETSCOPE_S3_ACCESS_KEY":     &c.S3AccessKey,
		"FLEETSCOPE_S3_SECRET_KEY":     &c.S3SecretKey,
		"FLEETSCOPE_PUBLIC_URL":        &c.PublicURL,
		"FLEETSCOPE_LOG_LEVEL":         &c.LogLevel,
		"FLEETSCOPE_SWEEP_INTERVAL":    &c.SweepInterval,
		"FLEETSCOPE_SELF_PROFILE_KEY":  &c.SelfProfileKey,
		"FLEETSCOPE_SELF_PROFILE_APP":  &c.SelfProfileApp,
		"FLEETSCOPE_BODY_IDLE_TIMEOUT": &c.BodyIdleTimeout,
		"FLEETSCOPE_DEBUG_ADDR":        &c.DebugAddr,
		"FLEETSCOPE_LIVE_IDLE_TIMEOUT": &c.LiveIdleTimeout,
		"FLEETSCOPE_COMPACT_INTERVAL":  &c.CompactInterval,
	}
	num := map[string]*int64{
		"FLEETSCOPE_MAX_UPLOAD_BYTES":       &c.MaxUploadBytes,
		"FLEETSCOPE_MAX_RAW_BYTES":          &c.MaxRawBytes,
		"FLEETSCOPE_BROWSER_UPLOAD_BYTES":   &c.BrowserUploadBytes,
		"FLEETSCOPE_MAX_CONNS":              &c.MaxConns,
		"FLEETSCOPE_MAX_CONNS_PER_IP":       &c.MaxConnsPerIP,
		"FLEETSCOPE_MAX_UPLOADS":            &c.MaxUploads,
		"FLEETSCOPE_MAX_UPLOADS_PER_KEY":    &c.MaxUploadsPerKey,
		"FLEETSCOPE_MAX_UPLOADS_PER_TENANT": &c.MaxUploadsPerTenant,
		"FLEETSCOPE_MIN_BODY_RATE":          &c.MinBodyRate,
		"FLEETSCOPE_MAX_STACKS":             &c.MaxStacks,
		"FLEETSCOPE_MAX_DEPTH":              &c.MaxDepth,
		"FLEETSCOPE_INGEST_CPUS":            &c.IngestCPUs,
		"FLEETSCOPE_CACHE_BYTES":            &c.CacheBytes,
		"FLEETSCOPE_MAX_LIVE_STREAMS":       &c.MaxLiveStreams,
	}
	for _, name := range Env {
		v := getenv(name)
		if v == "" {
			continue
		}
		if p, ok := str[name]; ok {
			*p = v
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return c, fmt.Errorf("%s=%q: want a positive number", name, v)
		}
		*num[name] = n
	}
	if d, err := time.ParseDuration(c.SweepInterval); err != nil || d <= 0 {
		return c, fmt.Errorf("FLEETSCOPE_SWEEP_INTERVAL=%q: want a positive duration like 1h", c.SweepInterval)
	}
	if d, err := time.ParseDuration(c.LiveIdleTimeout); err != nil || d <= 0 {
		return c, fmt.Errorf("FLEETSCOPE_LIVE_IDLE_TIMEOUT=%q: want a positive duration like 10m", c.LiveIdleTimeout)
	}
	if d, err := time.ParseDuration(c.CompactInterval); err != nil || d <= 0 {
		return c, fmt.Errorf("FLEETSCOPE_COMPACT_INTERVAL=%q: want a positive duration like 1m", c.CompactInterval)
	}
	if d, err := time.ParseDuration(c.BodyIdleTimeout); err != nil || d <= 0 {
		return c, fmt.Errorf("FLEETSCOPE_BODY_IDLE_TIMEOUT=%q: want a positive duration like 30s", c.BodyIdleTimeout)
	}
	return c, nil
}
