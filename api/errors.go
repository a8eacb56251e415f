package api

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"connectrpc.com/connect"

	"github.com/fleetscope/fleetscope"
)

// transport is how one fleetscope error code travels: its Connect code
// and its HTTP status. This table is the only place codes are mapped.
type transport struct {
	connect connect.Code
	http    int
}

var codes = map[string]transport{
	fleetscope.EINVALID:         {connect.CodeInvalidArgument, http.StatusBadRequest},
	fleetscope.EEMPTY:           {connect.CodeInvalidArgument, http.StatusBadRequest},
	fleetscope.ENOTFOUND:        {connect.CodeNotFound, http.StatusNotFound},
	fleetscope.ECONFLICT:        {connect.CodeAlreadyExists, http.StatusConflict},
	fleetscope.EUNAUTHENTICATED: {connect.CodeUnauthenticated, http.StatusUnauthorized},
	fleetscope.EFORBIDDEN:       {connect.CodePermissionDenied, http.StatusForbidden},
	fleetscope.ETOOLARGE:        {connect.CodeResourceExhausted, http.StatusRequestEntityTooLarge},
	fleetscope.ERATELIMITED:     {connect.CodeResourceExhausted, http.StatusTooManyRequests},
	fleetscope.EUNAVAILABLE:     {connect.CodeUnavailable, http.StatusServiceUnavailable},
	fleetscope.ECANCELED:        {connect.CodeCanceled, 499},
	fleetscope.EINTERNAL:        {connect.CodeInternal, http.StatusInternalServerError},
}

// CodeHeader carries the fleetscope error code beside the Connect code
// (several fleetscope codes share one Connect code: ETOOLARGE and
// ERATELIMITED are both ResourceExhausted), so clients decide by code.
const CodeHeader = "Fleetscope-Error-Code"

// ConnectError turns any error into a Connect error: fleetscope errors by
// the table, with their message; Connect errors as they are; deadlines as
// DeadlineExceeded; anything else Internal, without its text.
func ConnectError(err error) error {
	if err == nil {
		return nil
	}
	var ce *connect.Error
	if errors.As(err, &ce) {
		return ce
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return connect.NewError(connect.CodeDeadlineExceeded, errors.New("deadline exceeded"))
	}
	code := fleetscope.ErrorCode(err)
	t, ok := codes[code]
	if !ok {
		code, t = fleetscope.EINTERNAL, codes[fleetscope.EINTERNAL]
	}
	out := connect.NewError(t.connect, errors.New(fleetscope.ErrorMessage(err)))
	out.Meta().Set(CodeHeader, code)
	return out
}

// codeOf returns the fleetscope code of a Connect error: the one sent
// beside it, else the first code of the table with its Connect code.
func codeOf(ce *connect.Error) string {
	if code := ce.Meta().Get(CodeHeader); code != "" {
		if _, ok := codes[code]; ok {
			return code
		}
	}
	switch ce.Code() {
	case connect.CodeDeadlineExceeded, connect.CodeAborted:
		return fleetscope.EUNAVAILABLE
	}
	for _, c := range []string{fleetscope.EINVALID, fleetscope.ENOTFOUND, fleetscope.ECONFLICT, fleetscope.EUNAUTHENTICATED,
		fleetscope.EFORBIDDEN, fleetscope.ETOOLARGE, fleetscope.EUNAVAILABLE, fleetscope.ECANCELED} {
		if codes[c].connect == ce.Code() {
			return c
		}
	}
	return fleetscope.EINTERNAL
}

// FromConnect maps a Connect error back to a fleetscope error (clients).
func FromConnect(err error) error {
	var ce *connect.Error
	if !errors.As(err, &ce) {
		return err
	}
	return &fleetscope.Error{Code: codeOf(ce), Message: ce.Message(), Err: err}
}

// httpError writes err as plain text with its HTTP status (plain HTTP
// endpoints), the fleetscope code in CodeHeader.
func httpError(w http.ResponseWriter, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		err = fleetscope.Wrap(err, fleetscope.ETOOLARGE, fmt.Sprintf("request body larger than the limit of %d bytes", mbe.Limit))
	}
	code, msg := fleetscope.ErrorCode(err), fleetscope.ErrorMessage(err)
	if ce := new(connect.Error); errors.As(err, &ce) {
		code, msg = codeOf(ce), ce.Message()
	}
	w.Header().Set(CodeHeader, code)
	http.Error(w, msg, codes[code].http)
}

// HTTPStatus makes the HTTP status of every error answer the table's for
// its fleetscope code, whatever wrote it. The Connect protocol answers a
// unary call's error with the status of its Connect code, so ETOOLARGE
// (ResourceExhausted) would be 429 like ERATELIMITED; HTTPStatus turns it
// into the table's 413. An error answer of 429 without a fleetscope code
// can only be Connect's own ResourceExhausted (a message larger than the
// handler's read limit): it is ETOOLARGE, and answers 413 with the code.
// Answers with a status below 400 (gRPC's, Connect streams') are left as
// they are.
func HTTPStatus(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&statusWriter{ResponseWriter: w}, r)
	})
}

type statusWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *statusWriter) WriteHeader(status int) {
	if !w.wrote && status >= 400 {
		h := w.Header()
		code := h.Get(CodeHeader)
		if code == "" && status == http.StatusTooManyRequests && strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			code = fleetscope.ETOOLARGE
			h.Set(CodeHeader, code)
		}
		if t, ok := codes[code]; ok {
			status = t.http
		}
	}
	w.wrote = true
	w.ResponseWriter.WriteHeader(status)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Flush and Unwrap keep what the wrapped writer can do (streaming,
// http.ResponseController's deadlines).
func (w *statusWriter) Flush() {
	w.wrote = true
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// logLevel is how loud a failed request is logged: errors for the
// server's bugs, warnings for failed backing services, debug for the
// client's mistakes.
func logLevel(err error) slog.Level {
	switch fleetscope.ErrorCode(err) {
	case fleetscope.EINTERNAL:
		return slog.LevelError
	case fleetscope.EUNAVAILABLE:
		return slog.LevelWarn
	}
	return slog.LevelDebug
}

// ErrorInterceptor returns the interceptor that handles handler errors:
// see errorInterceptor. It must run outside (be listed before) the others.
func ErrorInterceptor(log *slog.Logger) connect.Interceptor { return errorInterceptor{log} }

// errorInterceptor is where handler errors are handled: logged once, with
// their cause when they are the server's fault, and turned into Connect
// errors by the table. Handlers return domain errors and never build
// transport errors themselves.
type errorInterceptor struct{ log *slog.Logger }

func (e errorInterceptor) handled(ctx context.Context, procedure string, err error) error {
	if err == nil {
		return nil
	}
	if e.log != nil {
		attrs := []any{"procedure", procedure, "code", fleetscope.ErrorCode(err), "err", err}
		if p, ok := PrincipalFrom(ctx); ok {
			attrs = append(attrs, "tenant", p.Tenant)
		}
		e.log.Log(ctx, logLevel(err), "request failed", attrs...)
	}
	return ConnectError(err)
}

func (e errorInterceptor) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		res, err := next(ctx, req)
		if req.Spec().IsClient {
			return res, err
		}
		return res, e.handled(ctx, req.Spec().Procedure, err)
	}
}

func (e errorInterceptor) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return next
}

func (e errorInterceptor) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return func(ctx context.Context, conn connect.StreamingHandlerConn) error {
		return e.handled(ctx, conn.Spec().Procedure, next(ctx, conn))
	}
}
