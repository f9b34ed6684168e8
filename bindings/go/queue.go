package bitt

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// Message is a queue message, an outbox event or a published message.
type Message struct {
	ID          uint64 // queue: the message id; outbox: the sequence number
	Topic       string // topic, stream or channel
	Payload     []byte
	Kind        Kind
	Token       string // queue: this delivery's ack token
	Attempts    uint32
	MaxAttempts uint32
	LastError   string
	CreatedAt   time.Time // when it was enqueued, appended or published
	DueAt       time.Time // queue: this delivery's lease end; outbox: the next attempt (zero: none)
	FailedAt    time.Time // dead letters: when it died; parked events: when parked (zero: none)
	ParkReason  int
	State       MessageState // queue: StateLeased from Dequeue, StateDead in DeadList, as it is from Get; 0 elsewhere
	Priority    int32        // queue: the priority it was enqueued with (Priority); 0 elsewhere
	// Queue, a done message (StateDone, kept by queue_done_retention): when
	// it was acked, and the result it was acked with (AckResult, AckValue,
	// a Worker's Result): nil and ResultKind -1 when none. DecodeResult
	// and ResultJSON read it. Zero, nil and -1 elsewhere.
	DoneAt     time.Time
	Result     []byte
	ResultKind Kind

	hasToken, hasLastError bool
}

// JSON decodes a KindJSON payload into v.
func (m *Message) JSON(v any) error { return json.Unmarshal(m.Payload, v) }

// Queue is the work-queue namespace of a store.
type Queue struct{ s *Store }

// DequeueOptions: Limit messages (0: 1), each leased for Lease (0: the
// store's queue_lease), waiting up to Wait for a first one. A higher
// Priority is always claimed first; within one, the messages claimable
// longest.
type DequeueOptions struct {
	Limit int
	Lease time.Duration
	Wait  time.Duration
}

// Enqueue adds a message (options Delay, MaxAttempts, Dedup, Priority,
// WithKind) and returns its id (with Dedup: the live message's id when one
// holds the key).
func (q *Queue) Enqueue(ctx context.Context, topic string, payload []byte, opts ...Option) (uint64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	o := collect(opts)
	var id uint64
	_, err := q.s.status(raw.Bittw_queue_enqueue2(q.s.box(), topic, payload, int(o.kind), o.delay,
		uint(o.maxAttempts), o.dedup, int(o.priority), &id))
	return id, err
}

// Dequeue leases up to o.Limit messages of topic; it waits up to o.Wait for
// a first one. No message: an empty slice. When ctx is done during the
// wait, it ends at once with ErrCanceled (errors.Is(err, ctx.Err()) holds
// too) and has leased nothing; Close ends it with ErrUsage.
func (q *Queue) Dequeue(ctx context.Context, topic string, o DequeueOptions) ([]*Message, error) {
	return q.s.dequeue(ctx, topic, o.Limit, o.Lease, o.Wait)
}

func (s *Store) dequeue(ctx context.Context, topic string, limit int, lease, wait time.Duration) ([]*Message, error) {
	return s.waitingMessages(ctx, wait, func(tok uintptr, scratch []byte) int {
		return raw.Bittw_queue_dequeue_cancel(s.box(), topic, uint(limit), ms(lease), ms(wait), tok, scratch)
	})
}

// waitingMessages runs a dequeue that may wait: with a cancel token fired
// by ctx (and by Close), or with none (0) when nothing could end it early.
func (s *Store) waitingMessages(ctx context.Context, wait time.Duration, call func(tok uintptr, scratch []byte) int) ([]*Message, error) {
	run := func(tok uintptr) ([]*Message, error) {
		return s.messagesCall(func(scratch []byte) int { return call(tok, scratch) })
	}
	if wait == 0 && (ctx == nil || ctx.Done() == nil) {
		return run(0) // nothing can end it early: no token
	}
	w, err := beginWait(ctx, &s.waits)
	if err != nil {
		return nil, err
	}
	defer w.end()
	msgs, err := run(w.tok)
	return msgs, w.result(err)
}

func (s *Store) messagesCall(call func([]byte) int) ([]*Message, error) {
	_, r, err := s.record(1024, call)
	if err != nil {
		return nil, err
	}
	return r.messages(), nil
}

// Ack finishes a delivery: the message is deleted, or, with the store URL
// option queue_done_retention, kept as StateDone for that long. Option
// AckResult or AckValue gives the ack a result, which the done message
// keeps (without done retention it goes with the message); the core
// checks it as any value (ErrInvalid, ErrTooLarge) before anything changes.
func (q *Queue) Ack(ctx context.Context, m *Message, opts ...Option) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	o := collect(opts)
	if o.resultErr != nil {
		return o.resultErr
	}
	if o.resultSet {
		return q.s.done(raw.Bitt_queue_ack_result(q.s.box(), m.Topic, m.ID, m.Token, o.result, int(o.resultKind)))
	}
	return q.s.done(raw.Bitt_queue_ack(q.s.box(), m.Topic, m.ID, m.Token))
}

