package bitt

import (
	"context"
	"sync"
	"time"
)

// workerOps are the queue calls a Worker makes: the Queue's own (queueOps),
// or, in the tests, a wrapper that fails some of them on purpose.
type workerOps interface {
	dequeue(ctx context.Context, topic string, limit int, lease, wait time.Duration) ([]*Message, error)
	ack(m *Message) error
	ackResult(m *Message, data []byte, kind Kind) error
	ackMany(topic string, msgs []*Message) ([]bool, error)
	nack(m *Message, errText string) error
	extend(m *Message, lease time.Duration) error
	snooze(m *Message, delay time.Duration) error
	now() (time.Time, error)
	closed() bool // the store is closed: its ErrUsage is no news
}

type queueOps struct{ q *Queue }

func (o queueOps) dequeue(ctx context.Context, topic string, limit int, lease, wait time.Duration) ([]*Message, error) {
	return o.q.Dequeue(ctx, topic, DequeueOptions{Limit: limit, Lease: lease, Wait: wait})
}
func (o queueOps) ack(m *Message) error { return o.q.Ack(context.Background(), m) }
func (o queueOps) ackResult(m *Message, data []byte, kind Kind) error {
	return o.q.Ack(context.Background(), m, AckResult(data, kind))
}
func (o queueOps) ackMany(topic string, msgs []*Message) ([]bool, error) {
	return o.q.AckMany(context.Background(), topic, msgs)
}

// nack with no Delay: the store's backoff (the last attempt dead-letters).
func (o queueOps) nack(m *Message, errText string) error {
	return o.q.Nack(context.Background(), m, errText)
}
func (o queueOps) extend(m *Message, lease time.Duration) error {
	return o.q.Extend(context.Background(), m, lease)
}
func (o queueOps) snooze(m *Message, delay time.Duration) error {
	return o.q.Snooze(context.Background(), m.Topic, m.ID, m.Token, delay)
}
func (o queueOps) now() (time.Time, error) { return o.q.s.Clock.Now() }
func (o queueOps) closed() bool            { return o.q.s.waits.isClosed() }

// ackManyMax is BITT_ACK_MANY_MAX, the most one ack_many takes.
const ackManyMax = 1000

// ackGroup sends the acks of a worker's handlers: an ack asked for while
// another is in flight waits for it, and those waiting then go together in
// one AckMany (one transaction, one round trip), each still answered on
// its own. The first caller with nothing in flight sends, for itself and
// for whoever queued meanwhile; the others wait on their channel.
type ackGroup struct {
	ops   workerOps
	topic string

	mu      sync.Mutex
	waiting []ackReq
	flight  bool
}

type ackReq struct {
	m    *Message
	done chan error
}

// ack acks m, alone or with others; ErrToken when its token was stale.
func (g *ackGroup) ack(m *Message) error {
	r := ackReq{m: m, done: make(chan error, 1)}
	g.mu.Lock()
	g.waiting = append(g.waiting, r)
	if g.flight {
		g.mu.Unlock()
		return <-r.done
	}
	g.flight = true
	for len(g.waiting) > 0 {
		n := min(len(g.waiting), ackManyMax)
		group := g.waiting[:n:n]
		g.waiting = g.waiting[n:]
		g.mu.Unlock()
		g.send(group)
		g.mu.Lock()
	}
	g.flight = false
	g.mu.Unlock()
	return <-r.done
}

func (g *ackGroup) send(group []ackReq) {
	if len(group) == 1 { // alone: the single call, its own error as it comes
		group[0].done <- g.ops.ack(group[0].m)
		return
	}
	msgs := make([]*Message, len(group))
	for i, r := range group {
		msgs[i] = r.m
	}
	acked, err := g.ops.ackMany(g.topic, msgs)
	for i, r := range group {
		switch {
		case err != nil:
			r.done <- err
		case !acked[i]:
			r.done <- &Error{Code: ErrToken.Code, Message: "ack_many: the delivery's token is stale"}
		default:
			r.done <- nil
		}
	}
}
