// Package bitt is the Go binding of bitt: one durable state core (KV with
// TTL and atomic commits, a work queue, leases, an outbox, pubsub, rate
// budgets and schedules) over memory, SQLite, PostgreSQL and Redis.
//
// It is a thin layer over the C library (linked through pkg-config): every
// rule is the core's. A *Store is safe for use by many goroutines.
//
// Units: every duration is a time.Duration (sent to the core in whole
// milliseconds, a fraction rounded up) and every absolute time a
// time.Time (UTC, millisecond precision, on the store's clock); a zero
// time.Time is "none" where the core has none (an entry that never
// expires) and "now" where the core takes 0 for now.
//
// Methods take a context: a done context fails a call before it starts,
// and the waits (Queue.Dequeue and DequeueTopics with a Wait,
// Queue.Consume, Subscription.Next and All) end as soon as it is done, through a cancel
// token of the core (bitt_cancel), having leased nothing. Cancellation
// errors satisfy errors.Is(err, ErrCanceled) and errors.Is(err, ctx.Err()).
// A call already inside the core that does not wait is not interrupted.
package bitt

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// Kind is the tag a stored value carries (bindings/VALUES.md).
type Kind int

const (
	KindBytes   Kind = 0
	KindJSON    Kind = 1
	KindCounter Kind = 2
)

// Version is the version of the loaded C library ("0.4.0").
func Version() string { return raw.Bitt_version() }

// handle owns the C box; its cleanup frees the box once neither the Store
// nor a call in flight can reach it (a safety net: call Close).
type handle struct {
	box    uintptr
	closed atomic.Bool
}

// Store is an open store. Close it when done.
type Store struct {
	h *handle

	KV        *KV
	Queue     *Queue
	Leases    *Leases
	Outbox    *Outbox
	PubSub    *PubSub
	Budgets   *Budgets
	Schedules *Schedules
	Clock     *Clock

	mu      sync.Mutex
	subs    map[*Subscription]struct{}
	workers map[*Worker]struct{} // started and not stopped: Close stops them

	waits waiters // the cancel tokens of waits in progress (fired by Close)

	comb *combiner // KV calls of many goroutines in one call (Redis, PostgreSQL gets)
}

// Open opens a store: "memory:", "sqlite:PATH", "postgres://...",
// "redis://..." (options as a query string, see the README).
func Open(url string) (*Store, error) {
	var box uintptr
	if _, err := status(raw.Bittw_open(url, &box)); err != nil {
		return nil, err
	}
	h := &handle{box: box}
	runtime.SetFinalizer(h, func(h *handle) { raw.Bittw_free(h.box) })
	s := &Store{h: h, subs: map[*Subscription]struct{}{}, workers: map[*Worker]struct{}{}, waits: waiters{closedMsg: "the store is closed"}}
	s.KV = &KV{s}
	s.Queue = &Queue{s}
	s.Leases = &Leases{s}
	s.Outbox = &Outbox{s}
	s.PubSub = &PubSub{s}
	s.Budgets = &Budgets{s}
	s.Schedules = &Schedules{s}
	s.Clock = &Clock{s}
	s.comb = newCombiner(s, s.Backend())
	return s, nil
}

// Close closes the store's subscriptions and the store. It first stops its
// workers at once (as Stop with a done context: the deliveries they hold
// are given back). It ends the waits in progress at once (they fail with
// ErrUsage, "the store is closed") and waits for other calls in flight.
// Later calls fail with ErrUsage. Closing twice is fine.
func (s *Store) Close() error {
	s.mu.Lock()
	workers := make([]*Worker, 0, len(s.workers))
	for w := range s.workers {
		workers = append(workers, w)
	}
	s.mu.Unlock()
	now, cancel := context.WithCancel(context.Background())
	cancel()
	for _, w := range workers {
		w.Stop(now)
	}
	s.waits.close() // a wait in progress holds the box: end it first
	s.mu.Lock()
	subs := make([]*Subscription, 0, len(s.subs))
	for sub := range s.subs {
		subs = append(subs, sub)
	}
	s.mu.Unlock()
	for _, sub := range subs {
		sub.Close()
	}
	if s.h.closed.CompareAndSwap(false, true) {
		raw.Bittw_close(s.h.box)
	}
	runtime.KeepAlive(s.h)
	return nil
}

