package ingest

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"maps"
	"strconv"

	"github.com/klauspost/compress/gzip"

	"github.com/fleetscope/fleetscope"
)

// LiveIndex is what live recordings need of the index besides Index
// (store/postgres implements it).
type LiveIndex interface {
	Profile(ctx context.Context, tenant int64, id string) (*fleetscope.ProfileInfo, error)
	LiveStream(ctx context.Context, tenant int64, stream string) (fleetscope.LiveStream, error)
	AppendLiveSegment(ctx context.Context, tenant int64, stream string, seq int64, segment string) error
	AdvanceLiveStream(ctx context.Context, tenant int64, stream string, seq int64) error
	FinishLiveStream(ctx context.Context, tenant int64, stream, profile string, clear bool) error
}

// Live appends the batches of live recordings (fleetscope agent --live).
// Each batch, perf script text of whole samples, is stored at once as a
// segment profile (labels live=STREAM, live_seq=N) through the ordinary
// ingest path, so every query sees it; the stream's next_seq makes each
// batch count once, in order, across reconnects and retries (a batch seen
// before is acknowledged, not applied again). The final batch turns the
// segments' text, in order, into one profile — exactly what a batch upload
// of the same recording stores, the same bytes — and deletes the segments.
type Live struct {
	Ingest *Service
	DB     LiveIndex
	// Delete removes a segment profile with its blob (store/lifecycle).
	Delete func(ctx context.Context, tenant int64, id, actor string) error
}

// LiveLabel and LiveSeqLabel mark a live recording's segment profiles.
const (
	LiveLabel    = "live"
	LiveSeqLabel = "live_seq"
)

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

// Append applies batch seq of stream (see Live). It returns the batch the
// stream expects next and, for the final batch, the recording's profile.
func (l *Live) Append(ctx context.Context, p fleetscope.Principal, stream string, seq int64, m Meta, chunk []byte, final bool) (int64, *fleetscope.ProfileInfo, error) {
	if !validStream(stream) {
		return 0, nil, fleetscope.Errorf(fleetscope.EINVALID, "live stream name %q: 1-100 of A-Z a-z 0-9 . _ -", stream)
	}
	if len(chunk) == 0 && !final {
		return 0, nil, fleetscope.Errorf(fleetscope.EINVALID, "live batch %d is empty (only a final batch may be)", seq)
	}
	if err := checkMeta(&m); err != nil {
		return 0, nil, err
	}
	st, err := l.DB.LiveStream(ctx, p.TenantID, stream)
	if err != nil {
		return 0, nil, err
	}
	switch {
	case st.ProfileID != "" && !final:
		return st.NextSeq, nil, fleetscope.Errorf(fleetscope.EINVALID, "live stream %q has ended: start a new one", stream)
	case seq > st.NextSeq:
		return st.NextSeq, nil, fleetscope.Errorf(fleetscope.EINVALID, "live batch %d of %q, but the stream expects batch %d: batches go in order", seq, stream, st.NextSeq)
	case seq == st.NextSeq && len(chunk) > 0:
		sm := m
		sm.Labels = maps.Clone(m.Labels)
		if sm.Labels == nil {
			sm.Labels = map[string]string{}
		}
		sm.Labels[LiveLabel], sm.Labels[LiveSeqLabel] = stream, strconv.FormatInt(seq, 10)
		sm.Filename = stream + "#" + strconv.FormatInt(seq, 10)
		seg, _, err := l.Ingest.Ingest(ctx, p, sm, bytes.NewReader(chunk))
		if err != nil {
			return st.NextSeq, nil, err
		}
		if err := l.DB.AppendLiveSegment(ctx, p.TenantID, stream, seq, seg.ID); err != nil {
			return st.NextSeq, nil, err
		}
	case seq == st.NextSeq: // an empty final batch
		if err := l.DB.AdvanceLiveStream(ctx, p.TenantID, stream, seq); err != nil {
			return st.NextSeq, nil, err
		}
	}
	if !final {
		return seq + 1, nil, nil
	}
	info, err := l.finish(ctx, p, stream, m)
	return seq + 1, info, err
}

// finish stores the stream's segments, in order, as one profile, then
// deletes them. Each step can be run again after a failure: the profile
// is stored by its bytes (once), the segments are forgotten only once
// deleted.
func (l *Live) finish(ctx context.Context, p fleetscope.Principal, stream string, m Meta) (*fleetscope.ProfileInfo, error) {
	st, err := l.DB.LiveStream(ctx, p.TenantID, stream)
	if err != nil {
		return nil, err
	}
	var info *fleetscope.ProfileInfo
	if st.ProfileID != "" {
		if info, err = l.DB.Profile(ctx, p.TenantID, st.ProfileID); err != nil {
			return nil, err
		}
	} else {
		if len(st.Segments) == 0 {
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "live stream %q has no samples", stream)
		}
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(l.concat(ctx, p.TenantID, st.Segments, pw)) }()
		m.Filename = stream
		info, _, err = l.Ingest.Ingest(ctx, p, m, pr)
		pr.Close()
		if err != nil {
			return nil, err
		}
		if err := l.DB.FinishLiveStream(ctx, p.TenantID, stream, info.ID, false); err != nil {
			return nil, err
		}
	}
	for _, id := range st.Segments {
		if err := l.Delete(ctx, p.TenantID, id, "live:"+stream); err != nil && fleetscope.ErrorCode(err) != fleetscope.ENOTFOUND {
			return nil, err
		}
	}
	return info, l.DB.FinishLiveStream(ctx, p.TenantID, stream, info.ID, true)
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
