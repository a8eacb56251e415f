// Package fleetscope is the domain of the fleetscope profiling service: the
// profile model (samples, a deduplicated frame and stack dictionary, events),
// time ranges, and the one error type with its codes. It imports nothing of
// the project; every other package builds on it.
//
// Data flows one way: api → ingest → store → query → web.
package fleetscope

import (
	"errors"
	"fmt"
)

// Error codes, mapped to transport codes in exactly one place per transport.
const (
	EINVALID  = "invalid"   // the input is malformed or not understood
	ENOTFOUND = "not_found" // no such object (or not yours)
	ECONFLICT = "conflict"
	EINTERNAL = "internal"
)

// Error is an error with a code and a message meant for the user.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return e.Message }

// Errorf returns an *Error with code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, or
// EINTERNAL.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}
