package bitt

// The Worker's options and its own errors: values out of range, a bad
// topic (a permanent error stops it), store errors reported and retried
// after the backoff, hooks that panic, acks grouped into one AckMany, the
// store's lease when none is given, and Store.Close stopping a worker.
// Failures are made by fakeOps, which fails the calls a test picks and
// passes the others to the real store.

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

type fakeOps struct {
	queueOps
	dequeueF func(ctx context.Context, topic string, limit int, lease, wait time.Duration) ([]*Message, error)
	ackF     func(m *Message) error
	ackManyF func(topic string, msgs []*Message) ([]bool, error)
	extendF  func(m *Message, lease time.Duration) error
}

func (f *fakeOps) dequeue(ctx context.Context, topic string, limit int, lease, wait time.Duration) ([]*Message, error) {
	if f.dequeueF != nil {
		return f.dequeueF(ctx, topic, limit, lease, wait)
	}
	return f.queueOps.dequeue(ctx, topic, limit, lease, wait)
}

func (f *fakeOps) ack(m *Message) error {
	if f.ackF != nil {
		return f.ackF(m)
	}
	return f.queueOps.ack(m)
}

func (f *fakeOps) ackMany(topic string, msgs []*Message) ([]bool, error) {
	if f.ackManyF != nil {
		return f.ackManyF(topic, msgs)
	}
	return f.queueOps.ackMany(topic, msgs)
}

func (f *fakeOps) extend(m *Message, lease time.Duration) error {
	if f.extendF != nil {
		return f.extendF(m, lease)
	}
	return f.queueOps.extend(m, lease)
}

func newFake(t *testing.T, ops workerOps, topic string, h Handler, opts ...WorkerOption) *Worker {
	t.Helper()
	w, err := newWorker(ops, topic, h, opts)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func startFake(t *testing.T, ops workerOps, topic string, h Handler, opts ...WorkerOption) *Worker {
	t.Helper()
	w := newFake(t, ops, topic, h, opts...)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Stop(doneCtx()) })
	return w
}

func nop(context.Context, *Message) error { return nil }

func TestWorkerOptionsRefused(t *testing.T) {
	s := openT(t, "memory:")
	for _, c := range []struct {
		opts []WorkerOption
		want string
	}{
		{[]WorkerOption{Concurrency(0)}, "worker: concurrency: 0 is not a positive integer"},
		{[]WorkerOption{Concurrency(-2)}, "worker: concurrency: -2 is not a positive integer"},
		{[]WorkerOption{Prefetch(-1)}, "worker: prefetch: -1 is negative"},
		{[]WorkerOption{WorkerLease(0)}, "worker: lease: 0s is not positive"},
		{[]WorkerOption{Heartbeat(-5 * time.Millisecond)}, "worker: heartbeat: -5ms is not positive"},
		{[]WorkerOption{WorkerWait(0)}, "worker: wait: 0s is not positive"},
		{[]WorkerOption{WorkerWait(0), Concurrency(0)}, "worker: wait: 0s is not positive; concurrency: 0 is not a positive integer"},
	} {
		w, err := NewWorker(s.Queue, "t", nop, c.opts...)
		if w != nil || !errors.Is(err, ErrInvalid) || err.Error() != "bitt: invalid argument: "+c.want {
			t.Errorf("%v: %v, want %q", w, err, c.want)
		}
	}
	if _, err := NewWorker(s.Queue, "t", nil); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "worker: handler is nil") {
		t.Error(err)
	}
	if _, err := NewWorker(nil, "t", nop); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "worker: queue is nil") {
		t.Error(err)
	}
	if err := Snooze(-time.Second); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "snooze: delay -1s is negative") {
		t.Error(err)
	}
	if _, ok := snoozeOf(Snooze(-time.Second)); ok {
		t.Error("a refused Snooze snoozes")
	}
	// Never started: Stop just stops; no Start after it.
	w, err := NewWorker(s.Queue, "t", nop)
	if err != nil {
		t.Fatal(err)
	}
	if c := w.Stop(context.Background()); c != (WorkerCounters{}) {
		t.Fatal(counts(c))
	}
	<-w.Done()
	if err := w.Start(); !errors.Is(err, ErrUsage) {
		t.Fatal(err)
	}
	// Started: a second Start is refused, Stop twice is the same stop.
	w, _ = NewWorker(s.Queue, "t", nop, WorkerWait(time.Hour))
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(); !errors.Is(err, ErrUsage) {
		t.Fatal(err)
	}
	w.Stop(context.Background()) // ends the hour's wait at once
	w.Stop(context.Background())
	if w.Err() != nil {
		t.Fatal(w.Err())
	}
}

