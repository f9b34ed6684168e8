package bitt

// Queue control (bitt.h 0.6): messages by id (Get, Cancel, Reschedule),
// the dequeue over several topics and the message states. The queue ops
// inside a commit are in txn.go.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/bitt-dev/bitt/bindings/go/internal/raw"
)

// MessageState is where a queue message is (Message.State).
type MessageState int

const (
	StatePending MessageState = 1 // claimable now (also a lease that ran out)
	StateDelayed MessageState = 2 // claimable from DueAt
	StateLeased  MessageState = 3 // under a live lease until DueAt
	StateDead    MessageState = 4 // a dead letter since FailedAt
	StateDone    MessageState = 5 // acked at DoneAt, kept for queue_done_retention
)

// String names the state as every binding does: "pending", "delayed",
// "leased", "dead", "done" ("" for 0, a message that is no queue message).
func (st MessageState) String() string {
	switch st {
	case 0:
		return ""
	case StatePending:
		return "pending"
	case StateDelayed:
		return "delayed"
	case StateLeased:
		return "leased"
	case StateDead:
		return "dead"
	case StateDone:
		return "done"
	}
	return fmt.Sprintf("MessageState(%d)", int(st))
}

// DequeueTopics is one Dequeue over several topics (1 to 64 distinct
// names): whatever is claimable across them, in the order of one topic's
// (priority, then claimable longest, then id); each message carries its
// Topic, which Ack and the others use. An empty list, a repeated or bad
// name is ErrInvalid. Waits and cancellation as for Dequeue.
func (q *Queue) DequeueTopics(ctx context.Context, topics []string, o DequeueOptions) ([]*Message, error) {
	packed, err := packTopics(topics)
	if err != nil {
		return nil, err
	}
	return q.s.waitingMessages(ctx, o.Wait, func(tok uintptr, scratch []byte) int {
		return raw.Bittw_go_queue_dequeue_topics(q.s.box(), packed, uint(o.Limit), ms(o.Lease), ms(o.Wait),
			tok, scratch)
	})
}

// packTopics makes the one []byte the dequeue helper of bitt_go.i takes:
// each name and a NUL, so that no Go pointer travels inside Go memory. A
// name holding a NUL byte cannot be packed: ErrInvalid.
func packTopics(topics []string) ([]byte, error) {
	n := 0
	for i, t := range topics {
		if strings.IndexByte(t, 0) >= 0 {
			return nil, &Error{Code: ErrInvalid.Code, Message: fmt.Sprintf("dequeue: topic %d holds a NUL byte", i)}
		}
		n += len(t) + 1
	}
	packed := make([]byte, 0, n)
	for _, t := range topics {
		packed = append(append(packed, t...), 0)
	}
	return packed, nil
}

// Get reads message id of topic as it is now: its State, Priority,
// attempts, last error, times (DueAt: when it is claimable, or when its
// lease ends), never a Token; a done one (queue_done_retention) its
// DoneAt and Result. nil, nil when topic holds no message id (acked without
// done retention or past it, cancelled, deleted, or never there).
func (q *Queue) Get(ctx context.Context, topic string, id uint64) (*Message, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	st, r, err := q.s.record(512, func(scratch []byte) int {
		return raw.Bitt_queue_get(q.s.box(), topic, id, scratch)
	})
	if err != nil || st != 0 {
		return nil, err
	}
	return r.message(), nil
}

// Cancel deletes a pending, delayed or leased message (its Dedup key is
// free again; an Ack, Nack, Extend or Snooze of its delivery is then
// ErrToken). false when topic holds no such live message (a dead letter:
// DeadDelete).
func (q *Queue) Cancel(ctx context.Context, topic string, id uint64) (bool, error) {
	if err := ctxErr(ctx); err != nil {
		return false, err
	}
	st, err := q.s.status(raw.Bitt_queue_cancel(q.s.box(), topic, id))
	return err == nil && st == 0, err
}

// Reschedule makes a pending or delayed message claimable delay from now
// (0: at once, waking a waiting Dequeue); its attempts and error stay.
// false when topic holds no pending or delayed message id (a leased one is
// its consumer's: Nack or Snooze it).
func (q *Queue) Reschedule(ctx context.Context, topic string, id uint64, delay time.Duration) (bool, error) {
	if err := ctxErr(ctx); err != nil {
		return false, err
	}
	st, err := q.s.status(raw.Bitt_queue_reschedule(q.s.box(), topic, id, ms(delay)))
	return err == nil && st == 0, err
}
