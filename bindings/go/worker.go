package bitt

import (
	"context"
	"errors"
	"fmt"
	"log"
	"strings"
	"sync"
	"time"
)

// Handler handles one message of a Worker. Returning nil acks it;
// Result(v), returned or wrapped, acks it with v as the ack's result; an
// error nacks it with the error's text (the store's backoff; the last
// attempt dead-letters it); Snooze(d), returned or wrapped, gives it back
// unseen.
// A panic is a failure too. ctx is cancelled when the delivery is no
// longer the worker's (its cause an ErrToken) or when Stop's deadline
// gives it back (its cause an ErrCanceled): a handler should honour it.
type Handler func(ctx context.Context, m *Message) error

// Worker runs a Handler on the messages of one topic, Concurrency at a
// time, in goroutines of its own. It is a loop over the Queue's calls only
// (Dequeue with a wait and a context, grouped acks, Nack, Extend, Snooze):
// attempts, backoff, dead letters and token checks stay the core's. Make
// one with NewWorker, then Start and Stop it; it may be used from any
// goroutine.
type Worker struct {
	s     *Store // nil in tests on fake ops
	ops   workerOps
	topic string
	h     Handler
	cfg   workerConfig
	acks  *ackGroup
	sleep func(ctx context.Context, d time.Duration) // the backoff's pause (tests record it)

	mu      sync.Mutex
	c       WorkerCounters // Running is len(running)
	lease   time.Duration  // cfg.lease, or the store's once measured (0: not yet)
	buf     []*Message     // claimed, not started
	running map[*job]struct{}
	held    int // claimed and not ended: never above concurrency + prefetch
	halted  bool
	started bool
	err     error // the permanent error that stopped the worker

	jobs       sync.WaitGroup // jobs not ended
	wake       chan struct{}  // the loop waits on it for room
	loopCtx    context.Context
	cancelLoop context.CancelFunc // ends the dequeue in flight and the backoff's pause
	loopDone   chan struct{}
	stopOnce   sync.Once
	stopped    chan struct{} // closed once the worker has stopped (Done)
}

// dequeueMax is BITT_DEQUEUE_MAX, the most one dequeue claims.
const dequeueMax = 1000

// The pause after a failed dequeue: 100 ms, doubled up to 5 s.
const (
	backoffMin = 100 * time.Millisecond
	backoffMax = 5 * time.Second
)

// nextBackoff is the pause after a failed dequeue that followed a pause of
// prev (0: the first failure).
func nextBackoff(prev time.Duration) time.Duration {
	return min(max(prev*2, backoffMin), backoffMax)
}

// NewWorker makes a worker of topic on q's store, running h on each of its
// messages (options: Concurrency, Prefetch, WorkerLease, Heartbeat,
// WorkerWait, OnCompleted, OnFailed, OnStalled, OnError). It fails with
// ErrInvalid for a nil queue or handler or an option out of range. It
// claims nothing before Start.
func NewWorker(q *Queue, topic string, h Handler, opts ...WorkerOption) (*Worker, error) {
	if q == nil || q.s == nil {
		return nil, &Error{Code: ErrInvalid.Code, Message: "worker: queue is nil"}
	}
	w, err := newWorker(queueOps{q}, topic, h, opts)
	if w != nil {
		w.s = q.s
	}
	return w, err
}

func newWorker(ops workerOps, topic string, h Handler, opts []WorkerOption) (*Worker, error) {
	if h == nil {
		return nil, &Error{Code: ErrInvalid.Code, Message: "worker: handler is nil"}
	}
	cfg := defaultWorkerConfig()
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if len(cfg.bad) > 0 {
		return nil, &Error{Code: ErrInvalid.Code, Message: "worker: " + strings.Join(cfg.bad, "; ")}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Worker{
		ops: ops, topic: topic, h: h, cfg: cfg,
		acks:    &ackGroup{ops: ops, topic: topic},
		sleep:   sleepCtx,
		lease:   cfg.lease,
		running: map[*job]struct{}{},
		wake:    make(chan struct{}, 1),
		loopCtx: ctx, cancelLoop: cancel,
		loopDone: make(chan struct{}),
		stopped:  make(chan struct{}),
	}, nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Start starts claiming and handling messages. Starting twice, or after
// Stop, is ErrUsage.
func (w *Worker) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started || w.halted {
		return &Error{Code: ErrUsage.Code, Message: "worker: already started or stopped"}
	}
	if w.s != nil {
		w.s.mu.Lock()
		w.s.workers[w] = struct{}{}
		w.s.mu.Unlock()
	}
	w.started = true
	go w.loop()
	return nil
}

// Stop stops the worker gracefully: it stops claiming (the waiting dequeue
// is cancelled through its context), gives back the prefetched messages not
// started (Snooze 0: unseen, no attempt used), and waits for the running
// handlers, whose results are written as usual. When ctx is done first
// (its deadline is the stop timeout; an already done ctx stops at once),
// the handlers still running are given back the same way, their contexts
// cancelled and their late results ignored (counted as Released). It
// returns the final counters. Calling it again (from any goroutine) waits
// for the same stop. A worker never started just stops. A handler that
// calls Stop must give it a ctx that ends: Stop waits for that handler.
func (w *Worker) Stop(ctx context.Context) WorkerCounters {
	if ctx == nil {
		ctx = context.Background()
	}
	w.beginStop()
	select {
	case <-w.stopped:
	case <-ctx.Done():
		w.releaseRunning()
		<-w.stopped
	}
	return w.Counters()
}

// Done is closed once the worker has stopped: after Stop, or on its own
// after an error a retry cannot mend (Err).
func (w *Worker) Done() <-chan struct{} { return w.stopped }

// Err is the error that stopped the worker on its own (an ErrInvalid such
// as a bad topic, ErrUsage once the store is closed, ErrUnsupported); nil
// while it runs and after a Stop.
func (w *Worker) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Counters is a snapshot of the worker's counts.
func (w *Worker) Counters() WorkerCounters {
	w.mu.Lock()
	defer w.mu.Unlock()
	c := w.c
	c.Running = len(w.running)
	return c
}

func (w *Worker) beginStop() {
	w.stopOnce.Do(func() {
		w.mu.Lock()
		w.halted = true
		started := w.started
		w.mu.Unlock()
		w.cancelLoop()
		if !started {
			close(w.loopDone)
		}
		go w.stopping()
	})
}

func (w *Worker) stopping() {
	<-w.loopDone
	w.mu.Lock()
	left := w.buf
	w.buf = nil
	w.mu.Unlock()
	for _, m := range left {
		w.handBack(m)
	}
	w.mu.Lock()
	w.held -= len(left)
	w.mu.Unlock()
	w.jobs.Wait()
	if w.s != nil {
		w.s.mu.Lock()
		delete(w.s.workers, w)
		w.s.mu.Unlock()
	}
	close(w.stopped)
}

func (w *Worker) wakeLoop() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// permanent: errors a retry cannot mend (a bad topic, a closed store, a
// backend without the call) stop the worker instead of a backoff forever;
// so does an error that is no store's (a bug, not a blip).
func permanent(err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return true
	}
	return e.Code == ErrInvalid.Code || e.Code == ErrUsage.Code || e.Code == ErrUnsupported.Code
}

