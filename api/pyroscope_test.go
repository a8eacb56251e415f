package api

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/pyroscope-go/upstream"
	"github.com/grafana/pyroscope-go/upstream/remote"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
	"github.com/fleetscope/fleetscope/ingest/corpus"
	"github.com/fleetscope/fleetscope/store/blob"
	_ "github.com/fleetscope/fleetscope/store/blob/localfs"
	"github.com/fleetscope/fleetscope/store/postgres"
	"github.com/fleetscope/fleetscope/store/postgres/pgtest"
)

func TestParsePyroscopeName(t *testing.T) {
	for _, c := range []struct {
		name, app string
		labels    map[string]string
		err       bool
	}{
		{"shop", "shop", map[string]string{}, false},
		{"shop{}", "shop", map[string]string{}, false},
		{"shop{env=prod, region = eu}", "shop", map[string]string{"env": "prod", "region": "eu"}, false},
		{"shop{__session_id__=ab12,env=prod,__name__=x}", "shop", map[string]string{"env": "prod"}, false},
		{"shop.cpu{env=prod}", "shop", map[string]string{"env": "prod"}, false}, // old clients' profile-type suffix
		{"shop.alloc_space", "shop", map[string]string{}, false},                // likewise
		{"api.v2{}", "api.v2", map[string]string{}, false},                      // not a suffix Pyroscope used
		{"{service_name=shop,env=dev}", "shop", map[string]string{"service_name": "shop", "env": "dev"}, false},
		{"", "", nil, true},
		{"{env=prod}", "", nil, true},
		{"shop{env=prod", "", nil, true},
		{"shop{env}", "", nil, true},
	} {
		app, labels, err := parsePyroscopeName(c.name)
		if (err != nil) != c.err || app != c.app || (!c.err && !maps.Equal(labels, c.labels)) {
			t.Errorf("%q: %q %v %v; want %q %v (error: %v)", c.name, app, labels, err, c.app, c.labels, c.err)
		}
	}
}

func TestParsePyroscopeTime(t *testing.T) {
	now := time.Unix(1795000000, 123)
	want := time.Unix(1795000001, 0)
	for _, c := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"", now, false},
		{"now", now, false},
		{"1795000001", want, false},
		{"1795000001000", want, false},
		{"1795000001000000", want, false},
		{"1795000001000000000", want, false},
		{"1795000001.5", want.Add(500 * time.Millisecond), false},
		{"-5", time.Time{}, true},
		{"yesterday", time.Time{}, true},
	} {
		got, err := parsePyroscopeTime(c.in, now)
		if (err != nil) != c.err || !got.Equal(c.want) {
			t.Errorf("%q: %v %v, want %v (error %v)", c.in, got, err, c.want, c.err)
		}
	}
}

// pyroEnv is the Pyroscope endpoint on a loopback server,
// backed by a real Postgres and a blob directory.
type pyroEnv struct {
	db       *postgres.DB
	tenant   int64
	url      string
	key      string
	readOnly string
}

