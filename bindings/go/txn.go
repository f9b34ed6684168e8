package bitt

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// Txn is an atomic commit: checks and mutations applied all or none. Build
// it from one goroutine; Close it (Commit does not free it).
type Txn struct {
	s  *Store
	mu sync.Mutex
	h  uintptr
}

// Atomic begins an atomic commit.
func (s *Store) Atomic(ctx context.Context) (*Txn, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	var h uintptr
	if _, err := s.status(raw.Bitt_txn_begin(s.box(), &h)); err != nil {
		return nil, err
	}
	t := &Txn{s: s, h: h}
	runtime.SetFinalizer(t, (*Txn).Close)
	return t, nil
}

func (t *Txn) call(f func(h uintptr) int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err := status(f(t.h)) // h 0 (closed) fails "the transaction is closed"
	runtime.KeepAlive(t.s.h)
	return err
}

// Check requires key to be at version (0: absent) when the commit applies.
func (t *Txn) Check(key []byte, version uint64) error {
	return t.call(func(h uintptr) int { return raw.Bitt_txn_check(h, key, version) })
}

// Set writes a value (options TTL, WithKind).
func (t *Txn) Set(key, value []byte, opts ...Option) error {
	o := collect(opts)
	return t.call(func(h uintptr) int { return raw.Bitt_txn_set(h, key, value, int(o.kind), o.ttl) })
}

// Delete deletes a key.
func (t *Txn) Delete(key []byte) error {
	return t.call(func(h uintptr) int { return raw.Bitt_txn_delete(h, key) })
}

// Sum adds delta to a counter.
func (t *Txn) Sum(key []byte, delta int64) error {
	return t.call(func(h uintptr) int { return raw.Bitt_txn_sum(h, key, delta) })
}

// Enqueue enqueues a message when the commit applies (options Delay,
// MaxAttempts, Dedup, Priority, WithKind).
func (t *Txn) Enqueue(topic string, payload []byte, opts ...Option) error {
	o := collect(opts)
	return t.call(func(h uintptr) int {
		return raw.Bittw_txn_enqueue2(h, topic, payload, int(o.kind), o.delay, uint(o.maxAttempts), o.dedup,
			int(o.priority))
	})
}

// The queue ops of a commit: each does what its Queue method does (and
// takes the same arguments, without the context), applied in order with
// the commit's other ops, so that "save the step's result and ack the
// delivery" is one commit. A delivery op (QueueAck, QueueNack,
// QueueSnooze, QueueExtend) needs the current token of a live lease when
// the commit runs: otherwise Commit fails with ErrToken and writes
// nothing. QueueCancel and QueueReschedule of a message they do not apply
// to do nothing (the commit still succeeds). A commit holds at most one of
// them per message id (a second one is ErrInvalid).

// QueueAck acks the delivery m (ID, Topic, Token) when the commit applies;
// option AckResult or AckValue gives it a result, as for Queue.Ack.
func (t *Txn) QueueAck(m *Message, opts ...Option) error {
	o := collect(opts)
	if o.resultErr != nil {
		return o.resultErr
	}
	if o.resultSet {
		return t.call(func(h uintptr) int {
			return raw.Bitt_txn_queue_ack_result(h, m.Topic, m.ID, m.Token, o.result, int(o.resultKind))
		})
	}
	return t.call(func(h uintptr) int { return raw.Bitt_txn_queue_ack(h, m.Topic, m.ID, m.Token) })
}

// QueueNack gives the delivery m back after a failure, recording errText
// ("" for none), when the commit applies; option Delay sets the delay
// before the next try (default: the store's backoff).
func (t *Txn) QueueNack(m *Message, errText string, opts ...Option) error {
	o := collect(opts)
	delay := int64(-1)
	if o.delaySet {
		delay = o.delay
	}
	return t.call(func(h uintptr) int {
		return raw.Bitt_txn_queue_nack(h, m.Topic, m.ID, m.Token, optBytes(errText), delay)
	})
}

// QueueExtend makes the delivery m's lease end lease from the commit.
func (t *Txn) QueueExtend(m *Message, lease time.Duration) error {
	return t.call(func(h uintptr) int { return raw.Bitt_txn_queue_extend(h, m.Topic, m.ID, m.Token, ms(lease)) })
}

// QueueSnooze gives a delivery back unseen (no attempt used), claimable
// again delay from the commit (0: at once).
func (t *Txn) QueueSnooze(topic string, id uint64, token string, delay time.Duration) error {
	return t.call(func(h uintptr) int { return raw.Bitt_txn_queue_snooze(h, topic, id, token, ms(delay)) })
}

// QueueCancel cancels message id of topic (pending, delayed or leased)
// when the commit applies.
func (t *Txn) QueueCancel(topic string, id uint64) error {
	return t.call(func(h uintptr) int { return raw.Bitt_txn_queue_cancel(h, topic, id) })
}

// QueueReschedule makes a pending or delayed message claimable delay from
// the commit (0: at once).
func (t *Txn) QueueReschedule(topic string, id uint64, delay time.Duration) error {
	return t.call(func(h uintptr) int { return raw.Bitt_txn_queue_reschedule(h, topic, id, ms(delay)) })
}

// Fence makes the commit apply only while owner holds lease name at epoch.
func (t *Txn) Fence(name, owner string, epoch uint64) error {
	return t.call(func(h uintptr) int { return raw.Bitt_txn_fence(h, name, owner, epoch) })
}

// OutboxAppend appends an event to stream when the commit applies.
func (t *Txn) OutboxAppend(stream string, event []byte, opts ...Option) error {
	o := collect(opts)
	return t.call(func(h uintptr) int { return raw.Bitt_txn_outbox_append(h, stream, event, int(o.kind)) })
}

// Commit applies the commit and returns its versionstamp; ErrConflict when
// a check failed.
func (t *Txn) Commit(ctx context.Context) (uint64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	var ver uint64
	err := t.call(func(h uintptr) int { return raw.Bitt_txn_commit(h, &ver) })
	return ver, err
}

// Close frees the transaction (committed or not). Closing twice is fine.
func (t *Txn) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.h != 0 {
		raw.Bitt_txn_free(t.h)
		t.h = 0
		runtime.SetFinalizer(t, nil)
	}
	return nil
}
