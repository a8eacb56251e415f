package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"github.com/klauspost/compress/gzip"
	collpb "go.opentelemetry.io/proto/slim/otlp/collector/profiles/v1development"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/otlp"
)

// OTLPProcedure is the OpenTelemetry profiles service's one procedure, as
// the Collector's otlp exporter (gRPC) calls it; OTLPPath is where its
// otlphttp exporter posts.
const (
	OTLPProcedure = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export"
	OTLPPath      = "/v1development/profiles"
)

// otlpHandler stores OpenTelemetry profiles exports in live streams.
type otlpHandler struct {
	live     *ingest.Live
	maxBytes int64
	log      *slog.Logger

	// ending holds the streams being ended in the background, at most
	// maxEnding at a time (more wait for a later export or the idle end).
	mu     sync.Mutex
	ending map[string]bool
}

// maxEnding bounds the streams ended at once: ending one reads and stores
// its host-minute again, a large upload's work.
const maxEnding = 2

// endTimeout bounds ending one stream.
const endTimeout = 5 * time.Minute

// NewOTLP returns the OpenTelemetry profiles ingest, both transports: the
// gRPC (and Connect) handler of OTLPProcedure, built with opts (the
// server's interceptors and message bound), and the OTLP/HTTP handler of
// OTLPPath (protobuf, gzipped or not), whose request, one message read
// whole, is bounded by maxBytes sent and inflated (and by the tenant's
// upload limit, if tighter). The key is the caller's, with the ingest scope, as on
// every ingest endpoint (the Gate and the interceptor check it; an
// X-Scope-OrgID header never selects a tenant).
//
// Each request is converted by package ingest/otlp into perf script text,
// one batch per (service, host, labels), and each batch appended to the
// live stream of its (service, host, labels) and minute (the minute of its
// first sample): exports of one host join one stream a minute, queryable
// at once, stored in the end as one profile per host-minute. A stream
// ends, in the background, when an export of the same (service, host,
// labels) arrives two minutes later (or after the live idle timeout). A batch is identified by its bytes, so a retried request
// counts once (ingest.Live.AppendExport).
//
// Answers follow OTLP: a malformed request (an index out of range, a
// message of another protocol version, too many attributes) is
// InvalidArgument (HTTP 400), never retried; profiles fleetscope cannot
// store (untimed samples, timestamps outside the profile's span) are
// refused alone, with partial_success (rejected_profiles and why), or,
// when every profile is refused, InvalidArgument; only overload is
// retryable (Unavailable, HTTP 503; a rate limit is ResourceExhausted
// with RetryInfo over gRPC, HTTP 429).
func NewOTLP(live *ingest.Live, maxBytes int64, log *slog.Logger, opts ...connect.HandlerOption) (grpcPath string, grpc http.Handler, httpPath string, plain http.Handler) {
	h := &otlpHandler{live: live, maxBytes: maxBytes, log: log, ending: map[string]bool{}}
	grpc = connect.NewUnaryHandler(OTLPProcedure, h.exportRPC, opts...)
	return OTLPProcedure, grpc, OTLPPath, http.HandlerFunc(h.serveHTTP)
}

