package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/fleetscope/fleetscope"
	fsv1 "github.com/fleetscope/fleetscope/api/gen/fleetscope/v1"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/query"
	"github.com/fleetscope/fleetscope/query/flame"
	"github.com/fleetscope/fleetscope/query/heatmap"
	"github.com/fleetscope/fleetscope/store/index"
	"github.com/fleetscope/fleetscope/store/postgres"
)

// Handlers implements the ingest and query services.
type Handlers struct {
	DB                 *postgres.DB
	Ingest             *ingest.Service
	BrowserUploadBytes int64
	PublicURL          string // base of permalinks
	Log                *slog.Logger

	auth     *authInterceptor
	once     sync.Once
	dicts    *cache[profileKey, *fleetscope.Dict]
	heatmaps *cache[heatmapKey, *fsv1.GetHeatmapResponse]
	profiles *cache[profileKey, *fleetscope.ProfileInfo]
	layouts  *cache[layoutKey, *flame.Layout]
}

var (
	_ fleetscopev1connect.IngestServiceHandler = (*Handlers)(nil)
	_ fleetscopev1connect.QueryServiceHandler  = (*Handlers)(nil)
)

// Mount registers the services, behind the auth interceptor, on mux.
func (h *Handlers) Mount(mux *http.ServeMux, auth Authenticator, extra ...connect.HandlerOption) {
	h.auth = newAuthInterceptor(auth)
	opts := append([]connect.HandlerOption{connect.WithInterceptors(h.auth)}, extra...)
	small := append(opts, connect.WithReadMaxBytes(1<<20))
	mux.Handle(fleetscopev1connect.NewIngestServiceHandler(h, opts...))
	mux.Handle(fleetscopev1connect.NewQueryServiceHandler(h, small...))
	mux.Handle(fleetscopev1connect.NewAdminServiceHandler(h, small...))
	mux.Handle(fleetscopev1connect.NewShareServiceHandler(h, small...))
}

func principal(ctx context.Context) (fleetscope.Principal, error) {
	p, ok := PrincipalFrom(ctx)
	if !ok {
		return p, connect.NewError(connect.CodeUnauthenticated, errors.New("not authenticated"))
	}
	return p, nil
}

func metaFrom(m *fsv1.UploadMetadata) ingest.Meta {
	out := ingest.Meta{App: m.GetApp(), Host: m.GetHost(), Labels: m.GetLabels(), InputFormat: m.GetInputFormat(), Filename: m.GetFilename()}
	if a := m.GetAnchor(); a != nil && a.GetWallTime() != nil {
		out.AnchorClockNanos = a.GetClockNanos()
		out.AnchorWall = a.GetWallTime().AsTime()
	}
	return out
}

// Upload reads the metadata message, then streams the chunks into ingest.
func (h *Handlers) Upload(ctx context.Context, stream *connect.ClientStream[fsv1.UploadRequest]) (*connect.Response[fsv1.UploadResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	if !stream.Receive() {
		if err := stream.Err(); err != nil {
			return nil, err
		}
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("empty upload: send the metadata first"))
	}
	md := stream.Msg().GetMetadata()
	if md == nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("the first message of an upload must carry its metadata"))
	}
	info, created, err := h.Ingest.Ingest(ctx, p, metaFrom(md), &chunkReader{stream: stream})
	if err != nil {
		h.logFailure(p, md, err)
		return nil, toConnect(err)
	}
	h.Log.Info("profile stored", "tenant", p.Tenant, "profile", info.ID, "app", info.App, "samples", info.Samples, "bytes", info.SizeBytes, "created", created)
	return connect.NewResponse(&fsv1.UploadResponse{Profile: toProto(info), Created: created, Permalink: h.permalink(info.ID)}), nil
}

func (h *Handlers) logFailure(p fleetscope.Principal, md *fsv1.UploadMetadata, err error) {
	level := slog.LevelWarn
	if fleetscope.ErrorCode(err) == fleetscope.EINTERNAL {
		level = slog.LevelError
	}
	h.Log.Log(context.Background(), level, "upload failed", "tenant", p.Tenant, "app", md.GetApp(), "err", err)
}

