package bitt

// Queue retention and cron/topic schedules (bitt.h 0.6) through the Go
// API. The contract (queue_retention.json, schedule_cron.json) pins the
// rules; these tests pin the Go shape: AckResult and AckValue on Ack and
// Txn.QueueAck, a Worker's Result, Message.DoneAt/Result/ResultKind and
// DecodeResult, Purge and PurgeAll, Stats.Done, and Upsert's Cron,
// ScheduleTopic, MaxAttempts and Priority.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// v7Stores: the stores of controlStores with the URL options opts, on the
// backends BITT_TEST_BACKENDS names when it is set (scripts/test-go sets
// it: the backends that implement bitt.h 0.6), each on the manual clock
// at workerT0.
func v7Stores(t *testing.T, opts string) map[string]*Store {
	want := map[string]bool{}
	if l := os.Getenv("BITT_TEST_BACKENDS"); l != "" {
		for _, b := range strings.Split(l, ",") {
			if strings.HasPrefix(b, "sqlite") { // sqlite, sqlite-file, sqlite-memory
				b = "sqlite"
			}
			want[b] = true
		}
	}
	out := map[string]*Store{}
	for b, u := range goroutineURLs(t) {
		if len(want) > 0 && !want[b] {
			continue
		}
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		s := openT(t, u+sep+opts)
		if err := s.Clock.SetManual(workerT0); err != nil {
			t.Fatal(err)
		}
		out[b] = s
	}
	return out
}

func TestMessageStateDone(t *testing.T) {
	if got := fmt.Sprint(StateDone); got != "done" {
		t.Fatal(got)
	}
}

func TestAckResults(t *testing.T) {
	ctx := context.Background()
	for b, s := range v7Stores(t, "queue_done_retention=60000") {
		t.Run(b, func(t *testing.T) {
			for _, p := range []string{"a", "b", "c", "d", "e"} {
				s.Queue.Enqueue(ctx, "t", []byte(p))
			}
			msgs, err := s.Queue.Dequeue(ctx, "t", DequeueOptions{Limit: 5})
			if err != nil || len(msgs) != 5 {
				t.Fatalf("dequeue: %v %v", msgs, err)
			}
			// refused before anything changes: the delivery stays leased
			if err := s.Queue.Ack(ctx, msgs[0], AckValue(math.NaN())); !errors.Is(err, ErrInvalid) {
				t.Fatalf("a NaN result: %v", err)
			}
			if err := s.Queue.Ack(ctx, msgs[0], AckResult([]byte("{bad"), KindJSON)); !errors.Is(err, ErrInvalid) {
				t.Fatalf("bad JSON: %v", err)
			}
			if m, _ := s.Queue.Get(ctx, "t", msgs[0].ID); m == nil || m.State != StateLeased {
				t.Fatalf("after refused acks: %+v", m)
			}
			s.Clock.Advance(5 * time.Millisecond)
			acks := []error{
				s.Queue.Ack(ctx, msgs[0], AckValue(map[string]any{"ok": true, "n": 2})),
				s.Queue.Ack(ctx, msgs[1], AckResult([]byte("raw"), KindBytes)),
				s.Queue.Ack(ctx, msgs[2], AckValue(int64(7))),
				s.Queue.Ack(ctx, msgs[3], AckValue(nil)), // nil: no result
			}
			for i, err := range acks {
				if err != nil {
					t.Fatalf("ack %d: %v", i, err)
				}
			}
			tx, err := s.Atomic(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Close()
			tx.Set([]byte("step"), []byte("saved"))
			if err := tx.QueueAck(msgs[4], AckValue([]any{"x", 1})); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, m := range msgs {
				g, err := s.Queue.Get(ctx, "t", m.ID)
				if err != nil || g == nil {
					t.Fatalf("get %d: %v %v", m.ID, g, err)
				}
				v, err := g.DecodeResult()
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, fmt.Sprintf("%s %d %q %d %v", g.State, unixMs(g.DoneAt)-unixMs(workerT0), g.Result, g.ResultKind, v))
			}
			want := []string{`done 5 "{\"n\":2,\"ok\":true}" 1 map[n:2 ok:true]`, `done 5 "raw" 0 [114 97 119]`,
				`done 5 "7" 2 7`, `done 5 "" -1 <nil>`, `done 5 "[\"x\",1]" 1 [x 1]`}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			g, _ := s.Queue.Get(ctx, "t", msgs[0].ID)
			var r struct{ OK bool }
			if err := g.ResultJSON(&r); err != nil || !r.OK {
				t.Fatalf("ResultJSON: %+v %v", r, err)
			}
			if g.Result == nil || g.Token != "" {
				t.Fatalf("%+v", g)
			}
			if st := stats(t, s, "t"); st.Done != 5 || st.Pending+st.Processing != 0 {
				t.Fatalf("stats %+v", st)
			}
			// an ack of a done message is a stale token
			if err := s.Queue.Ack(ctx, msgs[0], AckValue("again")); !errors.Is(err, ErrToken) {
				t.Fatalf("ack of a done message: %v", err)
			}
		})
	}
}

