package api

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/ingest"
)

// PyroscopePath is where Pyroscope clients push profiles: pyroscope-go posts
// to ServerAddress + "/ingest".
const PyroscopePath = "/ingest"

// Pyroscope returns the Pyroscope-compatible ingest endpoint, the HTTP API
// that github.com/grafana/pyroscope-go (and other Pyroscope push clients)
// send profiles to: POST /ingest?name=APP{k=v,...}&from=T&until=T&format=pprof
// with a multipart/form-data body whose "profile" part is the pprof file
// (other parts, such as "sample_type_config" and the deprecated
// "previous_profile", are ignored; fleetscope keeps every sample type of the
// pprof as an event). A raw body is read as format=pprof or folded
// ("stack;frames count" lines, Pyroscope's default for raw bodies).
//
// The key is the same as for the Connect API, with the ingest scope: either
// "Authorization: Bearer <key>" (pyroscope-go: HTTPHeaders, or AuthToken) or
// HTTP Basic auth with the key as the password and any user name
// (pyroscope-go: BasicAuthUser, BasicAuthPassword). The tenant comes from
// the key; X-Scope-OrgID may name that tenant or be absent, and naming
// another is refused (403), as on every endpoint (checkOrgID).
//
// The application name is the part of name before "{", less a legacy
// ".cpu"-style profile-type suffix; the labels are those in braces, except
// Pyroscope's reserved "__...__" ones (session id and the like); a
// "hostname" or "host" label also sets the profile's host. from and until
// (Unix time in s, ms, µs or ns, told apart by size, as Pyroscope does) are
// the profile's time span: the profile is placed at from. Answers 200 with
// {"id","created","permalink"}; errors are plain text with the HTTP status
// of the error's code (401, 403, 400, 413, 429, 503). A profile without
// samples (pyroscope-go sends one each period the program was idle) is
// answered 200 {"stored": false} and not stored.
//
// NewPyroscope returns that endpoint: keys checked by auth, profiles stored
// by svc, permalinks under publicURL.
func NewPyroscope(auth *Auth, svc *ingest.Service, publicURL string, log *slog.Logger) http.Handler {
	return &pyroscopeHandler{auth: auth, ingest: svc, publicURL: publicURL, log: log}
}

type pyroscopeHandler struct {
	auth      *Auth
	ingest    *ingest.Service
	publicURL string
	log       *slog.Logger
}

func (h *pyroscopeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "method not allowed: POST profiles here", http.StatusMethodNotAllowed)
		return
	}
	p, err := h.auth.Principal(r, fleetscope.ScopeIngest)
	if err != nil {
		if fleetscope.ErrorCode(err) == fleetscope.EUNAUTHENTICATED {
			w.Header().Set("WWW-Authenticate", `Basic realm="fleetscope", charset="UTF-8"`)
		}
		httpError(w, err)
		return
	}
	q := r.URL.Query()
	app, labels, err := parsePyroscopeName(q.Get("name"))
	if err != nil {
		httpError(w, err)
		return
	}
	now := time.Now()
	from, err := parsePyroscopeTime(q.Get("from"), now)
	if err != nil {
		httpError(w, fleetscope.Errorf(fleetscope.EINVALID, "from: %v", err))
		return
	}
	until, err := parsePyroscopeTime(q.Get("until"), now)
	if err != nil {
		httpError(w, fleetscope.Errorf(fleetscope.EINVALID, "until: %v", err))
		return
	}
	if until.Before(from) {
		httpError(w, fleetscope.Errorf(fleetscope.EINVALID, "until (%s) is before from (%s)", until.Format(time.RFC3339Nano), from.Format(time.RFC3339Nano)))
		return
	}
	if limit := h.ingest.MaxUpload(p); limit > 0 {
		r.Body = http.MaxBytesReader(w, r.Body, limit+1<<20) // the profile part is limited exactly by ingest
	}

	body, filename, inputFormat, err := pyroscopeBody(r, q.Get("format"))
	if err != nil {
		httpError(w, err)
		return
	}
	m := ingest.Meta{App: app, Labels: labels, InputFormat: inputFormat, Filename: filename,
		// pprof has no per-sample times: the profile is the span [from, until).
		SpanStart: from, SpanEnd: until}
	for _, k := range []string{"hostname", "host"} {
		if v := labels[k]; v != "" && m.Host == "" {
			m.Host = v
		}
	}
	info, created, err := h.ingest.Ingest(r.Context(), p, m, body)
	if fleetscope.ErrorCode(err) == fleetscope.EEMPTY {
		// pyroscope-go sends a CPU profile every period, an empty one when
		// the program was idle: nothing to store, and not the client's
		// mistake.
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"stored": false, "reason": err.Error()})
		return
	}
	if err != nil {
		h.log.Log(r.Context(), logLevel(err), "pyroscope ingest failed", "tenant", p.Tenant, "app", app, "code", fleetscope.ErrorCode(err), "err", err)
		httpError(w, err)
		return
	}
	h.log.Info("profile stored", "tenant", p.Tenant, "profile", info.ID, "app", info.App, "samples", info.Samples,
		"bytes", info.SizeBytes, "created", created, "via", "pyroscope", "spy", q.Get("spyName"))
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": info.ID, "created": created, "permalink": permalink(h.publicURL, info.ID)})
}