func TestWorkerPermanentErrorsStopIt(t *testing.T) {
	s := openT(t, "memory:")
	var sink errSink
	w := startW(t, s, "", nop, sink.hook()) // a bad topic: the core's ErrInvalid
	<-w.Done()
	if !errors.Is(w.Err(), ErrInvalid) {
		t.Fatal(w.Err())
	}
	if got := sink.get(); len(got) != 1 || !strings.Contains(got[0], "invalid argument") {
		t.Fatalf("%q", got)
	}
	if c := w.Stop(context.Background()); c.Claimed != 0 {
		t.Fatal(counts(c))
	}

	// A backend without the call: reported, stopped, no retry.
	calls := 0
	ops := &fakeOps{queueOps: queueOps{s.Queue}}
	ops.dequeueF = func(context.Context, string, int, time.Duration, time.Duration) ([]*Message, error) {
		calls++
		return nil, &Error{Code: ErrUnsupported.Code, Message: "no queues here"}
	}
	sink = errSink{}
	w = startFake(t, ops, "t", nop, sink.hook())
	<-w.Done()
	if !errors.Is(w.Err(), ErrUnsupported) || calls != 1 || fmt.Sprint(sink.get()) != "[bitt: unsupported: no queues here]" {
		t.Fatal(w.Err(), calls, sink.get())
	}
}

func TestWorkerStoreErrorsReportedAndRetried(t *testing.T) {
	s := openT(t, "memory:")
	ctx := context.Background()
	var mu sync.Mutex
	dequeues := 0
	ops := &fakeOps{queueOps: queueOps{s.Queue}}
	ops.dequeueF = func(ctx context.Context, topic string, limit int, lease, wait time.Duration) ([]*Message, error) {
		mu.Lock()
		dequeues++
		n := dequeues
		mu.Unlock()
		if n == 1 {
			return nil, &Error{Code: ErrBackend.Code, Message: "connection lost"}
		}
		return ops.queueOps.dequeue(ctx, topic, limit, lease, wait)
	}
	ops.ackF = func(m *Message) error {
		if string(m.Payload) == "first" {
			return &Error{Code: ErrBusy.Code, Message: "busy"}
		}
		return ops.queueOps.ack(m)
	}
	s.Queue.Enqueue(ctx, "errors", []byte("first"))
	var sink errSink
	w := startFake(t, ops, "errors", nop, WorkerLease(longLease), WorkerWait(100*time.Millisecond), sink.hook())
	until(t, "two errors", func() bool { return len(sink.get()) == 2 })
	if got := fmt.Sprint(sink.get()); got != "[bitt: backend error: connection lost bitt: busy: busy [first]]" {
		t.Fatal(got)
	}
	if st := stats(t, s, "errors"); st.Processing != 1 {
		t.Fatalf("not acked: it comes back when its lease ends: %+v", st)
	}
	s.Queue.Enqueue(ctx, "errors", []byte("second"))
	until(t, "the second completed", func() bool { return w.Counters().Completed == 1 })
	if c := w.Stop(ctx); c.Claimed != 2 || c.Completed != 1 || c.Failed != 0 || w.Err() != nil {
		t.Fatal(counts(c), w.Err())
	}
}

