package api

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"

	"connectrpc.com/connect"
)

// HTTPClient is the HTTP client for Connect clients of a fleetscope server at
// baseURL: for http:// URLs it speaks cleartext HTTP/2, so client streams
// (uploads) flow both ways.
func HTTPClient(baseURL string) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if strings.HasPrefix(baseURL, "http://") {
		p := new(http.Protocols)
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = p
		tr.DialTLSContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
			return nil, errors.New("TLS dial on an http:// URL")
		}
	}
	return &http.Client{Transport: tr}
}

// Bearer is a client interceptor that sends an API key as
// "Authorization: Bearer <key>" on every call, unary or streaming.
type Bearer string

var _ connect.Interceptor = Bearer("")

func (b Bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b Bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return conn
	}
}

func (b Bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}
