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
	"time"

	"github.com/dustin/go-humanize"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/fleetscope/fleetscope/api/server"
	"github.com/fleetscope/fleetscope/cmd/fleetscope/agent"
)

// agentCmd runs the host agent (package agent). Flags override the
// FLEETSCOPE_* variables named in their help.
func agentCmd() *cobra.Command {
	var (
		live                     bool
		liveSource, liveStream   string
		liveBatch                time.Duration
		cfg                      agent.Config
		labels, events           []string
		maxSpool, keyFile, level string
		metricsAddr              string
	)
	c := &cobra.Command{
		Use:   "agent --app APP [flags] [-- PERF_RECORD_ARGS...]",
		Short: "Record profiles with perf on this host (or pick up files from --watch DIR) and upload them, spooled and retried",
		Long: `Repeatedly runs perf record (default -F 49 -a -g), converts each recording
with perf script --header, gzips it and keeps it in a durable spool directory
until the server has stored it, retrying with exponential backoff and jitter.
Uploads are idempotent: a retry never stores a profile twice. Recordings use
wall-clock timestamps (-k CLOCK_REALTIME) where perf and the kernel can, else
carry a monotonic/wall-clock anchor, so hosts line up in absolute time. SIGTERM
stops the recording, spools it and lets the current upload finish
(--shutdown-grace).

With --watch DIR, no recording: files other tools drop in DIR (perf.data, perf
script text plain or gzipped, or any format the server reads) are uploaded, then
removed (or moved to --watch-done).

Server and key: FLEETSCOPE_URL, FLEETSCOPE_API_KEY (or --api-key-file /
FLEETSCOPE_API_KEY_FILE); the key needs the ingest scope.`,
		RunE: func(c *cobra.Command, extra []string) error {
			if dash := c.ArgsLenAtDash(); dash > 0 || (dash < 0 && len(extra) > 0) {
				return usageError{fmt.Errorf("unexpected argument %q: perf record arguments go after --", extra[0])}
			}
			cfg.Perf.Extra = extra
			cfg.Perf.Events = events
			env := func(flag, name string, dst *string) {
				if !c.Flags().Changed(flag) {
					if v := os.Getenv(name); v != "" {
						*dst = v
					}
				}
			}
			env("app", "FLEETSCOPE_APP", &cfg.App)
			env("host", "FLEETSCOPE_HOST", &cfg.Host)
			env("spool", "FLEETSCOPE_SPOOL", &cfg.SpoolDir)
			env("api-key-file", "FLEETSCOPE_API_KEY_FILE", &keyFile)
			if cfg.App == "" && !cfg.UploadOnly {
				return usageError{errors.New("--app (or FLEETSCOPE_APP) is required")}
			}
			if cfg.Host == "" {
				cfg.Host, _ = os.Hostname()
			}
			if v := os.Getenv("FLEETSCOPE_LABELS"); v != "" {
				labels = append(strings.Split(v, ","), labels...) // flags win
			}
			lb, err := parseLabels(labels)
			if err != nil {
				return err
			}
			cfg.Labels = lb
			if cfg.Perf.PID != "" && cfg.Perf.CGroup != "" {
				return usageError{errors.New("--pid and --cgroup exclude each other")}
			}
			if cfg.Watch != "" && cfg.UploadOnly {
				return usageError{errors.New("--watch and --upload-only exclude each other")}
			}
			if maxSpool != "" && maxSpool != "0" {
				n, err := humanize.ParseBytes(maxSpool)
				if err != nil {
					return usageError{fmt.Errorf("--max-spool %q: %w", maxSpool, err)}
				}
				cfg.MaxSpoolBytes = int64(n)
			}
			key := os.Getenv("FLEETSCOPE_API_KEY")
			if keyFile != "" {
				b, err := os.ReadFile(keyFile)
				if err != nil {
					return usageError{fmt.Errorf("--api-key-file: %w", err)}
				}
				key = strings.TrimSpace(string(b))
			}
			if key == "" {
				return usageError{errors.New("FLEETSCOPE_API_KEY (or --api-key-file) is not set: the agent needs a key with the ingest scope")}
			}
			base := os.Getenv("FLEETSCOPE_URL")
			if base == "" {
				base = "http://127.0.0.1:8080"
			}
			log, err := server.NewLogger(level)
			if err != nil {
				return usageError{err}
			}
			reg := prometheus.NewRegistry()
			reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
			cfg.Metrics = agent.NewMetrics(reg)
			cfg.Uploader = agent.NewConnectUploader(base, key)
			cfg.Log = log.With("app", cfg.App)
			if live {
				return runLive(c.Context(), cfg, liveSource, liveBatch, liveStream)
			}

			a, err := agent.New(cfg)
			if err != nil {
				return err
			}
			defer a.Close()
			if metricsAddr != "" {
				ln, err := net.Listen("tcp", metricsAddr)
				if err != nil {
					return fmt.Errorf("--metrics-addr: %w", err)
				}
				mux := http.NewServeMux()
				mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
				srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
				go srv.Serve(ln)
				defer srv.Close()
				log.Info("serving metrics", "addr", ln.Addr().String()) // the port, when :0 asked for any
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			finished := make(chan struct{})
			defer close(finished)
			go func() {
				select {
				case <-ctx.Done():
					stop() // a second signal ends the agent at once
				case <-finished:
				}
			}()
			log.Info("agent started", "server", base, "spool", cfg.SpoolDir, "host", cfg.Host, "labels", cfg.Labels)
			return a.Run(ctx)
		},
	}
	f := c.Flags()
	f.StringVar(&cfg.App, "app", "", "application name (FLEETSCOPE_APP; required)")
	f.StringVar(&cfg.Host, "host", "", "host name (FLEETSCOPE_HOST; default: this machine's hostname)")
	f.StringArrayVar(&labels, "label", nil, "label `key=value`, repeatable (FLEETSCOPE_LABELS=k=v,k2=v2)")
	f.StringVar(&cfg.SpoolDir, "spool", "/var/lib/fleetscope-agent", "spool directory (FLEETSCOPE_SPOOL); one agent per directory")
	f.StringVar(&maxSpool, "max-spool", "1GiB", "bound of the spool; past it the oldest recordings are dropped (0: none)")
	f.StringVar(&cfg.Perf.Bin, "perf", "perf", "the perf binary")
	f.IntVarP(&cfg.Perf.Frequency, "frequency", "F", 49, "sampling frequency in Hz (perf record -F; 0: the events' own periods)")
	f.StringArrayVarP(&events, "event", "e", nil, "perf `EVENT`, repeatable (perf record -e; default: perf's, cpu-clock on most VMs)")
	f.StringVarP(&cfg.Perf.PID, "pid", "p", "", "record only these processes (comma-separated pids) instead of the whole system")
	f.StringVarP(&cfg.Perf.CGroup, "cgroup", "G", "", "record only this cgroup (perf record -a -G NAME)")
	f.BoolVar(&cfg.Perf.NoCallGraph, "no-call-graph", false, "leave out perf record -g")
	f.StringVar(&cfg.Clock, "clock", "auto", "perf's clock: auto (realtime if it works, else monotonic with an anchor), realtime, monotonic, default")
	f.DurationVar(&cfg.Duration, "duration", time.Minute, "length of one recording")
	f.DurationVar(&cfg.Interval, "interval", 0, "from one recording's start to the next (default: back to back)")
	f.IntVar(&cfg.Count, "count", 0, "make this many recordings, upload them, exit (0: until stopped)")
	f.BoolVar(&cfg.UploadOnly, "upload-only", false, "upload what is in the spool, then exit; no recording")
	f.StringVar(&cfg.Watch, "watch", "", "upload the files other tools drop in this directory instead of recording")
	f.StringVar(&cfg.WatchDone, "watch-done", "", "move uploaded watched files here (default: delete them)")
	f.DurationVar(&cfg.WatchInterval, "watch-interval", 2*time.Second, "how often to look in --watch; a file is taken once unchanged for one interval")
	f.StringVar(&cfg.InputFormat, "input-format", "", "input format of watched files, instead of detecting it")
	f.DurationVar(&cfg.Retry.Min, "retry-min", time.Second, "first retry delay (doubling, with jitter)")
	f.DurationVar(&cfg.Retry.Max, "retry-max", 5*time.Minute, "longest retry delay")
	f.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", 10*time.Second, "on SIGTERM, how long uploads may go on")
	f.StringVar(&keyFile, "api-key-file", "", "read the API key from this file (FLEETSCOPE_API_KEY_FILE), e.g. a systemd credential")
	f.StringVar(&metricsAddr, "metrics-addr", "", "serve Prometheus /metrics on this address (e.g. 127.0.0.1:9465)")
	f.StringVar(&level, "log-level", "info", "debug, info, warn or error (JSON logs on stderr)")
	f.BoolVar(&live, "live", false, "stream samples as perf writes them, in batches of --live-batch, instead of whole recordings; ends when the source ends or on SIGTERM")
	f.StringVar(&liveSource, "live-source", "", "with --live: a perf script text file (plain or gzipped), replayed at the pace of its timestamps, or a shell command writing such text (default: perf record -k CLOCK_REALTIME -o - ... | perf script -i -)")
	f.DurationVar(&liveBatch, "live-batch", time.Second, "with --live: the longest a sample waits before it is sent")
	f.StringVar(&liveStream, "live-stream", "", "with --live: the recording's name (default: a new one)")
	return c
}