func TestWorkerBackoffDoublesToFiveSeconds(t *testing.T) {
	var want []time.Duration
	for d, i := time.Duration(0), 0; i < 9; i++ {
		d = nextBackoff(d)
		want = append(want, d)
	}
	if fmt.Sprint(want) != "[100ms 200ms 400ms 800ms 1.6s 3.2s 5s 5s 5s]" {
		t.Fatal(want)
	}
	// The worker's pauses between failed dequeues follow it, and a success
	// starts it again from 100 ms. The pause is recorded, not slept.
	s := openT(t, "memory:")
	var mu sync.Mutex
	var pauses []time.Duration
	n := 0
	ops := &fakeOps{queueOps: queueOps{s.Queue}}
	ops.dequeueF = func(ctx context.Context, topic string, limit int, lease, wait time.Duration) ([]*Message, error) {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		if k == 4 || k > 6 {
			return ops.queueOps.dequeue(ctx, topic, limit, lease, wait)
		}
		return nil, &Error{Code: ErrBusy.Code, Message: "busy"}
	}
	var sink errSink
	w := newFake(t, ops, "t", nop, WorkerWait(10*time.Millisecond), sink.hook())
	w.sleep = func(ctx context.Context, d time.Duration) {
		mu.Lock()
		pauses = append(pauses, d)
		mu.Unlock()
	}
	w.Start()
	until(t, "five failures", func() bool { return len(sink.get()) == 5 })
	w.Stop(context.Background())
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(pauses) != "[100ms 200ms 400ms 100ms 200ms]" {
		t.Fatal(pauses)
	}
}

func TestWorkerHookPanicsAreReported(t *testing.T) {
	s := openT(t, "memory:")
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		s.Queue.Enqueue(ctx, "hooks", []byte(fmt.Sprint(i)))
	}
	var sink errSink
	w := startW(t, s, "hooks", func(_ context.Context, m *Message) error {
		if m.Payload[0]%2 == 1 {
			panic(fmt.Sprint("odd ", string(m.Payload)))
		}
		return nil
	}, WorkerWait(100*time.Millisecond), sink.hook(),
		OnCompleted(func(m *Message) { panic(errors.New("completed hook " + string(m.Payload))) }),
		OnFailed(func(m *Message, err error) { panic(fmt.Sprintf("failed hook %s: %v", m.Payload, err)) }))
	until(t, "all four handled", func() bool { c := w.Counters(); return c.Completed == 2 && c.Failed == 2 })
	until(t, "four reports", func() bool { return len(sink.get()) == 4 })
	got := sink.get()
	sort.Strings(got)
	want := "[worker: a hook panicked: completed hook 0 worker: a hook panicked: completed hook 2 " +
		"worker: a hook panicked: failed hook 1: panic: odd 1 worker: a hook panicked: failed hook 3: panic: odd 3]"
	if fmt.Sprint(got) != want {
		t.Fatal(got)
	}
	// A handler's panic is its failure: nacked with its text.
	m, _ := s.Queue.Get(ctx, "hooks", 2)
	if m == nil || m.LastError != "panic: odd 1" {
		t.Fatalf("%+v", m)
	}
	w.Stop(ctx)
}

func TestWorkerGroupsAcksInOneAckMany(t *testing.T) {
	s := openT(t, "memory:")
	ctx := context.Background()
	for i := 0; i < 4; i++ {
		s.Queue.Enqueue(ctx, "acks", []byte(fmt.Sprint(i)))
	}
	first := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	var singles, groups []int
	ops := &fakeOps{queueOps: queueOps{s.Queue}}
	ops.ackF = func(m *Message) error {
		mu.Lock()
		singles = append(singles, 1)
		mu.Unlock()
		close(first)
		<-release // the others' acks queue meanwhile
		return ops.queueOps.ack(m)
	}
	ops.ackManyF = func(topic string, msgs []*Message) ([]bool, error) {
		mu.Lock()
		groups = append(groups, len(msgs))
		mu.Unlock()
		msgs[1].Token = "stale" // one of the group answers a stale token
		return ops.queueOps.ackMany(topic, msgs)
	}
	var g gates
	var sink errSink
	w := startFake(t, ops, "acks", g.handler, Concurrency(4), WorkerLease(longLease), WorkerWait(100*time.Millisecond), sink.hook())
	until(t, "four handlers", func() bool { return g.started() == 4 })
	g.open(0, nil)
	<-first
	for i := 1; i < 4; i++ {
		g.open(i, nil)
	}
	until(t, "three acks waiting", func() bool {
		w.acks.mu.Lock()
		defer w.acks.mu.Unlock()
		return len(w.acks.waiting) == 3
	})
	close(release)
	until(t, "all written", func() bool { c := w.Counters(); return c.Completed+c.Stalled == 4 })
	c := w.Stop(ctx)
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(singles, groups) != "[1] [3]" || c.Completed != 3 || c.Stalled != 1 {
		t.Fatal(singles, groups, counts(c))
	}
	sink.none(t)
}