func TestPurge(t *testing.T) {
	ctx := context.Background()
	for b, s := range v7Stores(t, "queue_done_retention=1000&queue_dead_retention=2000") {
		t.Run(b, func(t *testing.T) {
			s.Queue.Enqueue(ctx, "a", []byte("x"))
			s.Queue.Enqueue(ctx, "b", []byte("y"), MaxAttempts(1))
			ma, _ := s.Queue.Dequeue(ctx, "a", DequeueOptions{})
			mb, _ := s.Queue.Dequeue(ctx, "b", DequeueOptions{})
			if err := s.Queue.Ack(ctx, ma[0]); err != nil {
				t.Fatal(err)
			}
			if err := s.Queue.Nack(ctx, mb[0], "boom"); err != nil { // dead at once
				t.Fatal(err)
			}
			if n, err := s.Queue.Purge(ctx, "a"); n != 0 || err != nil {
				t.Fatalf("purge before the retention ends: %d %v", n, err)
			}
			s.Clock.Advance(1000 * time.Millisecond)
			if n, err := s.Queue.Purge(ctx, "b"); n != 0 || err != nil {
				t.Fatalf("purge of b: %d %v", n, err)
			}
			if n, err := s.Queue.Purge(ctx, "a"); n != 1 || err != nil {
				t.Fatalf("purge of a: %d %v", n, err)
			}
			s.Clock.Advance(1000 * time.Millisecond)
			if n, err := s.Queue.PurgeAll(ctx); n != 1 || err != nil {
				t.Fatalf("purge all: %d %v", n, err)
			}
			if n, err := s.Queue.PurgeAll(ctx); n != 0 || err != nil {
				t.Fatalf("purge all again: %d %v", n, err)
			}
			if _, err := s.Queue.Purge(ctx, ""); !errors.Is(err, ErrInvalid) {
				t.Fatalf("purge of \"\": %v", err)
			}
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			if _, err := s.Queue.PurgeAll(cctx); !errors.Is(err, ErrCanceled) {
				t.Fatalf("a done context: %v", err)
			}
		})
	}
}

