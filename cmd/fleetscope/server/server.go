package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"syscall"
	"time"

	"connectrpc.com/connect"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
	"github.com/grafana/pyroscope/api/gen/proto/go/querier/v1/querierv1connect"
	"github.com/klauspost/compress/gzip"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/fleetscope/fleetscope/api"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/perf"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/store/blob"
	_ "github.com/fleetscope/fleetscope/store/blob/localfs" // file:// URLs
	_ "github.com/fleetscope/fleetscope/store/blob/s3"      // s3:// URLs
	"github.com/fleetscope/fleetscope/store/lifecycle"
	"github.com/fleetscope/fleetscope/store/postgres"
	"github.com/fleetscope/fleetscope/web"
)

// Server is a configured fleetscope server.
type Server struct {
	cfg       Config
	log       *slog.Logger
	db        *postgres.DB
	lifecycle *lifecycle.Service
	live      *ingest.Live
	auth      *api.Auth
	query     *query.Service
	compact   *compactor
	ln        net.Listener
	http      *http.Server
	routes    []string // the patterns the server mounts
}

// routeMux is the server's mux, remembering the patterns mounted: the
// "serving" log line lists them, so that the isolation tests attack every
// endpoint the server actually serves.
type routeMux struct {
	*http.ServeMux
	patterns []string
}

func (m *routeMux) Handle(pattern string, h http.Handler) {
	m.patterns = append(m.patterns, pattern)
	m.ServeMux.Handle(pattern, h)
}

func (m *routeMux) HandleFunc(pattern string, h func(http.ResponseWriter, *http.Request)) {
	m.Handle(pattern, http.HandlerFunc(h))
}

// New binds the listen address (so port 0 picks a free port, and Addr
// says which), connects to the index (running migrations) and the blob
// store (creating the bucket) and builds the HTTP handler.
func New(ctx context.Context, cfg Config, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	s, err := newServer(ctx, cfg, log, ln)
	if err != nil {
		ln.Close()
	}
	return s, err
}

