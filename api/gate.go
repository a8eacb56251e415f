package api

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"connectrpc.com/connect"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
)

// GateOptions bound what one key, and the server, may have in flight.
type GateOptions struct {
	// UploadsPerKey and Uploads bound concurrent uploads (streamed or
	// not) of one key and of the whole server; BrowserUploads bounds the
	// one-message uploads, which are read whole into memory.
	UploadsPerKey, Uploads, BrowserUploads int
	// BodyIdle is how long a request body may send nothing before the
	// request is cut off.
	BodyIdle time.Duration
	// Log, if set, gets a debug line for each upload admitted, with the
	// key's uploads in flight (operators and tests see the bound work).
	Log *slog.Logger
}

// DefaultGate suits a server of a few cores.
var DefaultGate = GateOptions{UploadsPerKey: 8, Uploads: 64, BrowserUploads: 4, BodyIdle: 30 * time.Second}

// Gate authenticates Connect requests before their body is read (no key,
// no work: nothing is read, inflated or buffered for a stranger), bounds
// concurrent uploads per key and per server (beyond them: ERATELIMITED at
// once, the connection closed), and cuts off request bodies that stall.
// Requests it refuses get a Connect error in the caller's protocol. The
// interceptor (Auth.Interceptor) still checks every call behind it.
func (a *Auth) Gate(next http.Handler, o GateOptions) http.Handler {
	g := &gate{auth: a, next: next, o: o, errw: connect.NewErrorWriter(), perKey: map[string]int{}}
	return g
}

type gate struct {
	auth *Auth
	next http.Handler
	o    GateOptions
	errw *connect.ErrorWriter

	mu             sync.Mutex
	perKey         map[string]int
	uploads        int
	browserUploads int
}

func (g *gate) refuse(w http.ResponseWriter, r *http.Request, err error) {
	w.Header().Set("Connection", "close") // free the connection: its body is not read
	g.errw.Write(w, r, ConnectError(err))
}

func (g *gate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	scope, ok := Scopes[r.URL.Path]
	if !ok || scope == Public {
		g.next.ServeHTTP(w, r)
		return
	}
	p, err := g.auth.principalFor(r.Context(), r.Header, scope)
	if err != nil {
		g.refuse(w, r, err)
		return
	}
	if scope == fleetscope.ScopeIngest {
		browser := r.URL.Path == fleetscopev1connect.IngestServiceUploadFileProcedure
		n, err := g.acquire(p.KeyID, browser)
		if err != nil {
			g.refuse(w, r, err)
			return
		}
		defer g.release(p.KeyID, browser)
		if g.o.Log != nil {
			g.o.Log.Debug("upload admitted", "procedure", r.URL.Path, "key", p.KeyID, "key_in_flight", n)
		}
	}
	if g.o.BodyIdle > 0 && r.Body != nil {
		r.Body = &idleBody{ReadCloser: r.Body, rc: http.NewResponseController(w), idle: g.o.BodyIdle}
	}
	g.next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), principalKey{}, p)))
}

// acquire takes an upload's place; it returns the key's uploads in flight
// with this one.
func (g *gate) acquire(key string, browser bool) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.o.UploadsPerKey > 0 && g.perKey[key] >= g.o.UploadsPerKey:
		return 0, fleetscope.Errorf(fleetscope.ERATELIMITED, "this key has %d uploads in flight, the most allowed: retry when one finishes", g.perKey[key])
	case g.o.Uploads > 0 && g.uploads >= g.o.Uploads:
		return 0, fleetscope.Errorf(fleetscope.ERATELIMITED, "the server has %d uploads in flight, the most it takes: retry later", g.uploads)
	case browser && g.o.BrowserUploads > 0 && g.browserUploads >= g.o.BrowserUploads:
		return 0, fleetscope.Errorf(fleetscope.ERATELIMITED, "the server has %d one-message uploads in flight, the most it takes: retry later (or stream the upload)", g.browserUploads)
	}
	g.perKey[key]++
	g.uploads++
	if browser {
		g.browserUploads++
	}
	return g.perKey[key], nil
}

func (g *gate) release(key string, browser bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.perKey[key]--; g.perKey[key] <= 0 {
		delete(g.perKey, key)
	}
	g.uploads--
	if browser {
		g.browserUploads--
	}
}

// idleBody cuts a request body off when nothing arrives for idle: each
// read moves the connection's (or HTTP/2 stream's) read deadline on.
type idleBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	idle time.Duration
}

func (b *idleBody) Read(p []byte) (int, error) {
	b.rc.SetReadDeadline(time.Now().Add(b.idle)) // best effort: not every connection supports it
	return b.ReadCloser.Read(p)
}
