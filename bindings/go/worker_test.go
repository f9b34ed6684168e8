package bitt

// The Worker on every backend: ack on nil, nack with the error's text
// (attempts and LastError on redelivery, dead letter after the last
// attempt), Snooze, the concurrency and prefetch bounds, lease renewal
// while a handler runs past its lease, stall detection, graceful stop and
// stop's deadline. Time is the store's manual clock: the tests advance it
// and then wait for a condition (a counter, a handler's start), never for
// elapsed time; until's 25 s bound only turns a hang into a failure.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"
)

var workerT0 = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

const longLease = time.Minute

// until waits for cond, checked every few ms.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	give := time.Now().Add(25 * time.Second)
	for !cond() {
		if time.Now().After(give) {
			t.Fatalf("never happened: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// workerStores: memory, SQLite and the servers' stores, on the manual
// clock at workerT0.
func workerStores(t *testing.T) map[string]*Store {
	out := controlStores(t)
	for _, s := range out {
		if err := s.Clock.SetManual(workerT0); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// errSink keeps what a worker reports (none expected unless a test says so).
type errSink struct {
	mu   sync.Mutex
	errs []string
}

func (e *errSink) hook() WorkerOption {
	return OnError(func(err error, m *Message) {
		e.mu.Lock()
		defer e.mu.Unlock()
		if m != nil {
			e.errs = append(e.errs, fmt.Sprintf("%v [%s]", err, m.Payload))
		} else {
			e.errs = append(e.errs, err.Error())
		}
	})
}

func (e *errSink) get() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.errs...)
}

func (e *errSink) none(t *testing.T) {
	t.Helper()
	if got := e.get(); len(got) > 0 {
		t.Fatalf("errors reported: %q", got)
	}
}

func startW(t *testing.T, s *Store, topic string, h Handler, opts ...WorkerOption) *Worker {
	t.Helper()
	w, err := NewWorker(s.Queue, topic, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(doneCtx()) })
	return w
}

// doneCtx is a context already done: Stop with it gives back at once.
func doneCtx() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func stats(t *testing.T, s *Store, topic string) QueueStats {
	t.Helper()
	st, err := s.Queue.Stats(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func counts(c WorkerCounters) string {
	return fmt.Sprintf("claimed %d completed %d failed %d snoozed %d stalled %d released %d running %d",
		c.Claimed, c.Completed, c.Failed, c.Snoozed, c.Stalled, c.Released, c.Running)
}

// gates: handlers that block until the test opens their gate, in order.
type gates struct {
	mu  sync.Mutex
	chs []chan error
	now int // handlers inside now
	top int // the most at once
}

func (g *gates) handler(ctx context.Context, m *Message) error {
	ch := make(chan error)
	g.mu.Lock()
	g.chs = append(g.chs, ch)
	g.now++
	g.top = max(g.top, g.now)
	g.mu.Unlock()
	err := <-ch
	g.mu.Lock()
	g.now--
	g.mu.Unlock()
	return err
}

func (g *gates) started() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.chs)
}

func (g *gates) open(i int, err error) {
	g.mu.Lock()
	ch := g.chs[i]
	g.mu.Unlock()
	ch <- err
}

func TestWorkerOutcomesOnEachBackend(t *testing.T) {
	ctx := context.Background()
	for b, s := range workerStores(t) {
		t.Run(b+"/ack", func(t *testing.T) {
			for i := 0; i < 5; i++ {
				s.Queue.Enqueue(ctx, "ack", []byte(fmt.Sprint(i)))
			}
			var mu sync.Mutex
			var done []string
			var sink errSink
			w := startW(t, s, "ack", func(hctx context.Context, m *Message) error {
				if hctx.Err() != nil {
					return errors.New("a live context was expected")
				}
				return nil
			}, Concurrency(2), WorkerWait(100*time.Millisecond), sink.hook(), OnCompleted(func(m *Message) {
				mu.Lock()
				done = append(done, string(m.Payload))
				mu.Unlock()
			}))
			until(t, "five completed", func() bool { return w.Counters().Completed == 5 })
			c := w.Stop(ctx)
			if counts(c) != "claimed 5 completed 5 failed 0 snoozed 0 stalled 0 released 0 running 0" {
				t.Fatal(counts(c))
			}
			sort.Strings(done)
			if fmt.Sprint(done) != "[0 1 2 3 4]" {
				t.Fatal(done)
			}
			if st := stats(t, s, "ack"); st.Pending+st.Delayed+st.Processing+st.Dead != 0 {
				t.Fatalf("%+v", st)
			}
			sink.none(t)
		})

		t.Run(b+"/nack", func(t *testing.T) {
			id, _ := s.Queue.Enqueue(ctx, "nack", []byte("job"), MaxAttempts(2))
			var mu sync.Mutex
			var tries, failed []string
			var sink errSink
			w := startW(t, s, "nack", func(_ context.Context, m *Message) error {
				mu.Lock()
				tries = append(tries, fmt.Sprintf("%d:%q", m.Attempts, m.LastError))
				mu.Unlock()
				return fmt.Errorf("boom %d", m.Attempts)
			}, WorkerWait(100*time.Millisecond), sink.hook(), OnFailed(func(m *Message, err error) {
				mu.Lock()
				failed = append(failed, fmt.Sprintf("%d:%v", m.ID, err))
				mu.Unlock()
			}))
			nFailed := func() uint64 { return w.Counters().Failed }
			until(t, "the first failure", func() bool { return nFailed() == 1 })
			if st := stats(t, s, "nack"); st.Delayed != 1 || st.Processing != 0 {
				t.Fatalf("retried after the backoff, not at once: %+v", st)
			}
			s.Clock.Advance(400 * time.Second) // past any backoff of the default exp:1000:300000
			until(t, "the second failure", func() bool { return nFailed() == 2 })
			until(t, "the dead letter", func() bool { return stats(t, s, "nack").Dead == 1 })
			mu.Lock()
			got := fmt.Sprint(tries, failed)
			mu.Unlock()
			if want := fmt.Sprintf(`[1:"" 2:"boom 1"] [%d:boom 1 %d:boom 2]`, id, id); got != want {
				t.Fatalf("%s, want %s", got, want)
			}
			dead, _ := s.Queue.DeadList(ctx, "nack", 0, 10)
			if len(dead) != 1 || dead[0].ID != id || dead[0].Attempts != 2 || dead[0].LastError != "boom 2" {
				t.Fatalf("dead: %+v", dead)
			}
			if c := w.Stop(ctx); c.Claimed != 2 || c.Completed != 0 || c.Failed != 2 {
				t.Fatal(counts(c))
			}
			sink.none(t)
		})

		t.Run(b+"/snooze", func(t *testing.T) {
			s.Queue.Enqueue(ctx, "snooze", []byte("job"), MaxAttempts(1))
			var mu sync.Mutex
			var tries []uint32
			var sink errSink
			w := startW(t, s, "snooze", func(_ context.Context, m *Message) error {
				mu.Lock()
				defer mu.Unlock()
				tries = append(tries, m.Attempts)
				switch len(tries) {
				case 1:
					return Snooze(5 * time.Second)
				case 2:
					return fmt.Errorf("wrapped: %w", Snooze(0)) // at once; errors.As finds it
				}
				return nil
			}, WorkerWait(100*time.Millisecond), sink.hook())
			until(t, "the first snooze", func() bool { return w.Counters().Snoozed == 1 })
			until(t, "delayed by 5 s", func() bool { return stats(t, s, "snooze").Delayed == 1 })
			s.Clock.Advance(5 * time.Second)
			until(t, "completed", func() bool { return w.Counters().Completed == 1 })
			// MaxAttempts 1: had a snooze used an attempt, the third delivery would not have come.
			mu.Lock()
			if fmt.Sprint(tries) != "[1 1 1]" {
				t.Fatal(tries)
			}
			mu.Unlock()
			if c := w.Stop(ctx); counts(c) != "claimed 3 completed 1 failed 0 snoozed 2 stalled 0 released 0 running 0" {
				t.Fatal(counts(c))
			}
			sink.none(t)
		})

		t.Run(b+"/concurrency", func(t *testing.T) {
			for i := 0; i < 8; i++ {
				s.Queue.Enqueue(ctx, "conc", []byte(fmt.Sprint(i)))
			}
			var g gates
			var sink errSink
			w := startW(t, s, "conc", g.handler, Concurrency(3), WorkerLease(longLease), WorkerWait(100*time.Millisecond), sink.hook())
			until(t, "three handlers running", func() bool { return g.started() == 3 })
			if c := w.Counters(); c.Running != 3 || c.Claimed != 3 {
				t.Fatalf("no prefetch: nothing claimed beyond the handlers: %s", counts(c))
			}
			if st := stats(t, s, "conc"); st.Processing != 3 {
				t.Fatalf("%+v", st)
			}
			for k := 0; k < 8; k++ {
				g.open(k, nil)
				until(t, fmt.Sprint("completion ", k+1), func() bool { return w.Counters().Completed == uint64(k+1) })
				until(t, "the next handler", func() bool { return g.started() == min(8, k+4) })
				if c := w.Counters(); c.Running > 3 {
					t.Fatal(counts(c))
				}
			}
			g.mu.Lock()
			top := g.top
			g.mu.Unlock()
			if top != 3 {
				t.Fatalf("%d handlers at once", top)
			}
			if c := w.Stop(ctx); c.Claimed != 8 || c.Completed != 8 || c.Running != 0 {
				t.Fatal(counts(c))
			}
			sink.none(t)
		})

		t.Run(b+"/prefetch-and-stop", func(t *testing.T) {
			for i := 0; i < 10; i++ {
				s.Queue.Enqueue(ctx, "pre", []byte(fmt.Sprint(i)))
			}
			var g gates
			var sink errSink
			var mu sync.Mutex
			started := map[string]bool{}
			h := func(hctx context.Context, m *Message) error {
				mu.Lock()
				started[string(m.Payload)] = true
				mu.Unlock()
				return g.handler(hctx, m)
			}
			w := startW(t, s, "pre", h, Concurrency(2), Prefetch(3), WorkerLease(longLease), WorkerWait(100*time.Millisecond), sink.hook())
			until(t, "two running, three prefetched", func() bool { return g.started() == 2 && w.Counters().Claimed == 5 })
			if st := stats(t, s, "pre"); st.Processing != 5 {
				t.Fatalf("%+v", st)
			}
			stopped := make(chan WorkerCounters)
			go func() { stopped <- w.Stop(ctx) }()
			// The prefetched ones go back while the two handlers still run.
			until(t, "the prefetched given back", func() bool { return stats(t, s, "pre").Pending == 8 })
			if st := stats(t, s, "pre"); st.Processing != 2 {
				t.Fatalf("%+v", st)
			}
			g.open(0, nil)
			g.open(1, nil)
			if c := <-stopped; counts(c) != "claimed 5 completed 2 failed 0 snoozed 0 stalled 0 released 3 running 0" {
				t.Fatal(counts(c))
			}
			// None of the eight left used an attempt: each comes at its first.
			rest, err := s.Queue.Dequeue(ctx, "pre", DequeueOptions{Limit: 10, Lease: longLease})
			if err != nil || len(rest) != 8 {
				t.Fatalf("%d, %v", len(rest), err)
			}
			for _, m := range rest {
				if m.Attempts != 1 || started[string(m.Payload)] {
					t.Fatalf("message %s: attempt %d, started %v", m.Payload, m.Attempts, started[string(m.Payload)])
				}
			}
			sink.none(t)
		})

		t.Run(b+"/heartbeat", func(t *testing.T) {
			s.Queue.Enqueue(ctx, "beat", []byte("long job"))
			var mu sync.Mutex
			phase := 0
			renewed := [3]int{} // renewals that succeeded, by the phase they started in
			ops := &fakeOps{queueOps: queueOps{s.Queue}}
			ops.extendF = func(m *Message, lease time.Duration) error {
				mu.Lock()
				p := phase
				mu.Unlock()
				err := ops.queueOps.extend(m, lease)
				if err == nil {
					mu.Lock()
					renewed[p]++
					mu.Unlock()
				}
				return err
			}
			renewedIn := func(p int) bool {
				mu.Lock()
				defer mu.Unlock()
				return renewed[p] > 0
			}
			setPhase := func(p int) {
				mu.Lock()
				phase = p
				mu.Unlock()
			}
			var g gates
			var sink errSink
			w := startFake(t, ops, "beat", g.handler, WorkerLease(time.Second), Heartbeat(10*time.Millisecond),
				WorkerWait(100*time.Millisecond), sink.hook())
			until(t, "the handler", func() bool { return g.started() == 1 })
			s.Clock.Advance(600 * time.Millisecond)
			setPhase(1)
			until(t, "a renewal after 600 ms", func() bool { return renewedIn(1) })
			s.Clock.Advance(600 * time.Millisecond) // 1200 ms after the claim: past the first lease, within the renewed one
			setPhase(2)
			until(t, "a renewal after 1200 ms", func() bool { return renewedIn(2) })
			if msgs, _ := s.Queue.Dequeue(ctx, "beat", DequeueOptions{Lease: longLease}); len(msgs) != 0 {
				t.Fatal("still leased to the worker, yet dequeued again")
			}
			g.open(0, nil)
			until(t, "completed", func() bool { return w.Counters().Completed == 1 })
			if c := w.Stop(ctx); c.Completed != 1 || c.Stalled != 0 || c.Failed != 0 {
				t.Fatal(counts(c))
			}
			if st := stats(t, s, "beat"); st.Processing != 0 {
				t.Fatalf("%+v", st)
			}
			sink.none(t)
		})

		t.Run(b+"/stalled", func(t *testing.T) {
			id, _ := s.Queue.Enqueue(ctx, "stall", []byte("job"))
			hctxs := make(chan context.Context, 1)
			returned := make(chan struct{})
			var sink errSink
			var mu sync.Mutex
			var stalled []uint64
			w := startW(t, s, "stall", func(hctx context.Context, m *Message) error {
				hctxs <- hctx
				<-hctx.Done()
				close(returned)
				return nil // late: ignored
			}, WorkerLease(time.Second), Heartbeat(10*time.Millisecond), WorkerWait(100*time.Millisecond), sink.hook(),
				OnStalled(func(m *Message) {
					mu.Lock()
					stalled = append(stalled, m.ID)
					mu.Unlock()
				}))
			hctx := <-hctxs
			s.Clock.Advance(2 * time.Second) // past the lease: every renewal from now on is refused
			stolen, err := s.Queue.Dequeue(ctx, "stall", DequeueOptions{Lease: longLease})
			if err != nil || len(stolen) != 1 || stolen[0].ID != id || stolen[0].Attempts != 2 {
				t.Fatalf("%v, %v", stolen, err)
			}
			<-returned
			if cause := context.Cause(hctx); !errors.Is(cause, ErrToken) {
				t.Fatalf("the handler's context: %v", cause)
			}
			until(t, "the handler returned", func() bool { return w.Counters().Running == 0 })
			if err := s.Queue.Ack(ctx, stolen[0]); err != nil { // the worker acked nothing: the thief's delivery is intact
				t.Fatal(err)
			}
			c := w.Stop(ctx)
			if c.Claimed != 1 || c.Stalled != 1 || c.Completed != 0 || c.Failed != 0 {
				t.Fatal(counts(c))
			}
			mu.Lock()
			if fmt.Sprint(stalled) != fmt.Sprint([]uint64{id}) {
				t.Fatal(stalled)
			}
			mu.Unlock()
			sink.none(t)
		})

		t.Run(b+"/stop-deadline", func(t *testing.T) {
			s.Queue.Enqueue(ctx, "deadline", []byte("job"))
			hctxs := make(chan context.Context, 1)
			gate := make(chan struct{})
			returned := make(chan struct{})
			var sink errSink
			w := startW(t, s, "deadline", func(hctx context.Context, m *Message) error {
				hctxs <- hctx
				<-gate // ignores its context
				close(returned)
				return errors.New("too late to count")
			}, WorkerLease(longLease), WorkerWait(100*time.Millisecond), sink.hook())
			hctx := <-hctxs
			c := w.Stop(doneCtx())
			if counts(c) != "claimed 1 completed 0 failed 0 snoozed 0 stalled 0 released 1 running 0" {
				t.Fatal(counts(c))
			}
			if cause := context.Cause(hctx); !errors.Is(cause, ErrCanceled) {
				t.Fatalf("the handler's context: %v", cause)
			}
			// Given back unseen: the next delivery is at its first attempt.
			again, err := s.Queue.Dequeue(ctx, "deadline", DequeueOptions{Lease: longLease})
			if err != nil || len(again) != 1 || again[0].Attempts != 1 || again[0].LastError != "" {
				t.Fatalf("%+v, %v", again, err)
			}
			close(gate)
			<-returned
			s.Queue.Ack(ctx, again[0])
			select {
			case <-w.Done():
			default:
				t.Fatal("Done is not closed after Stop")
			}
			if c := w.Counters(); counts(c) != "claimed 1 completed 0 failed 0 snoozed 0 stalled 0 released 1 running 0" {
				t.Fatal(counts(c))
			}
			sink.none(t)
		})
	}
}