func newServer(ctx context.Context, cfg Config, log *slog.Logger, ln net.Listener) (*Server, error) {
	db, err := postgres.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	if err := db.Migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	blobs, err := blob.Open(ctx, cfg.BlobURL, cfg.S3AccessKey, cfg.S3SecretKey)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("blob store %s: %w", cfg.BlobURL, err)
	}
	publicURL := cfg.PublicURL
	if publicURL == "" {
		publicURL = "http://" + ln.Addr().String()
	}
	spool, removed, err := ingest.PrepareSpool("")
	if err != nil {
		db.Close()
		return nil, err
	}
	if removed > 0 {
		log.Info("removed the upload spool files of servers that are gone", "files", removed)
	}
	// Uploads parse on all cores but one, together: queries keep a core.
	cpus := int(cfg.IngestCPUs)
	if cpus <= 0 {
		cpus = max(1, runtime.GOMAXPROCS(0)-1)
	}
	perf.LimitCPU(cpus)
	ing := &ingest.Service{DB: db, Blobs: blobs, Log: log, MaxUploadBytes: cfg.MaxUploadBytes, MaxRawBytes: cfg.MaxRawBytes,
		TempDir: spool, Shape: ingest.Shape{MaxStacks: int(cfg.MaxStacks), MaxDepth: int(cfg.MaxDepth),
			MaxFrames: ingest.DefaultShape.MaxFrames, MaxEvents: ingest.DefaultShape.MaxEvents,
			MaxDistinctFrames: ingest.DefaultShape.MaxDistinctFrames, MaxNameBytes: ingest.DefaultShape.MaxNameBytes}}
	// Profiles past their tenant's sample tier are read from their raw
	// files, parsed again by ingest (query/cold.go, store/lifecycle/tier.go).
	q := query.New(db, query.Options{CacheBytes: cfg.CacheBytes, Warm: true, Reindex: ing.Reindex})
	// Every deletion (asked for, by a live stream, by retention) goes
	// through lc, which has q forget the profile.
	compact := &compactor{q: q, log: log}
	lc := &lifecycle.Service{DB: db, Blobs: blobs, Log: log, Forget: q.Forget, Tier: db, Reindex: ing.Reindex, BeforeMove: compact.beforeMove}
	ing.Stored = compact.stored
	auth := api.NewAuth(db)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := newMetrics(reg)
	reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "fleetscope_db_retries_total",
		Help: "Database operations run again on a fresh connection after theirs broke (killed sessions, a restarted database)."},
		func() float64 { return float64(db.Retried()) }))
	reg.MustRegister(cacheCollector{q})

	// Interceptors, outermost first: metrics see the final code; errors are
	// logged and mapped once; then authentication.
	opts := []connect.HandlerOption{connect.WithInterceptors(m, api.ErrorInterceptor(log), auth.Interceptor()),
		connect.WithCompressMinBytes(16 << 10), // small answers: not worth gzip's CPU
		api.JSONCodec(), api.ProtoCodec()}
	readMax := func(n int) []connect.HandlerOption { // each handler's message limit, gzip included
		return append(slices.Clip(opts), connect.WithReadMaxBytes(n), fastGzip(n))
	}
	small := readMax(1 << 20)
	uploads := readMax(int(cfg.BrowserUploadBytes) + 64<<10)
	mux := &routeMux{ServeMux: http.NewServeMux()}
	idle, _ := time.ParseDuration(cfg.LiveIdleTimeout) // checked by FromEnv
	live := &ingest.Live{Ingest: ing, DB: db, MaxOpen: int(cfg.MaxLiveStreams), IdleTimeout: idle, Log: log, Delete: lc.Delete}
	mux.Handle(fleetscopev1connect.NewIngestServiceHandler(api.NewIngest(ing, live, publicURL, log),
		uploads...))
	mux.Handle(fleetscopev1connect.NewQueryServiceHandler(api.NewQuery(q), small...))
	mux.Handle(fleetscopev1connect.NewFleetServiceHandler(api.NewFleet(q), small...))
	mux.Handle(fleetscopev1connect.NewCompareServiceHandler(api.NewCompare(q), small...))
	mux.Handle(fleetscopev1connect.NewAdminServiceHandler(api.NewAdmin(db, lc.Delete, q, auth, publicURL), small...))
	mux.Handle(fleetscopev1connect.NewShareServiceHandler(api.NewShare(db, q), small...))
	mux.Handle(api.PyroscopePath, api.NewPyroscope(auth, ing, publicURL, log)) // pyroscope-go pushes here
	// Pyroscope's push API (Grafana Alloy's pyroscope.write): profiles in
	// one message, bounded like a single-message upload.
	mux.Handle(pushv1connect.NewPusherServiceHandler(api.NewPush(ing, log),
		uploads...))
	// OpenTelemetry profiles, gRPC and OTLP/HTTP: exports join live
	// streams, bounded like a single-message upload.
	otlpRPC, otlpRPCHandler, otlpPath, otlpHTTP := api.NewOTLP(live, cfg.BrowserUploadBytes, log, uploads...)
	mux.Handle(otlpRPC, otlpRPCHandler)
	mux.Handle(otlpPath, otlpHTTP)
	// Pyroscope's query API: Grafana's Pyroscope data source reads here.
	mux.Handle(querierv1connect.NewQuerierServiceHandler(api.NewQuerier(q), small...))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := db.Ping(ctx); err != nil {
			log.Warn("health check: database unreachable", "err", err) // the details stay in the log
			http.Error(w, "database unreachable", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	// The dashboard (its routes fall back to index.html). "/" rather than
	// "GET /": a method pattern would outrank the API's path patterns.
	ui := web.Handler()
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		ui.ServeHTTP(w, r)
	}))

	protocols := new(http.Protocols)
	protocols.SetHTTP1(true)
	protocols.SetUnencryptedHTTP2(true) // client streaming without TLS
	gate := api.DefaultGate
	gate.Uploads, gate.UploadsPerKey, gate.UploadsPerTenant = int(cfg.MaxUploads), int(cfg.MaxUploadsPerKey), int(cfg.MaxUploadsPerTenant)
	gate.MinBodyRate = cfg.MinBodyRate
	gate.BodyIdle, _ = time.ParseDuration(cfg.BodyIdleTimeout) // checked by FromEnv
	gate.Log = log
	s := &Server{cfg: cfg, log: log, db: db, lifecycle: lc, live: live, auth: auth, query: q, compact: compact, ln: ln, routes: mux.patterns, http: &http.Server{
		Addr:              cfg.Addr,
		Handler:           api.HTTPStatus(auth.Gate(mux, gate)), // error statuses by the table (413 for too_large)
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: 100},
		Protocols:         protocols,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}
	return s, nil
}

