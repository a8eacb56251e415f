package ingest

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/fleetscope/fleetscope"
)

// LiveIndex is what live recordings need of the index besides Index
// (store/postgres implements it).
type LiveIndex interface {
	Profile(ctx context.Context, tenant int64, id string) (*fleetscope.ProfileInfo, error)
	Tenant(ctx context.Context, id int64) (fleetscope.Tenant, error)
	LiveStream(ctx context.Context, tenant int64, stream string) (fleetscope.LiveStream, error)
	// AppendLiveSegment applies batch seq (segment "" for an empty final
	// batch) if the stream expects it and has not ended; a stream begins
	// with first's metadata and format.
	// It reports whether it applied the batch.
	AppendLiveSegment(ctx context.Context, tenant int64, stream string, seq int64, segment string, first fleetscope.LiveStream) (bool, error)
	OpenLiveStreams(ctx context.Context, tenant int64) (int, error)
	FinishLiveStream(ctx context.Context, tenant int64, stream, profile string, clear bool) error
	// EndLiveStream closes a stream to batches if none came since cutoff.
	EndLiveStream(ctx context.Context, tenant int64, stream string, cutoff time.Time) (bool, error)
	DeleteLiveStream(ctx context.Context, tenant int64, stream string) error
	IdleLiveStreams(ctx context.Context, cutoff time.Time, limit int) ([]fleetscope.LiveStreamRef, error)
}

// Live appends the batches of live recordings (fleetscope agent --live).
// Each batch, perf script or folded text of whole samples, is stored at
// once as a segment profile (labels live=STREAM, live_seq=N) through the
// ordinary ingest path, so every query sees it. A stream owns its
// segments: they are stored for it alone, never shared by content with an
// upload or another stream, so ending a stream deletes nothing else. The
// stream's next_seq makes each batch count once, in order, across
// reconnects and retries (a batch seen before is acknowledged, not applied
// again); its first batch fixes its app, host, labels and format. The
// final batch, or IdleTimeout without one, turns the segments' text, in
// order, into one profile — exactly what a batch upload of the same
// recording stores, the same bytes — and then deletes the segments.
// Senders that number nothing (OpenTelemetry exporters) append with
// AppendExport, which recognizes a batch by its bytes instead.
type Live struct {
	Ingest *Service
	DB     LiveIndex
	// Delete removes a segment profile with its blob (store/lifecycle).
	Delete func(ctx context.Context, tenant int64, id, actor string) error
	// MaxOpen bounds a tenant's open streams (0: DefaultMaxLiveStreams).
	MaxOpen int
	// IdleTimeout ends a stream that has had no batch this long (0:
	// DefaultLiveIdleTimeout).
	IdleTimeout time.Duration
	Log         *slog.Logger
}

// DefaultMaxLiveStreams and DefaultLiveIdleTimeout are the server's live
// stream bounds unless configured otherwise.
const (
	DefaultMaxLiveStreams  = 1000
	DefaultLiveIdleTimeout = 10 * time.Minute
)

// LiveLabel and LiveSeqLabel mark a live recording's segment profiles.
const (
	LiveLabel    = fleetscope.LiveLabel
	LiveSeqLabel = fleetscope.LiveSeqLabel
)

// liveFormats are the formats whose batches, joined, are the recording.
var liveFormats = []string{"perf", "folded"}

