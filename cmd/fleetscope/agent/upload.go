package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/api"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
)

// Result is what the server answered to an upload.
type Result struct {
	ID        string
	Permalink string
	SHA256    string
	Created   bool // false: the server already had these bytes
}

// Uploader sends one recording to the server. Uploads must be idempotent:
// the server keys profiles by the SHA-256 of their bytes, so sending the
// same entry twice stores it once.
type Uploader interface {
	Upload(ctx context.Context, m Meta, body io.Reader, size int64) (Result, error)
}

// rejected marks an error after which a retry cannot succeed (the server
// refused the file itself).
type rejected struct{ err error }

func (r rejected) Error() string { return r.err.Error() }
func (r rejected) Unwrap() error { return r.err }

// Rejected wraps err to say that retrying the same upload is pointless.
func Rejected(err error) error { return rejected{err} }

// IsRejected reports whether err says the server refused the file for good.
func IsRejected(err error) bool {
	var r rejected
	return errors.As(err, &r)
}

// ConnectUploader uploads with the fleetscope Connect API (a client stream
// of 1 MiB chunks), authenticated with an API key.
type ConnectUploader struct {
	ingest fleetscopev1connect.IngestServiceClient
}

// NewConnectUploader returns an uploader for the server at baseURL
// (http:// uses cleartext HTTP/2, so the stream flows both ways).
func NewConnectUploader(baseURL, key string) *ConnectUploader {
	baseURL = strings.TrimRight(baseURL, "/")
	hc := api.HTTPClient(baseURL)
	return &ConnectUploader{ingest: fleetscopev1connect.NewIngestServiceClient(hc, baseURL, connect.WithInterceptors(api.Bearer(key)))}
}

// Upload streams body to the server; see classify for which failures are
// Rejected.
func (u *ConnectUploader) Upload(ctx context.Context, m Meta, body io.Reader, size int64) (Result, error) {
	// Bound the whole upload: generous for the size, but never forever.
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute+time.Duration(size)*time.Second/(1<<20))
	defer cancel()
	md := &fsv1.UploadMetadata{App: m.App, Host: m.Host, Labels: m.Labels, InputFormat: m.InputFormat, Filename: m.Filename}
	if a := m.Anchor; a != nil {
		md.Anchor = &fsv1.ClockAnchor{ClockNanos: a.ClockNanos, WallTime: timestamppb.New(a.Wall)}
	}
	res, err := api.Upload(ctx, u.ingest, md, body, nil)
	var re api.ReadError
	if errors.As(err, &re) {
		return Result{}, fmt.Errorf("reading the spool entry: %w", re.Err)
	}
	if err != nil {
		return Result{}, classify(err)
	}
	p := res.GetProfile()
	return Result{ID: p.GetId(), Permalink: res.GetPermalink(), SHA256: p.GetSha256(), Created: res.GetCreated()}, nil
}

// classify marks the errors no retry can fix, by the code the server
// answered with (never its wording): invalid, empty or too large files are
// Rejected; the rest (server down, database or blob store unavailable,
// rate limits, a bad key that an operator may fix) are worth a retry.
func classify(err error) error {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return err
	}
	code := fleetscope.ErrorCode(api.FromConnect(err))
	switch code {
	case fleetscope.EINVALID, fleetscope.EEMPTY, fleetscope.ETOOLARGE:
		return Rejected(fmt.Errorf("server refused the file: %s", ce.Message()))
	case fleetscope.EUNAUTHENTICATED, fleetscope.EFORBIDDEN:
		return fmt.Errorf("%s (check the agent's API key: it needs the ingest scope): %s", ce.Code(), ce.Message())
	}
	return fmt.Errorf("%s: %s", ce.Code(), ce.Message())
}

// Backoff is exponential backoff with jitter: attempt n (from 0) waits a
// random time in [d/2, d], d = min(Max, Min·2ⁿ).
type Backoff struct {
	Min, Max time.Duration
}

// Delay returns the wait before retry number attempt (0 for the first).
func (b Backoff) Delay(attempt int) time.Duration {
	d := b.Min
	for i := 0; i < attempt && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if d <= 0 {
		return 0
	}
	return d/2 + rand.N(d/2+1)
}

// sleep waits d or until ctx is done; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