// fastGzip answers in gzip at its fastest level: flame graphs are large and
// repetitive, so level 1 still shrinks them 15x (the default level 25x)
// in 40% of the default level's time (the benchmark's whole-profile JSON
// flame graph: 10 MB in 29 ms against 69 ms), time every answer waits for.
// A large answer is compressed in pieces on all cores (parallelGzip).
//
// Requests are inflated up to readMax, the handler's message limit, and
// no further: Connect inflates a message over its limit to the end to
// report its size (a 6.9 MB gzip body of JSON is 1.5 GB), and
// boundedGunzip stops it one byte past the limit instead.
func fastGzip(readMax int) connect.HandlerOption {
	return connect.WithCompression("gzip",
		func() connect.Decompressor { return &boundedGunzip{max: int64(readMax) + 1} },
		func() connect.Compressor { return &parallelGzip{} })
}

// boundedGunzip inflates gzip up to max bytes; reading more fails. (The
// reader is a field, not embedded: its WriteTo would bypass Read.)
type boundedGunzip struct {
	zr     gzip.Reader
	max, n int64
}

func (g *boundedGunzip) Reset(r io.Reader) error {
	g.n = 0
	return g.zr.Reset(r)
}

func (g *boundedGunzip) Close() error { return g.zr.Close() }

func (g *boundedGunzip) Read(p []byte) (int, error) {
	if g.n >= g.max {
		return 0, fmt.Errorf("gzip body inflated past %d bytes: not inflated further", g.max-1)
	}
	p = p[:min(int64(len(p)), g.max-g.n)]
	n, err := g.zr.Read(p)
	g.n += int64(n)
	return n, err
}

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.http.Handler }

// Serve serves on ln until ctx is cancelled, then shuts down gracefully:
// in-flight requests (uploads included) get up to grace to finish.
func (s *Server) Serve(ctx context.Context, ln net.Listener, grace time.Duration) error {
	defer s.db.Close()
	limited := newLimitListener(ln, s.maxConns(), int(s.cfg.MaxConnsPerIP))
	s.http.ConnState = limited.ConnState
	ln = limited
	errc := make(chan error, 1)
	go func() { errc <- s.http.Serve(ln) }()
	go s.maintain(ctx)
	compactEvery, _ := time.ParseDuration(s.cfg.CompactInterval)
	go s.compact.run(ctx, compactEvery)
	go s.endIdleLive(ctx)
	go s.flushOnHangup(ctx)
	if s.cfg.DebugAddr != "" {
		if err := s.serveDebug(ctx); err != nil {
			return err
		}
	}
	s.log.Info("serving", "addr", ln.Addr().String(), "blobs", s.cfg.BlobURL, "routes", s.routes)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	s.log.Info("shutting down: finishing in-flight requests", "grace", grace)
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := s.http.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// serveDebug serves Go's profiler (/debug/pprof/) on its own address, for
// operators: it has no authentication, so bind it to loopback or a
// private network. It stops with ctx.
func (s *Server) serveDebug(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.DebugAddr)
	if err != nil {
		return fmt.Errorf("FLEETSCOPE_DEBUG_ADDR: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	s.log.Info("debug serving", "addr", ln.Addr().String())
	return nil
}

// flushOnHangup empties this replica's caches on SIGHUP (an operator who
// changed keys or limits in the database directly, or a test) and says so.
func (s *Server) flushOnHangup(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			s.auth.ForgetKeys()
			s.query.Flush()
			s.log.Info("caches flushed")
		}
	}
}