func TestWorkerResult(t *testing.T) {
	ctx := context.Background()
	for b, s := range v7Stores(t, "queue_done_retention=60000") {
		t.Run(b, func(t *testing.T) {
			ids := map[string]uint64{}
			for _, p := range []string{"json", "nil", "bytes", "wrapped", "bad"} {
				ids[p], _ = s.Queue.Enqueue(ctx, "w", []byte(p), MaxAttempts(1))
			}
			var sink errSink
			w := startW(t, s, "w", func(_ context.Context, m *Message) error {
				switch string(m.Payload) {
				case "json":
					return Result(map[string]int{"sent": 3})
				case "nil":
					return Result(nil)
				case "bytes":
					return Result([]byte("raw"))
				case "wrapped":
					return fmt.Errorf("done: %w", Result(int64(-4)))
				}
				return Result(func() {}) // Encode refuses it: a failure
			}, Concurrency(2), WorkerWait(50*time.Millisecond), sink.hook())
			until(t, "all handled", func() bool { c := w.Counters(); return c.Completed+c.Failed == 5 })
			c := w.Stop(ctx)
			if counts(c) != "claimed 5 completed 4 failed 1 snoozed 0 stalled 0 released 0 running 0" {
				t.Fatal(counts(c))
			}
			sink.none(t)
			want := map[string]string{"json": `done "{\"sent\":3}" 1`, "nil": `done "" -1`,
				"bytes": `done "raw" 0`, "wrapped": `done "-4" 2`, "bad": `dead "" -1`}
			for p, id := range ids {
				m, err := s.Queue.Get(ctx, "w", id)
				if err != nil || m == nil {
					t.Fatalf("%s: %v %v", p, m, err)
				}
				if got := fmt.Sprintf("%s %q %d", m.State, m.Result, m.ResultKind); got != want[p] {
					t.Errorf("%s: %s, want %s", p, got, want[p])
				}
				if p == "bad" && !strings.Contains(m.LastError, "func() is not") {
					t.Errorf("the refused result's error: %q", m.LastError)
				}
			}
		})
	}
}

func TestScheduleCronAndTopic(t *testing.T) {
	ctx := context.Background()
	for b, s := range v7Stores(t, "") {
		t.Run(b, func(t *testing.T) {
			sc := s.Schedules
			if err := sc.Upsert(ctx, "c", 0, []byte("tick"), time.Time{}, Cron("*/5 * * * *")); err != nil {
				t.Fatal(err)
			}
			g, err := sc.Get(ctx, "c")
			if err != nil || g == nil || g.Cron != "*/5 * * * *" || g.Interval != 0 || g.Topic != "" ||
				!g.NextRunAt.Equal(workerT0.Add(5*time.Minute)) {
				t.Fatalf("cron schedule: %+v %v", g, err)
			}
			for _, bad := range []struct {
				interval time.Duration
				opts     []Option
				msg      string
			}{
				{time.Second, []Option{Cron("* * * * *")}, "interval"},
				{0, []Option{Cron("")}, ""},
				{0, []Option{Cron("* 24 * * *")}, "hour"},
				{time.Second, []Option{ScheduleTopic("")}, ""},
			} {
				err := sc.Upsert(ctx, "bad", bad.interval, nil, time.Time{}, bad.opts...)
				if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), bad.msg) {
					t.Errorf("%v %d options: %v", bad.interval, len(bad.opts), err)
				}
			}
			if g, _ := sc.Get(ctx, "bad"); g != nil {
				t.Fatalf("a refused upsert wrote %+v", g)
			}
			err = sc.Upsert(ctx, "report", time.Minute, []byte(`{"r":1}`), time.Time{}, WithKind(KindJSON),
				ScheduleTopic("jobs"), MaxAttempts(2), Priority(3))
			if err != nil {
				t.Fatal(err)
			}
			s.Clock.Advance(time.Minute)
			cl, err := sc.Claim(ctx, "report")
			if err != nil || cl == nil || cl.Topic != "jobs" || cl.MessageID == 0 {
				t.Fatalf("claim: %+v %v", cl, err)
			}
			m, err := s.Queue.Get(ctx, "jobs", cl.MessageID)
			if err != nil || m == nil || string(m.Payload) != `{"r":1}` || m.Kind != KindJSON || m.Priority != 3 ||
				m.MaxAttempts != 2 || m.State != StatePending {
				t.Fatalf("the occurrence's message: %+v %v", m, err)
			}
			// an upsert without the topic drops it and keeps the cadence
			next := cl.NextRunAt
			if err := sc.Upsert(ctx, "report", time.Minute, nil, time.Time{}); err != nil {
				t.Fatal(err)
			}
			if g, _ := sc.Get(ctx, "report"); g == nil || g.Topic != "" || !g.NextRunAt.Equal(next) || g.MessageID != 0 {
				t.Fatalf("after dropping the topic: %+v", g)
			}
		})
	}
}
