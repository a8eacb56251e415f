package api

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/google/pprof/profile"
	pushv1 "github.com/grafana/pyroscope/api/gen/proto/go/push/v1"
	"github.com/grafana/pyroscope/api/gen/proto/go/push/v1/pushv1connect"
	typesv1 "github.com/grafana/pyroscope/api/gen/proto/go/types/v1"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/store/blob"
)

func TestPushMeta(t *testing.T) {
	for _, c := range []struct {
		what         string
		labels       []string // name, value, ...
		app, host    string
		labelsWanted map[string]string
		err          string
	}{
		{"alloy", []string{"__name__", "process_cpu", "service_name", "shop", "hostname", "web-1", "env", "prod", "__delta__", "false", "__session_id__", "5e55", "pyroscope_spy", "gospy"},
			"shop", "web-1", map[string]string{"env": "prod", "pyroscope_spy": "gospy"}, ""},
		{"host label", []string{"service_name", "shop", "host", "db-2"}, "shop", "db-2", map[string]string{}, ""},
		{"instance", []string{"service_name", "shop", "instance", "10.0.0.7:6060", "job", "pprof"}, "shop", "10.0.0.7:6060", map[string]string{"job": "pprof"}, ""},
		{"hostname first", []string{"instance", "10.0.0.7:6060", "service_name", "shop", "hostname", "web-1"}, "shop", "web-1", map[string]string{"instance": "10.0.0.7:6060"}, ""},
		{"no host", []string{"service_name", "shop"}, "shop", "", map[string]string{}, ""},
		{"profile type only", []string{"__name__", "process_cpu", "env", "prod"}, "", "", nil, `__name__ "process_cpu" is the profile type`},
		{"legacy name is not an app either", []string{"__name__", "shop.cpu"}, "", "", nil, "no service_name label"},
		{"no labels", nil, "", "", nil, "no service_name label"},
		{"blank service_name", []string{"service_name", " "}, "", "", nil, "no service_name label"},
		{"twice", []string{"service_name", "shop", "env", "a", "env", "b"}, "", "", nil, `label "env" appears twice`},
	} {
		var ls []*typesv1.LabelPair
		for i := 0; i < len(c.labels); i += 2 {
			ls = append(ls, &typesv1.LabelPair{Name: c.labels[i], Value: c.labels[i+1]})
		}
		m, err := pushMeta(ls)
		if c.err != "" {
			if fleetscope.ErrorCode(err) != fleetscope.EINVALID || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want EINVALID %q", c.what, err, c.err)
			}
			continue
		}
		if err != nil || m.App != c.app || m.Host != c.host || !maps.Equal(m.Labels, c.labelsWanted) || m.InputFormat != "pprof" {
			t.Errorf("%s: %+v %v; want app %q host %q labels %v", c.what, m, err, c.app, c.host, c.labelsWanted)
		}
	}
}

// pushEnv is the push API on a loopback HTTP/2 server without TLS (as the
// fleetscope server serves it), over newPyroEnv's database, tenant and keys.
type pushEnv struct {
	*pyroEnv
	pushURL string
	client  *http.Client
	clock   atomic.Pointer[func() time.Time] // the push handler's clock, if set
	http2   atomic.Int64                     // requests that arrived over HTTP/2
	other   atomic.Int64                     // and over anything else
}

