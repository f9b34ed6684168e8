package bitt

import (
	"bytes"
	"context"
	"strconv"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// Error is a failure the C core reported: its status code and message
// (bindings/ERRORS.md). errors.Is(err, ErrConflict) (and every other
// sentinel) compares codes. An ErrCanceled also unwraps to its context's
// error: errors.Is(err, context.Canceled) or context.DeadlineExceeded.
type Error struct {
	Code    int
	Message string

	causes []error // a cancellation's ctx.Err() (and context.Cause)
}

// Unwrap gives a cancellation's context errors (nil for other errors).
func (e *Error) Unwrap() []error { return e.causes }

func (e *Error) Error() string {
	name := codeNames[e.Code]
	if name == "" {
		name = "status " + strconv.Itoa(e.Code)
	}
	if e.Message == "" {
		return "bitt: " + name
	}
	return "bitt: " + name + ": " + e.Message
}

// Is matches a sentinel (an *Error without a message) of the same code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Code == e.Code
}

// One sentinel per status code of bitt.h; compare with errors.Is.
var (
	ErrNotFound    = &Error{Code: 1}
	ErrInvalid     = &Error{Code: -1}
	ErrNoMemory    = &Error{Code: -2}
	ErrTooLarge    = &Error{Code: -3}
	ErrNotCounter  = &Error{Code: -4}
	ErrOverflow    = &Error{Code: -5}
	ErrConflict    = &Error{Code: -6}
	ErrBackend     = &Error{Code: -7}
	ErrBusy        = &Error{Code: -8}
	ErrSchema      = &Error{Code: -9}
	ErrURL         = &Error{Code: -10}
	ErrCursor      = &Error{Code: -11}
	ErrUsage       = &Error{Code: -12}
	ErrUnsupported = &Error{Code: -13}
	ErrToken       = &Error{Code: -14}
	ErrLeaseLost   = &Error{Code: -15}
	ErrCanceled    = &Error{Code: -16} // a wait ended by its context (or by Close)
)

var codeNames = map[int]string{
	0: "ok", 1: "not found", 2: "exists", 3: "denied", -1: "invalid argument",
	-2: "out of memory", -3: "too large", -4: "not a counter", -5: "overflow",
	-6: "conflict", -7: "backend error", -8: "busy", -9: "schema", -10: "bad URL",
	-11: "bad cursor", -12: "usage", -13: "unsupported", -14: "stale token",
	-15: "lease lost", -16: "canceled",
}

// canceled is the ErrCanceled of a call that ctx ended, with msg (the
// core's message when the core ended the wait); it unwraps to ctx.Err()
// and to context.Cause(ctx) when that differs.
func canceled(ctx context.Context, msg string) *Error {
	e := &Error{Code: ErrCanceled.Code, Message: msg}
	if err := ctx.Err(); err != nil {
		e.causes = []error{err}
		if c := context.Cause(ctx); c != nil && c != err {
			e.causes = append(e.causes, c)
		}
	}
	return e
}

// errRecordBelow: a status at or below it is the address of an error
// record (see bindings/go/bitt_go.i), not a code.
const errRecordBelow = -4096

// statusErr turns a negative status from internal/raw into an *Error,
// reading (and freeing) the error record the failing call made.
func statusErr(rc int) error {
	if rc > errRecordBelow {
		return &Error{Code: rc, Message: raw.Bitt_strerror(rc)}
	}
	buf := make([]byte, 1024)
	code := raw.Bittw_go_error_take(int64(rc), buf)
	if i := bytes.IndexByte(buf, 0); i >= 0 {
		buf = buf[:i]
	}
	return &Error{Code: int(code), Message: string(buf)}
}

// Status splits a raw call's result into its status (>= 0) or its error.
func status(rc int) (int, error) {
	if rc >= 0 {
		return rc, nil
	}
	return rc, statusErr(rc)
}
