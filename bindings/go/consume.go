package bitt

import (
	"context"
	"iter"
	"time"
)

// ConsumeOptions: Consume leases up to Prefetch messages at a time (0: 1),
// each for Lease (0: the store's queue_lease).
type ConsumeOptions struct {
	Prefetch int
	Lease    time.Duration
}

// consumeWait is one dequeue wait of Consume; it waits again after it.
const consumeWait = time.Hour

// Consume yields topic's messages one at a time as they come, waiting
// whenever the queue is empty. Ack (or Nack, Snooze) each message it
// yields. It ends when ctx is done, yielding one last (nil, err) with an
// ErrCanceled (errors.Is(err, ctx.Err()) holds too), or on any other error
// (the store closed: ErrUsage), which it yields last the same way. Leaving
// the loop (break, return) ends it too. However it ends, the messages it
// leased ahead (Prefetch) and did not yield are given back at once
// (Snooze with no delay: no attempt used), and no wait is left running.
//
//	for m, err := range s.Queue.Consume(ctx, "jobs", bitt.ConsumeOptions{Prefetch: 10}) {
//		if err != nil {
//			return err
//		}
//		handle(m)
//		s.Queue.Ack(ctx, m)
//	}
func (q *Queue) Consume(ctx context.Context, topic string, o ConsumeOptions) iter.Seq2[*Message, error] {
	if ctx == nil {
		ctx = context.Background()
	}
	return func(yield func(*Message, error) bool) {
		var ahead []*Message
		defer func() { q.s.giveBack(topic, ahead) }()
		for {
			if err := ctx.Err(); err != nil {
				yield(nil, canceled(ctx, err.Error()))
				return
			}
			if len(ahead) == 0 {
				msgs, err := q.s.dequeue(ctx, topic, o.Prefetch, o.Lease, consumeWait)
				if err != nil {
					yield(nil, err)
					return
				}
				ahead = msgs
				continue
			}
			m := ahead[0]
			ahead = ahead[1:]
			if !yield(m, nil) {
				return
			}
		}
	}
}

// giveBack snoozes, with no delay, messages leased but never handed out.
// A failure (the store closed meanwhile) leaves a message to its lease.
func (s *Store) giveBack(topic string, msgs []*Message) {
	for _, m := range msgs {
		_ = s.snooze(topic, m.ID, m.Token, 0)
	}
}