func newPushEnv(t *testing.T) *pushEnv {
	t.Helper()
	e := &pushEnv{pyroEnv: newPyroEnv(t)}
	blobs, err := blob.Open(context.Background(), "file://"+t.TempDir(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	ing := &ingest.Service{DB: e.db, Blobs: blobs, Log: log, TempDir: t.TempDir()}
	mux := http.NewServeMux()
	h := NewPush(ing, log).(*pushHandler)
	h.now = func() time.Time {
		if f := e.clock.Load(); f != nil {
			return (*f)()
		}
		return time.Now()
	}
	mux.Handle(pushv1connect.NewPusherServiceHandler(h,
		connect.WithInterceptors(ErrorInterceptor(log), NewAuth(e.db).Interceptor()), connect.WithReadMaxBytes(64<<20)))
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor == 2 {
			e.http2.Add(1)
		} else {
			e.other.Add(1)
		}
		mux.ServeHTTP(w, r)
	}))
	srv.Config.Protocols = new(http.Protocols)
	srv.Config.Protocols.SetHTTP1(true)
	srv.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Start()
	t.Cleanup(srv.Close)
	e.pushURL = srv.URL
	h2c := new(http.Protocols)
	h2c.SetUnencryptedHTTP2(true) // HTTP/2 with prior knowledge, as gRPC clients speak to plain-text servers
	e.client = &http.Client{Transport: &http.Transport{Protocols: h2c}}
	t.Cleanup(e.client.CloseIdleConnections)
	return e
}

// protocols are the two ways clients push: the Connect protocol and gRPC.
var protocols = []struct {
	name string
	opts []connect.ClientOption
}{
	{"connect", nil},
	{"grpc", []connect.ClientOption{connect.WithGRPC(), connect.WithSendGzip()}},
}

// push sends req with the pyroscope module's own generated client, with
// the given Authorization and X-Scope-OrgID headers (none if empty).
func (e *pushEnv) push(t *testing.T, opts []connect.ClientOption, auth, orgID string, req *pushv1.PushRequest) error {
	t.Helper()
	c := pushv1connect.NewPusherServiceClient(e.client, e.pushURL, opts...)
	r := connect.NewRequest(req)
	if auth != "" {
		r.Header().Set("Authorization", auth)
	}
	if orgID != "" {
		r.Header().Set(OrgIDHeader, orgID)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := c.Push(ctx, r)
	return err
}

// profiles returns the tenant's stored profiles of app, by start time.
func (e *pushEnv) profiles(t *testing.T, app string) map[int64]*fleetscope.ProfileInfo {
	t.Helper()
	ps, _, err := e.db.Search(context.Background(), e.tenant, fleetscope.ProfileFilter{App: app, PageSize: 1000})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]*fleetscope.ProfileInfo{}
	for _, p := range ps {
		out[p.StartTime.UnixNano()] = p
	}
	return out
}