// validStream reports whether a live stream's name is 1-100 of A-Z a-z
// 0-9 . _ - (a loop: the regexp's hundred repeats cost every process of
// the binary, CLI commands included, 0.15 ms to compile at start).
func validStream(s string) bool {
	if len(s) < 1 || len(s) > 100 {
		return false
	}
	for _, c := range []byte(s) {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// LiveAnswer is what a batch gets back: the batch the stream expects
// next and, for the final batch, the recording's profile, with Existed
// when ending the stream found its bytes stored already, as that profile
// (uploaded before, or another stream's recording).
type LiveAnswer struct {
	NextSeq int64
	Profile *fleetscope.ProfileInfo
	Existed bool
}

// Append applies batch seq of stream (see Live).
func (l *Live) Append(ctx context.Context, p fleetscope.Principal, stream string, seq int64, m Meta, chunk []byte, final bool) (LiveAnswer, error) {
	if !validStream(stream) {
		return LiveAnswer{}, fleetscope.Errorf(fleetscope.EINVALID, "live stream name %q: 1-100 of A-Z a-z 0-9 . _ -", stream)
	}
	if seq < 0 {
		return LiveAnswer{}, fleetscope.Errorf(fleetscope.EINVALID, "live batch %d: batches are numbered from 0", seq)
	}
	if len(chunk) == 0 && !final {
		return LiveAnswer{}, fleetscope.Errorf(fleetscope.EINVALID, "live batch %d is empty (only a final batch may be)", seq)
	}
	if err := checkMeta(&m); err != nil {
		return LiveAnswer{}, err
	}
	format := ""
	if len(chunk) > 0 {
		var err error
		if format, err = liveFormat(chunk, m.InputFormat); err != nil {
			return LiveAnswer{}, err
		}
	}
	st, err := l.DB.LiveStream(ctx, p.TenantID, stream)
	if err != nil {
		return LiveAnswer{}, err
	}
	first := fleetscope.LiveStream{App: m.App, Host: m.Host, Labels: m.Labels, InputFormat: m.InputFormat, Format: format}
	if st.Begun() {
		if err := sameStream(stream, seq, st, first); err != nil {
			return LiveAnswer{NextSeq: st.NextSeq}, err
		}
	}
	switch {
	case seq > st.NextSeq:
		return LiveAnswer{NextSeq: st.NextSeq}, fleetscope.Errorf(fleetscope.EINVALID, "live batch %d of %q, but the stream expects batch %d: batches go in order", seq, stream, st.NextSeq)
	case seq < st.NextSeq: // applied before: acknowledged again
	case st.Ended && len(chunk) > 0:
		return LiveAnswer{NextSeq: st.NextSeq}, fleetscope.Errorf(fleetscope.ECONFLICT, "live stream %q has ended: send later batches to a new stream", stream)
	case st.Ended: // an empty final batch after the end
	case !st.Begun() && len(chunk) == 0:
		return LiveAnswer{}, fleetscope.Errorf(fleetscope.EINVALID, "live stream %q has no samples", stream)
	default:
		if err := l.apply(ctx, p, stream, seq, m, chunk, st, first); err != nil {
			return LiveAnswer{NextSeq: st.NextSeq}, err
		}
	}
	if !final {
		return LiveAnswer{NextSeq: seq + 1}, nil
	}
	info, existed, err := l.finish(ctx, p, stream, m)
	return LiveAnswer{NextSeq: seq + 1, Profile: info, Existed: existed}, err
}

// apply stores batch seq, the one the stream expects, as a segment owned
// by the stream (none for an empty final batch) and records it applied.
func (l *Live) apply(ctx context.Context, p fleetscope.Principal, stream string, seq int64, m Meta, chunk []byte, st, first fleetscope.LiveStream) error {
	if !st.Begun() {
		if err := l.checkOpen(ctx, p); err != nil {
			return err
		}
	}
	seg := ""
	if len(chunk) > 0 {
		sm := m
		sm.Labels = maps.Clone(m.Labels)
		if sm.Labels == nil {
			sm.Labels = map[string]string{}
		}
		sm.Labels[LiveLabel], sm.Labels[LiveSeqLabel] = stream, strconv.FormatInt(seq, 10)
		sm.Filename = stream + "#" + strconv.FormatInt(seq, 10)
		sm.owner = "live\x00" + stream + "\x00" + strconv.FormatInt(seq, 10)
		info, _, err := l.Ingest.Ingest(ctx, p, sm, bytes.NewReader(chunk))
		if err != nil {
			return err
		}
		seg = info.ID
	}
	applied, err := l.DB.AppendLiveSegment(ctx, p.TenantID, stream, seq, seg, first)
	if err != nil || applied || seg == "" {
		return err
	}
	// Another request applied batch seq meanwhile, with other bytes (the
	// same bytes are the same segment): this segment is no part of the
	// stream, and goes.
	if now, err := l.DB.LiveStream(ctx, p.TenantID, stream); err != nil || slices.Contains(now.Segments, seg) {
		return err
	}
	return l.Delete(ctx, p.TenantID, seg, "live:"+stream)
}

// liveFormat returns the format of a batch's text: the one named, or the
// one detected; EINVALID for a format whose batches do not join into one
// recording.
func liveFormat(chunk []byte, inputFormat string) (string, error) {
	var f Format
	var err error
	if inputFormat != "" {
		f, err = Lookup(inputFormat)
	} else {
		var r io.Reader
		if r, err = Decompress(bytes.NewReader(chunk)); err != nil {
			return "", fleetscope.Errorf(fleetscope.EINVALID, "live batch: %v", err)
		}
		head, _ := io.ReadAll(io.LimitReader(r, HeadSize))
		f, err = Detect(head)
	}
	if err != nil {
		return "", err
	}
	for _, name := range liveFormats {
		if f.Name == name {
			return name, nil
		}
	}
	return "", fleetscope.Errorf(fleetscope.EINVALID, "a live batch in %s format: live streams take %s text, whose batches join into one recording (upload a %s file instead)",
		f.Name, strings.Join(liveFormats, " or "), f.Name)
}

// sameStream refuses a batch whose metadata or format is not the stream's.
func sameStream(stream string, seq int64, st, b fleetscope.LiveStream) error {
	differ := func(what, got, want string) error {
		return fleetscope.Errorf(fleetscope.EINVALID, "live batch %d of %q has %s %q, but the stream began with %q: every batch of a stream has its first batch's app, host, labels and format",
			seq, stream, what, got, want)
	}
	switch {
	case b.App != st.App:
		return differ("app", b.App, st.App)
	case b.Host != st.Host:
		return differ("host", b.Host, st.Host)
	case !maps.Equal(b.Labels, st.Labels):
		return differ("labels", fleetscope.FormatLabels(b.Labels), fleetscope.FormatLabels(st.Labels))
	case b.InputFormat != st.InputFormat:
		return differ("input format", b.InputFormat, st.InputFormat)
	case b.Format != "" && st.Format != "" && b.Format != st.Format:
		return differ("format", b.Format, st.Format)
	}
	return nil
}

// checkOpen refuses a new stream while the tenant has MaxOpen open.
func (l *Live) checkOpen(ctx context.Context, p fleetscope.Principal) error {
	limit := l.MaxOpen
	if limit <= 0 {
		limit = DefaultMaxLiveStreams
	}
	n, err := l.DB.OpenLiveStreams(ctx, p.TenantID)
	if err != nil {
		return err
	}
	if n >= limit {
		return fleetscope.Errorf(fleetscope.ERATELIMITED, "%d live streams open, the most a tenant may have (the server's FLEETSCOPE_MAX_LIVE_STREAMS): end one with a final batch, or retry once idle ones have ended (after %s without a batch)",
			n, l.idleTimeout())
	}
	return nil
}

func (l *Live) idleTimeout() time.Duration {
	if l.IdleTimeout <= 0 {
		return DefaultLiveIdleTimeout
	}
	return l.IdleTimeout
}

// finish stores the stream's segments, in order, as one profile, then
// deletes them. Each step can be run again after a failure: the profile
// is stored by its bytes (once), and recorded as the stream's before any
// segment is deleted; the segments are forgotten only once deleted. It
// returns the profile and whether its bytes were stored already.
func (l *Live) finish(ctx context.Context, p fleetscope.Principal, stream string, m Meta) (*fleetscope.ProfileInfo, bool, error) {
	st, err := l.DB.LiveStream(ctx, p.TenantID, stream)
	if err != nil {
		return nil, false, err
	}
	var info *fleetscope.ProfileInfo
	existed := false
	if st.ProfileID != "" {
		if info, err = l.DB.Profile(ctx, p.TenantID, st.ProfileID); err != nil {
			return nil, false, err
		}
	} else {
		if len(st.Segments) == 0 {
			return nil, false, fleetscope.Errorf(fleetscope.EINVALID, "live stream %q has no samples", stream)
		}
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(l.concat(ctx, p.TenantID, st.Segments, pw)) }()
		m.Filename, m.owner = stream, ""
		var created bool
		info, created, err = l.Ingest.Ingest(ctx, p, m, pr)
		pr.Close()
		if err != nil {
			return nil, false, err
		}
		existed = !created
		if err := l.DB.FinishLiveStream(ctx, p.TenantID, stream, info.ID, false); err != nil {
			return nil, false, err
		}
	}
	for _, id := range st.Segments {
		if id == info.ID { // never the stream's own profile (owned segments cannot be)
			continue
		}
		if err := l.Delete(ctx, p.TenantID, id, "live:"+stream); err != nil && fleetscope.ErrorCode(err) != fleetscope.ENOTFOUND {
			return nil, false, err
		}
	}
	return info, existed, l.DB.FinishLiveStream(ctx, p.TenantID, stream, info.ID, true)
}

// EndIdle ends, keeping every batch, the streams of every tenant that had
// no batch for IdleTimeout before now (and finishes ends that were cut
// short). It returns how many it ended; a stream that cannot be ended now
// is logged and tried again at the next call.
func (l *Live) EndIdle(ctx context.Context, now time.Time) (int, error) {
	cutoff := now.Add(-l.idleTimeout())
	refs, err := l.DB.IdleLiveStreams(ctx, cutoff, 100)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range refs {
		if err := l.endIdle(ctx, r, cutoff); err != nil {
			if ctx.Err() != nil {
				return n, ctx.Err()
			}
			l.log().Warn("idle live stream not ended: trying again later", "tenant", r.Tenant, "stream", r.Stream, "err", err)
			continue
		}
		n++
	}
	return n, nil
}

// endIdle closes one idle stream to batches (unless one came meanwhile)
// and stores it as one profile.
func (l *Live) endIdle(ctx context.Context, r fleetscope.LiveStreamRef, cutoff time.Time) error {
	if ok, err := l.DB.EndLiveStream(ctx, r.Tenant, r.Stream, cutoff); err != nil || !ok {
		return err
	}
	st, err := l.DB.LiveStream(ctx, r.Tenant, r.Stream)
	if err != nil {
		return err
	}
	if len(st.Segments) == 0 && st.ProfileID == "" {
		return l.DB.DeleteLiveStream(ctx, r.Tenant, r.Stream)
	}
	t, err := l.DB.Tenant(ctx, r.Tenant)
	if err != nil {
		return err
	}
	p := fleetscope.Principal{TenantID: t.ID, Tenant: t.Name, Limits: t.Limits}
	info, _, err := l.finish(ctx, p, r.Stream, Meta{App: st.App, Host: st.Host, Labels: st.Labels, InputFormat: st.InputFormat})
	if err != nil {
		return err
	}
	l.log().Info("idle live stream ended", "tenant", t.Name, "stream", r.Stream, "profile", info.ID, "samples", info.Samples, "batches", st.NextSeq)
	return nil
}

func (l *Live) log() *slog.Logger {
	if l.Log != nil {
		return l.Log
	}
	return slog.Default()
}

// concat writes the segments' raw text, in order, to w.
func (l *Live) concat(ctx context.Context, tenant int64, segments []string, w io.Writer) error {
	for _, id := range segments {
		info, err := l.DB.Profile(ctx, tenant, id)
		if err != nil {
			return err
		}
		rc, err := l.Ingest.Blobs.Get(ctx, info.BlobKey)
		if err != nil {
			return err
		}
		err = copyPlain(w, rc)
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// copyPlain copies r to w, gunzipped if it is gzip.
func copyPlain(w io.Writer, r io.Reader) error {
	br := bufio.NewReader(r)
	if head, _ := br.Peek(2); len(head) == 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return err
		}
		defer zr.Close()
		_, err = io.Copy(w, zr)
		return err
	}
	_, err := io.Copy(w, br)
	return err
}
