package bitt

// Cancellation through context.Context: a wait ends through the core's
// cancel token, with an error that is both ErrCanceled and ctx's, and
// leases nothing; Consume and Subscription.All stop at once and give back
// what they leased ahead.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// hangGuard bounds a wait that must end; it is no timing assertion.
const hangGuard = 2 * time.Minute

func recv[T any](t *testing.T, c <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(hangGuard):
		t.Fatalf("%s did not end", what)
	}
	var zero T
	return zero
}

func wantCanceled(t *testing.T, err error, ctx context.Context, what string) {
	t.Helper()
	if !errors.Is(err, ErrCanceled) || !errors.Is(err, ctx.Err()) {
		t.Fatalf("%s: %v; want ErrCanceled and %v", what, err, ctx.Err())
	}
}

// letItWait gives a goroutine time to enter its wait, so that the cancel
// usually lands during it; the outcome is the same when it lands before.
func letItWait() { time.Sleep(30 * time.Millisecond) }

func TestCancelledDequeueLeasesNothing(t *testing.T) {
	for backend, url := range goroutineURLs(t) {
		t.Run(backend, func(t *testing.T) {
			s := openT(t, url)
			bg := context.Background()
			ctx, cancel := context.WithCancel(bg)
			errc := make(chan error, 1)
			go func() {
				_, err := s.Queue.Dequeue(ctx, "q", DequeueOptions{Wait: time.Hour, Lease: time.Hour})
				errc <- err
			}()
			letItWait()
			cancel()
			wantCanceled(t, recv(t, errc, "the cancelled dequeue"), ctx, "dequeue")
			if _, err := s.Queue.Enqueue(bg, "q", []byte("after")); err != nil {
				t.Fatal(err)
			}
			msgs, err := s.Queue.Dequeue(bg, "q", DequeueOptions{Wait: hangGuard})
			if err != nil || len(msgs) != 1 || string(msgs[0].Payload) != "after" || msgs[0].Attempts != 1 {
				t.Fatalf("the next dequeue: %v, %v; want the message, attempt 1", msgs, err)
			}
		})
	}
}

func TestDeadlineEndsDequeue(t *testing.T) {
	s := openT(t, "memory:")
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	msgs, err := s.Queue.Dequeue(ctx, "q", DequeueOptions{Wait: time.Hour})
	wantCanceled(t, err, ctx, "dequeue past the deadline")
	if !errors.Is(err, context.DeadlineExceeded) || msgs != nil {
		t.Fatalf("%v, %v", msgs, err)
	}
	var be *Error
	if !errors.As(err, &be) || be.Code != -16 || be.Message == "" {
		t.Fatalf("not the core's status and message: %#v", err)
	}
	cause := errors.New("shutting down")
	cctx, ccancel := context.WithCancelCause(context.Background())
	ccancel(cause)
	if _, err := s.Queue.Dequeue(cctx, "q", DequeueOptions{Wait: time.Hour}); !errors.Is(err, cause) || !errors.Is(err, context.Canceled) {
		t.Fatalf("the cause is lost: %v", err)
	}
}

// A done context reaches the core as a fired token: the core checks the
// arguments first.
func TestDoneContextGoesToTheCore(t *testing.T) {
	s := openT(t, "memory:")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Queue.Dequeue(ctx, "", DequeueOptions{Wait: time.Second}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a bad topic: %v", err)
	}
	s.Queue.Enqueue(context.Background(), "q", []byte("x"))
	_, err := s.Queue.Dequeue(ctx, "q", DequeueOptions{})
	wantCanceled(t, err, ctx, "dequeue without a wait")
	if st, _ := s.Queue.Stats(context.Background(), "q"); st.Pending != 1 {
		t.Fatalf("a cancelled dequeue took the message: %+v", st)
	}
	_, err = s.KV.Get(ctx, []byte("k"))
	wantCanceled(t, err, ctx, "a call that does not wait")
}