func (h *otlpHandler) exportRPC(ctx context.Context, req *connect.Request[collpb.ExportProfilesServiceRequest]) (*connect.Response[collpb.ExportProfilesServiceResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	resp, err := h.export(ctx, p, req.Msg, "grpc")
	if err != nil {
		return nil, otlpError(err)
	}
	return connect.NewResponse(resp), nil
}

// otlpError is err as an OTLP exporter reads it: a rate limit carries
// RetryInfo, without which the Collector takes ResourceExhausted as
// permanent.
func otlpError(err error) error {
	if fleetscope.ErrorCode(err) != fleetscope.ERATELIMITED {
		return err
	}
	ce := ConnectError(err).(*connect.Error)
	if d, derr := connect.NewErrorDetail(&errdetails.RetryInfo{RetryDelay: durationpb.New(time.Second)}); derr == nil {
		ce.AddDetail(d)
	}
	return ce
}

// serveHTTP is OTLP/HTTP: POST a protobuf ExportProfilesServiceRequest,
// gzipped (Content-Encoding: gzip) or not; the answer is a protobuf
// ExportProfilesServiceResponse, or on error a google.rpc.Status with the
// status of the error's code.
func (h *otlpHandler) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		otlpHTTPError(w, fleetscope.Errorf(fleetscope.EINVALID, "method %s: POST profiles here", r.Method), http.StatusMethodNotAllowed)
		return
	}
	p, err := principal(r.Context()) // the Gate authenticated the request
	if err != nil {
		otlpHTTPError(w, err, 0)
		return
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-protobuf" {
		otlpHTTPError(w, fleetscope.Errorf(fleetscope.EINVALID, "Content-Type %q: fleetscope takes OTLP/HTTP in protobuf (application/x-protobuf; the otlphttp exporter's default encoding)", mt),
			http.StatusUnsupportedMediaType)
		return
	}
	limit := h.maxBytes
	if l := h.live.Ingest.MaxUpload(p); l > 0 && (limit <= 0 || l < limit) {
		limit = l
	}
	if limit <= 0 {
		limit = 64 << 20
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, limit)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			otlpHTTPError(w, fleetscope.Errorf(fleetscope.EINVALID, "Content-Encoding gzip, but the body is not gzip: %v", err), 0)
			return
		}
		defer zr.Close()
		body = zr
	default:
		otlpHTTPError(w, fleetscope.Errorf(fleetscope.EINVALID, "Content-Encoding %q: gzip or none", enc), http.StatusUnsupportedMediaType)
		return
	}
	// The inflated request is bounded like the body: a small gzip body may
	// not inflate past the upload limit.
	raw, err := io.ReadAll(io.LimitReader(body, limit+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		otlpHTTPError(w, fleetscope.Errorf(fleetscope.ETOOLARGE, "request body larger than the limit of %d bytes", mbe.Limit), 0)
		return
	case err != nil && fleetscope.ErrorCode(err) != fleetscope.EINTERNAL:
		otlpHTTPError(w, err, 0) // cut off by the Gate (too slow)
		return
	case err != nil:
		otlpHTTPError(w, fleetscope.Errorf(fleetscope.EINVALID, "reading the body: %v", err), 0)
		return
	case int64(len(raw)) > limit:
		otlpHTTPError(w, fleetscope.Errorf(fleetscope.ETOOLARGE, "the request inflates past the limit of %d bytes", limit), 0)
		return
	}
	req := &collpb.ExportProfilesServiceRequest{}
	if err := proto.Unmarshal(raw, req); err != nil {
		otlpHTTPError(w, fleetscope.Errorf(fleetscope.EINVALID, "the body is not an ExportProfilesServiceRequest in protobuf: %v", err), 0)
		return
	}
	resp, err := h.export(r.Context(), p, req, "http")
	if err != nil {
		otlpHTTPError(w, err, 0)
		return
	}
	out, err := proto.Marshal(resp)
	if err != nil {
		otlpHTTPError(w, err, 0)
		return
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// otlpHTTPError answers err as OTLP/HTTP does: a protobuf google.rpc.Status
// with the HTTP status of err's code (or status, if not 0); 429 and 503
// say when to retry.
func otlpHTTPError(w http.ResponseWriter, err error, status int) {
	ce := ConnectError(err).(*connect.Error)
	code := codeOf(ce)
	if status == 0 {
		status = codes[code].http
		w.Header().Set(CodeHeader, code) // a status of its own is not the code's (HTTPStatus keeps it)
	}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "1")
	}
	b, _ := proto.Marshal(&spb.Status{Code: int32(ce.Code()), Message: ce.Message()})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// streamGenerations is how many streams a (service, host, labels, minute)
// may take: a batch for a minute whose stream has ended (a late export)
// goes to the next.
const streamGenerations = 4

// export stores a request's profiles (see NewOTLP).
func (h *otlpHandler) export(ctx context.Context, p fleetscope.Principal, req *collpb.ExportProfilesServiceRequest, via string) (*collpb.ExportProfilesServiceResponse, error) {
	if limit := h.live.Ingest.MaxUpload(p); limit > 0 {
		// The tenant's largest upload, as the message arrived (OTLP/HTTP
		// bodies are bounded by it as they are read).
		if n := proto.Size(req); int64(n) > limit {
			return nil, fleetscope.Errorf(fleetscope.ETOOLARGE, "an export of %d bytes: the tenant's largest upload is %d bytes", n, limit)
		}
	}
	if err := otlp.CheckVersion(req); err != nil {
		return nil, err
	}
	res, err := otlp.Convert(req)
	if err != nil {
		return nil, err
	}
	if len(res.Batches) == 0 && res.Rejected > 0 {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "all %d profiles refused, nothing stored: %s", res.Rejected, strings.Join(res.Reasons, "; "))
	}
	samples := 0
	for i, b := range res.Batches {
		if err := h.append(ctx, p, b); err != nil {
			if code := fleetscope.ErrorCode(err); i > 0 && code != fleetscope.EINTERNAL && ctx.Err() == nil {
				err = fleetscope.Wrap(err, code, fmt.Sprintf("%s (%d of the request's %d batches are stored: retrying the whole request is safe, a batch stored is recognized by its bytes)",
					fleetscope.ErrorMessage(err), i, len(res.Batches)))
			}
			return nil, err
		}
		samples += b.Samples
	}
	h.log.Info("otlp export stored", "tenant", p.Tenant, "via", via, "profiles", res.Profiles, "rejected", res.Rejected, "batches", len(res.Batches), "samples", samples)
	resp := &collpb.ExportProfilesServiceResponse{}
	if res.Rejected > 0 {
		resp.PartialSuccess = &collpb.ExportProfilesPartialSuccess{RejectedProfiles: int64(res.Rejected),
			ErrorMessage: fmt.Sprintf("%d of %d profiles refused: %s", res.Rejected, res.Profiles, strings.Join(res.Reasons, "; "))}
	}
	return resp, nil
}

