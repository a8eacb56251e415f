package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"connectrpc.com/connect"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
)

// pushHandler serves Pyroscope's PusherService through the ingest service.
type pushHandler struct {
	ingest *ingest.Service
	log    *slog.Logger
	now    func() time.Time
}

// NewPush returns the handler of Pyroscope's push API,
// push.v1.PusherService/Push, what Grafana Alloy's pyroscope.write
// component and Pyroscope's push clients send: series of labels, each with
// pprof profiles (raw_profile, gzipped or not). Every profile is stored by
// svc as one upload to /ingest stores it (format pprof, every sample type an
// event), placed in time by the pprof's own time_nanos and duration_nanos.
//
// Labels are mapped as Pyroscope maps them: service_name is the app;
// __name__ is the profile type ("process_cpu", "memory", ...), never the
// app, and like every reserved "__...__" label it is dropped; the first of
// hostname, host and instance is the host; the other labels are the
// profile's labels. A series without service_name is refused.
//
// The key is the caller's (the interceptor reads a Bearer token or the
// password of Basic auth) and needs the ingest scope; its tenant is the
// tenant. X-Scope-OrgID may name that tenant or be absent; naming another
// is EFORBIDDEN (checkOrgID, as on every endpoint).
//
// A push holds at most MaxPushSeries series and MaxPushProfiles profiles;
// a larger one is refused whole (EINVALID, naming the limit) before
// anything is stored. Empty profiles (a CPU profile of an idle
// program) are skipped.
//
// A push is not one transaction: it is idempotent per profile, and says so.
// Every profile is stored by its bytes (uploads are idempotent by content
// hash), so a retry of the whole push stores each profile once: the ones
// stored already are recognized and not stored again. The first profile
// that cannot be stored fails the push, naming its series and sample
// (EINVALID for a profile that is not a pprof) and saying how many of the
// push's profiles are stored and that retrying the whole push is safe. A
// push does not begin a profile it may not finish before its deadline (the
// client's, or the server's bound on a call): before each profile it checks
// the time left, and when that is less than its slowest profile so far plus
// a margin it stops, EUNAVAILABLE, saying how many profiles are stored and
// that retrying is safe (a profile still cut off by the deadline answers
// the same).
func NewPush(svc *ingest.Service, log *slog.Logger) pushv1connect.PusherServiceHandler {
	return &pushHandler{ingest: svc, log: log, now: time.Now}
}

// MaxPushSeries and MaxPushProfiles bound one push: its series, and its
// profiles (samples, over all series). Grafana Alloy's pyroscope.write
// sends one series a push; a client with more sends several pushes.
const (
	MaxPushSeries   = 1000
	MaxPushProfiles = 1000
)

// pushMargin is the most a push keeps in hand before its deadline, beyond
// its slowest profile so far, to answer in time; a tenth of the push's
// time when that is less.
const pushMargin = 2 * time.Second

// Push stores every sample of every series.
func (h *pushHandler) Push(ctx context.Context, req *connect.Request[pushv1.PushRequest]) (*connect.Response[pushv1.PushResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	series := req.Msg.GetSeries()
	if len(series) == 0 {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "a push without series: nothing to store")
	}
	// The push's bounds and every series' labels are checked before
	// anything is stored.
	total := 0
	for _, s := range series {
		total += len(s.GetSamples())
	}
	if len(series) > MaxPushSeries || total > MaxPushProfiles {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "a push of %d series and %d profiles: at most %d series and %d profiles a push (the server's limit; see docs/limits.md); nothing was stored: send them in several pushes",
			len(series), total, MaxPushSeries, MaxPushProfiles)
	}
	metas := make([]ingest.Meta, len(series))
	for i, s := range series {
		if metas[i], err = pushMeta(s.GetLabels()); err != nil {
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "series %d: %s", i, fleetscope.ErrorMessage(err))
		}
	}
	start := h.now()
	var slowest time.Duration // the longest a profile took so far
	done := 0                 // profiles handled: stored, already stored, or empty
	stored := 0               // of which stored (now or before)
	for i, s := range series {
		for j, sample := range s.GetSamples() {
			where := sampleWhere(i, j, metas[i].App, sample.GetID())
			if err := h.timeLeft(ctx, start, slowest); err != nil {
				return nil, pushStopped(err, where, stored, total)
			}
			t0 := h.now()
			info, created, err := h.ingest.Ingest(ctx, p, metas[i], bytes.NewReader(sample.GetRawProfile()))
			slowest = max(slowest, h.now().Sub(t0))
			if fleetscope.ErrorCode(err) == fleetscope.EEMPTY {
				// An idle program's CPU profile: nothing to store, and
				// not the client's mistake.
				done++
				continue
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, pushStopped(err, where, stored, total)
			}
			if err != nil {
				return nil, sampleError(err, where, stored, total)
			}
			done++
			stored++
			h.log.Info("profile stored", "tenant", p.Tenant, "profile", info.ID, "app", info.App, "samples", info.Samples,
				"bytes", info.SizeBytes, "created", created, "via", "push", "push_id", sample.GetID(), "push_profile", done, "push_profiles", total)
		}
	}
	return connect.NewResponse(&pushv1.PushResponse{}), nil
}

