package api

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
)

// GateOptions bound what one key, and the server, may have in flight.
type GateOptions struct {
	// UploadsPerKey, UploadsPerTenant and Uploads bound concurrent
	// uploads (streamed or not) of one key, of one tenant (its share of
	// the server's, whatever its keys) and of the whole server;
	// BrowserUploads bounds the one-message uploads, which are read whole
	// into memory.
	UploadsPerKey, UploadsPerTenant, Uploads, BrowserUploads int
	// BodyIdle is how long a request body may send nothing before the
	// request is cut off; once a body has been waited for that long in
	// all, it must also have come at MinBodyRate bytes a second or more
	// (a trickle that keeps a place without ever sending is cut off).
	BodyIdle    time.Duration
	MinBodyRate int64
	// ReadBodyBytes and ReadBodyTime bound the body of a request that is
	// not an upload (queries, admin): a few hundred bytes of selection,
	// never more than this many bytes, all within this time.
	ReadBodyBytes int64
	ReadBodyTime  time.Duration
	// Log, if set, gets a debug line for each upload admitted, with the
	// key's uploads in flight (operators and tests see the bound work).
	Log *slog.Logger
}

// DefaultGate suits a server of a few cores.
var DefaultGate = GateOptions{UploadsPerKey: 8, UploadsPerTenant: 16, Uploads: 64, BrowserUploads: 4, BodyIdle: 30 * time.Second,
	MinBodyRate: 1024, ReadBodyBytes: 64 << 10, ReadBodyTime: 10 * time.Second}

// Gate authenticates Connect requests, and uploads to the Pyroscope ingest
// endpoint (PyroscopePath) and OTLP/HTTP (OTLPPath), before their body is read (no key, no work:
// nothing is read, inflated or buffered for a stranger), bounds concurrent
// uploads per key, per tenant and per server, the Pyroscope ones with the
// rest (beyond them: ERATELIMITED at once, the connection closed), cuts off
// upload bodies that stall or trickle, and bounds other requests' bodies in
// size and time. Requests it refuses get a Connect error in the caller's
// protocol (Pyroscope's: plain text and the HTTP status; OTLP/HTTP's: a
// google.rpc.Status; OTLP gRPC's rate limits carry RetryInfo). The interceptor
// (Auth.Interceptor) and the Pyroscope handler still check every call
// behind it.
func (a *Auth) Gate(next http.Handler, o GateOptions) http.Handler {
	g := &gate{auth: a, next: next, o: o, errw: connect.NewErrorWriter(), perKey: map[string]int{}, perTenant: map[int64]int{}}
	return g
}

type gate struct {
	auth *Auth
	next http.Handler
	o    GateOptions
	errw *connect.ErrorWriter

	mu             sync.Mutex
	perKey         map[string]int
	perTenant      map[int64]int
	uploads        int
	browserUploads int
}

func (g *gate) refuse(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Connection", "close") // free the connection: its body is not read
	if r.URL.Path == OTLPPath {
		otlpHTTPError(w, err, 0)
		return
	}
	if r.URL.Path == OTLPProcedure {
		err = otlpError(err)
	}
	if r.URL.Path == PyroscopePath {
		if fleetscope.ErrorCode(err) == fleetscope.EUNAUTHENTICATED {
			w.Header().Set("WWW-Authenticate", `Basic realm="fleetscope", charset="UTF-8"`)
		}
		httpError(w, err)
		return
	}
	g.errw.Write(w, r, ConnectError(err))
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	scope, ok := Scopes[r.URL.Path]
	if (r.URL.Path == PyroscopePath || r.URL.Path == OTLPPath) && r.Method == http.MethodPost {
		scope, ok = fleetscope.ScopeIngest, true // an upload like the rest
	}
	if !ok || scope == Public {
		g.next.ServeHTTP(w, r)
		return
	}
	p, err := g.auth.principalFor(r.Context(), r.Header, scope)
	if err != nil {
		g.refuse(w, r, err)
		return
	}
	rc := http.NewResponseController(w)
	switch {
	case scope == fleetscope.ScopeIngest:
		browser := r.URL.Path == fleetscopev1connect.IngestServiceUploadFileProcedure
		n, err := g.acquire(p, browser)
		if err != nil {
			g.refuse(w, r, err)
			return
		}
		defer g.release(p, browser)
		if g.o.Log != nil {
			g.o.Log.Debug("upload admitted", "procedure", r.URL.Path, "key", p.KeyID, "key_in_flight", n)
		}
		if g.o.BodyIdle > 0 && r.Body != nil {
			r.Body = &idleBody{ReadCloser: r.Body, rc: rc, idle: g.o.BodyIdle, minRate: g.o.MinBodyRate}
		}
	case r.Body != nil:
		// A query's body is a selection: small, and sent at once. Connect
		// answers a body over the bound as too large.
		if g.o.ReadBodyBytes > 0 {
			r.Body = http.MaxBytesReader(w, r.Body, g.o.ReadBodyBytes)
		}
		if g.o.ReadBodyTime > 0 {
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc, deadline: time.Now().Add(g.o.ReadBodyTime), within: g.o.ReadBodyTime}
		}
	}
	g.next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
}

