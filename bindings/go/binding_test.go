package bitt

// Go-specific tests: many goroutines on one store, contexts that end during
// a wait, errors, close, the value mapping and the iterators.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func openT(t testing.TB, url string) *Store {
	t.Helper()
	s, err := Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// runWorkers runs body(w) in n goroutines, waits for them all, then fails
// the test with the first error one returned.
func runWorkers(t *testing.T, n int, body func(w int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for w := 0; w < n; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			if err := body(w); err != nil {
				errs <- fmt.Errorf("worker %d: %w", w, err)
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func goroutineURLs(t *testing.T) map[string]string {
	urls := map[string]string{"memory": "memory:", "sqlite": "sqlite:" + filepath.Join(t.TempDir(), "g.db")}
	tag := fmt.Sprintf("g%d", time.Now().UnixNano()%1e9)
	if u := os.Getenv("BITT_TEST_POSTGRES_URL"); u != "" {
		urls["postgres"] = u + "?schema=" + tag
	}
	if u := os.Getenv("BITT_TEST_REDIS_URL"); u != "" {
		urls["redis"] = u + "?prefix=" + tag
	}
	return urls
}

func TestManyGoroutinesOneStore(t *testing.T) {
	for backend, url := range goroutineURLs(t) {
		t.Run(backend, func(t *testing.T) {
			s := openT(t, url)
			ctx := context.Background()
			const workers, each = 16, 40
			runWorkers(t, workers, func(w int) error {
				for i := 0; i < each; i++ {
					key := []byte(fmt.Sprintf("w%d/%d", w, i))
					val := []byte(fmt.Sprintf("value %d %d", w, i))
					if _, err := s.KV.Set(ctx, key, val); err != nil {
						return err
					}
					e, err := s.KV.Get(ctx, key)
					if err != nil || e == nil || string(e.Value) != string(val) {
						return fmt.Errorf("get %s: %v %v", key, e, err)
					}
					if _, err := s.KV.Increment(ctx, []byte("total"), 1); err != nil {
						return err
					}
					if _, err := s.Queue.Enqueue(ctx, "jobs", val); err != nil {
						return err
					}
				}
				return nil
			})
			e, err := s.KV.Get(ctx, []byte("total"))
			if err != nil {
				t.Fatal(err)
			}
			if n, err := e.Counter(); err != nil || n != workers*each {
				t.Fatalf("total = %d, %v; want %d", n, err, workers*each)
			}
			// Drain the queue from many goroutines: every message once.
			seen := sync.Map{}
			var count sync.WaitGroup
			var mu sync.Mutex
			got := 0
			for w := 0; w < workers; w++ {
				count.Add(1)
				go func() {
					defer count.Done()
					for {
						msgs, err := s.Queue.Dequeue(ctx, "jobs", DequeueOptions{Limit: 7, Lease: time.Minute})
						if err != nil {
							t.Error(err)
							return
						}
						if len(msgs) == 0 {
							return
						}
						for _, m := range msgs {
							if _, loaded := seen.LoadOrStore(m.ID, true); loaded {
								t.Errorf("message %d delivered twice", m.ID)
							}
							if err := s.Queue.Ack(ctx, m); err != nil {
								t.Error(err)
							}
						}
						mu.Lock()
						got += len(msgs)
						mu.Unlock()
					}
				}()
			}
			count.Wait()
			if got != workers*each {
				t.Fatalf("drained %d messages, want %d", got, workers*each)
			}
		})
	}
}

func TestContextEndsDuringDequeueWait(t *testing.T) {
	s := openT(t, "memory:")
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	msgs, err := s.Queue.Dequeue(ctx, "empty", DequeueOptions{Wait: time.Hour})
	if !errors.Is(err, context.DeadlineExceeded) || msgs != nil {
		t.Fatalf("got %v, %v; want context.DeadlineExceeded", msgs, err)
	}

	ctx2, cancel2 := context.WithCancel(context.Background())
	go func() { time.Sleep(120 * time.Millisecond); cancel2() }()
	_, err = s.Queue.Dequeue(ctx2, "empty", DequeueOptions{Wait: time.Hour})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v; want context.Canceled", err)
	}
}

func TestAckMany(t *testing.T) {
	s := openT(t, "memory:")
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		s.Queue.Enqueue(ctx, "q", []byte("x"))
	}
	msgs, err := s.Queue.Dequeue(ctx, "q", DequeueOptions{Limit: 3})
	if err != nil || len(msgs) != 3 {
		t.Fatalf("dequeue: %v, %v", msgs, err)
	}
	stale := &Message{ID: msgs[2].ID, Token: "stale"}
	acked, err := s.Queue.AckMany(ctx, "q", []*Message{msgs[0], {ID: msgs[1].ID, Token: msgs[1].Token}, stale})
	if err != nil || fmt.Sprint(acked) != "[true true false]" {
		t.Fatalf("ack_many: %v, %v", acked, err)
	}
	if acked, err = s.Queue.AckMany(ctx, "q", nil); err != nil || len(acked) != 0 {
		t.Fatalf("ack_many of none: %v, %v", acked, err)
	}
	bad := []*Message{msgs[2], {ID: 1, Token: "a\x00b"}}
	if _, err = s.Queue.AckMany(ctx, "q", bad); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a token with a NUL: %v", err)
	}
	if acked, err = s.Queue.AckMany(ctx, "q", msgs[2:]); err != nil || !acked[0] {
		t.Fatalf("the refused call acked something: %v, %v", acked, err)
	}
}