// timeLeft returns context.DeadlineExceeded when the push, begun at start,
// should not begin another profile: its context is done, or the time left
// before its deadline is less than its slowest profile so far plus a
// margin (pushMargin, or a tenth of the push's time if less).
func (h *pushHandler) timeLeft(ctx context.Context, start time.Time, slowest time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	deadline, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	margin := min(pushMargin, deadline.Sub(start)/10)
	if deadline.Sub(h.now()) < slowest+margin {
		return context.DeadlineExceeded
	}
	return nil
}

// retrySafe says what a failed push stored and that retrying it is safe.
func retrySafe(stored, total int) string {
	if stored == 0 {
		return "no profile of this push was stored"
	}
	return fmt.Sprintf("%d of this push's %d profiles are stored, the rest are not; retrying the whole push is safe: "+
		"a profile already stored is recognized by its bytes and not stored twice", stored, total)
}

// pushStopped is the error of a push stopped at its deadline (or
// canceled) before the profile at where.
func pushStopped(err error, where string, stored, total int) error {
	if errors.Is(err, context.Canceled) {
		return err // the client is gone: nobody reads an answer
	}
	// No cause: a deadline as the cause would answer DeadlineExceeded
	// without this message (ConnectError).
	return fleetscope.Errorf(fleetscope.EUNAVAILABLE, "the push ran out of time at %s (its deadline is near or past): %s", where, retrySafe(stored, total))
}

// sampleWhere names a push's sample.
func sampleWhere(series, sample int, app, id string) string {
	where := fmt.Sprintf("series %d (service_name %q) sample %d", series, app, sample)
	if id != "" {
		where += fmt.Sprintf(" (ID %s)", id)
	}
	return where
}

// hostLabels are the labels that may name a profile's host, first first.
var hostLabels = []string{"hostname", "host", "instance"}

// pushMeta maps a series' labels to an upload's metadata, as Pyroscope
// reads them: service_name is the app; the first of hostLabels present is
// the host; reserved "__...__" labels (__name__, the profile type, and
// __session_id__, __delta__, ...) are dropped; the rest are labels.
// Returns EINVALID without service_name or with a label named twice.
func pushMeta(labels []*typesv1.LabelPair) (ingest.Meta, error) {
	m := ingest.Meta{InputFormat: "pprof", Labels: make(map[string]string, len(labels))}
	seen := make(map[string]bool, len(labels))
	profileType := ""
	for _, l := range labels {
		k, v := l.GetName(), l.GetValue()
		if seen[k] {
			return m, fleetscope.Errorf(fleetscope.EINVALID, "label %q appears twice", k)
		}
		seen[k] = true
		switch {
		case k == "__name__":
			profileType = v
		case strings.HasPrefix(k, "__") && strings.HasSuffix(k, "__"):
		case k == "service_name":
			m.App = strings.TrimSpace(v)
		default:
			m.Labels[k] = v
		}
	}
	for _, k := range hostLabels {
		if v := m.Labels[k]; v != "" {
			m.Host = v
			delete(m.Labels, k)
			break
		}
	}
	if m.App == "" {
		if profileType != "" {
			return m, fleetscope.Errorf(fleetscope.EINVALID, "no service_name label: it names the application (__name__ %q is the profile type, not an application)", profileType)
		}
		return m, fleetscope.Errorf(fleetscope.EINVALID, "no service_name label: it names the application")
	}
	return m, nil
}

// sampleError says which series and sample err is about, keeping its
// code, and what the push stored before it.
func sampleError(err error, where string, stored, total int) error {
	var fe *fleetscope.Error
	if !errors.As(err, &fe) {
		return fmt.Errorf("%s: %w", where, err) // internal or canceled: the interceptor decides
	}
	return fleetscope.Wrap(err, fe.Code, where+": "+fleetscope.ErrorMessage(err)+"; "+retrySafe(stored, total))
}