func TestWorkerStoreLeaseAndClose(t *testing.T) {
	file := filepath.Join(t.TempDir(), "lease.db")
	s, err := Open("sqlite:" + file + "?queue_lease=900")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Clock.SetManual(workerT0)
	ctx := context.Background()
	s.Queue.Enqueue(ctx, "d", []byte("job"))
	var mu sync.Mutex
	var leases []time.Duration
	ops := &fakeOps{queueOps: queueOps{s.Queue}}
	ops.extendF = func(m *Message, lease time.Duration) error {
		mu.Lock()
		leases = append(leases, lease)
		mu.Unlock()
		return ops.queueOps.extend(m, lease)
	}
	hctxs := make(chan context.Context, 1)
	var sink errSink
	w := newFake(t, ops, "d", func(hctx context.Context, m *Message) error {
		hctxs <- hctx
		select {} // never ends
	}, Heartbeat(10*time.Millisecond), WorkerWait(100*time.Millisecond), sink.hook())
	w.s = s // as NewWorker does: Close stops it
	w.Start()
	hctx := <-hctxs
	until(t, "a renewal", func() bool { mu.Lock(); defer mu.Unlock(); return len(leases) > 0 })
	mu.Lock()
	if leases[0] != 900*time.Millisecond {
		t.Fatal(leases)
	}
	mu.Unlock()
	s.Close() // stops the worker at once: the running delivery given back
	if hctx.Err() == nil {
		t.Fatal("the handler's context is live after Close")
	}
	<-w.Done()
	if c := w.Counters(); counts(c) != "claimed 1 completed 0 failed 0 snoozed 0 stalled 0 released 1 running 0" {
		t.Fatal(counts(c))
	}
	sink.none(t)
	b := openT(t, "sqlite:"+file)
	b.Clock.SetManual(workerT0) // given back at workerT0 of the manual clock
	msgs, err := b.Queue.Dequeue(ctx, "d", DequeueOptions{Lease: longLease})
	if err != nil || len(msgs) != 1 || msgs[0].Attempts != 1 {
		t.Fatalf("%+v, %v", msgs, err)
	}
}

func TestWorkerStopsWhenItsStoreCloses(t *testing.T) {
	s, err := Open("memory:")
	if err != nil {
		t.Fatal(err)
	}
	var sink errSink
	w, _ := NewWorker(s.Queue, "t", nop, WorkerWait(time.Hour), sink.hook())
	w.Start()
	s.Close() // ends the hour's wait at once
	<-w.Done()
	if w.Err() != nil { // stopped by Close, as by Stop
		t.Fatal(w.Err())
	}
	sink.none(t)
	// A worker started on a closed store stops on the ErrUsage, unreported.
	w, _ = NewWorker(s.Queue, "t", nop, sink.hook())
	w.Start()
	<-w.Done()
	if !errors.Is(w.Err(), ErrUsage) {
		t.Fatal(w.Err())
	}
	sink.none(t)
}

type blankErr struct{}

func (blankErr) Error() string { return "" }

func TestWorkerNackTexts(t *testing.T) {
	s := openT(t, "memory:")
	ctx := context.Background()
	results := map[string]error{
		"bitt":    Snooze(-time.Second), // refused: an ErrInvalid, whose message is recorded
		"wrapped": fmt.Errorf("step 2: %w", ErrConflict),
		"blank":   blankErr{},
	}
	ids := map[string]uint64{}
	for name := range results {
		ids[name], _ = s.Queue.Enqueue(ctx, "texts", []byte(name))
	}
	var sink errSink
	w := startW(t, s, "texts", func(_ context.Context, m *Message) error { return results[string(m.Payload)] },
		WorkerWait(100*time.Millisecond), sink.hook())
	until(t, "three failures", func() bool { return w.Counters().Failed == 3 })
	for name, want := range map[string]string{
		"bitt": "snooze: delay -1s is negative", "wrapped": "step 2: bitt: conflict", "blank": "bitt.blankErr",
	} {
		m, err := s.Queue.Get(ctx, "texts", ids[name])
		if err != nil || m == nil || m.LastError != want {
			t.Errorf("%s: %+v, %v; want %q", name, m, err, want)
		}
	}
	if c := w.Stop(ctx); c.Snoozed != 0 || c.Failed != 3 {
		t.Fatal(counts(c))
	}
	sink.none(t)
}