// append adds one batch to its stream, and ends the stream of the same
// host two minutes before.
func (h *otlpHandler) append(ctx context.Context, p fleetscope.Principal, b *otlp.Batch) error {
	m := ingest.Meta{App: b.App, Host: b.Host, Labels: b.Labels}
	minute := b.MinNanos / int64(time.Minute)
	base := otlp.StreamName(b.App, b.Host, b.Labels, minute)
	var err error
	for g := 1; g <= streamGenerations; g++ {
		stream := base
		if g > 1 {
			stream += "." + strconv.Itoa(g)
		}
		if _, err = h.live.AppendExport(ctx, p, stream, m, b.Text); fleetscope.ErrorCode(err) != fleetscope.ECONFLICT {
			break
		}
	}
	if err != nil {
		return err
	}
	h.endLater(p, otlp.StreamName(b.App, b.Host, b.Labels, minute-2))
	return nil
}

// endLater ends stream, if it is open, in the background: not within the
// request (a Collector would time out waiting), and not a stream already
// being ended. When maxEnding are being ended, it is left to a later
// export or the idle end.
func (h *otlpHandler) endLater(p fleetscope.Principal, stream string) {
	key := strconv.FormatInt(p.TenantID, 10) + "/" + stream
	h.mu.Lock()
	if h.ending[key] || len(h.ending) >= maxEnding {
		h.mu.Unlock()
		return
	}
	h.ending[key] = true
	h.mu.Unlock()
	go func() {
		defer func() {
			h.mu.Lock()
			delete(h.ending, key)
			h.mu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), endTimeout)
		defer cancel()
		if err := h.live.FinishExport(ctx, p, stream); err != nil {
			// The idle end tries again later.
			h.log.Warn("otlp stream not ended: the idle timeout will", "tenant", p.Tenant, "stream", stream, "err", err)
		}
	}()
}