// AckMany finishes many deliveries of topic in one transaction (one round
// trip on the servers), at most 1000 at once: acked[i] is true when msgs[i]
// was acked, false when its token was stale (that message is left alone,
// and so is a second delivery with the same id). A message only needs ID
// and Token (&Message{ID: id, Token: token} will do). A bad argument fails
// the whole call and acks nothing.
func (q *Queue) AckMany(ctx context.Context, topic string, msgs []*Message) ([]bool, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	ids := make([]uint64, len(msgs))
	tokens := make([]string, len(msgs))
	for i, m := range msgs {
		ids[i], tokens[i] = m.ID, m.Token
	}
	packed, err := packDeliveries(ids, tokens)
	if err != nil {
		return nil, err
	}
	statuses := make([]int32, len(msgs))
	if len(msgs) == 0 {
		statuses = nil // count 0: no statuses to write
	}
	if _, err := q.s.status(raw.Bitt_queue_ack_many(q.s.box(), topic, packed, statuses)); err != nil {
		return nil, err
	}
	acked := make([]bool, len(msgs))
	for i, st := range statuses {
		acked[i] = st == 0
	}
	return acked, nil
}

// packDeliveries makes the one []byte bitt_queue_ack_many's wrapper takes
// (bitt_go.i): per delivery its id (8 bytes, native order), its token and
// a NUL, so that no Go pointer travels inside Go memory. A token holding a
// NUL byte cannot be packed: ErrInvalid.
func packDeliveries(ids []uint64, tokens []string) ([]byte, error) {
	packed := make([]byte, 0, len(ids)*(8+33))
	for i, id := range ids {
		if strings.IndexByte(tokens[i], 0) >= 0 {
			return nil, &Error{Code: ErrInvalid.Code, Message: fmt.Sprintf("ack_many: token %d holds a NUL byte", i)}
		}
		packed = binary.NativeEndian.AppendUint64(packed, id)
		packed = append(append(packed, tokens[i]...), 0)
	}
	return packed, nil
}

// Nack gives a delivery back after a failure, recording errText ("" for
// none); option Delay sets the delay before the next try (default: the
// store's backoff).
func (q *Queue) Nack(ctx context.Context, m *Message, errText string, opts ...Option) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	o := collect(opts)
	delay := int64(-1)
	if o.delaySet {
		delay = o.delay
	}
	return q.s.done(raw.Bitt_queue_nack(q.s.box(), m.Topic, m.ID, m.Token, optBytes(errText), delay))
}

// Extend makes the delivery's lease end lease from now.
func (q *Queue) Extend(ctx context.Context, m *Message, lease time.Duration) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return q.s.done(raw.Bitt_queue_extend(q.s.box(), m.Topic, m.ID, m.Token, ms(lease)))
}

// Snooze gives a delivery back without using an attempt or recording an
// error: the message is claimable again delay from now (0: at once).
// ErrToken when the token is not the live lease's.
func (q *Queue) Snooze(ctx context.Context, topic string, id uint64, token string, delay time.Duration) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return q.s.snooze(topic, id, token, delay)
}

func (s *Store) snooze(topic string, id uint64, token string, delay time.Duration) error {
	return s.done(raw.Bitt_queue_snooze(s.box(), topic, id, token, ms(delay)))
}

// DeadList lists dead letters of topic after id after (limit 0: 100).
func (q *Queue) DeadList(ctx context.Context, topic string, after uint64, limit int) ([]*Message, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	return q.s.messagesCall(func(scratch []byte) int {
		return raw.Bitt_queue_dead_list(q.s.box(), topic, after, uint(limit), scratch)
	})
}

// DeadRetry puts dead message id (0: all of topic) back; it says how many.
func (q *Queue) DeadRetry(ctx context.Context, topic string, id uint64) (uint64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	var n uint64
	_, err := q.s.status(raw.Bitt_queue_dead_retry(q.s.box(), topic, id, &n))
	return n, err
}

// DeadDelete deletes dead message id (0: all of topic); it says how many.
func (q *Queue) DeadDelete(ctx context.Context, topic string, id uint64) (uint64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	var n uint64
	_, err := q.s.status(raw.Bitt_queue_dead_delete(q.s.box(), topic, id, &n))
	return n, err
}

// QueueStats counts a topic's messages.
type QueueStats struct {
	Pending, Delayed, Processing, Dead uint64
	OldestPendingAt                    time.Time // zero: none pending
	Done                               uint64    // acked and kept (queue_done_retention)
}

// Stats counts topic's messages by state.
func (q *Queue) Stats(ctx context.Context, topic string) (QueueStats, error) {
	if err := ctxErr(ctx); err != nil {
		return QueueStats{}, err
	}
	v := make([]uint64, 6)
	_, err := q.s.status(raw.Bittw_queue_stats(q.s.box(), topic, v))
	return QueueStats{v[0], v[1], v[2], v[3], timeOf(int64(v[4])), v[5]}, err
}
