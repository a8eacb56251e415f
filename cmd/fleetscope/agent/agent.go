// Package agent is the fleetscope agent, run by `fleetscope agent`: on a
// host it records profiles with perf record (or picks up the files other
// tools drop in a directory), converts them with perf script --header,
// gzips them and keeps each in a durable spool directory until the server
// has stored it, retrying with exponential backoff and jitter while the
// server is away. Uploads are idempotent (the server keys profiles by the
// SHA-256 of their bytes), so a retry never stores a profile twice. Each
// recording carries a wall-clock anchor unless perf recorded wall-clock
// timestamps itself (-k CLOCK_REALTIME), so profiles from many hosts line
// up in absolute time.
//
// It owns the host side only: it talks to the server through the public
// API (an Uploader) and never touches the server's stores. It also holds
// the server's self-profiling with pyroscope-go (SelfProfile).
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Config configures an agent.
type Config struct {
	App         string
	Host        string
	Labels      map[string]string
	InputFormat string // for watched files; "" lets the server detect it

	SpoolDir      string
	MaxSpoolBytes int64 // 0: unbounded

	Perf     Perf
	Clock    string        // auto, realtime, monotonic, default
	Duration time.Duration // of one recording
	Interval time.Duration // from one recording's start to the next; <= Duration: back to back
	Count    int           // stop after this many recordings, once they are uploaded (0: run until stopped)

	// UploadOnly uploads what is in the spool, then returns; no recording.
	UploadOnly bool

	// Watch, if set, is a directory whose files (perf script text, plain or
	// gzipped, perf.data, or any format the server reads) are uploaded and
	// then removed, or moved to WatchDone. No recording then.
	Watch         string
	WatchDone     string
	WatchInterval time.Duration

	Retry         Backoff
	ShutdownGrace time.Duration // after a stop, how long the current upload may go on
	Uploads       int           // concurrent uploads (default 1)

	Uploader Uploader
	Log      *slog.Logger
	Metrics  *Metrics
	// ReadClocks reads the monotonic and wall clocks together (ReadClocks
	// by default); tests replace it to play hosts with other clocks.
	ReadClocks func() Anchor
}

// Agent is a configured agent.
type Agent struct {
	cfg   Config
	log   *slog.Logger
	m     *Metrics
	spool *Spool

	mu           sync.Mutex
	producerDone bool // no more entries will be added (Count reached, UploadOnly)
}

