package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
)

// endingServer is a LiveSender whose server ended stream "rec" after its
// first batch (its idle timeout), as the server answers then.
type endingServer struct {
	mu    sync.Mutex
	sent  map[string]string // stream -> the text of its batches
	final string            // the stream the final batch went to
	first chan struct{}     // closed once batch 0 of "rec" is in
}

func (s *endingServer) AppendLive(_ context.Context, stream string, seq int64, _ Meta, chunk []byte, final bool) (*fsv1.AppendLiveResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if stream == "rec" && seq > 0 {
		return nil, fmt.Errorf("%w: already_exists: live stream %q has ended", ErrStreamEnded, stream)
	}
	s.sent[stream] += string(chunk)
	if stream == "rec" {
		close(s.first)
	}
	if final {
		s.final = stream
	}
	return &fsv1.AppendLiveResponse{NextSeq: seq + 1, Profile: &fsv1.Profile{Id: "profile-of-" + stream}}, nil
}

// TestLiveGoesOnInANewStream: when the server has ended a stream (idle
// too long), the agent sends what follows to a new stream instead of
// giving up or retrying forever: every sample reaches the server once.
func TestLiveGoesOnInANewStream(t *testing.T) {
	srv := &endingServer{sent: map[string]string{}, first: make(chan struct{})}
	pr, pw := io.Pipe()
	go func() {
		pw.Write([]byte("a 1 [000] 1.0: 1 cpu-clock:\n\tf (/x)\n\n"))
		<-srv.first // the server has batch 0; the rest comes after its end
		pw.Write([]byte("a 1 [000] 2.0: 1 cpu-clock:\n\tg (/x)\n\n"))
		pw.Close()
	}()
	l := &Live{Stream: "rec", Source: pr, Batch: 5 * time.Millisecond, Sender: srv, Retry: Backoff{Min: time.Millisecond, Max: time.Millisecond},
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	id, err := l.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if id != "profile-of-rec.2" || srv.final != "rec.2" {
		t.Fatalf("the recording ended as %q in stream %q, want the new stream rec.2's profile", id, srv.final)
	}
	if !strings.Contains(srv.sent["rec"], "\tf ") || strings.Contains(srv.sent["rec"], "\tg ") ||
		!strings.Contains(srv.sent["rec.2"], "\tg ") || strings.Contains(srv.sent["rec.2"], "\tf ") {
		t.Fatalf("batches by stream: %q, want the first sample in rec and the second in rec.2, each once", srv.sent)
	}
}