func (w *Worker) loop() {
	defer close(w.loopDone)
	var backoff time.Duration
	for {
		w.mu.Lock()
		if w.halted {
			w.mu.Unlock()
			return
		}
		room := min(w.cfg.concurrency+w.cfg.prefetch-w.held, dequeueMax)
		lease := w.lease
		w.mu.Unlock()
		if room <= 0 {
			select {
			case <-w.wake:
			case <-w.loopCtx.Done():
			}
			continue
		}
		msgs, err := w.ops.dequeue(w.loopCtx, w.topic, room, lease, w.cfg.wait)
		if err != nil {
			if w.loopCtx.Err() != nil { // Stop ended the wait
				return
			}
			var e *Error
			if !(errors.As(err, &e) && e.Code == ErrUsage.Code && w.ops.closed()) {
				w.report(err, nil)
			}
			if permanent(err) {
				w.mu.Lock()
				w.err = err
				w.mu.Unlock()
				w.beginStop()
				return
			}
			backoff = nextBackoff(backoff)
			w.sleep(w.loopCtx, backoff)
			continue
		}
		backoff = 0
		if len(msgs) == 0 {
			continue
		}
		w.mu.Lock()
		w.c.Claimed += uint64(len(msgs))
		w.held += len(msgs)
		measure := w.lease == 0
		w.mu.Unlock()
		if measure {
			w.measure(msgs[0])
		}
		w.mu.Lock()
		w.buf = append(w.buf, msgs...)
		w.pump()
		w.mu.Unlock()
	}
}

// measure finds the store's lease, when none was given: what the first
// delivery got (its lease's end less the store's clock), for the
// heartbeat's renewals. A failure is reported; the next batch tries again
// (no heartbeat meanwhile).
func (w *Worker) measure(m *Message) {
	now, err := w.ops.now()
	if err != nil {
		w.report(err, nil)
		return
	}
	w.mu.Lock()
	w.lease = max(time.Millisecond, m.DueAt.Sub(now))
	w.mu.Unlock()
}

// pump starts handlers while there is room (w.mu held).
func (w *Worker) pump() {
	for !w.halted && len(w.running) < w.cfg.concurrency && len(w.buf) > 0 {
		m := w.buf[0]
		w.buf = w.buf[1:]
		w.start(m)
	}
}

// handBack gives a claimed message back unseen (Snooze 0).
func (w *Worker) handBack(m *Message) {
	err := w.ops.snooze(m, 0)
	switch {
	case err == nil:
		w.mu.Lock()
		w.c.Released++
		w.mu.Unlock()
	case errors.Is(err, ErrToken): // its lease ran out meanwhile: nothing to give back
		w.mu.Lock()
		w.c.Stalled++
		w.mu.Unlock()
		w.hook(func() { w.cfg.onStalled(m) }, w.cfg.onStalled != nil)
	default:
		w.report(err, m)
	}
}

// hook runs a user's hook; its panic goes to report.
func (w *Worker) hook(f func(), set bool) {
	if !set {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			if e, ok := p.(error); ok {
				w.report(fmt.Errorf("worker: a hook panicked: %w", e), nil)
			} else {
				w.report(fmt.Errorf("worker: a hook panicked: %v", p), nil)
			}
		}
	}()
	f()
}

// report hands the worker's own errors to OnError, else (or when it
// panics) to the log.
func (w *Worker) report(err error, m *Message) {
	if w.cfg.onError != nil {
		ok := func() (ok bool) {
			defer func() {
				if p := recover(); p != nil {
					err = fmt.Errorf("worker: OnError panicked: %v (reporting: %v)", p, err)
				}
			}()
			w.cfg.onError(err, m)
			return true
		}()
		if ok {
			return
		}
	}
	log.Printf("bitt worker on topic %q: %v", w.topic, err)
}
