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
	s  *Store
	mu sync.Mutex
	h  uintptr
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
	sub := &Subscription{s: p.s, h: h}
	p.s.mu.Lock()
	p.s.subs[sub] = struct{}{}
	p.s.mu.Unlock()
	return sub, nil
}

// next waits up to timeoutMs for one message (nil when none came).
func (sub *Subscription) next(timeoutMs int64) (*Message, int, error) {
	sub.mu.Lock()
	defer sub.mu.Unlock()
	st, r, err := sub.s.record(1024, func(scratch []byte) int { return raw.Bitt_pubsub_next(sub.h, timeoutMs, scratch) })
	if err != nil {
		return nil, st, err
	}
	return r.message(), st, nil
}

// Next waits for the next message until ctx is done (then it returns ctx's
// error, wrapped). A context without deadline waits until a message comes
// or the subscription is closed.
func (sub *Subscription) Next(ctx context.Context) (*Message, error) {
	far := time.Now().Add(100 * 365 * 24 * time.Hour)
	for {
		if err := ctxErr(ctx); err != nil {
			return nil, err
		}
		m, _, err := sub.next(sliceWait(ctx, far))
		if err != nil || m != nil {
			return m, err
		}
	}
}

// All iterates over messages until ctx is done or the subscription fails;
// the last element then carries the error.
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

// Close closes the subscription; a Next in progress ends with an error.
// Closing twice is fine.
func (sub *Subscription) Close() error {
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
