package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"connectrpc.com/connect"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// LiveSender sends one batch of a live recording (IngestService.AppendLive).
type LiveSender interface {
	AppendLive(ctx context.Context, stream string, seq int64, m Meta, chunk []byte, final bool) (*fsv1.AppendLiveResponse, error)
}

// ErrStreamEnded is a batch refused because its stream has ended (the
// server ends a stream left without batches for its idle timeout).
var ErrStreamEnded = errors.New("the live stream has ended")

// AppendLive sends one live batch; see classify for which failures are
// Rejected.
func (u *ConnectUploader) AppendLive(ctx context.Context, stream string, seq int64, m Meta, chunk []byte, final bool) (*fsv1.AppendLiveResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	res, err := u.ingest.AppendLive(ctx, connect.NewRequest(&fsv1.AppendLiveRequest{Stream: stream, Seq: seq, Final: final, Chunk: chunk,
		Metadata: &fsv1.UploadMetadata{App: m.App, Host: m.Host, Labels: m.Labels}}))
	if connect.CodeOf(err) == connect.CodeAlreadyExists {
		return nil, fmt.Errorf("%w: %v", ErrStreamEnded, err)
	}
	if err != nil {
		return nil, classify(err)
	}
	return res.Msg, nil
}

// Live streams a live recording: perf script text read from Source as it
// is written, split at sample boundaries (a blank line ends a sample) into
// batches of what arrived within Batch (or MaxBatchBytes), each sent in
// order and retried until the server has it (the server applies each
// batch once, so a retry after a lost answer duplicates nothing). When
// Source ends, the last batch is sent as the final one: the server then
// stores the whole recording as one profile. Should the server have ended
// the stream meanwhile (after its idle timeout, with what it had), the
// recording goes on in a new stream, named after the first.
type Live struct {
	Stream        string
	Meta          Meta
	Source        io.Reader
	Batch         time.Duration // default 1 s
	MaxBatchBytes int           // default 4 MiB
	Sender        LiveSender
	Retry         Backoff
	Log           *slog.Logger
}

// Run streams until Source ends and returns the recording's profile. A
// cancelled ctx stops the retries of a batch the server does not take.
func (l *Live) Run(ctx context.Context) (string, error) {
	if l.Batch <= 0 {
		l.Batch = time.Second
	}
	if l.MaxBatchBytes <= 0 {
		l.MaxBatchBytes = 4 << 20
	}
	blocks := make(chan string, 1024)
	readErr := make(chan error, 1)
	go func() { readErr <- readBlocks(l.Source, blocks) }()
	var batch strings.Builder
	seq := int64(0)
	stream, streams := l.Stream, 1
	send := func(final bool) (string, error) {
		for attempt := 0; ; attempt++ {
			res, err := l.Sender.AppendLive(ctx, stream, seq, l.Meta, []byte(batch.String()), final)
			if err == nil {
				l.Log.Info("live batch sent", "stream", stream, "seq", seq, "bytes", batch.Len(), "final", final)
				seq++
				batch.Reset()
				if d := res.GetDuplicate(); d != nil {
					l.Log.Warn("live recording stored already: the server kept the stored profile", "stream", stream, "profile", d.GetProfileId(),
						"app", d.GetApp(), "host", d.GetHost(), "labels", d.GetLabels(), "ignored", d.GetIgnored())
				}
				return res.GetProfile().GetId(), nil
			}
			if errors.Is(err, ErrStreamEnded) && seq > 0 {
				streams++
				next := fmt.Sprintf("%.90s.%d", l.Stream, streams)
				l.Log.Warn("live stream ended by the server (no batch for its idle timeout; what it had is stored): going on in a new stream",
					"stream", stream, "next", next)
				stream, seq = next, 0
				continue
			}
			if IsRejected(err) || errors.Is(err, ErrStreamEnded) {
				return "", err
			}
			l.Log.Warn("live batch not sent: retrying", "stream", stream, "seq", seq, "attempt", attempt+1, "err", err)
			if !sleep(ctx, l.Retry.Delay(attempt)) {
				return "", fmt.Errorf("live batch %d not sent: %w", seq, ctx.Err())
			}
		}
	}
	tick := time.NewTicker(l.Batch)
	defer tick.Stop()
	for {
		select {
		case b, ok := <-blocks:
			if !ok {
				if err := <-readErr; err != nil {
					return "", fmt.Errorf("reading the live source: %w", err)
				}
				if batch.Len() == 0 && seq == 0 {
					return "", errors.New("the live source wrote no samples")
				}
				return send(true)
			}
			batch.WriteString(b)
			if batch.Len() >= l.MaxBatchBytes {
				if _, err := send(false); err != nil {
					return "", err
				}
			}
		case <-tick.C:
			if batch.Len() > 0 { // whole samples: a partial one only comes at the end
				if _, err := send(false); err != nil {
					return "", err
				}
			}
		}
	}
}

// readBlocks sends r's text a sample at a time (the lines up to and with a
// blank line; perf's # header lines ride with the first sample), and what
// is left at the end.
func readBlocks(r io.Reader, out chan<- string) error {
	defer close(out)
	br := bufio.NewReaderSize(r, 1<<20)
	var b strings.Builder
	for {
		line, err := br.ReadString('\n')
		b.WriteString(line)
		if line == "\n" && strings.TrimSpace(b.String()) != "" {
			out <- b.String()
			b.Reset()
		}
		if err == io.EOF {
			if b.Len() > 0 {
				out <- b.String()
			}
			return nil
		}
		if err != nil {
			return err
		}
	}
}