func TestCloseEndsWaits(t *testing.T) {
	s, err := Open("memory:")
	if err != nil {
		t.Fatal(err)
	}
	bg := context.Background()
	sub, _ := s.PubSub.Subscribe(bg, "c")
	errc := make(chan error, 3)
	go func() { _, err := s.Queue.Dequeue(bg, "q", DequeueOptions{Wait: time.Hour}); errc <- err }()
	go func() { _, err := sub.Next(bg); errc <- err }()
	go func() {
		for _, err := range s.Queue.Consume(bg, "q2", ConsumeOptions{}) {
			errc <- err
			return
		}
	}()
	letItWait()
	s.Close()
	for i := 0; i < 3; i++ {
		if err := recv(t, errc, "a wait after Close"); !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), "closed") {
			t.Fatalf("a wait ended by Close: %v; want ErrUsage", err)
		}
	}
}

func TestSubscriptionCancel(t *testing.T) {
	s := openT(t, "memory:")
	bg := context.Background()
	sub, _ := s.PubSub.Subscribe(bg, "c")
	ctx, cancel := context.WithCancel(bg)
	errc := make(chan error, 1)
	go func() { _, err := sub.Next(ctx); errc <- err }()
	letItWait()
	cancel()
	wantCanceled(t, recv(t, errc, "the cancelled Next"), ctx, "Next")
	// Nothing published afterwards is lost, and Close ends a Next at once.
	s.PubSub.Publish(bg, "c", []byte("kept"))
	if m, err := sub.Next(bg); err != nil || string(m.Payload) != "kept" {
		t.Fatalf("after the cancel: %v, %v", m, err)
	}
	go func() { _, err := sub.Next(bg); errc <- err }()
	letItWait()
	sub.Close()
	if err := recv(t, errc, "Next after Close"); !errors.Is(err, ErrUsage) {
		t.Fatalf("Next ended by Close: %v", err)
	}
}

func TestSubscriptionAllEndsWithItsContext(t *testing.T) {
	s := openT(t, "memory:")
	bg := context.Background()
	sub, _ := s.PubSub.Subscribe(bg, "c")
	for _, p := range []string{"a", "b", "c"} {
		s.PubSub.Publish(bg, "c", []byte(p))
	}
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	var got []string
	var last error
	for m, err := range sub.All(ctx) {
		if err != nil {
			last = err
			break
		}
		got = append(got, string(m.Payload))
		if len(got) == 2 {
			cancel() // from inside: the next wait ends at once
		}
	}
	if strings.Join(got, ",") != "a,b" {
		t.Fatalf("got %v", got)
	}
	wantCanceled(t, last, ctx, "All")
	// break leaves nothing behind: the third message is still there.
	for m, err := range sub.All(bg) {
		if err != nil || string(m.Payload) != "c" {
			t.Fatalf("after All: %v, %v", m, err)
		}
		break
	}
}

func enqueueN(t *testing.T, s *Store, topic string, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := s.Queue.Enqueue(context.Background(), topic, []byte(fmt.Sprint(i))); err != nil {
			t.Fatal(err)
		}
	}
}

// What a consumer leased ahead and did not hand out is claimable at once,
// with no attempt used; what it handed out is the caller's.
func checkGivenBack(t *testing.T, s *Store, topic string, handedOut, total int) {
	t.Helper()
	bg := context.Background()
	st, err := s.Queue.Stats(bg, topic)
	if err != nil || st.Processing != uint64(handedOut) || st.Pending != uint64(total-handedOut) {
		t.Fatalf("stats %+v, %v; want %d processing, %d pending", st, err, handedOut, total-handedOut)
	}
	msgs, err := s.Queue.Dequeue(bg, topic, DequeueOptions{Limit: total})
	if err != nil || len(msgs) != total-handedOut {
		t.Fatalf("dequeue after the consumer: %v, %v", msgs, err)
	}
	for _, m := range msgs {
		if m.Attempts != 1 {
			t.Fatalf("message %d given back with attempts %d", m.ID, m.Attempts)
		}
	}
}