// Backend names the store's backend: "memory", "sqlite", "postgres", "redis"
// ("" once closed).
func (s *Store) Backend() string {
	b := raw.Bitt_store_backend(s.h.box)
	runtime.KeepAlive(s.h)
	return b
}

// Migrate creates or upgrades the schema (Open already does).
func (s *Store) Migrate(ctx context.Context) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return s.done(raw.Bitt_store_migrate(s.h.box))
}

// box is the C box for one call; the caller ends with s.done or s.status,
// which keep the handle alive until the call has returned.
func (s *Store) box() uintptr { return s.h.box }

func (s *Store) status(rc int) (int, error) {
	runtime.KeepAlive(s.h)
	return status(rc)
}

func (s *Store) done(rc int) error {
	_, err := s.status(rc)
	return err
}

// ctxErr is the error of a call whose ctx is done before it starts: an
// ErrCanceled that unwraps to ctx.Err().
func ctxErr(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return canceled(ctx, err.Error())
	}
	return nil
}

// ---- options ----------------------------------------------------------

// Option adjusts a write: TTL, WithKind, Delay, MaxAttempts, Dedup,
// Priority; an ack: AckResult, AckValue; a schedule: Cron, ScheduleTopic
// (and MaxAttempts, Priority of its messages). A call ignores the options
// that are not its own.
type Option func(*options)

type options struct {
	ttl         int64 // ms, as the core takes it
	kind        Kind
	delay       int64 // ms
	delaySet    bool
	maxAttempts uint32
	dedup       []byte
	priority    int32

	// an ack's result (retention.go)
	result     []byte
	resultKind Kind
	resultSet  bool
	resultErr  error

	// a schedule's (schedule_set.go): nil when not given
	cron, stopic *string
}

func collect(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// ms converts a duration to whole milliseconds, rounding a positive
// fraction up (a 1 µs TTL must not mean "no expiry"). A negative one stays
// negative, for the core to refuse.
func ms(d time.Duration) int64 {
	if d > 0 {
		return int64((d-1)/time.Millisecond) + 1
	}
	return int64(d / time.Millisecond)
}

// durationOf is a duration in ms from the core.
func durationOf(msec int64) time.Duration { return time.Duration(msec) * time.Millisecond }

// timeOf is a time in ms on the store's clock; 0, the core's "none", is
// the zero time.Time.
func timeOf(msec int64) time.Time {
	if msec == 0 {
		return time.Time{}
	}
	return time.UnixMilli(msec).UTC()
}

// unixMs is a time for the core: the zero time is 0 (the core's "none" or
// "now"), any other its ms since the Unix epoch (sub-ms truncated).
func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// TTL makes a key expire d after the write (0: never).
func TTL(d time.Duration) Option { return func(o *options) { o.ttl = ms(d) } }

// WithKind tags the value (default KindBytes).
func WithKind(k Kind) Option { return func(o *options) { o.kind = k } }

// Delay makes an enqueued message claimable d from now; for Nack, the
// delay before the next delivery (default: the store's backoff).
func Delay(d time.Duration) Option {
	return func(o *options) { o.delay, o.delaySet = ms(d), true }
}

// MaxAttempts sets how many deliveries a message gets before it is
// dead-lettered (0: the default, 3).
func MaxAttempts(n uint32) Option { return func(o *options) { o.maxAttempts = n } }

// Priority makes an enqueued message claimed before every message of a
// lower priority (default 0; any int32, the type being the range check:
// the compiler refuses a constant outside it).
func Priority(p int32) Option { return func(o *options) { o.priority = p } }

// Dedup keeps at most one live message per key on the topic.
func Dedup(key []byte) Option {
	return func(o *options) {
		if key == nil {
			key = []byte{}
		}
		o.dedup = key
	}
}
