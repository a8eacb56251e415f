package ingest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"

	"github.com/klauspost/compress/gzip"

	"github.com/fleetscope/fleetscope"
)

// exportAttempts bounds how often AppendExport retries a stream whose next batch
// another request took meanwhile.
const exportAttempts = 8

// AppendExport appends chunk, whole samples of perf script text, to
// stream as its next batch, unless the stream holds those bytes already:
// for senders that number nothing and retry whole requests (OpenTelemetry
// exporters). The segment is owned by the stream and identified by its
// bytes, not its batch number, so the same chunk sent twice (a retry after
// a lost answer, even concurrent with the first) is one segment, applied
// once; it reports whether this call applied it. A stream begins with
// m's app, host and labels (a later chunk with other metadata is
// refused, as in Append); a stream that has ended is ECONFLICT. The stream
// ends as any live stream does: FinishExport, or the idle timeout.
func (l *Live) AppendExport(ctx context.Context, p fleetscope.Principal, stream string, m Meta, chunk []byte) (bool, error) {
	if !validStream(stream) {
		return false, fleetscope.Errorf(fleetscope.EINVALID, "live stream name %q: 1-100 of A-Z a-z 0-9 . _ -", stream)
	}
	if len(chunk) == 0 {
		return false, fleetscope.Errorf(fleetscope.EINVALID, "an empty export batch")
	}
	m.InputFormat = "perf"
	if err := checkMeta(&m); err != nil {
		return false, err
	}
	first := fleetscope.LiveStream{App: m.App, Host: m.Host, Labels: m.Labels, InputFormat: m.InputFormat, Format: "perf"}
	sum := sha256.Sum256(chunk)
	sm := m
	sm.Labels = maps.Clone(m.Labels)
	if sm.Labels == nil {
		sm.Labels = map[string]string{}
	}
	sm.Labels[LiveLabel] = stream
	sm.Filename = stream + "#" + hex.EncodeToString(sum[:8])
	sm.owner = "export\x00" + stream + "\x00" + string(sum[:])
	// The segment is stored gzipped (perf script text shrinks ~15x; the
	// stream's end reads it back plain): the same chunk gives the same
	// bytes, so a retry still finds its segment.
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestSpeed)
	zw.Write(chunk)
	zw.Close()
	seg := ""
	for range exportAttempts {
		st, err := l.DB.LiveStream(ctx, p.TenantID, stream)
		if err != nil {
			return false, err
		}
		if st.Begun() {
			if err := sameStream(stream, st.NextSeq, st, first); err != nil {
				return false, err
			}
		}
		if seg != "" && slices.Contains(st.Segments, seg) {
			return false, nil // applied before
		}
		if st.Ended {
			// A segment stored for it meanwhile is no part of it: it goes,
			// so the batch counts once, in the stream it goes to next.
			if err := l.dropSegment(ctx, p, stream, seg); err != nil {
				return false, err
			}
			return false, fleetscope.Errorf(fleetscope.ECONFLICT, "live stream %q has ended", stream)
		}
		if !st.Begun() {
			if err := l.checkOpen(ctx, p); err != nil {
				return false, err
			}
		}
		if seg == "" {
			info, _, err := l.Ingest.Ingest(ctx, p, sm, bytes.NewReader(gz.Bytes()))
			if err != nil {
				return false, err
			}
			seg = info.ID
			if slices.Contains(st.Segments, seg) {
				return false, nil // applied before
			}
		}
		applied, err := l.DB.AppendLiveSegment(ctx, p.TenantID, stream, st.NextSeq, seg, first)
		if err != nil || applied {
			return applied, err
		}
		// Another request took batch NextSeq: look again.
	}
	if err := l.dropSegment(ctx, p, stream, seg); err != nil {
		return false, err
	}
	return false, fleetscope.Errorf(fleetscope.EUNAVAILABLE, "live stream %q: %d requests in a row took its next batch first: retry", stream, exportAttempts)
}

// dropSegment deletes seg, a segment stored for stream but not applied
// to it (none: nothing to do), unless the stream holds it after all.
func (l *Live) dropSegment(ctx context.Context, p fleetscope.Principal, stream, seg string) error {
	if seg == "" {
		return nil
	}
	if st, err := l.DB.LiveStream(ctx, p.TenantID, stream); err != nil || slices.Contains(st.Segments, seg) || st.ProfileID == seg {
		return err
	}
	if err := l.Delete(ctx, p.TenantID, seg, "live:"+stream); err != nil && fleetscope.ErrorCode(err) != fleetscope.ENOTFOUND {
		return err
	}
	return nil
}

// FinishExport ends an export stream, keeping every batch, as one profile
// (as the final batch of a live stream does); a stream that does not
// exist, or has ended already, is left as it is.
func (l *Live) FinishExport(ctx context.Context, p fleetscope.Principal, stream string) error {
	st, err := l.DB.LiveStream(ctx, p.TenantID, stream)
	if err != nil || !st.Begun() || st.ProfileID != "" {
		return err
	}
	_, err = l.Append(ctx, p, stream, st.NextSeq, Meta{App: st.App, Host: st.Host, Labels: st.Labels, InputFormat: st.InputFormat}, nil, true)
	return err
}
