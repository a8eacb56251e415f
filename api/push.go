package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

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
// Empty profiles (a CPU profile of an idle program) are skipped. A request
// is not atomic: the first profile that cannot be stored fails it, naming
// its series and sample (EINVALID for a profile that is not a pprof), and
// the profiles stored before it stay stored. Uploads are idempotent by
// content hash, so a client's retry of the whole request stores nothing
// twice.
func NewPush(svc *ingest.Service, log *slog.Logger) pushv1connect.PusherServiceHandler {
	return &pushHandler{ingest: svc, log: log}
}

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
	// Every series' labels are checked before anything is stored.
	metas := make([]ingest.Meta, len(series))
	for i, s := range series {
		if metas[i], err = pushMeta(s.GetLabels()); err != nil {
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "series %d: %s", i, fleetscope.ErrorMessage(err))
		}
	}
	for i, s := range series {
		for j, sample := range s.GetSamples() {
			info, created, err := h.ingest.Ingest(ctx, p, metas[i], bytes.NewReader(sample.GetRawProfile()))
			if fleetscope.ErrorCode(err) == fleetscope.EEMPTY {
				// An idle program's CPU profile: nothing to store, and
				// not the client's mistake.
				continue
			}
			if err != nil {
				return nil, sampleError(err, i, j, metas[i].App, sample.GetID())
			}
			h.log.Info("profile stored", "tenant", p.Tenant, "profile", info.ID, "app", info.App, "samples", info.Samples,
				"bytes", info.SizeBytes, "created", created, "via", "push", "push_id", sample.GetID())
		}
	}
	return connect.NewResponse(&pushv1.PushResponse{}), nil
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

// sampleError says which series and sample err is about, keeping its code.
func sampleError(err error, series, sample int, app, id string) error {
	where := fmt.Sprintf("series %d (service_name %q) sample %d", series, app, sample)
	if id != "" {
		where += fmt.Sprintf(" (ID %s)", id)
	}
	var fe *fleetscope.Error
	if !errors.As(err, &fe) {
		return fmt.Errorf("%s: %w", where, err) // internal or canceled: the interceptor decides
	}
	return fleetscope.Wrap(err, fe.Code, where+": "+fleetscope.ErrorMessage(err))
}