func TestDequeueWaitGetsALaterMessage(t *testing.T) {
	s := openT(t, "memory:")
	ctx := context.Background()
	go func() {
		time.Sleep(250 * time.Millisecond) // past a few wait slices
		s.Queue.Enqueue(ctx, "later", []byte("here"))
	}()
	msgs, err := s.Queue.Dequeue(ctx, "later", DequeueOptions{Wait: time.Minute})
	if err != nil || len(msgs) != 1 || string(msgs[0].Payload) != "here" {
		t.Fatalf("got %v, %v", msgs, err)
	}
}

func TestSubscriptionNextAndContexts(t *testing.T) {
	s := openT(t, "memory:")
	ctx := context.Background()
	sub, err := s.PubSub.Subscribe(ctx, "ch")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(150 * time.Millisecond)
		s.PubSub.Publish(ctx, "ch", []byte("hello"))
	}()
	m, err := sub.Next(ctx)
	if err != nil || string(m.Payload) != "hello" || m.Topic != "ch" {
		t.Fatalf("got %v, %v", m, err)
	}
	tctx, cancel := context.WithTimeout(ctx, 120*time.Millisecond)
	defer cancel()
	if _, err := sub.Next(tctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v; want context.DeadlineExceeded", err)
	}
	// Closing from another goroutine ends a Next that waits.
	go func() { time.Sleep(150 * time.Millisecond); sub.Close() }()
	if _, err := sub.Next(ctx); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("got %v; want ErrUsage (closed)", err)
	}
	// The iterator yields what is published, then the context's end.
	sub2, _ := s.PubSub.Subscribe(ctx, "ch2")
	s.PubSub.Publish(ctx, "ch2", []byte("a"))
	s.PubSub.Publish(ctx, "ch2", []byte("b"))
	ictx, icancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer icancel()
	var got []string
	var last error
	for m, err := range sub2.All(ictx) {
		if err != nil {
			last = err
			break
		}
		got = append(got, string(m.Payload))
	}
	if strings.Join(got, ",") != "a,b" || !errors.Is(last, context.DeadlineExceeded) {
		t.Fatalf("got %v then %v", got, last)
	}
}

