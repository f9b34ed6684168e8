package bitt

import (
	"context"
	"errors"
	"sync"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// A waiting call (a dequeue with a wait, a subscription's next) runs in the
// core with a cancel token of its own (bitt_cancel in bitt.h). The token is
// fired when the call's context is done, or when the store or the
// subscription it waits on is closed; the core then ends the wait within
// one wait slice, having leased nothing, and returns BITT_ECANCELED.
// Nothing keeps waiting after the Go call has returned.

// waiters holds the tokens of the waits in progress on one handle, so that
// closing the handle ends them instead of waiting for them.
type waiters struct {
	mu        sync.Mutex
	closed    bool
	closedMsg string // the ErrUsage message of a wait its close ended
	toks      map[uintptr]struct{}
}

// add registers tok; on a closed handle it fires it at once.
func (w *waiters) add(tok uintptr) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		raw.Bitt_cancel_fire(tok)
		return
	}
	if w.toks == nil {
		w.toks = map[uintptr]struct{}{}
	}
	w.toks[tok] = struct{}{}
}

// remove forgets tok: once it returns, close no longer fires it.
func (w *waiters) remove(tok uintptr) {
	w.mu.Lock()
	delete(w.toks, tok)
	w.mu.Unlock()
}

// close marks the handle closed and fires every registered token.
func (w *waiters) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	for tok := range w.toks {
		raw.Bitt_cancel_fire(tok)
	}
}

func (w *waiters) isClosed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.closed
}

// wait is the cancel token of one waiting call.
type wait struct {
	ctx  context.Context
	tok  uintptr
	stop func() bool   // context.AfterFunc's
	done chan struct{} // closed once the AfterFunc has fired the token
	regs []*waiters
}

// beginWait makes the token of a waiting call on the handles of regs,
// fired when ctx is done (already, when ctx is done now: the core then
// ends the call after checking its arguments) or one of them closes. End
// it with end once the call returned.
func beginWait(ctx context.Context, regs ...*waiters) (*wait, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	var tok uintptr // a local: C may be given no pointer into a struct holding Go pointers
	if _, err := status(raw.Bitt_cancel_new(&tok)); err != nil {
		return nil, err
	}
	w := &wait{ctx: ctx, tok: tok, regs: regs}
	if ctx.Done() != nil {
		w.done = make(chan struct{})
		done := w.done
		w.stop = context.AfterFunc(ctx, func() {
			raw.Bitt_cancel_fire(tok)
			close(done)
		})
		if ctx.Err() != nil {
			raw.Bitt_cancel_fire(w.tok) // before the call, not whenever AfterFunc's goroutine runs
		}
	}
	for _, r := range regs {
		r.add(w.tok)
	}
	return w, nil
}

// end frees the token, once nothing can fire it any more.
func (w *wait) end() {
	if w.stop != nil && !w.stop() {
		<-w.done // the AfterFunc runs: let it finish with the token
	}
	for _, r := range w.regs {
		r.remove(w.tok)
	}
	raw.Bitt_cancel_free(w.tok)
}

// result maps a waiting call's error: BITT_ECANCELED is the context's
// ErrCanceled (unwrapping to ctx.Err()), or ErrUsage when a close ended it.
func (w *wait) result(err error) error {
	var e *Error
	if !errors.As(err, &e) || e.Code != ErrCanceled.Code {
		return err
	}
	if w.ctx.Err() != nil {
		return canceled(w.ctx, e.Message)
	}
	for _, r := range w.regs {
		if r.isClosed() {
			return &Error{Code: ErrUsage.Code, Message: r.closedMsg}
		}
	}
	return err
}
