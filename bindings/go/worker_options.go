package bitt

import (
	"errors"
	"fmt"
	"time"
)

// WorkerOption configures a Worker (NewWorker): Concurrency, Prefetch,
// WorkerLease, Heartbeat, WorkerWait and the hooks OnCompleted, OnFailed,
// OnStalled, OnError. Being funcs, an unknown option does not compile; a
// value out of range makes NewWorker fail with ErrInvalid naming it.
type WorkerOption func(*workerConfig)

type workerConfig struct {
	concurrency int
	prefetch    int
	lease       time.Duration // 0: the store's, read off the first delivery
	heartbeat   time.Duration // 0: lease / 3
	wait        time.Duration
	bad         []string // values out of range, reported by NewWorker

	onCompleted func(*Message)
	onFailed    func(*Message, error)
	onStalled   func(*Message)
	onError     func(error, *Message)
}

// workerWaitDefault is one dequeue's wait when WorkerWait is not given;
// never 0, as a loop over an empty topic would spin.
const workerWaitDefault = time.Second

func defaultWorkerConfig() workerConfig {
	return workerConfig{concurrency: 1, wait: workerWaitDefault}
}

func (c *workerConfig) refuse(format string, args ...any) {
	c.bad = append(c.bad, fmt.Sprintf(format, args...))
}

// Concurrency is how many handlers run at once (>= 1, default 1).
func Concurrency(n int) WorkerOption {
	return func(c *workerConfig) {
		if n < 1 {
			c.refuse("concurrency: %d is not a positive integer", n)
		}
		c.concurrency = n
	}
}

// Prefetch is how many messages are claimed ahead and held while the
// handlers are busy (>= 0, default 0): the messages held never exceed
// Concurrency + Prefetch. Their leases run from their dequeue.
func Prefetch(n int) WorkerOption {
	return func(c *workerConfig) {
		if n < 0 {
			c.refuse("prefetch: %d is negative", n)
		}
		c.prefetch = n
	}
}

// WorkerLease is each delivery's lease and each renewal's (> 0; default
// the store's queue_lease, read off the first delivery).
func WorkerLease(d time.Duration) WorkerOption {
	return func(c *workerConfig) {
		if d <= 0 {
			c.refuse("lease: %v is not positive", d)
		}
		c.lease = d
	}
}

// Heartbeat is the time between two renewals of a running handler's lease
// (> 0; default a third of the lease).
func Heartbeat(d time.Duration) WorkerOption {
	return func(c *workerConfig) {
		if d <= 0 {
			c.refuse("heartbeat: %v is not positive", d)
		}
		c.heartbeat = d
	}
}

// WorkerWait is how long one dequeue waits for a message (> 0, default
// 1 s); Stop ends the wait at once.
func WorkerWait(d time.Duration) WorkerOption {
	return func(c *workerConfig) {
		if d <= 0 {
			c.refuse("wait: %v is not positive", d)
		}
		c.wait = d
	}
}

// OnCompleted is called after a handler returned nil and its ack was
// written.
func OnCompleted(f func(m *Message)) WorkerOption {
	return func(c *workerConfig) { c.onCompleted = f }
}

// OnFailed is called after a handler's error (or panic) was written as a
// nack: err is what the handler returned.
func OnFailed(f func(m *Message, err error)) WorkerOption {
	return func(c *workerConfig) { c.onFailed = f }
}

// OnStalled is called when a delivery is no longer the worker's (a renewal,
// the ack, nack or snooze answered ErrToken): nothing was written for it.
func OnStalled(f func(m *Message)) WorkerOption {
	return func(c *workerConfig) { c.onStalled = f }
}

// OnError receives the worker's own errors: store errors (a dequeue, an
// ack, a renewal that failed for another reason than ErrToken; m is the
// delivery concerned, nil for a dequeue) and the panics of the other
// hooks. Without it (or when it panics) they go to the log package.
func OnError(f func(err error, m *Message)) WorkerOption {
	return func(c *workerConfig) { c.onError = f }
}

// SnoozeError is what Snooze returns: a handler that returns it (or wraps
// it: errors.As finds it) gives its message back unseen, claimable again
// Delay from now, without using an attempt.
type SnoozeError struct {
	Delay time.Duration
}

func (e *SnoozeError) Error() string { return fmt.Sprintf("snoozed for %v", e.Delay) }

// Snooze is a handler's result that gives the message back (Queue.Snooze:
// no attempt used, no error recorded), claimable again d from now (0: at
// once). A negative d is refused: Snooze returns an ErrInvalid instead,
// which the worker nacks as any other error.
func Snooze(d time.Duration) error {
	if d < 0 {
		return &Error{Code: ErrInvalid.Code, Message: fmt.Sprintf("snooze: delay %v is negative", d)}
	}
	return &SnoozeError{Delay: d}
}

// snoozeOf is the snooze a handler's error asks for, if any.
func snoozeOf(err error) (*SnoozeError, bool) {
	var s *SnoozeError
	if errors.As(err, &s) {
		return s, true
	}
	return nil, false
}

// ResultValue is what Result returns: a handler that returns it (or wraps
// it: errors.As finds it) has its message acked with Data of Kind as the
// ack's result (AckResult), kept by the done message under
// queue_done_retention. It is a success: counted as Completed, OnCompleted
// called.
type ResultValue struct {
	Data []byte
	Kind Kind
}

func (r *ResultValue) Error() string { return "acked with a result" }

// Result is a handler's return that acks its message with v as the ack's
// result, encoded by the shared value mapping (Encode: []byte as is, an
// integer a counter, any other value JSON). Result(nil) is nil: a plain
// ack. A value Encode refuses gives its ErrInvalid instead, which the
// worker nacks as any other error.
func Result(v any) error {
	if v == nil {
		return nil
	}
	data, kind, err := Encode(v)
	if err != nil {
		return err
	}
	if data == nil {
		data = []byte{}
	}
	return &ResultValue{Data: data, Kind: kind}
}

// resultOf is the result a handler's error asks to ack with, if any.
func resultOf(err error) (*ResultValue, bool) {
	var r *ResultValue
	if errors.As(err, &r) && r != nil {
		return r, true
	}
	return nil, false
}

// WorkerCounters is a snapshot of a worker's counts (Worker.Counters).
type WorkerCounters struct {
	Claimed   uint64 // messages dequeued
	Completed uint64 // handlers that returned nil or a Result, acked
	Failed    uint64 // handlers that returned an error or panicked, nacked
	Snoozed   uint64 // handlers that returned a Snooze, snoozed
	Stalled   uint64 // deliveries found no longer the worker's (ErrToken)
	Released  uint64 // deliveries given back unstarted or unfinished at Stop
	Running   int    // handlers running now
}
