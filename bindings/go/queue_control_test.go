package bitt

// The queue-control calls (bitt.h 0.6) through the Go API: priorities,
// the dequeue over several topics, messages by id, and the queue ops of a
// commit. The contract (queue_control.json) pins the rules; these tests
// pin the Go shape of them: nil for a missing message, (bool, error) for
// cancel and reschedule, MessageState, contexts, the binding's refusals.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// controlStores: memory, SQLite, and the servers scripts/test started
// (each store on a namespace of its own).
func controlStores(t *testing.T) map[string]*Store {
	out := map[string]*Store{}
	for b, u := range goroutineURLs(t) {
		out[b] = openT(t, u)
	}
	return out
}

func TestMessageStateNames(t *testing.T) {
	got := fmt.Sprint(MessageState(0), ",", StatePending, ",", StateDelayed, ",", StateLeased, ",", StateDead, ",", MessageState(9))
	if got != ",pending,delayed,leased,dead,MessageState(9)" {
		t.Fatal(got)
	}
}

func TestPriorityAndDequeueTopics(t *testing.T) {
	ctx := context.Background()
	for b, s := range controlStores(t) {
		t.Run(b, func(t *testing.T) {
			s.Queue.Enqueue(ctx, "a", []byte("low"))
			s.Queue.Enqueue(ctx, "b", []byte("high"), Priority(7))
			s.Queue.Enqueue(ctx, "a", []byte("min"), Priority(-2147483648))
			msgs, err := s.Queue.DequeueTopics(ctx, []string{"a", "b"}, DequeueOptions{Limit: 10})
			if err != nil || len(msgs) != 3 {
				t.Fatalf("dequeue topics: %v, %v", msgs, err)
			}
			var got []string
			for _, m := range msgs {
				got = append(got, fmt.Sprintf("%s/%s/%d/%s", m.Topic, m.Payload, m.Priority, m.State))
			}
			if strings.Join(got, " ") != "b/high/7/leased a/low/0/leased a/min/-2147483648/leased" {
				t.Fatalf("order: %v", got)
			}
			if err := s.Queue.Ack(ctx, msgs[0]); err != nil { // acked in its own topic
				t.Fatal(err)
			}
			for _, bad := range [][]string{nil, {}, {"a", "a"}, {"a", ""}} {
				if _, err := s.Queue.DequeueTopics(ctx, bad, DequeueOptions{}); !errors.Is(err, ErrInvalid) {
					t.Errorf("topics %q: %v", bad, err)
				}
			}
			_, err = s.Queue.DequeueTopics(ctx, []string{"a", "b\x00c"}, DequeueOptions{})
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "topic 1 holds a NUL byte") {
				t.Errorf("a topic with a NUL: %v", err)
			}
		})
	}
}

func TestDequeueTopicsContexts(t *testing.T) {
	s := openT(t, "memory:")
	bg := context.Background()
	ctx, cancel := context.WithCancel(bg)
	cancel()
	s.Queue.Enqueue(bg, "b", []byte("x"))
	msgs, err := s.Queue.DequeueTopics(ctx, []string{"a", "b"}, DequeueOptions{Wait: time.Hour})
	if !errors.Is(err, ErrCanceled) || !errors.Is(err, context.Canceled) || msgs != nil {
		t.Fatalf("a done context: %v, %v", msgs, err)
	}
	// Nothing was leased: the message is there, on its first attempt.
	done := make(chan []*Message, 1)
	go func() {
		m, _ := s.Queue.DequeueTopics(bg, []string{"c", "b"}, DequeueOptions{Wait: time.Hour})
		done <- m
	}()
	if m := <-done; len(m) != 1 || m[0].Attempts != 1 || m[0].Topic != "b" {
		t.Fatalf("after the cancelled dequeue: %v", m)
	}
	// A wait on several topics gets what is enqueued on any of them,
	// before or after the wait began.
	go func() {
		m, _ := s.Queue.DequeueTopics(bg, []string{"c", "d"}, DequeueOptions{Wait: time.Hour})
		done <- m
	}()
	s.Queue.Enqueue(bg, "d", []byte("later"))
	if m := <-done; len(m) != 1 || string(m[0].Payload) != "later" {
		t.Fatalf("the wait: %v", m)
	}
}