func TestConsumeBreakGivesBackPrefetched(t *testing.T) {
	for backend, url := range goroutineURLs(t) {
		t.Run(backend, func(t *testing.T) {
			s := openT(t, url)
			bg := context.Background()
			enqueueN(t, s, "jobs", 5)
			var got []string
			for m, err := range s.Queue.Consume(bg, "jobs", ConsumeOptions{Prefetch: 4, Lease: time.Hour}) {
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, string(m.Payload))
				if len(got) == 2 {
					break
				}
			}
			if strings.Join(got, ",") != "0,1" {
				t.Fatalf("consumed %v", got)
			}
			checkGivenBack(t, s, "jobs", 2, 5)
		})
	}
}

func TestConsumeContextCancel(t *testing.T) {
	s := openT(t, "memory:")
	bg := context.Background()
	enqueueN(t, s, "jobs", 4)
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	var got []string
	var last error
	for m, err := range s.Queue.Consume(ctx, "jobs", ConsumeOptions{Prefetch: 3, Lease: time.Hour}) {
		if err != nil {
			last = err
			break
		}
		got = append(got, string(m.Payload))
		s.Queue.Ack(bg, m)
		cancel() // while two more are leased ahead
	}
	if strings.Join(got, ",") != "0" {
		t.Fatalf("consumed %v", got)
	}
	wantCanceled(t, last, ctx, "Consume")
	checkGivenBack(t, s, "jobs", 0, 3)

	// An idle consumer waiting for work ends at once too.
	ctx2, cancel2 := context.WithCancel(bg)
	errc := make(chan error, 1)
	go func() {
		for _, err := range s.Queue.Consume(ctx2, "idle", ConsumeOptions{}) {
			errc <- err
			return
		}
	}()
	letItWait()
	cancel2()
	wantCanceled(t, recv(t, errc, "the idle consumer"), ctx2, "idle Consume")
}

func TestConsumeGetsLaterWork(t *testing.T) {
	s := openT(t, "memory:")
	bg := context.Background()
	go func() {
		letItWait()
		for i := 0; i < 3; i++ {
			s.Queue.Enqueue(bg, "later", []byte("x")) // a failure shows as a hang, caught below
		}
	}()
	n := 0
	for m, err := range s.Queue.Consume(bg, "later", ConsumeOptions{Prefetch: 2}) {
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Queue.Ack(bg, m); err != nil {
			t.Fatal(err)
		}
		if n++; n == 3 {
			break
		}
	}
}

func TestSnooze(t *testing.T) {
	s := openT(t, "memory:")
	bg := context.Background()
	s.Clock.SetManual(time.UnixMilli(1_000_000))
	enqueueN(t, s, "q", 1)
	msgs, _ := s.Queue.Dequeue(bg, "q", DequeueOptions{Lease: time.Hour})
	m := msgs[0]
	if err := s.Queue.Snooze(bg, "q", m.ID, "stale", 0); !errors.Is(err, ErrToken) {
		t.Fatalf("a stale token: %v", err)
	}
	if err := s.Queue.Snooze(bg, "q", m.ID, m.Token, time.Minute); err != nil {
		t.Fatal(err)
	}
	if msgs, _ := s.Queue.Dequeue(bg, "q", DequeueOptions{}); len(msgs) != 0 {
		t.Fatalf("claimable before its delay: %v", msgs)
	}
	s.Clock.Advance(time.Minute)
	msgs, err := s.Queue.Dequeue(bg, "q", DequeueOptions{})
	if err != nil || len(msgs) != 1 || msgs[0].Attempts != 1 {
		t.Fatalf("after the delay: %v, %v; want attempt 1 again", msgs, err)
	}
}