// pyroscopeBody returns the profile's bytes from a multipart body (its
// "profile" part) or a raw one, with the input format.
func pyroscopeBody(r *http.Request, format string) (io.Reader, string, string, error) {
	inputFormat := ""
	switch strings.ToLower(format) {
	case "", "pprof":
		inputFormat = "pprof"
	case "folded", "collapsed":
		inputFormat = "folded"
	default:
		return nil, "", "", fleetscope.Errorf(fleetscope.EINVALID, "format %q is not supported here (pprof, folded)", format)
	}
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		if format == "" {
			inputFormat = "folded" // Pyroscope's default for a raw body
		}
		return r.Body, "", inputFormat, nil
	}
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, "", "", fleetscope.Errorf(fleetscope.EINVALID, "multipart body: %v", err)
	}
	for range 16 { // a few parts at most: profile, sample_type_config, previous_profile
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, "", "", fleetscope.Errorf(fleetscope.EINVALID, "multipart body: %v", err)
		}
		if part.FormName() == "profile" {
			return part, part.FileName(), inputFormat, nil
		}
		if _, err := io.Copy(io.Discard, io.LimitReader(part, 64<<20)); err != nil {
			return nil, "", "", fleetscope.Errorf(fleetscope.EINVALID, "multipart body: %v", err)
		}
	}
	return nil, "", "", fleetscope.Errorf(fleetscope.EINVALID, `multipart body without a "profile" part`)
}

// legacySuffixes are the profile types old Pyroscope clients appended to
// the application name ("app.cpu{...}").
var legacySuffixes = []string{".cpu", ".alloc_objects", ".alloc_space", ".inuse_objects", ".inuse_space",
	".goroutines", ".mutex_count", ".mutex_duration", ".block_count", ".block_duration", ".wall", ".itimer"}

// parsePyroscopeName splits "app{k=v,k2=v2}" into the app and its labels,
// as Pyroscope's own parser does (no escapes: values hold no ',' or '}').
func parsePyroscopeName(name string) (string, map[string]string, error) {
	app, rest, hasLabels := strings.Cut(name, "{")
	app = strings.TrimSpace(app)
	labels := map[string]string{}
	if hasLabels {
		body, _, closed := strings.Cut(rest, "}")
		if !closed {
			return "", nil, fleetscope.Errorf(fleetscope.EINVALID, "name %q: labels not closed with }", name)
		}
		for _, kv := range strings.Split(body, ",") {
			if strings.TrimSpace(kv) == "" {
				continue
			}
			k, v, ok := strings.Cut(kv, "=")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || k == "" {
				return "", nil, fleetscope.Errorf(fleetscope.EINVALID, "name %q: label %q is not key=value", name, kv)
			}
			if strings.HasPrefix(k, "__") && strings.HasSuffix(k, "__") {
				continue // Pyroscope's reserved labels (__session_id__, __name__)
			}
			labels[k] = v
		}
	}
	if app == "" {
		app = labels["service_name"]
	}
	for _, s := range legacySuffixes {
		if a, ok := strings.CutSuffix(app, s); ok && a != "" {
			app = a
			break
		}
	}
	if app == "" {
		return "", nil, fleetscope.Errorf(fleetscope.EINVALID, "name %q: no application name (want app{key=value,...})", name)
	}
	return app, labels, nil
}

// parsePyroscopeTime reads a Unix time in seconds, milliseconds,
// microseconds or nanoseconds (told apart by magnitude), seconds with a
// fraction, or "now"; empty means now.
func parsePyroscopeTime(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" || s == "now" {
		return now, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		if n < 0 {
			return time.Time{}, fmt.Errorf("%q: negative", s)
		}
		switch {
		case n < 1e11: // seconds until the year 5138
			return time.Unix(n, 0), nil
		case n < 1e14:
			return time.UnixMilli(n), nil
		case n < 1e17:
			return time.UnixMicro(n), nil
		}
		return time.Unix(0, n), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 || f > 1e11 || math.IsNaN(f) {
		return time.Time{}, fmt.Errorf("%q: want a Unix time", s)
	}
	sec, frac := math.Modf(f)
	return time.Unix(int64(sec), int64(frac*1e9)), nil
}