// New checks cfg and opens the spool.
func New(cfg Config) (*Agent, error) {
	if cfg.App == "" && !cfg.UploadOnly {
		return nil, errors.New("an app name is required (--app or FLEETSCOPE_APP)")
	}
	if cfg.Uploader == nil {
		return nil, errors.New("no uploader")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Metrics == nil {
		cfg.Metrics = NewMetrics(nil)
	}
	if cfg.ReadClocks == nil {
		cfg.ReadClocks = ReadClocks
	}
	if cfg.Duration <= 0 {
		cfg.Duration = time.Minute
	}
	if cfg.WatchInterval <= 0 {
		cfg.WatchInterval = 2 * time.Second
	}
	if cfg.Retry.Min <= 0 {
		cfg.Retry.Min = time.Second
	}
	if cfg.Retry.Max < cfg.Retry.Min {
		cfg.Retry.Max = max(cfg.Retry.Min, 5*time.Minute)
	}
	if cfg.ShutdownGrace <= 0 {
		cfg.ShutdownGrace = 10 * time.Second
	}
	cfg.Uploads = max(cfg.Uploads, 1)
	sp, err := OpenSpool(cfg.SpoolDir, cfg.MaxSpoolBytes, cfg.Log, cfg.Metrics)
	if err != nil {
		return nil, err
	}
	return &Agent{cfg: cfg, log: cfg.Log, m: cfg.Metrics, spool: sp}, nil
}

// Spool returns the agent's spool.
func (a *Agent) Spool() *Spool { return a.spool }

// Close releases the spool.
func (a *Agent) Close() error { return a.spool.Close() }

// Run records (or watches) and uploads until ctx is done, or, with Count or
// UploadOnly, until everything is uploaded. When ctx is done, a recording in
// progress is stopped and spooled, and uploads go on for up to
// ShutdownGrace; what is not uploaded by then stays in the spool for the
// next start. It returns an error only for a setup problem (perf missing or
// not permitted, a watch directory that cannot be read).
func (a *Agent) Run(ctx context.Context) error {
	n, b := a.spool.Len()
	if n > 0 {
		a.log.Info("spool has recordings from before: uploading them", "entries", n, "bytes", b)
	}
	var producer func(context.Context) error
	switch {
	case a.cfg.UploadOnly:
		a.finishProducing()
	case a.cfg.Watch != "":
		if fi, err := os.Stat(a.cfg.Watch); err != nil || !fi.IsDir() {
			return fmt.Errorf("--watch %s: not a directory", a.cfg.Watch)
		}
		producer = a.watch
	default:
		if err := a.cfg.Perf.Probe(ctx, a.spool.WorkDir(), a.cfg.Clock); err != nil {
			return err
		}
		a.log.Info("perf works here", "perf", a.cfg.Perf.Bin, "clock", clockName(a.cfg.Perf.Clock()),
			"args", strings.Join(a.cfg.Perf.recordArgs("FILE", a.cfg.Perf.Clock()), " "))
		a.recoverWork(ctx)
		producer = a.record
	}

	// A producer that fails for good (perf no longer permitted) stops the
	// agent as a signal would; the error is returned.
	ctx, stopRun := context.WithCancel(ctx)
	defer stopRun()
	upCtx, cancelUploads := context.WithCancel(context.Background())
	defer cancelUploads()
	var wg sync.WaitGroup
	prodErr := make(chan error, 1)
	if producer != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := producer(ctx)
			a.finishProducing()
			if err != nil {
				a.log.Error("cannot record any more: stopping", "err", err)
				stopRun()
			}
			prodErr <- err
		}()
	}
	uploadsDone := make(chan struct{})
	var uwg sync.WaitGroup
	for range a.cfg.Uploads {
		uwg.Add(1)
		go func() {
			defer uwg.Done()
			a.uploadLoop(ctx, upCtx)
		}()
	}
	go func() { uwg.Wait(); close(uploadsDone) }()

	select {
	case <-uploadsDone: // Count or UploadOnly: all uploaded
	case <-ctx.Done():
		// Stopping: the producer spools what it has; uploads go on for
		// the grace period.
		a.log.Info("stopping: spooling the current recording, finishing the current upload", "grace", a.cfg.ShutdownGrace.String())
		grace := time.AfterFunc(a.cfg.ShutdownGrace, cancelUploads)
		defer grace.Stop()
		<-uploadsDone
	}
	wg.Wait()
	if producer != nil {
		if err := <-prodErr; err != nil {
			return err
		}
	}
	n, b = a.spool.Len()
	a.log.Info("agent stopped", "spooled_entries", n, "spooled_bytes", b, "dropped_total", a.spool.Dropped())
	return nil
}

func clockName(c string) string {
	if c == "" {
		return "default"
	}
	return c
}

func (a *Agent) finishProducing() {
	a.mu.Lock()
	a.producerDone = true
	a.mu.Unlock()
	// wake the uploaders so they can see it
	a.spool.mu.Lock()
	a.spool.notify()
	a.spool.mu.Unlock()
}

func (a *Agent) isProducerDone() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.producerDone
}