func TestErrorsCarryCodeAndMessage(t *testing.T) {
	ctx := context.Background()
	if _, err := Open("nosuch:"); !errors.Is(err, ErrURL) || err.(*Error).Message == "" {
		t.Fatalf("open: %v", err)
	}
	s := openT(t, "memory:")
	ver, _ := s.KV.Set(ctx, []byte("k"), []byte("1"))
	tx, err := s.Atomic(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Close()
	tx.Check([]byte("k"), ver+1)
	tx.Set([]byte("k"), []byte("2"))
	_, err = tx.Commit(ctx)
	if !errors.Is(err, ErrConflict) || errors.Is(err, ErrInvalid) {
		t.Fatalf("commit: %v", err)
	}
	var be *Error
	if !errors.As(err, &be) || be.Code != -6 || be.Message == "" {
		t.Fatalf("commit error: %#v", err)
	}
	if _, err := s.KV.Increment(ctx, []byte("k"), 1); !errors.Is(err, ErrNotCounter) {
		t.Fatalf("increment: %v", err)
	}
	if _, err := s.Queue.Enqueue(ctx, "", nil); !errors.Is(err, ErrInvalid) {
		t.Fatalf("enqueue with an empty topic: %v", err)
	}
	// Errors from many goroutines keep their own messages (read in the
	// failing call, not from a thread-local afterwards).
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				var err error
				want := ErrNotCounter
				if i%2 == 0 {
					_, err = s.KV.Set(ctx, []byte("x"), []byte("y"), WithKind(7))
					want = ErrInvalid
				} else {
					_, err = s.KV.Increment(ctx, []byte("k"), 1)
				}
				if !errors.Is(err, want) {
					t.Errorf("goroutine %d: %v, want %v", i, err, want)
					return
				}
			}
		}(i)
	}
	wg.Wait()
}

func TestCancelledContextDoesNotWrite(t *testing.T) {
	s := openT(t, "memory:")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.KV.Set(ctx, []byte("k"), []byte("v")); !errors.Is(err, context.Canceled) {
		t.Fatalf("set: %v", err)
	}
	if e, err := s.KV.Get(context.Background(), []byte("k")); e != nil || err != nil {
		t.Fatalf("the key was written: %v %v", e, err)
	}
}

// closeWhileWriting closes s while 8 goroutines set and get keys: each
// call fails with ErrUsage once the store is closed, and nothing else.
func closeWhileWriting(t *testing.T, s *Store) {
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				key := []byte(fmt.Sprint(w, i))
				_, err := s.KV.Set(ctx, key, []byte("v"))
				if err == nil {
					_, err = s.KV.Get(ctx, key)
				}
				if err != nil {
					if !errors.Is(err, ErrUsage) {
						t.Errorf("after close: %v", err)
					}
					return
				}
			}
		}(w)
	}
	time.Sleep(30 * time.Millisecond)
	s.Close()
	wg.Wait()
}

func TestCloseWhileCallsRun(t *testing.T) {
	s, err := Open("memory:")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	sub, _ := s.PubSub.Subscribe(ctx, "c")
	closeWhileWriting(t, s)
	s.Close() // twice is fine
	if _, err := sub.Next(ctx); !errors.Is(err, ErrUsage) {
		t.Fatalf("a subscription of a closed store: %v", err)
	}
	if _, err := s.Atomic(ctx); !errors.Is(err, ErrUsage) {
		t.Fatalf("atomic on a closed store: %v", err)
	}
	if s.Backend() != "" {
		t.Fatalf("backend of a closed store: %q", s.Backend())
	}
}

