package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/fleetscope/fleetscope/cmd/fleetscope/agent"
)

// runLive is `fleetscope agent --live`: the source (perf record | perf
// script, or --live-source: a file or a shell command) is streamed to the
// server in batches until it ends or SIGTERM stops it; then the recording
// is stored whole.
func runLive(ctx context.Context, cfg agent.Config, source string, batch time.Duration, stream string) error {
	if stream == "" {
		stream = fmt.Sprintf("%s-%s", time.Now().UTC().Format("20060102T150405"), uuid.NewString()[:8])
	}
	sender, ok := cfg.Uploader.(agent.LiveSender)
	if !ok {
		return errors.New("this uploader cannot stream")
	}
	// The source: perf record | perf script, a file replayed at its own
	// pace, or a shell command.
	var procs []*exec.Cmd
	var stopSource func()
	var out io.Reader
	kind := "perf"
	if replayable(source) {
		f, err := os.Open(source)
		if err != nil {
			return fmt.Errorf("the live source: %w", err)
		}
		defer f.Close()
		replayCtx, cancel := context.WithCancel(ctx)
		defer cancel()
		if out, err = agent.NewReplay(replayCtx, f); err != nil {
			return fmt.Errorf("the live source %s: %w", source, err)
		}
		stopSource, kind = cancel, "file, replayed at the pace of its timestamps"
	} else if source == "" {
		record, script := cfg.Perf.LiveCommands()
		pipe, err := record.StdoutPipe()
		if err != nil {
			return err
		}
		script.Stdin = pipe
		if out, err = script.StdoutPipe(); err != nil {
			return err
		}
		record.Stderr, script.Stderr = os.Stderr, os.Stderr
		for _, c := range []*exec.Cmd{record, script} { // a Ctrl-C on the terminal stops the agent, which stops perf record
			c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		}
		procs = []*exec.Cmd{record, script}
		stopSource = func() { record.Process.Signal(os.Interrupt) } // perf script drains what was recorded
		source = strings.Join(record.Args, " ") + " | " + strings.Join(script.Args, " ")
	} else {
		cmd := exec.Command("sh", "-c", source)
		cmd.Stderr = os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a stop reaches the whole pipeline
		var err error
		if out, err = cmd.StdoutPipe(); err != nil {
			return err
		}
		procs = []*exec.Cmd{cmd}
		stopSource = func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGINT) }
		kind = "shell command"
	}
	for _, p := range procs {
		if err := p.Start(); err != nil {
			return fmt.Errorf("the live source: %w", err)
		}
	}
	sig, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-sig.Done() // stop the source; what it wrote is still sent
		stopSource()
	}()
	l := &agent.Live{Stream: stream, Source: out, Batch: batch, Sender: sender, Retry: cfg.Retry, Log: cfg.Log,
		Meta: agent.Meta{App: cfg.App, Host: cfg.Host, Labels: cfg.Labels}}
	cfg.Log.Info("live recording started", "stream", stream, "source", source, "source_kind", kind, "batch", batch.String())
	id, err := l.Run(ctx) // retries go on after a stop: the final batch must land
	for _, p := range procs {
		p.Wait()
	}
	if err != nil {
		return err
	}
	cfg.Log.Info("live recording stored", "stream", stream, "profile", id)
	return nil
}

// replayable reports whether a --live-source names a file to replay
// rather than a command: an existing regular file that is not executable.
func replayable(source string) bool {
	st, err := os.Stat(source)
	return source != "" && err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 == 0
}