// uploadLoop uploads spool entries, oldest first. Until ctx is done it
// retries failures with backoff; after, it drains what it can without
// retrying until upCtx ends (the grace period).
func (a *Agent) uploadLoop(ctx, upCtx context.Context) {
	attempt := 0
	for {
		stopping := ctx.Err() != nil
		e, ok, changed := a.spool.Next()
		if !ok {
			// Done when nothing more will come: the producer has finished
			// (after a stop, with the recording it had spooled) and the
			// spool is empty (or, stopping, has nothing left to hand out).
			if a.isProducerDone() && (stopping || a.spoolEmpty()) {
				return
			}
			stop := ctx.Done()
			if stopping {
				stop = nil
			}
			select {
			case <-changed:
			case <-stop:
			case <-upCtx.Done():
				return
			}
			continue
		}
		err := a.uploadOne(upCtx, e)
		switch {
		case err == nil:
			attempt = 0
			continue
		case IsRejected(err):
			a.m.UploadFailures.WithLabelValues("rejected").Inc()
			a.log.Error("server refused a recording: moved to the spool's failed/ directory", "entry", e.Name, "err", err)
			a.spool.Fail(e)
			continue
		}
		a.spool.Release(e)
		a.m.UploadFailures.WithLabelValues("retry").Inc()
		if stopping || upCtx.Err() != nil {
			a.log.Warn("upload failed while stopping: kept in the spool for the next start", "entry", e.Name, "err", err)
			return
		}
		d := a.cfg.Retry.Delay(attempt)
		attempt++
		a.log.Warn("upload failed: will retry", "entry", e.Name, "err", err, "attempt", attempt, "retry_in", d.Round(time.Millisecond).String())
		if !sleep(ctx, d) {
			continue // stopping: try once more within the grace period
		}
	}
}

func (a *Agent) spoolEmpty() bool {
	n, _ := a.spool.Len()
	return n == 0
}

func (a *Agent) uploadOne(ctx context.Context, e Entry) error {
	m, body, size, err := OpenEntry(e.Path)
	if err != nil {
		return Rejected(err)
	}
	defer body.Close()
	start := time.Now()
	a.log.Info("upload started", "entry", e.Name, "bytes", size)
	res, err := a.cfg.Uploader.Upload(ctx, m, body, size)
	if err != nil {
		return err
	}
	if err := a.spool.Done(e); err != nil {
		a.log.Error("uploaded, but cannot remove the spool entry (the next upload of it will be a duplicate the server ignores)", "entry", e.Name, "err", err)
	}
	result := "created"
	if !res.Created {
		result = "duplicate"
	}
	a.m.Uploads.WithLabelValues(result).Inc()
	a.m.UploadedBytes.Add(float64(size))
	a.log.Info("uploaded", "entry", e.Name, "profile", res.ID, "sha256", res.SHA256, "created", res.Created,
		"bytes", size, "raw_bytes", m.RawBytes, "seconds", time.Since(start).Seconds(), "permalink", res.Permalink)
	return nil
}

// meta is the metadata of a new recording.
func (a *Agent) meta(at time.Time) Meta {
	return Meta{App: a.cfg.App, Host: a.cfg.Host, Labels: a.cfg.Labels, InputFormat: a.cfg.InputFormat, RecordedAt: at}
}

// record runs perf record again and again, handing each recording to a
// converter so the next recording starts at once.
func (a *Agent) record(ctx context.Context) error {
	type job struct {
		data string
		m    Meta
		at   Anchor
	}
	jobs := make(chan job, 1)
	var conv sync.WaitGroup
	conv.Add(1)
	go func() {
		defer conv.Done()
		for j := range jobs {
			a.convert(j.data, j.m, j.at)
		}
	}()
	defer func() {
		close(jobs)
		conv.Wait()
	}()

	attempt := 0
	for i := 0; a.cfg.Count == 0 || i < a.cfg.Count; {
		if ctx.Err() != nil {
			return nil
		}
		start := time.Now()
		anchor := a.cfg.ReadClocks()
		m := a.meta(start)
		m.InputFormat = "perf" // perf script text: no need to guess
		base := filepath.Join(a.spool.WorkDir(), fmt.Sprintf("rec-%020d", start.UnixNano()))
		wm := workMeta{Meta: m, Anchor: anchor}
		if err := writeJSON(base+".json", wm); err != nil {
			return fmt.Errorf("spool: %w", err)
		}
		err := a.cfg.Perf.Record(ctx, base+".data", a.cfg.Duration, func(pid int) {
			wm.PerfPID = pid
			writeJSON(base+".json", wm)
		})
		if err != nil {
			os.Remove(base + ".data")
			os.Remove(base + ".json")
			a.m.RecordFailures.Inc()
			if errors.Is(err, ErrPerfNotPermitted) || errors.Is(err, ErrPerfMissing) {
				return err
			}
			d := a.cfg.Retry.Delay(attempt)
			attempt++
			a.log.Error("perf record failed: will retry", "err", err, "retry_in", d.Round(time.Millisecond).String())
			sleep(ctx, d)
			continue
		}
		attempt = 0
		i++
		jobs <- job{base + ".data", m, anchor}
		if wait := a.cfg.Interval - time.Since(start); wait > 0 && (a.cfg.Count == 0 || i < a.cfg.Count) {
			sleep(ctx, wait)
		}
	}
	return nil
}