// endIdleLive ends idle live streams, keeping their batches, until ctx
// ends: it looks every quarter of the idle timeout, at most every minute.
func (s *Server) endIdleLive(ctx context.Context) {
	t := time.NewTicker(min(max(s.live.IdleTimeout/4, 10*time.Millisecond), time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := s.live.EndIdle(ctx, time.Now()); err != nil && ctx.Err() == nil {
			s.log.Error("ending idle live streams", "err", err)
		}
	}
}

// reclaimDelay is how long after a deletion the dictionary rows it left
// unused are reclaimed: deletions in between are reclaimed together.
const reclaimDelay = 10 * time.Second

// analyzeEvery is how often the sweep may analyze a table again where
// autovacuum is off: autovacuum_naptime's default (postgres.AnalyzeStale).
const analyzeEvery = time.Minute

// maintain runs retention and partition upkeep until ctx ends, and
// reclaims dictionary rows soon after profiles are deleted.
func (s *Server) maintain(ctx context.Context) {
	every, _ := time.ParseDuration(s.cfg.SweepInterval)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.lifecycle.Deleted():
			select {
			case <-ctx.Done():
				return
			case <-time.After(reclaimDelay):
			}
			if _, err := s.lifecycle.Reclaim(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("dictionary reclaim", "err", err)
			}
			continue
		case <-t.C:
		}
		if n, err := s.lifecycle.Sweep(ctx, time.Now()); err != nil {
			s.log.Error("retention sweep", "err", err)
		} else if n > 0 {
			s.log.Info("retention deleted profiles", "profiles", n)
		}
		if err := s.db.EnsurePartitions(ctx, time.Now(), 7); err != nil {
			s.log.Error("partitions", "err", err)
		}
		if tables, err := s.db.AnalyzeStale(ctx, analyzeEvery); err != nil {
			s.log.Error("analyze", "err", err)
		} else if len(tables) > 0 {
			s.log.Info("analyzed tables (autovacuum is off)", "tables", tables)
		}
	}
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// ListenAndServe serves on the address New bound.
func (s *Server) ListenAndServe(ctx context.Context) error {
	return s.Serve(ctx, s.ln, time.Minute)
}

// maxConns is the open-connection bound: configured, or the process's file
// limit less room for the database pool, blobs, spool files and logs.
func (s *Server) maxConns() int {
	if s.cfg.MaxConns > 0 {
		return int(s.cfg.MaxConns)
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur < 1024 {
		return 512
	}
	return int(min(rl.Cur, 1<<20)) - 512
}

// NewLogger returns the JSON logger at the configured level.
func NewLogger(level string) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("log level %q: %w", level, err)
	}
	return slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: l})), nil
}

// metrics counts and times every RPC.
type metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "fleetscope_rpc_requests_total", Help: "RPCs handled, by procedure and result code.",
		}, []string{"procedure", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "fleetscope_rpc_duration_seconds", Help: "RPC latency, by procedure.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2.5, 14),
		}, []string{"procedure"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

func (m *metrics) observe(procedure string, start time.Time, err error) {
	code := "ok"
	if err != nil {
		code = connect.CodeOf(err).String()
	}
	m.requests.WithLabelValues(procedure, code).Inc()
	m.duration.WithLabelValues(procedure).Observe(time.Since(start).Seconds())
}

func (m *metrics) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		start := time.Now()
		res, err := next(ctx, req)
		m.observe(req.Spec().Procedure, start, err)
		return res, err
	}
}

func (m *metrics) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (m *metrics) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		start := time.Now()
		err := next(ctx, conn)
		m.observe(conn.Spec().Procedure, start, err)
		return err
	}
}