func TestGetCancelReschedule(t *testing.T) {
	ctx := context.Background()
	for b, s := range controlStores(t) {
		t.Run(b, func(t *testing.T) {
			if err := s.Clock.SetManual(time.UnixMilli(1000000)); err != nil {
				t.Fatal(err)
			}
			id, _ := s.Queue.Enqueue(ctx, "q", []byte("p"), Delay(time.Second), Priority(3), Dedup([]byte("d")))
			m, err := s.Queue.Get(ctx, "q", id)
			if err != nil || m == nil || m.State != StateDelayed || m.Priority != 3 || m.Token != "" ||
				!m.DueAt.Equal(time.UnixMilli(1001000)) || string(m.Payload) != "p" {
				t.Fatalf("get: %+v, %v", m, err)
			}
			if m, err := s.Queue.Get(ctx, "other", id); m != nil || err != nil {
				t.Fatalf("get in another topic: %v, %v", m, err) // absent: nil, nil
			}
			if ok, err := s.Queue.Reschedule(ctx, "q", id, 0); !ok || err != nil {
				t.Fatalf("reschedule: %v, %v", ok, err)
			}
			if m, _ := s.Queue.Get(ctx, "q", id); m.State != StatePending {
				t.Fatalf("after reschedule to now: %v", m.State)
			}
			if _, err := s.Queue.Reschedule(ctx, "q", id, -time.Millisecond); !errors.Is(err, ErrInvalid) {
				t.Fatalf("a negative delay: %v", err)
			}
			msgs, _ := s.Queue.Dequeue(ctx, "q", DequeueOptions{})
			if m, _ := s.Queue.Get(ctx, "q", id); len(msgs) != 1 || m.State != StateLeased || m.Attempts != 1 {
				t.Fatalf("leased: %v %+v", msgs, m)
			}
			if ok, err := s.Queue.Reschedule(ctx, "q", id, 0); ok || err != nil {
				t.Fatalf("reschedule of a leased message: %v, %v", ok, err) // the consumer's: false
			}
			if ok, err := s.Queue.Cancel(ctx, "q", id); !ok || err != nil {
				t.Fatalf("cancel: %v, %v", ok, err)
			}
			if err := s.Queue.Ack(ctx, msgs[0]); !errors.Is(err, ErrToken) {
				t.Fatalf("ack after cancel: %v", err)
			}
			if ok, err := s.Queue.Cancel(ctx, "q", id); ok || err != nil {
				t.Fatalf("cancel again: %v, %v", ok, err)
			}
			if m, err := s.Queue.Get(ctx, "q", id); m != nil || err != nil {
				t.Fatalf("get after cancel: %v, %v", m, err)
			}
			if again, _ := s.Queue.Enqueue(ctx, "q", []byte("p"), Dedup([]byte("d"))); again == id {
				t.Fatal("the dedup key was not freed")
			}
			if _, err := s.Queue.Get(ctx, "", 1); !errors.Is(err, ErrInvalid) {
				t.Fatalf("get with a bad topic: %v", err)
			}
		})
	}
}

func TestTxnQueueOps(t *testing.T) {
	ctx := context.Background()
	for b, s := range controlStores(t) {
		t.Run(b, func(t *testing.T) {
			for i := 0; i < 4; i++ {
				s.Queue.Enqueue(ctx, "q", []byte(fmt.Sprint(i)), MaxAttempts(5))
			}
			msgs, err := s.Queue.Dequeue(ctx, "q", DequeueOptions{Limit: 4, Lease: time.Minute})
			if err != nil || len(msgs) != 4 {
				t.Fatalf("dequeue: %v, %v", msgs, err)
			}
			tx, _ := s.Atomic(ctx)
			defer tx.Close()
			tx.Set([]byte("result"), []byte("done"))
			tx.QueueAck(msgs[0])
			tx.QueueNack(msgs[1], "boom", Delay(time.Hour))
			tx.QueueSnooze("q", msgs[2].ID, msgs[2].Token, 0)
			tx.QueueExtend(msgs[3], time.Hour)
			tx.Enqueue("q", []byte("next"), Priority(9))
			if _, err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			if m, _ := s.Queue.Get(ctx, "q", msgs[0].ID); m != nil {
				t.Fatalf("acked in the commit: %+v", m)
			}
			if m, _ := s.Queue.Get(ctx, "q", msgs[1].ID); m.State != StateDelayed || m.LastError != "boom" {
				t.Fatalf("nacked in the commit: %+v", m)
			}
			if m, _ := s.Queue.Get(ctx, "q", msgs[2].ID); m.State != StatePending || m.Attempts != 0 {
				t.Fatalf("snoozed in the commit: %+v", m)
			}
			if m, _ := s.Queue.Get(ctx, "q", msgs[3].ID); m.State != StateLeased {
				t.Fatalf("extended in the commit: %+v", m)
			}
			if e, _ := s.KV.Get(ctx, []byte("result")); e == nil {
				t.Fatal("the commit's set is missing")
			}

			// A stale token fails the whole commit: nothing written.
			tx2, _ := s.Atomic(ctx)
			defer tx2.Close()
			tx2.Set([]byte("other"), []byte("x"))
			tx2.QueueCancel("q", msgs[2].ID)
			tx2.QueueAck(&Message{Topic: "q", ID: msgs[3].ID, Token: "stale"})
			if _, err := tx2.Commit(ctx); !errors.Is(err, ErrToken) {
				t.Fatalf("a stale token: %v", err)
			}
			if e, _ := s.KV.Get(ctx, []byte("other")); e != nil {
				t.Fatal("a failed commit wrote its set")
			}
			if m, _ := s.Queue.Get(ctx, "q", msgs[2].ID); m == nil {
				t.Fatal("a failed commit cancelled a message")
			}

			// Cancel and reschedule where they do not apply: the commit succeeds.
			tx3, _ := s.Atomic(ctx)
			defer tx3.Close()
			tx3.QueueCancel("q", 999999)
			tx3.QueueReschedule("q", msgs[3].ID, 0) // leased: not rescheduled
			if _, err := tx3.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			tx4, _ := s.Atomic(ctx)
			defer tx4.Close()
			tx4.QueueCancel("q", msgs[2].ID)
			if err := tx4.QueueReschedule("q", msgs[2].ID, 0); !errors.Is(err, ErrInvalid) {
				t.Fatalf("a second op on one id: %v", err)
			}
		})
	}
}
