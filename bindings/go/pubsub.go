package bitt

import (
	"context"
	"iter"
	"sync"
	"time"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// PubSub is the publish/subscribe namespace of a store.
type PubSub struct{ s *Store }

// Publish sends data to channel's current subscribers.
func (p *PubSub) Publish(ctx context.Context, channel string, data []byte) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return p.s.done(raw.Bitt_pubsub_publish(p.s.box(), channel, data))
}

// Subscription receives what is published on one channel from the moment
// it was opened. Its methods may be called from several goroutines.
type Subscription struct {
	s     *Store
	mu    sync.Mutex // one C call at a time; guards h
	h     uintptr
	waits waiters // a Next in progress, which Close ends
}

// Subscribe opens a subscription on channel. Close it when done (closing
// the store closes it too).
func (p *PubSub) Subscribe(ctx context.Context, channel string) (*Subscription, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	var h uintptr
	if _, err := p.s.status(raw.Bitt_pubsub_subscribe(p.s.box(), channel, &h)); err != nil {
		return nil, err
	}
	sub := newSubscription(p.s, h)
	p.s.mu.Lock()
	p.s.subs[sub] = struct{}{}
	p.s.mu.Unlock()
	return sub, nil
}

func newSubscription(s *Store, h uintptr) *Subscription {
	return &Subscription{s: s, h: h, waits: waiters{closedMsg: "the subscription is closed"}}
}

// nextWait is one wait of Next in the core; Next waits again after it.
const nextWait = time.Hour

// next waits up to timeout for one message (nil when none came), ended
// early by the cancel token tok.
func (sub *Subscription) next(timeout time.Duration, tok uintptr) (*Message, error) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	_, r, err := sub.s.record(1024, func(scratch []byte) int {
		return raw.Bitt_pubsub_next_cancel(sub.h, ms(timeout), tok, scratch)
	})
	if err != nil {
		return nil, err
	}
	return r.message(), nil
}

// Next waits for the next message until ctx is done: it then ends at once
// with an ErrCanceled for which errors.Is(err, ctx.Err()) holds too, and
// the message not handed out stays for the next call. Closing the
// subscription (or the store) ends it with ErrUsage.
func (sub *Subscription) Next(ctx context.Context) (*Message, error) {
	w, err := beginWait(ctx, &sub.s.waits, &sub.waits)
	if err != nil {
		return nil, err
	}
	defer w.end()
	for {
		m, err := sub.next(nextWait, w.tok)
		if err != nil || m != nil {
			return m, w.result(err)
		}
	}
}

// All iterates over messages as they come until ctx is done or the
// subscription fails: the last element then carries the error (an
// ErrCanceled for ctx, ErrUsage once closed). Leaving the loop early is
// fine: nothing is lost, and no wait is left running.
func (sub *Subscription) All(ctx context.Context) iter.Seq2[*Message, error] {
	return func(yield func(*Message, error) bool) {
		for {
			m, err := sub.Next(ctx)
			if !yield(m, err) || err != nil {
				return
			}
		}
	}
}

// Close closes the subscription; a Next in progress ends at once with
// ErrUsage. Closing twice is fine.
func (sub *Subscription) Close() error {
	sub.waits.close()
	sub.mu.Lock()
	h := sub.h
	sub.h = 0
	sub.mu.Unlock()
	if h != 0 {
		raw.Bitt_pubsub_close(h)
	}
	sub.s.mu.Lock()
	delete(sub.s.subs, sub)
	sub.s.mu.Unlock()
	return nil
}
