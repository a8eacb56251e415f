package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"runtime/debug"
	"strings"
	"syscall"

	"connectrpc.com/connect"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/api"
	"github.com/fleetscope/fleetscope/api/gen/fleetscope/v1/fleetscopev1connect"
)

// client talks to the server at FLEETSCOPE_URL with FLEETSCOPE_API_KEY.
type client struct {
	base   string
	ingest fleetscopev1connect.IngestServiceClient
	query  fleetscopev1connect.QueryServiceClient
	fleet  fleetscopev1connect.FleetServiceClient
	admin  fleetscopev1connect.AdminServiceClient
}

func newClient() (*client, error) {
	base, key, err := clientEnv()
	if err != nil {
		return nil, err
	}
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		// A client command lives for one answer: collecting garbage before
		// its heap reaches 256 MiB would only delay it (the whole benchmark
		// flame graph, folded: 4 ms of 38).
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(256 << 20)
	}
	hc, uc := api.HTTPClient(base), api.UnaryHTTPClient()
	opts := []connect.ClientOption{connect.WithInterceptors(api.Bearer(key)), api.ProtoCodec()}
	if loopback(base) {
		// No network to save: gzip would only cost time at both ends (the
		// whole benchmark flame graph: 8 of its 20 ms).
		opts = append(opts, connect.WithAcceptCompression("gzip", nil, nil))
	}
	return &client{
		base:   base,
		ingest: fleetscopev1connect.NewIngestServiceClient(hc, base, opts...),
		query:  fleetscopev1connect.NewQueryServiceClient(uc, base, opts...),
		fleet:  fleetscopev1connect.NewFleetServiceClient(uc, base, opts...),
		admin:  fleetscopev1connect.NewAdminServiceClient(uc, base, opts...),
	}, nil
}

// loopback reports whether a server URL names this machine.
func loopback(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// permalink is the dashboard URL of a profile.
func (c *client) permalink(id string) string { return c.base + "/p/" + id }

// keyHint says where API keys come from, for errors about a missing or bad one.
const keyHint = "keys come from fleetscope key create --tenant NAME --scope ingest,read (on the database), fleetscope admin create-key (an admin key), or .data/api-key after make run"

// remoteErr turns a Connect error into a one-line fleetscope error. An
// error that no fleetscope server sent (see notFleetscope) names
// FLEETSCOPE_URL: a server that cannot be reached, or one that is not
// fleetscope.
func remoteErr(err error) error {
	if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
		// What a server that speaks HTTP/1 only does to fleetscope's
		// HTTP/2 stream, at times before its answer can be read.
		return fmt.Errorf("the server at %s (FLEETSCOPE_URL) closed the connection while the request was sent: it is not a fleetscope server, or not its API's address, or it went away: %v", serverURL(), err)
	}
	var ce *connect.Error
	if err == nil || !errors.As(err, &ce) {
		return err
	}
	if !connect.IsWireError(err) {
		switch {
		case ce.Code() == connect.CodeCanceled || ce.Code() == connect.CodeDeadlineExceeded:
		case unreachable(err):
			return fmt.Errorf("server unavailable: no server answers at %s (FLEETSCOPE_URL): %s", serverURL(), ce.Message())
		case notFleetscope(ce):
			said := fmt.Sprintf("it answered %q", ce.Message())
			if strings.Contains(ce.Message(), "frame too large") {
				said = `it speaks HTTP/1 only, where fleetscope speaks HTTP/2 ("http2: frame too large")`
			}
			return fmt.Errorf("the server at %s (FLEETSCOPE_URL) is not a fleetscope server, or not its API's address: %s", serverURL(), said)
		}
	}
	err = api.FromConnect(err)
	switch fleetscope.ErrorCode(err) {
	case fleetscope.EUNAVAILABLE:
		return fmt.Errorf("server unavailable: %s (FLEETSCOPE_URL=%s)", ce.Message(), serverURL())
	case fleetscope.EUNAUTHENTICATED:
		return fmt.Errorf("%s (FLEETSCOPE_API_KEY): %s", ce.Message(), keyHint)
	}
	return err
}

// unreachable reports whether a call failed for want of a server: the
// connection refused, the name not found, the address unroutable.
func unreachable(err error) bool {
	var op *net.OpError
	var dns *net.DNSError
	return errors.As(err, &dns) || errors.As(err, &op) && op.Op == "dial"
}

// notFleetscope reports whether an error that no Connect handler sent
// came from something other than a fleetscope server: an HTTP status
// without a Connect error ("405 Method Not Allowed", "501 Unsupported
// method ('POST')"), an answer of another type, HTTP/1 where fleetscope
// speaks HTTP/2 ("http2: frame too large"), plain HTTP to https://.
func notFleetscope(ce *connect.Error) bool {
	msg := ce.Message()
	if len(msg) > 4 && msg[3] == ' ' && msg[0] >= '1' && msg[0] <= '5' && msg[1] >= '0' && msg[1] <= '9' && msg[2] >= '0' && msg[2] <= '9' {
		return true // "405 Method Not Allowed": the status line, no Connect error
	}
	for _, s := range []string{"invalid content-type", "frame too large", "client conn could not be established", "looked like an HTTP/1.1 header", "malformed HTTP",
		"server gave HTTP response to HTTPS client", "first record does not look like a TLS handshake", "unexpected content-type"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// parseLabels reads --label k=v flags.
func parseLabels(kv []string) (map[string]string, error) {
	out := map[string]string{}
	for _, s := range kv {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return nil, usageError{fmt.Errorf("--label %q: want key=value", s)}
		}
		out[k] = v
	}
	return out, nil
}