func newPyroEnv(t *testing.T) *pyroEnv {
	t.Helper()
	ctx := context.Background()
	db := pgtest.New(t)
	blobs, err := blob.Open(ctx, "file://"+t.TempDir(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	ing := &ingest.Service{DB: db, Blobs: blobs, Log: log, TempDir: t.TempDir()}
	mux := http.NewServeMux()
	mux.Handle(PyroscopePath, NewPyroscope(NewAuth(db), ing, "http://fleetscope.test", log))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	e := &pyroEnv{db: db, url: srv.URL}
	if e.tenant, err = db.CreateTenant(ctx, "acme", false); err != nil {
		t.Fatal(err)
	}
	if e.key, _, err = db.NewKey(ctx, e.tenant, fleetscope.KeyOptions{Scopes: []string{"ingest", "read"}, Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	if e.readOnly, _, err = db.NewKey(ctx, e.tenant, fleetscope.KeyOptions{Scopes: []string{"read"}, Actor: "test"}); err != nil {
		t.Fatal(err)
	}
	return e
}

type errLog struct {
	mu   sync.Mutex
	errs []string
}

func (l *errLog) Infof(string, ...any)  {}
func (l *errLog) Debugf(string, ...any) {}
func (l *errLog) Errorf(f string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, fmt.Sprintf(f, args...))
}

// push sends one profile with pyroscope-go's own uploader, as an
// instrumented program does.
func push(t *testing.T, cfg remote.Config, job *upstream.UploadJob) []string {
	t.Helper()
	var log errLog
	cfg.Logger, cfg.Threads, cfg.Timeout = &log, 1, 10*time.Second
	r, err := remote.NewRemote(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r.Start()
	r.Upload(job)
	r.Flush()
	r.Stop()
	return log.errs
}

// TestPyroscopeIngest: pyroscope-go's uploader, unchanged, stores profiles
// under the app name and labels of its name parameter, at its time span,
// with a Bearer key or Basic auth; bad keys and requests are refused with
// the HTTP status Pyroscope clients expect.
func TestPyroscopeIngest(t *testing.T) {
	e := newPyroEnv(t)
	ctx := context.Background()
	data := corpus.Read(t, "corpus/pprof/go-sha-sort.cpu.pprof")
	from := time.Unix(1795000000, 250_000_000)
	job := &upstream.UploadJob{Name: "shop.cpu{env=prod,__session_id__=5e55,hostname=web-1}", StartTime: from, EndTime: from.Add(10 * time.Second),
		SpyName: "gospy", SampleRate: 100, Units: "samples", AggregationType: "sum", Format: upstream.FormatPprof, Profile: data}

	if errs := push(t, remote.Config{Address: e.url, HTTPHeaders: map[string]string{"Authorization": "Bearer " + e.key}}, job); len(errs) != 0 {
		t.Fatalf("bearer push: %v", errs)
	}
	job2 := *job
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	plain, err := io.ReadAll(zr) // the same profile in other bytes
	if err != nil {
		t.Fatal(err)
	}
	job2.Name, job2.Profile = "shop{env=dev}", plain
	if errs := push(t, remote.Config{Address: e.url, BasicAuthUser: "acme", BasicAuthPassword: e.key}, &job2); len(errs) != 0 {
		t.Fatalf("basic-auth push: %v", errs)
	}
	errs := push(t, remote.Config{Address: e.url, HTTPHeaders: map[string]string{"Authorization": "Bearer fsk_wrong"}}, job)
	if len(errs) != 1 || !strings.Contains(errs[0], "(401)") {
		t.Fatalf("wrong key: %v", errs)
	}

	ps, _, err := e.db.Search(ctx, e.tenant, fleetscope.ProfileFilter{App: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 {
		t.Fatalf("%d profiles, want 2", len(ps))
	}
	byEnv := map[string]*fleetscope.ProfileInfo{}
	for _, p := range ps {
		byEnv[p.Labels["env"]] = p
	}
	p := byEnv["prod"]
	if p == nil || p.Format != "pprof" || p.Host != "web-1" || !maps.Equal(p.Labels, map[string]string{"env": "prod", "hostname": "web-1"}) ||
		!p.StartTime.Equal(from.Truncate(time.Microsecond)) || p.Samples == 0 || p.Timed || p.Filename != "profile.pprof" {
		t.Fatalf("stored: %+v", p)
	}
	if byEnv["dev"] == nil {
		t.Fatalf("basic-auth push not stored: %v", ps)
	}
	// Searches by time span and label find it.
	if found, _, _ := e.db.Search(ctx, e.tenant, fleetscope.ProfileFilter{Labels: map[string]string{"env": "prod"}, Since: from.Add(-time.Second), Until: from.Add(time.Second)}); len(found) != 1 {
		t.Fatalf("search by label and time: %d", len(found))
	}

	// Raw requests: statuses and messages.
	post := func(query, auth string, body []byte, contentType string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, e.url+"/ingest?"+query, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	mp := func(profile []byte) ([]byte, string) {
		var buf bytes.Buffer
		w := multipart.NewWriter(&buf)
		fw, _ := w.CreateFormFile("profile", "profile.pprof")
		fw.Write(profile)
		fw, _ = w.CreateFormFile("sample_type_config", "sample_type_config.json")
		fw.Write([]byte(`{"cpu":{"units":"nanoseconds"}}`))
		w.Close()
		return buf.Bytes(), w.FormDataContentType()
	}
	body, ct := mp(data)
	q := url.Values{"name": {"shop{env=prod,hostname=web-1}"}, "from": {"1795000000250000000"}, "until": {"1795000010"}}.Encode()
	bearer := "Bearer " + e.key
	code, msg := post(q, bearer, body, ct)
	var res struct {
		ID      string
		Created bool
	}
	json.Unmarshal([]byte(msg), &res)
	if code != 200 || res.Created || res.ID != p.ID {
		t.Errorf("same bytes again: %d %s; want 200, created false, id %s", code, msg, p.ID)
	}
	garbage, garbageCT := mp([]byte("garbage"))
	for _, c := range []struct {
		what, query, auth string
		body              []byte
		ct                string
		status            int
		want              string
	}{
		{"no key", q, "", body, ct, 401, "missing API key"},
		{"wrong key", q, "Bearer fsk_nope", body, ct, 401, "invalid API key"},
		{"read-only key", q, "Bearer " + e.readOnly, body, ct, 403, "ingest scope"},
		{"no name", "from=1", bearer, body, ct, 400, "no application name"},
		{"until before from", "name=x&from=20&until=10", bearer, body, ct, 400, "before from"},
		{"unknown format", "name=x&format=jfr", bearer, body, ct, 400, "not supported"},
		{"not a pprof", "name=x", bearer, []byte("--x\r\n"), "multipart/form-data; boundary=x", 400, "multipart"},
		{"garbage profile", "name=x", bearer, garbage, garbageCT, 400, "pprof"},
	} {
		if code, msg := post(c.query, c.auth, c.body, c.ct); code != c.status || !strings.Contains(msg, c.want) {
			t.Errorf("%s: %d %q; want %d %q", c.what, code, msg, c.status, c.want)
		}
	}
	// A raw body in Pyroscope's folded format.
	if code, msg := post("name=folded-app{k=v}&from=1795000000&until=1795000010", bearer, []byte("main;work;spin 7\nmain;idle 3\n"), "text/plain"); code != 200 {
		t.Fatalf("folded body: %d %s", code, msg)
	}
	if found, _, _ := e.db.Search(ctx, e.tenant, fleetscope.ProfileFilter{App: "folded-app"}); len(found) != 1 || found[0].Format != "folded" {
		t.Fatalf("folded body stored as %v", found)
	}
	// Only POST.
	res2, err := http.Get(e.url + "/ingest")
	if err != nil {
		t.Fatal(err)
	}
	res2.Body.Close()
	if res2.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /ingest: %d", res2.StatusCode)
	}
}
