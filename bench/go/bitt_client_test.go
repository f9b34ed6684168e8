package bench

// A bitt work loop shaped like River's client, for QueuePostgresWork: one
// fetcher claims up to the free slots in one dequeue, at most once per
// fetchCooldown (River's FetchCooldown, which its side sets to the same 1
// ms), `inFlight` handler goroutines run the jobs, and one completer acks
// the finished deliveries together with AckMany (one transaction) the way
// River's batch completer does: once ackBatchMin have finished, or when the
// oldest has waited ackMaxWait (River: 100 jobs, or every 250 ms, checked
// every 50 ms). As in River, a slot frees when its handler returns, before
// the ack is durable; a job whose ack is lost (a crash) comes back when its
// lease ends, as River's would be rescued.

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bitt-dev/bitt/bindings/go"
)

const (
	maxAckBatch   = 1000 // what one AckMany takes at most (BITT_ACK_MANY_MAX)
	ackBatchMin   = 100
	ackMaxWait    = 50 * time.Millisecond
	fetchCooldown = time.Millisecond
)

// workPipelined runs b.N preloaded jobs with at most inFlight running at
// once, on two stores (connections): the fetcher's and the completer's.
func (q *bittQueueRef) workPipelined(b *testing.B, inFlight int) {
	b.StopTimer()
	q.truncate(b)
	fillBittQueue(b, q.s, "bench", b.N)
	fetchStore, ackStore := openBitt(b, q.url), openBitt(b, q.url)
	defer fetchStore.Close()
	defer ackStore.Close()
	var acked atomic.Int64
	var failed atomic.Value
	timed(b, "jobs/s", func() {
		slots := make(chan struct{}, inFlight) // a token per running job
		jobs := make(chan *bitt.Message, inFlight)
		finished := make(chan *bitt.Message, maxAckBatch)
		var handlers, completer sync.WaitGroup
		for i := 0; i < inFlight; i++ {
			handlers.Add(1)
			go func() {
				defer handlers.Done()
				for m := range jobs {
					<-slots // the job is done: its slot is free
					finished <- m
				}
			}()
		}
		completer.Add(1)
		go func() {
			defer completer.Done()
			complete(ackStore, finished, &acked, &failed)
		}()
		if err := fetch(fetchStore, slots, jobs); err != nil {
			failed.Store(err)
		}
		close(jobs)
		handlers.Wait()
		close(finished)
		completer.Wait()
	})
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	if n := acked.Load(); n != int64(b.N) {
		b.Fatalf("bitt: %d of %d jobs acked", n, b.N)
	}
}

// fetch claims jobs for the free slots (waiting for one when none is) until
// a dequeue finds the topic empty (every job was in before it started).
func fetch(s *Store, slots chan struct{}, jobs chan<- *bitt.Message) error {
	var last time.Time
	for {
		slots <- struct{}{} // at least one free slot
		if wait := fetchCooldown - time.Since(last); wait > 0 {
			time.Sleep(wait)
		}
		free := 1
		for free < cap(slots) {
			select {
			case slots <- struct{}{}:
				free++
				continue
			default:
			}
			break
		}
		last = time.Now()
		msgs, err := s.Queue.Dequeue(bg, "bench", bitt.DequeueOptions{Limit: free, Lease: time.Minute})
		for i := len(msgs); i < free; i++ {
			<-slots // claimed fewer than asked: give the rest back
		}
		if err != nil || len(msgs) == 0 {
			return err
		}
		for _, m := range msgs {
			jobs <- m
		}
	}
}

// complete acks what the handlers finished, ackBatchMin at a time or what
// has finished when the oldest has waited ackMaxWait, and the rest at the end.
func complete(s *Store, finished <-chan *bitt.Message, acked *atomic.Int64, failed *atomic.Value) {
	batch := make([]*bitt.Message, 0, ackBatchMin)
	var due <-chan time.Time
	flush := func() {
		if len(batch) > 0 {
			if err := ackAll(s, "bench", batch, acked); err != nil {
				failed.Store(err)
			}
		}
		batch, due = batch[:0], nil
	}
	for {
		select {
		case m, ok := <-finished:
			if !ok {
				flush()
				return
			}
			if len(batch) == 0 {
				due = time.After(ackMaxWait)
			}
			if batch = append(batch, m); len(batch) >= ackBatchMin {
				flush()
			}
		case <-due:
			flush()
		}
	}
}
