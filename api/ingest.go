package api

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"connectrpc.com/connect"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/ingest"
)

// ingestHandler serves IngestService through the ingest service.
type ingestHandler struct {
	ingest    *ingest.Service
	live      *ingest.Live
	publicURL string
	log       *slog.Logger
}

// NewIngest returns the IngestService handler: uploads, streamed or in one
// message, stored by svc, and live recordings' batches, appended by live.
// publicURL is the base of permalinks.
func NewIngest(svc *ingest.Service, live *ingest.Live, publicURL string, log *slog.Logger) fleetscopev1connect.IngestServiceHandler {
	return &ingestHandler{ingest: svc, live: live, publicURL: publicURL, log: log}
}

// AppendLive applies one batch of a live recording (ingest.Live).
func (h *ingestHandler) AppendLive(ctx context.Context, req *connect.Request[fsv1.AppendLiveRequest]) (*connect.Response[fsv1.AppendLiveResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	if m.GetMetadata() == nil {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "metadata missing")
	}
	meta := metaFrom(m.GetMetadata())
	a, err := h.live.Append(ctx, p, m.GetStream(), m.GetSeq(), meta, m.GetChunk(), m.GetFinal())
	if err != nil {
		return nil, err
	}
	out := &fsv1.AppendLiveResponse{NextSeq: a.NextSeq}
	if info := a.Profile; info != nil {
		out.Profile = profileProto(info)
		if ignored := ingest.Ignored(meta, info); a.Existed || len(ignored) > 0 {
			out.Duplicate = duplicateOf(info, ignored)
		}
		h.log.Info("live recording stored", "tenant", p.Tenant, "stream", m.GetStream(), "profile", info.ID, "samples", info.Samples, "batches", a.NextSeq,
			"stored_before", a.Existed, "ignored", out.GetDuplicate().GetIgnored())
	}
	return connect.NewResponse(out), nil
}

// duplicateOf says that an upload's bytes were stored already, as info,
// and what of its metadata was not applied.
func duplicateOf(info *fleetscope.ProfileInfo, ignored []string) *fsv1.Duplicate {
	return &fsv1.Duplicate{ProfileId: info.ID, App: info.App, Host: info.Host, Labels: info.Labels, Ignored: ignored}
}

// permalink is a profile's dashboard URL.
func permalink(base, id string) string {
	return strings.TrimRight(base, "/") + "/p/" + id
}

func metaFrom(m *fsv1.UploadMetadata) ingest.Meta {
	out := ingest.Meta{App: m.GetApp(), Host: m.GetHost(), Labels: m.GetLabels(), InputFormat: m.GetInputFormat(), Filename: m.GetFilename()}
	if a := m.GetAnchor(); a != nil { // without a wall time: the zero time, refused
		out.HasAnchor = true
		out.AnchorClockNanos = a.GetClockNanos()
		if a.GetWallTime() != nil {
			out.AnchorWall = a.GetWallTime().AsTime()
		}
	}
	return out
}

// store ingests one upload and logs what was stored. For bytes already
// stored it also returns what says so: the stored profile's metadata and
// what of the upload's was not applied.
func (h *ingestHandler) store(ctx context.Context, md *fsv1.UploadMetadata, body io.Reader) (*fleetscope.ProfileInfo, bool, *fsv1.Duplicate, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, false, nil, err
	}
	m := metaFrom(md)
	info, created, err := h.ingest.Ingest(ctx, p, m, body)
	if err != nil {
		return nil, false, nil, err
	}
	var dup *fsv1.Duplicate
	if !created {
		dup = duplicateOf(info, ingest.Ignored(m, info))
	}
	h.log.Info("profile stored", "tenant", p.Tenant, "profile", info.ID, "app", info.App, "samples", info.Samples, "bytes", info.SizeBytes,
		"created", created, "ignored", dup.GetIgnored())
	return info, created, dup, nil
}

// Upload reads the metadata message, then streams the chunks into ingest.
func (h *ingestHandler) Upload(ctx context.Context, stream *connect.ClientStream[fsv1.UploadRequest]) (*connect.Response[fsv1.UploadResponse], error) {
	if !stream.Receive() {
		if err := stream.Err(); err != nil {
			return nil, err
		}
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "empty upload: send the metadata first")
	}
	md := stream.Msg().GetMetadata()
	if md == nil {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "the first message of an upload must carry its metadata")
	}
	info, created, dup, err := h.store(ctx, md, &chunkReader{stream: stream})
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&fsv1.UploadResponse{Profile: profileProto(info), Created: created, Permalink: permalink(h.publicURL, info.ID), Duplicate: dup}), nil
}

// chunkReader reads the chunk messages of an upload stream as bytes.
type chunkReader struct {
	stream *connect.ClientStream[fsv1.UploadRequest]
	buf    []byte
}

func (r *chunkReader) Read(p []byte) (int, error) {
	for len(r.buf) == 0 {
		if !r.stream.Receive() {
			if err := r.stream.Err(); err != nil {
				return 0, fmt.Errorf("upload stream: %w", err)
			}
			return 0, io.EOF
		}
		if r.stream.Msg().GetMetadata() != nil {
			return 0, fleetscope.Errorf(fleetscope.EINVALID, "metadata sent twice in one upload")
		}
		r.buf = r.stream.Msg().GetChunk()
	}
	n := copy(p, r.buf)
	r.buf = r.buf[n:]
	return n, nil
}

// UploadFile stores a file sent in one message (browsers).
func (h *ingestHandler) UploadFile(ctx context.Context, req *connect.Request[fsv1.UploadFileRequest]) (*connect.Response[fsv1.UploadFileResponse], error) {
	md := req.Msg.GetMetadata()
	if md == nil {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "metadata missing")
	}
	info, created, dup, err := h.store(ctx, md, bytes.NewReader(req.Msg.GetData()))
	if err != nil {
		return nil, err
	}
	return connect.NewResponse(&fsv1.UploadFileResponse{Profile: profileProto(info), Created: created, Permalink: permalink(h.publicURL, info.ID), Duplicate: dup}), nil
}