// acquire takes an upload's place; it returns the key's uploads in flight
// with this one.
func (g *gate) acquire(p fleetscope.Principal, browser bool) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	key := p.KeyID
	switch {
	case g.o.UploadsPerKey > 0 && g.perKey[key] >= g.o.UploadsPerKey:
		return 0, fleetscope.Errorf(fleetscope.ERATELIMITED, "this key has %d uploads in flight, the most allowed: retry when one finishes", g.perKey[key])
	case g.o.UploadsPerTenant > 0 && g.perTenant[p.TenantID] >= g.o.UploadsPerTenant:
		return 0, fleetscope.Errorf(fleetscope.ERATELIMITED, "this tenant has %d uploads in flight, its share of the server's: retry when one finishes", g.perTenant[p.TenantID])
	case g.o.Uploads > 0 && g.uploads >= g.o.Uploads:
		return 0, fleetscope.Errorf(fleetscope.ERATELIMITED, "the server has %d uploads in flight, the most it takes: retry later", g.uploads)
	case browser && g.o.BrowserUploads > 0 && g.browserUploads >= g.o.BrowserUploads:
		return 0, fleetscope.Errorf(fleetscope.ERATELIMITED, "the server has %d one-message uploads in flight, the most it takes: retry later (or stream the upload)", g.browserUploads)
	}
	g.perKey[key]++
	g.perTenant[p.TenantID]++
	g.uploads++
	if browser {
		g.browserUploads++
	}
	return g.perKey[key], nil
}

func (g *gate) release(p fleetscope.Principal, browser bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perKey[p.KeyID]--; g.perKey[p.KeyID] <= 0 {
		delete(g.perKey, p.KeyID)
	}
	if g.perTenant[p.TenantID]--; g.perTenant[p.TenantID] <= 0 {
		delete(g.perTenant, p.TenantID)
	}
	g.uploads--
	if browser {
		g.browserUploads--
	}
}

// idleBody cuts a request body off when nothing arrives for idle: each
// read moves the connection's (or HTTP/2 stream's) read deadline on. Once
// the body has been waited for idle in all (time spent inside Read, not
// the server's own work between reads), it must have come at minRate
// bytes a second or more, or the upload is cut off as too slow. Either
// cut-off is ERATELIMITED.
type idleBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	idle    time.Duration
	minRate int64
	n       int64         // bytes read
	waited  time.Duration // time spent waiting for them
	slow    error         // once cut off, every later read fails too
}

func (b *idleBody) Read(p []byte) (int, error) {
	if b.slow != nil {
		return 0, b.slow
	}
	b.rc.SetReadDeadline(time.Now().Add(b.idle)) // best effort: not every connection supports it
	t := time.Now()
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.rc.SetReadDeadline(time.Time{}) // the body is over: the answer may take its time
	}
	b.n += int64(n)
	b.waited += time.Since(t)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// Stalled. The deadline stays: the server reads no more of this
		// body (it would wait for the rest before answering) and closes
		// the connection after the answer.
		b.slow = cutOff(fleetscope.Errorf(fleetscope.ERATELIMITED, "the upload's body sent nothing for %s: cut off (send it faster, or retry later)", b.idle))
		return n, b.slow
	}
	if err == nil && b.minRate > 0 && b.waited >= b.idle && float64(b.n) < float64(b.minRate)*b.waited.Seconds() {
		b.slow = cutOff(fleetscope.Errorf(fleetscope.ERATELIMITED, "the upload's body arrived at %.0f bytes a second, slower than the %d the server takes: cut off (send it faster, or retry later)",
			float64(b.n)/b.waited.Seconds(), b.minRate))
		return n, b.slow
	}
	return n, err
}

// deadlineBody cuts a request body off unless it has all come by
// deadline (ERATELIMITED); once it has, the connection has no read deadline
// again, so the answer may take its time.
type deadlineBody struct {
	io.ReadCloser
	rc       *http.ResponseController
	deadline time.Time
	within   time.Duration // the time a body was given, for the message
	late     error         // once cut off, every later read fails too
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if b.late != nil {
		return 0, b.late
	}
	b.rc.SetReadDeadline(b.deadline) // best effort: not every connection supports it
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.rc.SetReadDeadline(time.Time{})
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The deadline stays: the server reads no more of this body (it
		// would wait for the rest before answering) and closes the
		// connection after the answer.
		b.late = cutOff(fleetscope.Errorf(fleetscope.ERATELIMITED, "the request's body did not arrive within %s: cut off (a query's body is a small selection, sent at once)", b.within))
		return n, b.late
	}
	return n, err
}

// cutOff returns a body's cut-off error as a Connect error carrying its
// fleetscope code, with the error itself beneath it. Connect answers a
// body's read error that is a Connect error as it is; any other, once the
// failed read has canceled the connection's context (HTTP/1.1), it would
// answer as Canceled. The Pyroscope and OTLP handlers find the fleetscope
// error beneath.
func cutOff(err error) error {
	code := fleetscope.ErrorCode(err)
	ce := connect.NewError(codes[code].connect, err)
	ce.Meta().Set(CodeHeader, code)
	return ce
}