// stored is how many profiles the tenant has.
func (e *pushEnv) stored(t *testing.T) int64 {
	t.Helper()
	_, n, err := e.db.StoredBytes(context.Background(), e.tenant)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// pprofAt returns base recorded at a given time (so distinct bytes:
// uploads are deduplicated by content), gzipped or plain.
func pprofAt(t *testing.T, base *profile.Profile, at time.Time, gzipped bool) []byte {
	t.Helper()
	p := base.Copy()
	p.TimeNanos = at.UnixNano()
	var buf bytes.Buffer
	write := p.Write
	if !gzipped {
		write = p.WriteUncompressed
	}
	if err := write(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func basic(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

func series(samples [][]byte, labels ...string) *pushv1.RawProfileSeries {
	s := &pushv1.RawProfileSeries{}
	for i := 0; i < len(labels); i += 2 {
		s.Labels = append(s.Labels, &typesv1.LabelPair{Name: labels[i], Value: labels[i+1]})
	}
	for i, b := range samples {
		s.Samples = append(s.Samples, &pushv1.RawSample{RawProfile: b, ID: "00000000-0000-4000-8000-00000000000" + string(rune('0'+i))})
	}
	return s
}

// TestPush: the pyroscope module's generated client, over the Connect
// protocol and gRPC on HTTP/2, pushes series of pprof profiles as Alloy
// does; each sample is stored as one profile with the series' app, host
// and labels, at the pprof's own time; empty profiles are skipped; keys,
// scopes, X-Scope-OrgID and bad profiles are refused with the right codes.
func TestPush(t *testing.T) {
	e := newPushEnv(t)
	data := corpus.Read(t, "corpus/pprof/go-sha-sort.cpu.pprof")
	base, err := profile.ParseData(data)
	if err != nil {
		t.Fatal(err)
	}
	if base.DurationNanos <= 0 || len(base.Sample) == 0 {
		t.Fatalf("corpus profile: duration %d, %d samples", base.DurationNanos, len(base.Sample))
	}
	// at returns the corpus profile recorded at a given time (so distinct
	// bytes: uploads are deduplicated by content), gzipped or plain.
	t0 := time.Unix(1795000000, 250_000_000)
	at := func(sec int, gzipped bool) []byte {
		return pprofAt(t, base, t0.Add(time.Duration(sec)*time.Second), gzipped)
	}
	empty := func() []byte { // an idle program's CPU profile
		p := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}, {Type: "cpu", Unit: "nanoseconds"}},
			PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000, TimeNanos: t0.UnixNano(), DurationNanos: 10e9}
		var buf bytes.Buffer
		if err := p.Write(&buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}()
	if at(0, true)[0] != 0x1f || at(0, false)[0] == 0x1f {
		t.Fatal("want a gzipped and a plain profile")
	}
	if _, err := e.db.CreateTenant(context.Background(), "globex", false); err != nil {
		t.Fatal(err)
	}
	bearer := "Bearer " + e.key
	gap := 100 // seconds between each protocol's profiles

	for pi, proto := range protocols {
		t.Run(proto.name, func(t *testing.T) {
			off := pi * gap
			before := e.stored(t)
			// Two series, three profiles and an empty one: Bearer on
			// the Connect protocol, Basic auth (as Alloy sends it) on gRPC.
			auth := bearer
			if proto.name == "grpc" {
				auth = basic("alloy", e.key)
			}
			req := &pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{
				series([][]byte{at(off, true), at(off+10, false)},
					"__name__", "process_cpu", "service_name", "shop", "hostname", "web-1", "env", "prod", "__session_id__", "5e55", "__delta__", "false"),
				series([][]byte{empty, at(off+20, true)},
					"__name__", "process_cpu", "service_name", "shop", "instance", "10.0.0.7:6060", "env", "dev"),
			}}
			if err := e.push(t, proto.opts, auth, "", req); err != nil {
				t.Fatalf("push: %v", err)
			}
			if n := e.stored(t) - before; n != 3 {
				t.Fatalf("%d profiles stored, want 3 (the empty one skipped)", n)
			}
			got := e.profiles(t, "shop")
			for _, w := range []struct {
				sec    int
				host   string
				labels map[string]string
			}{
				{off, "web-1", map[string]string{"env": "prod"}},
				{off + 10, "web-1", map[string]string{"env": "prod"}},
				{off + 20, "10.0.0.7:6060", map[string]string{"env": "dev"}},
			} {
				start := t0.Add(time.Duration(w.sec) * time.Second)
				p := got[start.UnixNano()]
				if p == nil {
					t.Fatalf("no profile at %v (have %d)", start, len(got))
				}
				if p.Host != w.host || !maps.Equal(p.Labels, w.labels) || p.Format != "pprof" || p.Timed ||
					p.Samples == 0 || p.DurationNanos != base.DurationNanos || len(p.Events) != len(base.SampleType) {
					t.Errorf("profile at +%ds: %+v", w.sec, p)
				}
			}

			// Again, with X-Scope-OrgID naming the key's own tenant: the
			// same bytes store nothing twice.
			if err := e.push(t, proto.opts, auth, "acme", req); err != nil {
				t.Fatalf("push again: %v", err)
			}
			if n := e.stored(t) - before; n != 3 {
				t.Fatalf("after a retry: %d profiles stored, want 3", n)
			}

			// Refusals store nothing.
			refused := &pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{
				series([][]byte{at(off+50, true)}, "service_name", "refused", "__name__", "process_cpu")}}
			for _, c := range []struct {
				what, auth, orgID string
				req               *pushv1.PushRequest
				code              connect.Code
				msg               string
			}{
				{"no key", "", "", refused, connect.CodeUnauthenticated, "missing API key"},
				{"wrong key", "Bearer fsk_wrong", "", refused, connect.CodeUnauthenticated, ""},
				{"wrong basic password", basic("alloy", "fsk_wrong"), "", refused, connect.CodeUnauthenticated, ""},
				{"read-only key", "Bearer " + e.readOnly, "", refused, connect.CodePermissionDenied, "ingest scope"},
				{"read-only key, basic", basic("alloy", e.readOnly), "", refused, connect.CodePermissionDenied, "ingest scope"},
				{"another tenant's org id", bearer, "globex", refused, connect.CodePermissionDenied, `X-Scope-OrgID "globex" is not this key's tenant`},
				{"no service_name", bearer, "", &pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{
					series([][]byte{at(off+51, true)}, "service_name", "refused"),
					series([][]byte{at(off+52, true)}, "__name__", "process_cpu", "hostname", "web-1")}},
					connect.CodeInvalidArgument, `series 1: no service_name label: it names the application (__name__ "process_cpu" is the profile type`},
				{"no series", bearer, "", &pushv1.PushRequest{}, connect.CodeInvalidArgument, "without series"},
				{"not a pprof", bearer, "", &pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{
					series([][]byte{[]byte("garbage")}, "service_name", "refused")}},
					connect.CodeInvalidArgument, `series 0 (service_name "refused") sample 0 (ID 00000000-0000-4000-8000-000000000000): pprof`},
			} {
				err := e.push(t, proto.opts, c.auth, c.orgID, c.req)
				var ce *connect.Error
				if !errors.As(err, &ce) || ce.Code() != c.code || !strings.Contains(ce.Message(), c.msg) {
					t.Errorf("%s: %v; want %v %q", c.what, err, c.code, c.msg)
				}
				if n := len(e.profiles(t, "refused")); n != 0 {
					t.Fatalf("%s: %d profiles stored", c.what, n)
				}
			}

			// A bad profile after a good one: the request fails naming the
			// bad one; the good one stays stored, and the client's retry of
			// the corrected request stores it no second time.
			good := at(off+60, true)
			err := e.push(t, proto.opts, bearer, "", &pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{
				series([][]byte{good, []byte{0x1f, 0x8b, 0, 0}}, "service_name", "partial")}})
			if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), "sample 1") || !strings.Contains(err.Error(), "gzip") {
				t.Errorf("bad second sample: %v; want InvalidArgument naming sample 1", err)
			}
			if err := e.push(t, proto.opts, bearer, "", &pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{
				series([][]byte{good}, "service_name", "partial")}}); err != nil {
				t.Fatalf("retry: %v", err)
			}
			if n := len(e.profiles(t, "partial")) - pi; n != 1 {
				t.Errorf("partial push then retry: %d new profiles, want 1", n)
			}
		})
	}
	if e.http2.Load() == 0 || e.other.Load() != 0 {
		t.Errorf("requests over HTTP/2: %d, over others: %d; want all over HTTP/2", e.http2.Load(), e.other.Load())
	}
}