func TestValuesTuplesAndList(t *testing.T) {
	ctx := context.Background()
	s := openT(t, "memory:")
	if _, err := s.KV.SetValue(ctx, []byte("j"), map[string]any{"a": "<é>", "n": 1.5}); err != nil {
		t.Fatal(err)
	}
	e, _ := s.KV.Get(ctx, []byte("j"))
	if e.Kind != KindJSON || string(e.Value) != `{"a":"<é>","n":1.5}` {
		t.Fatalf("json: %d %s", e.Kind, e.Value)
	}
	s.KV.SetValue(ctx, []byte("c"), int64(-42))
	e, _ = s.KV.Get(ctx, []byte("c"))
	if v, err := e.Decode(); e.Kind != KindCounter || v != int64(-42) || err != nil {
		t.Fatalf("counter: %d %s %v", e.Kind, e.Value, v)
	}
	if v, _ := Decode([]byte("raw"), KindBytes); string(v.([]byte)) != "raw" {
		t.Fatal("bytes")
	}
	a, _ := Tuple("users", 2)
	b, _ := Tuple("users", 10)
	c, _ := Tuple("users", 10, "x")
	if !(string(a) < string(b) && string(b) < string(c)) {
		t.Fatal("tuple order")
	}
	parts, err := DecodeTuple(c)
	if err != nil || fmt.Sprint(parts) != "[users 10 x]" {
		t.Fatalf("decode: %v %v", parts, err)
	}
	if _, err := Tuple(struct{}{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a bad part: %v", err)
	}
	for i := 0; i < 25; i++ {
		k, _ := Tuple("p", i)
		s.KV.Set(ctx, k, []byte{byte(i)})
	}
	prefix, _ := Tuple("p")
	n := 0
	for e, err := range s.KV.List(ctx, ListOptions{Prefix: prefix, Limit: 4}) {
		if err != nil {
			t.Fatal(err)
		}
		if e.Value[0] != byte(n) {
			t.Fatalf("entry %d: %v", n, e.Value)
		}
		n++
	}
	if n != 25 {
		t.Fatalf("listed %d", n)
	}
	big := make([]byte, 60000) // past the scratch buffer: the malloc'd path
	big[59999] = 7
	if _, err := s.KV.Set(ctx, []byte("big"), big); err != nil {
		t.Fatal(err)
	}
	if e, err := s.KV.Get(ctx, []byte("big")); err != nil || len(e.Value) != 60000 || e.Value[59999] != 7 {
		t.Fatal("big value", err)
	}
	es, err := s.KV.GetMany(ctx, [][]byte{[]byte("c"), []byte("none"), []byte("big")})
	if err != nil || len(es) != 3 || es[1] != nil || len(es[2].Value) != 60000 {
		t.Fatalf("get many: %v %v", es, err)
	}
}

func BenchmarkGet(b *testing.B) {
	s := openT(b, "memory:")
	ctx := context.Background()
	key, val := []byte("bench-key"), []byte("0123456789abcdef")
	s.KV.Set(ctx, key, val)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if e, err := s.KV.Get(ctx, key); err != nil || e == nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSet(b *testing.B) {
	s := openT(b, "memory:")
	ctx := context.Background()
	key, val := []byte("bench-key"), []byte("0123456789abcdef")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := s.KV.Set(ctx, key, val); err != nil {
			b.Fatal(err)
		}
	}
}

// Every call on a closed store fails with ErrUsage ("closed"): the core is
// handed no store, and none of its entry points may crash on that.
func TestEveryCallAfterClose(t *testing.T) {
	ctx := context.Background()
	s, err := Open("memory:")
	if err != nil {
		t.Fatal(err)
	}
	tx, _ := s.Atomic(ctx)
	defer tx.Close()
	s.Close()
	k, m := []byte("k"), &Message{Topic: "t", ID: 1, Token: "x"}
	calls := map[string]func() error{
		"Migrate":   func() error { return s.Migrate(ctx) },
		"Get":       func() error { _, err := s.KV.Get(ctx, k); return err },
		"Take":      func() error { _, err := s.KV.Take(ctx, k); return err },
		"Set":       func() error { _, err := s.KV.Set(ctx, k, k); return err },
		"Add":       func() error { _, _, err := s.KV.Add(ctx, k, k); return err },
		"Delete":    func() error { _, err := s.KV.Delete(ctx, k); return err },
		"Increment": func() error { _, err := s.KV.Increment(ctx, k, 1); return err },
		"GetMany":   func() error { _, err := s.KV.GetMany(ctx, [][]byte{k}); return err },
		"Page":      func() error { _, _, err := s.KV.Page(ctx, ListOptions{}); return err },
		"Purge":     func() error { _, err := s.KV.PurgeExpired(ctx); return err },
		"TxnSet":    func() error { return tx.Set(k, k) },
		"TxnCommit": func() error { _, err := tx.Commit(ctx); return err },
		"Enqueue":   func() error { _, err := s.Queue.Enqueue(ctx, "t", k); return err },
		"Dequeue":   func() error { _, err := s.Queue.Dequeue(ctx, "t", DequeueOptions{}); return err },
		"Ack":       func() error { return s.Queue.Ack(ctx, m) },
		"AckMany":   func() error { _, err := s.Queue.AckMany(ctx, "t", []*Message{m}); return err },
		"Nack":      func() error { return s.Queue.Nack(ctx, m, "e") },
		"Extend":    func() error { return s.Queue.Extend(ctx, m, time.Second) },
		"Snooze":    func() error { return s.Queue.Snooze(ctx, "t", 1, "x", 0) },
		"DequeueTopics": func() error {
			_, err := s.Queue.DequeueTopics(ctx, []string{"t", "u"}, DequeueOptions{})
			return err
		},
		"QueueGet":        func() error { _, err := s.Queue.Get(ctx, "t", 1); return err },
		"QueueCancel":     func() error { _, err := s.Queue.Cancel(ctx, "t", 1); return err },
		"QueueReschedule": func() error { _, err := s.Queue.Reschedule(ctx, "t", 1, 0); return err },
		"TxnQueueAck":     func() error { return tx.QueueAck(m) },
		"Consume": func() error {
			for _, err := range s.Queue.Consume(ctx, "t", ConsumeOptions{}) {
				return err
			}
			return nil
		},
		"DeadList":    func() error { _, err := s.Queue.DeadList(ctx, "t", 0, 0); return err },
		"DeadRetry":   func() error { _, err := s.Queue.DeadRetry(ctx, "t", 0); return err },
		"DeadDelete":  func() error { _, err := s.Queue.DeadDelete(ctx, "t", 0); return err },
		"Stats":       func() error { _, err := s.Queue.Stats(ctx, "t"); return err },
		"Acquire":     func() error { _, err := s.Leases.Acquire(ctx, "l", "o", time.Second); return err },
		"Renew":       func() error { _, err := s.Leases.Renew(ctx, "l", "o", 1, time.Second); return err },
		"Release":     func() error { return s.Leases.Release(ctx, "l", "o", 1) },
		"LeaseGet":    func() error { _, err := s.Leases.Get(ctx, "l"); return err },
		"Append":      func() error { _, err := s.Outbox.Append(ctx, "s", k); return err },
		"Pending":     func() error { _, err := s.Outbox.Pending(ctx, "s", 0); return err },
		"OutboxAck":   func() error { _, err := s.Outbox.Ack(ctx, "s", []uint64{1}); return err },
		"Fail":        func() error { _, err := s.Outbox.Fail(ctx, "s", 1, "e", time.Time{}); return err },
		"Park":        func() error { _, err := s.Outbox.Park(ctx, "s", 1, ParkPoison, "e"); return err },
		"Parked":      func() error { _, err := s.Outbox.Parked(ctx, "s", 0, 0); return err },
		"Retry":       func() error { _, err := s.Outbox.Retry(ctx, "s", nil); return err },
		"Discard":     func() error { _, err := s.Outbox.Discard(ctx, "s", nil); return err },
		"Counts":      func() error { _, _, err := s.Outbox.Counts(ctx, "s"); return err },
		"Publish":     func() error { return s.PubSub.Publish(ctx, "c", k) },
		"Subscribe":   func() error { _, err := s.PubSub.Subscribe(ctx, "c"); return err },
		"BudgetTake":  func() error { _, err := s.Budgets.Take(ctx, "b", 1, 1, time.Second, 1); return err },
		"Upsert":      func() error { return s.Schedules.Upsert(ctx, "k", time.Second, k, time.Time{}) },
		"Claim":       func() error { _, err := s.Schedules.Claim(ctx, ""); return err },
		"SchedGet":    func() error { _, err := s.Schedules.Get(ctx, "k"); return err },
		"SchedList":   func() error { _, err := s.Schedules.List(ctx); return err },
		"SchedDelete": func() error { _, err := s.Schedules.Delete(ctx, "k"); return err },
		"SetManual":   func() error { return s.Clock.SetManual(time.UnixMilli(1)) },
		"Advance":     func() error { return s.Clock.Advance(time.Second) },
		"UseSystem":   func() error { return s.Clock.UseSystem() },
		"Now":         func() error { _, err := s.Clock.Now(); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "closed") {
			t.Errorf("%s on a closed store: %v", name, err)
		}
	}
}