// permalink is a profile's dashboard URL.
func (h *Handlers) permalink(id string) string {
	return strings.TrimRight(h.PublicURL, "/") + "/p/" + id
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
func (h *Handlers) UploadFile(ctx context.Context, req *connect.Request[fsv1.UploadFileRequest]) (*connect.Response[fsv1.UploadFileResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	md := req.Msg.GetMetadata()
	if md == nil {
		return nil, connect.NewError(connect.CodeInvalidArgument, errors.New("metadata missing"))
	}
	info, created, err := h.Ingest.Ingest(ctx, p, metaFrom(md), bytes.NewReader(req.Msg.GetData()))
	if err != nil {
		h.logFailure(p, md, err)
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fsv1.UploadFileResponse{Profile: toProto(info), Created: created, Permalink: h.permalink(info.ID)}), nil
}

func toProto(p *fleetscope.ProfileInfo) *fsv1.Profile {
	out := &fsv1.Profile{
		Id: p.ID, App: p.App, Host: p.Host, Labels: p.Labels, Format: p.Format,
		Samples: p.Samples, Timed: p.Timed, StartSecond: p.StartSecond, DurationNanos: p.DurationNanos,
		StartTime: timestamppb.New(p.StartTime), EndTime: timestamppb.New(p.EndTime), TimeSource: p.TimeSource,
		SizeBytes: p.SizeBytes, Sha256: p.SHA256, CreatedAt: timestamppb.New(p.CreatedAt), Meta: p.Meta,
	}
	for _, e := range p.Events {
		out.Events = append(out.Events, &fsv1.Event{Name: e.Name, Samples: e.Samples})
	}
	if p.DefaultEvent < len(p.Events) {
		out.DefaultEvent = p.Events[p.DefaultEvent].Name
	}
	return out
}

// SearchProfiles lists the tenant's profiles.
func (h *Handlers) SearchProfiles(ctx context.Context, req *connect.Request[fsv1.SearchProfilesRequest]) (*connect.Response[fsv1.SearchProfilesResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	m := req.Msg
	f := postgres.Filter{App: m.GetApp(), Host: m.GetHost(), Labels: m.GetLabels(), PageSize: int(m.GetPageSize()), PageToken: m.GetPageToken()}
	if m.GetSince() != nil {
		f.Since = m.GetSince().AsTime()
	}
	if m.GetUntil() != nil {
		f.Until = m.GetUntil().AsTime()
	}
	profiles, next, err := h.DB.Search(ctx, p.TenantID, f)
	if err != nil {
		return nil, toConnect(err)
	}
	out := &fsv1.SearchProfilesResponse{NextPageToken: next}
	for _, pr := range profiles {
		out.Profiles = append(out.Profiles, toProto(pr))
	}
	return connect.NewResponse(out), nil
}

// GetProfile returns one profile's metadata.
func (h *Handlers) GetProfile(ctx context.Context, req *connect.Request[fsv1.GetProfileRequest]) (*connect.Response[fsv1.GetProfileResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	info, err := h.profile(ctx, p.TenantID, req.Msg.GetId())
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(&fsv1.GetProfileResponse{Profile: toProto(info)}), nil
}

// event resolves an event name against a stored profile.
func event(info *fleetscope.ProfileInfo, name string) (int, error) {
	if name == "" {
		return info.DefaultEvent, nil
	}
	d := fleetscope.NewDict()
	for _, e := range info.Events {
		d.Event(e.Name)
	}
	id, err := query.ResolveEvent(d, name)
	return int(id), err
}

// GetHeatmap answers from the stored cells at 50 rows, and from the stored
// samples at any other row count.
func (h *Handlers) GetHeatmap(ctx context.Context, req *connect.Request[fsv1.GetHeatmapRequest]) (*connect.Response[fsv1.GetHeatmapResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	info, err := h.profile(ctx, p.TenantID, req.Msg.GetProfileId())
	if err != nil {
		return nil, toConnect(err)
	}
	out, err := h.heatmapResponse(ctx, p.TenantID, info, req.Msg)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(out), nil
}

func (h *Handlers) heatmapResponse(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, m *fsv1.GetHeatmapRequest) (*fsv1.GetHeatmapResponse, error) {
	rows := int(m.GetRows())
	if rows == 0 {
		rows = heatmap.DefaultRows
	}
	if err := heatmap.CheckRows(rows); err != nil {
		return nil, err
	}
	if !info.Timed {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "this profile has no per-sample timestamps: no heatmap (a whole-profile flame graph works)")
	}
	ev, err := event(info, m.GetEvent())
	if err != nil {
		return nil, err
	}
	key := heatmapKey{profileKey{tenant, info.ID}, ev, rows, m.GetIncludeIdle()}
	if out, ok := h.heatmaps.get(key); ok {
		return out, nil
	}
	hm, err := h.heatmap(ctx, tenant, info, ev, rows, m.GetIncludeIdle())
	if err != nil {
		return nil, err
	}
	out := &fsv1.GetHeatmapResponse{Event: hm.Event, StartSecond: hm.StartSecond, Rows: int32(hm.Rows), MaxCount: hm.MaxCount, Total: hm.Total}
	for _, col := range hm.Columns {
		out.Columns = append(out.Columns, &fsv1.Column{Counts: col})
	}
	h.heatmaps.put(key, out)
	return out, nil
}

func (h *Handlers) heatmap(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, ev, rows int, idle bool) (*heatmap.Heatmap, error) {
	last := info.StartSecond + info.DurationNanos/1e9
	if rows != index.Rows {
		b, _ := heatmap.NewBuilder(rows, idle)
		err := h.samples(ctx, tenant, info, ev, 0, -1, func(d *fleetscope.Dict, batch []fleetscope.Sample) { b.Add(d, batch) })
		if err != nil {
			return nil, err
		}
		return b.Heatmap(fleetscope.EventID(ev), info.Events[ev].Name, info.StartSecond, last)
	}
	secs, err := h.DB.Cells(ctx, tenant, info.ID, ev)
	if err != nil {
		return nil, err
	}
	hm := &heatmap.Heatmap{Event: info.Events[ev].Name, StartSecond: info.StartSecond, Rows: rows, Columns: make([][]int64, last-info.StartSecond+1)}
	for i := range hm.Columns {
		hm.Columns[i] = make([]int64, rows)
	}
	for _, s := range secs {
		if s.Second < 0 || s.Second >= int64(len(hm.Columns)) {
			return nil, fmt.Errorf("profile %s: stored second %d outside its span", info.ID, s.Second)
		}
		col := hm.Columns[s.Second]
		for r := range rows {
			col[r] = int64(s.Cells[r])
			if idle {
				col[r] += int64(s.IdleCells[r])
			}
		}
	}
	for _, col := range hm.Columns {
		for _, c := range col {
			hm.Total += c
			hm.MaxCount = max(hm.MaxCount, c)
		}
	}
	return hm, nil
}

// samples decodes the stored samples of event in relative seconds
// [from, to] (all if from > to) and hands them to fn with the dictionary.
func (h *Handlers) samples(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, ev int, from, to int64, fn func(*fleetscope.Dict, []fleetscope.Sample)) error {
	d, err := h.dict(ctx, tenant, info)
	if err != nil {
		return err
	}
	secs, err := h.DB.Seconds(ctx, tenant, info.ID, ev, from, to)
	if err != nil {
		return err
	}
	var batch []fleetscope.Sample
	for i := range secs {
		batch, err = index.Decode(batch[:0], &secs[i], info.StartSecond, info.TimeUnitNanos, info.Timed, info.Events[ev].Period)
		if err != nil {
			return fmt.Errorf("profile %s: %w", info.ID, err)
		}
		fn(d, batch)
	}
	return nil
}

// GetFlameGraph answers any range exactly from the stored samples.
func (h *Handlers) GetFlameGraph(ctx context.Context, req *connect.Request[fsv1.GetFlameGraphRequest]) (*connect.Response[fsv1.GetFlameGraphResponse], error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	info, err := h.profile(ctx, p.TenantID, req.Msg.GetProfileId())
	if err != nil {
		return nil, toConnect(err)
	}
	out, err := h.flameGraph(ctx, p.TenantID, info, req.Msg)
	if err != nil {
		return nil, toConnect(err)
	}
	return connect.NewResponse(out), nil
}

// flameGraph computes a flame graph of one of the tenant's profiles.
func (h *Handlers) flameGraph(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo, m *fsv1.GetFlameGraphRequest) (*fsv1.GetFlameGraphResponse, error) {
	ev, err := event(info, m.GetEvent())
	if err != nil {
		return nil, err
	}
	sel := query.Selection{Event: fleetscope.EventID(ev), IncludeIdle: m.GetIncludeIdle(), Range: fleetscope.All, StartSecond: info.StartSecond * 1e9}
	from, to := int64(0), int64(-1)
	if m.StartNanos != nil || m.EndNanos != nil {
		if !info.Timed {
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "this profile has no per-sample timestamps: no time range (a whole-profile flame graph works)")
		}
		if m.StartNanos != nil {
			sel.Range.Start = m.GetStartNanos()
		}
		if m.EndNanos != nil {
			sel.Range.End = m.GetEndNanos()
		}
		from = max(floorSec(sel.Range.Start), 0)
		to = min(floorSec(sel.Range.End-1), info.DurationNanos/1e9)
		if sel.Range.Start >= sel.Range.End || from > to {
			from, to = 1, 0 // empty: nothing to read
		}
	}
	var counts flame.Counts
	if from <= to || m.StartNanos == nil && m.EndNanos == nil {
		err = h.samples(ctx, tenant, info, ev, from, to, func(d *fleetscope.Dict, batch []fleetscope.Sample) {
			counts.Add(d, &sel, batch, m.GetWeightByPeriod())
		})
		if err != nil {
			return nil, err
		}
	}
	d, err := h.dict(ctx, tenant, info)
	if err != nil {
		return nil, err
	}
	ann := flame.Annotate{Kernel: m.GetAnnotateKernel(), JIT: m.GetAnnotateJit()}
	out := &fsv1.GetFlameGraphResponse{Event: info.Events[ev].Name, Total: counts.Total}
	f := m.GetFormat()
	if f == fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_UNSPECIFIED || f == fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_FOLDED {
		var b strings.Builder
		if err := flame.WriteFolded(&b, d, &counts, ann); err != nil {
			return nil, err
		}
		out.Folded = b.String()
	}
	if f == fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_UNSPECIFIED || f == fsv1.FlameGraphFormat_FLAME_GRAPH_FORMAT_TREE {
		f := h.layout(tenant, info, d, ann).Flat(d, &counts)
		out.Tree = &fsv1.FlameTree{Names: f.Names, Name: f.Name, Value: f.Value, Depth: f.Depth}
	}
	return out, nil
}

func floorSec(ns int64) int64 {
	s := ns / 1e9
	if ns < 0 && ns%1e9 != 0 {
		s--
	}
	return s
}

// Cache sizes and lifetimes. Profiles and their dictionaries never change
// once stored; profile metadata is re-read after profileTTL so a deletion on
// another replica is seen within it.
const (
	dictCacheSize    = 64
	heatmapCacheSize = 512
	profileCacheSize = 4096
	profileTTL       = 5 * time.Second
)

type profileKey struct {
	tenant int64
	id     string
}

type heatmapKey struct {
	profileKey
	event, rows int
	idle        bool
}

func (h *Handlers) initCaches() {
	h.once.Do(func() {
		h.dicts = newCache[profileKey, *fleetscope.Dict](dictCacheSize, 0)
		h.heatmaps = newCache[heatmapKey, *fsv1.GetHeatmapResponse](heatmapCacheSize, 0)
		h.profiles = newCache[profileKey, *fleetscope.ProfileInfo](profileCacheSize, profileTTL)
		h.layouts = newCache[layoutKey, *flame.Layout](dictCacheSize, 0)
	})
}

type layoutKey struct {
	profileKey
	ann flame.Annotate
}

// layout returns the flame graph layout of a profile's dictionary.
func (h *Handlers) layout(tenant int64, info *fleetscope.ProfileInfo, d *fleetscope.Dict, ann flame.Annotate) *flame.Layout {
	k := layoutKey{profileKey{tenant, info.ID}, ann}
	if l, ok := h.layouts.get(k); ok {
		return l
	}
	l := flame.NewLayout(d, ann)
	h.layouts.put(k, l)
	return l
}

// forget drops everything cached about a profile (after a deletion).
func (h *Handlers) forget(tenant int64, id string) {
	h.initCaches()
	k := profileKey{tenant, id}
	h.profiles.drop(func(x profileKey) bool { return x == k })
	h.dicts.drop(func(x profileKey) bool { return x == k })
	h.heatmaps.drop(func(x heatmapKey) bool { return x.profileKey == k })
	h.layouts.drop(func(x layoutKey) bool { return x.profileKey == k })
}

// profile returns a tenant's profile, from the cache when fresh.
func (h *Handlers) profile(ctx context.Context, tenant int64, id string) (*fleetscope.ProfileInfo, error) {
	h.initCaches()
	k := profileKey{tenant, id}
	if p, ok := h.profiles.get(k); ok {
		return p, nil
	}
	p, err := h.DB.Profile(ctx, tenant, id)
	if err != nil {
		return nil, err
	}
	h.profiles.put(k, p)
	return p, nil
}

func (h *Handlers) dict(ctx context.Context, tenant int64, info *fleetscope.ProfileInfo) (*fleetscope.Dict, error) {
	h.initCaches()
	k := profileKey{tenant, info.ID}
	if d, ok := h.dicts.get(k); ok {
		return d, nil
	}
	d, err := h.DB.Dict(ctx, tenant, info)
	if err != nil {
		return nil, err
	}
	h.dicts.put(k, d)
	return d, nil
}
