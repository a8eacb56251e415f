package fleetscope

import (
	"context"
	"errors"
	"fmt"
)

// Error codes. Each is mapped to a Connect code and an HTTP status in
// exactly one place (api/errors.go); clients map them back from there.
const (
	EINVALID         = "invalid"         // the input is malformed or not understood: permanent
	EEMPTY           = "empty"           // the input is well formed but holds no samples: permanent
	ENOTFOUND        = "not_found"       // no such object (or not yours)
	ECONFLICT        = "conflict"        // it exists already, or would collide
	EUNAUTHENTICATED = "unauthenticated" // no key, or a bad one
	EFORBIDDEN       = "forbidden"       // the key lacks the scope
	ETOOLARGE        = "too_large"       // over a size or shape limit: permanent
	ERATELIMITED     = "rate_limited"    // over a rate limit: retry later
	EUNAVAILABLE     = "unavailable"     // a backing service failed: retry later
	ECANCELED        = "canceled"        // the caller gave up
	EINTERNAL        = "internal"        // a bug, or a failure nobody anticipated
)

// Error is an error with a code and a message meant for the user; Err is
// the cause, kept for logs and errors.Is/As, never shown to clients.
type Error struct {
	Code    string
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil && e.Message == "" {
		return e.Err.Error()
	}
	return e.Message
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Errorf returns an *Error with code and a formatted message. A %w verb
// makes its operand the cause.
func Errorf(code, format string, args ...any) *Error {
	err := fmt.Errorf(format, args...)
	return &Error{Code: code, Message: err.Error(), Err: errors.Unwrap(err)}
}

// Wrap returns an *Error with code and message whose cause is err.
func Wrap(err error, code, message string) *Error {
	return &Error{Code: code, Message: message, Err: err}
}

// ErrorCode returns the code of the first *Error in err's chain; context
// cancellation is ECANCELED; anything else EINTERNAL. nil has no code ("").
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ECANCELED
	}
	return EINTERNAL
}

// ErrorMessage returns the user-facing message of err: the first *Error's
// message, or a generic one for errors nobody described.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Error()
	}
	return "internal error"
}