// TestOrgIDOneRule: X-Scope-OrgID follows one rule on every endpoint, the
// Pyroscope HTTP /ingest and the push API alike: absent or naming the key's
// tenant, it changes nothing; naming another tenant, the request is refused
// (403, PermissionDenied) and nothing is stored.
func TestOrgIDOneRule(t *testing.T) {
	e := newPushEnv(t)
	ingestWith := func(org, body string) (int, string) {
		req, _ := http.NewRequest("POST", e.url+PyroscopePath+"?name=org&format=folded", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+e.key)
		if org != "" {
			req.Header.Set(OrgIDHeader, org)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	pprofData := corpus.Read(t, "corpus/pprof/go-sha-sort.cpu.pprof")
	pushWith := func(org string) error {
		return e.push(t, nil, "Bearer "+e.key, org, &pushv1.PushRequest{Series: []*pushv1.RawProfileSeries{series([][]byte{pprofData}, "service_name", "org")}})
	}
	const refusal = `X-Scope-OrgID "globex" is not this key's tenant`
	if code, body := ingestWith("globex", "main;a 1\n"); code != http.StatusForbidden || !strings.Contains(body, refusal) {
		t.Errorf("/ingest naming another tenant: %d %s, want 403 saying %q", code, body, refusal)
	}
	if err := pushWith("globex"); connect.CodeOf(err) != connect.CodePermissionDenied || !strings.Contains(err.Error(), refusal) {
		t.Errorf("Push naming another tenant: %v, want PermissionDenied saying %q", err, refusal)
	}
	if n := e.stored(t); n != 0 {
		t.Fatalf("%d profiles stored by refused requests", n)
	}
	for _, org := range []string{"", "acme", " acme "} {
		if code, body := ingestWith(org, "main;b"+org+" 1\n"); code != http.StatusOK {
			t.Errorf("/ingest with X-Scope-OrgID %q: %d %s, want 200", org, code, body)
		}
	}
	if err := pushWith("acme"); err != nil {
		t.Errorf("Push naming the key's tenant: %v", err)
	}
}

// pushCorpus returns the corpus CPU profile the push tests record at
// various times.
func pushCorpus(t *testing.T) *profile.Profile {
	t.Helper()
	base, err := profile.ParseData(corpus.Read(t, "corpus/pprof/go-sha-sort.cpu.pprof"))
	if err != nil {
		t.Fatal(err)
	}
	return base
}

// storedRe reads what a failed push says it stored.
var storedRe = regexp.MustCompile(`(\d+) of this push's (\d+) profiles are stored, the rest are not; retrying the whole push is safe`)

// TestPushBounds: a push of more than MaxPushSeries series or
// MaxPushProfiles profiles is refused whole, InvalidArgument naming the
// limits, before anything is stored; one at the bound on series is served.
func TestPushBounds(t *testing.T) {
	e := newPushEnv(t)
	good := pprofAt(t, pushCorpus(t), time.Unix(1795000000, 0), true)
	many := func(nSeries, perSeries int, app string) *pushv1.PushRequest {
		req := &pushv1.PushRequest{}
		for i := range nSeries {
			samples := make([][]byte, perSeries)
			for j := range samples {
				samples[j] = good
			}
			req.Series = append(req.Series, series(samples, "service_name", app, "hostname", fmt.Sprintf("h%d", i)))
		}
		return req
	}
	for _, c := range []struct {
		what string
		req  *pushv1.PushRequest
	}{
		{"series", many(MaxPushSeries+1, 1, "bounded")},
		{"profiles", many(1, MaxPushProfiles+1, "bounded")},
		{"profiles over series", many(MaxPushSeries/2, 3, "bounded")},
	} {
		err := e.push(t, nil, "Bearer "+e.key, "", c.req)
		want := fmt.Sprintf("at most %d series and %d profiles a push", MaxPushSeries, MaxPushProfiles)
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "nothing was stored") {
			t.Errorf("too many %s: %v; want InvalidArgument saying %q", c.what, err, want)
		}
	}
	if n := e.stored(t); n != 0 {
		t.Fatalf("refused pushes stored %d profiles", n)
	}
	// At the bound on series: served (one idle profile and series without
	// samples, so that the test stays fast).
	idle := &profile.Profile{SampleType: []*profile.ValueType{{Type: "samples", Unit: "count"}},
		PeriodType: &profile.ValueType{Type: "cpu", Unit: "nanoseconds"}, Period: 10_000_000, DurationNanos: 10e9}
	req := many(MaxPushSeries, 0, "bounded")
	req.Series[0] = series([][]byte{pprofAt(t, idle, time.Unix(1795000000, 0), true)}, "service_name", "bounded")
	if err := e.push(t, nil, "Bearer "+e.key, "", req); err != nil {
		t.Errorf("a push of %d series: %v", MaxPushSeries, err)
	}
}

// TestPushPartial: a push whose fourth series is bad fails naming it and
// saying that the three before it are stored and that retrying the whole
// push is safe; the corrected push then stores each series once, and
// again nothing more.
func TestPushPartial(t *testing.T) {
	e := newPushEnv(t)
	base := pushCorpus(t)
	t0 := time.Unix(1795000000, 0)
	req := &pushv1.PushRequest{}
	for i := range 5 {
		req.Series = append(req.Series, series([][]byte{pprofAt(t, base, t0.Add(time.Duration(i)*time.Second), true)},
			"service_name", "partial", "hostname", fmt.Sprintf("h%d", i)))
	}
	fixed := req.Series[3].Samples[0].RawProfile
	req.Series[3].Samples[0].RawProfile = []byte("garbage")
	for _, proto := range protocols {
		err := e.push(t, proto.opts, "Bearer "+e.key, "", req)
		m := storedRe.FindStringSubmatch(err.Error())
		if connect.CodeOf(err) != connect.CodeInvalidArgument || !strings.Contains(err.Error(), `series 3 (service_name "partial") sample 0`) ||
			m == nil || m[1] != "3" || m[2] != "5" {
			t.Fatalf("%s: a push whose series 3 is bad: %v; want InvalidArgument naming it, 3 of 5 stored, retry-safe", proto.name, err)
		}
		if n := len(e.profiles(t, "partial")); n != 3 {
			t.Fatalf("%s: %d profiles stored, the error says 3", proto.name, n)
		}
	}
	req.Series[3].Samples[0].RawProfile = fixed
	for range 2 {
		if err := e.push(t, nil, "Bearer "+e.key, "", req); err != nil {
			t.Fatalf("the corrected push: %v", err)
		}
		got := e.profiles(t, "partial")
		if n := e.stored(t); len(got) != 5 || n != 5 {
			t.Fatalf("after the corrected push: %d profiles of partial (%d in all), want each of the 5 once", len(got), n)
		}
		for i := range 5 {
			if p := got[t0.Add(time.Duration(i)*time.Second).UnixNano()]; p == nil || p.Host != fmt.Sprintf("h%d", i) {
				t.Fatalf("series %d: %+v", i, p)
			}
		}
	}
}

// TestPushDeadline: a push that cannot finish before its deadline stops
// in time, Unavailable, saying how many profiles it stored (exactly those)
// and that retrying is safe; the retry stores the rest, each once. The
// handler's clock runs 5 s a reading, so the call's minute runs out after
// a few profiles.
func TestPushDeadline(t *testing.T) {
	e := newPushEnv(t)
	base := pushCorpus(t)
	t0 := time.Unix(1795000000, 0)
	const n = 12
	req := &pushv1.PushRequest{}
	for i := range n {
		req.Series = append(req.Series, series([][]byte{pprofAt(t, base, t0.Add(time.Duration(i)*time.Second), true)},
			"service_name", "slow", "hostname", fmt.Sprintf("h%d", i)))
	}
	var mu sync.Mutex
	var fake time.Time
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		if fake.IsZero() {
			fake = time.Now()
		}
		fake = fake.Add(5 * time.Second)
		return fake
	}
	e.clock.Store(&clock)
	// e.push's call has a minute: its deadline is the one the push runs
	// out of on the handler's clock, and a hang guard on the real one (a
	// push that ran into it would answer DeadlineExceeded, not
	// Unavailable). How long the call takes is not what is checked.
	err := e.push(t, nil, "Bearer "+e.key, "", req)
	m := storedRe.FindStringSubmatch(fmt.Sprint(err))
	if connect.CodeOf(err) != connect.CodeUnavailable || !strings.Contains(err.Error(), "ran out of time") || m == nil || m[2] != fmt.Sprint(n) {
		t.Fatalf("a push out of time: %v; want Unavailable saying how many of %d are stored and that retrying is safe", err, n)
	}
	if got := len(e.profiles(t, "slow")); fmt.Sprint(got) != m[1] || got == 0 || got == n {
		t.Fatalf("%d profiles stored; the error says %s (want some, not all)", got, m[1])
	}
	e.clock.Store(nil)
	if err := e.push(t, nil, "Bearer "+e.key, "", req); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if got, all := len(e.profiles(t, "slow")), e.stored(t); got != n || all != n {
		t.Fatalf("after the retry: %d profiles of slow (%d in all), want each of the %d once", got, all, n)
	}
}