// workMeta is written next to a recording in progress, so a recording
// that outlives the agent (perf writes its file on SIGINT when the agent
// dies) is spooled at the next start.
type workMeta struct {
	Meta    Meta   `json:"meta"`
	Anchor  Anchor `json:"anchor"`
	PerfPID int    `json:"perf_pid,omitempty"`
}

// recoverWork spools the recordings a previous run left in work/.
func (a *Agent) recoverWork(ctx context.Context) {
	metas, _ := filepath.Glob(filepath.Join(a.spool.WorkDir(), "rec-*.json"))
	for _, mp := range metas {
		base := strings.TrimSuffix(mp, ".json")
		var wm workMeta
		if err := readJSON(mp, &wm); err != nil {
			os.Remove(mp)
			continue
		}
		// perf outlives a killed agent for a moment (it gets SIGINT and
		// writes its file): wait for it.
		for deadline := time.Now().Add(30 * time.Second); wm.PerfPID > 0 && alive(wm.PerfPID) && time.Now().Before(deadline); {
			if !sleep(ctx, 100*time.Millisecond) {
				return
			}
		}
		if fi, err := os.Stat(base + ".data"); err != nil || fi.Size() == 0 {
			os.Remove(base + ".data")
			os.Remove(mp)
			continue
		}
		a.log.Info("spooling a recording left by the previous run", "file", base+".data")
		a.convert(base+".data", wm.Meta, wm.Anchor)
	}
	// perf's leftovers without a meta file
	for _, pat := range []string{"rec-*.data", "rec-*.data.old", "probe.data*"} {
		left, _ := filepath.Glob(filepath.Join(a.spool.WorkDir(), pat))
		for _, f := range left {
			if _, err := os.Stat(strings.TrimSuffix(strings.TrimSuffix(f, ".old"), ".data") + ".json"); err != nil {
				os.Remove(f)
			}
		}
	}
}

// convert turns a perf.data recording into a spool entry and removes it.
func (a *Agent) convert(data string, m Meta, measured Anchor) {
	base := strings.TrimSuffix(data, ".data")
	defer func() {
		os.Remove(data)
		os.Remove(data + ".old")
		os.Remove(base + ".json")
	}()
	// A stop must not lose the recording: conversion gets its own time.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var hs headerScanner
	var raw int64
	name, err := a.spool.Add(m, func(w io.Writer, m *Meta) error {
		n, err := a.cfg.Perf.Script(ctx, data, w, &hs)
		raw = n
		// The header says which clock perf used (else the probe knows),
		// and may carry perf's own reference time.
		if hs.h.clock == "" {
			hs.h.clock = a.cfg.Perf.Clock()
		}
		m.RawBytes, m.Anchor = n, anchorFor(hs.h, &measured)
		return err
	})
	if err != nil {
		a.m.RecordFailures.Inc()
		a.log.Error("cannot spool a recording: dropped", "file", data, "err", err)
		return
	}
	anchor := anchorFor(hs.h, &measured)
	a.m.Recordings.Inc()
	a.log.Info("recording spooled", "entry", name, "raw_bytes", raw, "clock", clockName(hs.h.clock), "anchor", anchorSource(anchor))
}

// alive reports whether a process runs: it answers signal 0 and is not a
// zombie (a perf whose parent died and nobody reaped yet has finished).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

func anchorSource(a *Anchor) string {
	if a == nil {
		return "none (wall-clock timestamps)"
	}
	return a.Source
}

func writeJSON(path string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
