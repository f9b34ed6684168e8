package bench

// The bitt side: stores opened through the Go binding, one per backend (one
// connection each), in their own file, Redis prefix or PostgreSQL schema,
// preloaded with the same keys as the peers.

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bitt-dev/bitt/bindings/go"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

type Store = bitt.Store

const (
	bittPgSchema    = "bench_go_bitt"
	bittRedisPrefix = "bitt_gobench"
)

func openBitt(b *testing.B, url string) *Store {
	s, err := bitt.Open(url)
	must(b, err, "bitt open")
	return s
}

// withParam adds a query parameter to a URL.
func withParam(url, param string) string {
	if strings.Contains(url, "?") {
		return url + "&" + param
	}
	return url + "?" + param
}

// found turns a get's result into an error when the key is missing (every
// benchmark key is preloaded).
func found(e *bitt.Entry, err error) error {
	if err == nil && e == nil {
		return bitt.ErrNotFound
	}
	return err
}

var bittStores = map[string]*Store{}

// bittStore opens url once and preloads the keys; when the run ends it
// closes the store, then runs clean (when not nil).
func bittStore(b *testing.B, url string, clean func()) *Store {
	if s := bittStores[url]; s != nil {
		return s
	}
	s := openBitt(b, url)
	bittStores[url] = s
	if clean != nil {
		atExit(clean)
	}
	atExit(func() { s.Close() }) // runs before clean
	for i := 0; i < len(benchKeys); i += 1000 {
		txn, err := s.Atomic(bg)
		must(b, err, "bitt preload")
		for _, k := range benchKeys[i:min(i+1000, len(benchKeys))] {
			must(b, txn.Set(k, benchValue), "bitt preload")
		}
		_, err = txn.Commit(bg)
		must(b, err, "bitt preload")
		txn.Close()
	}
	return s
}

func bittSQLite(b *testing.B) *Store {
	return bittStore(b, "sqlite:"+filepath.Join(benchDir(b), "bitt.db"), nil)
}

func bittRedis(b *testing.B) *Store {
	url := withParam(serverURL(b, "BITT_BENCH_REDIS_URL"), "prefix="+bittRedisPrefix)
	return bittStore(b, url, func() { cleanBittRedis(b) })
}

func bittPostgres(b *testing.B) *Store {
	url := serverURL(b, "BITT_BENCH_POSTGRES_URL")
	if bittStores[withParam(url, "schema="+bittPgSchema)] == nil {
		dropSchema(b, bittPgSchema)
	}
	return bittStore(b, withParam(url, "schema="+bittPgSchema), func() { dropSchema(b, bittPgSchema) })
}

// dropSchema drops a PostgreSQL schema, so every run starts empty.
func dropSchema(b *testing.B, schema string) {
	c, err := pgx.Connect(bg, serverURL(b, "BITT_BENCH_POSTGRES_URL"))
	if err != nil {
		return
	}
	defer c.Close(bg)
	c.Exec(bg, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)
}

// cleanBittRedis deletes what the bitt store wrote under its prefix
// ({prefix}:...).
func cleanBittRedis(b *testing.B) {
	opt, err := redis.ParseURL(serverURL(b, "BITT_BENCH_REDIS_URL"))
	if err != nil {
		return
	}
	c := redis.NewClient(opt)
	defer c.Close()
	cleanRedisKeys(c, "{"+bittRedisPrefix+"}*")
}

// fillBittQueue puts n jobs on topic, 1000 per commit.
func fillBittQueue(b *testing.B, s *Store, topic string, n int) {
	for left := n; left > 0; left -= fillBatch {
		txn, err := s.Atomic(bg)
		must(b, err, "bitt fill")
		for i := 0; i < min(left, fillBatch); i++ {
			must(b, txn.Enqueue(topic, jobPayload), "bitt fill")
		}
		_, err = txn.Commit(bg)
		must(b, err, "bitt fill")
		txn.Close()
	}
}

// drain dequeues up to limit jobs at a time and acks each batch with one
// AckMany (one transaction), or with ackEach each job with its own Ack,
// until the topic is empty.
func drain(s *Store, topic string, limit int, ackEach bool, acked *atomic.Int64) error {
	opts := bitt.DequeueOptions{Limit: limit, Lease: time.Minute}
	for {
		msgs, err := s.Queue.Dequeue(bg, topic, opts)
		if err != nil || len(msgs) == 0 {
			return err
		}
		if !ackEach {
			err = ackAll(s, topic, msgs, acked)
		}
		for i := 0; ackEach && err == nil && i < len(msgs); i++ {
			if err = s.Queue.Ack(bg, msgs[i]); err == nil {
				acked.Add(1)
			}
		}
		if err != nil {
			return err
		}
	}
}

// ackAll acks msgs in one AckMany; a delivery it could not ack is an error
// (every lease here is live).
func ackAll(s *Store, topic string, msgs []*bitt.Message, acked *atomic.Int64) error {
	ok, err := s.Queue.AckMany(bg, topic, msgs)
	if err != nil {
		return err
	}
	for i, done := range ok {
		if !done {
			return fmt.Errorf("bitt: message %d was not acked", msgs[i].ID)
		}
	}
	acked.Add(int64(len(msgs)))
	return nil
}

// ---- the queue ----------------------------------------------------------------------

const bittQueueSchema = "bench_go_bittq"

type bittQueueRef struct {
	url string
	s   *Store
}

var theBittQueue *bittQueueRef

func bittQueue(b *testing.B) *bittQueueRef {
	if theBittQueue == nil {
		url := withParam(serverURL(b, "BITT_BENCH_POSTGRES_URL"), "schema="+bittQueueSchema)
		dropSchema(b, bittQueueSchema)
		atExit(func() { dropSchema(b, bittQueueSchema) })
		theBittQueue = &bittQueueRef{url: url, s: openBitt(b, url)}
		atExit(func() { theBittQueue.s.Close() }) // runs before the drop
	}
	return theBittQueue
}

// truncate empties bitt's queue table before a round, as riverRef.truncate
// empties River's: both sides start each round on a table without the dead
// rows of the rounds before (which autovacuum may not have cleared yet).
func (q *bittQueueRef) truncate(b *testing.B) {
	c, err := pgx.Connect(bg, serverURL(b, "BITT_BENCH_POSTGRES_URL"))
	must(b, err, "bitt truncate")
	defer c.Close(bg)
	// (the first round runs before the store has made its tables)
	_, err = c.Exec(bg, `DO $$ BEGIN IF to_regclass('`+bittQueueSchema+`.queue') IS NOT NULL
THEN TRUNCATE `+bittQueueSchema+`.queue; END IF; END $$`)
	must(b, err, "bitt truncate")
}

func (q *bittQueueRef) enqueue(b *testing.B) {
	q.truncate(b)
	b.ReportAllocs()
	timed(b, "jobs/s", func() {
		for i := 0; i < b.N; i++ {
			_, err := q.s.Queue.Enqueue(bg, "bench_in", jobPayload)
			must(b, err, "bitt enqueue")
		}
	})
}

func (q *bittQueueRef) work(b *testing.B, workers, limit int, ackEach bool) {
	b.StopTimer()
	q.truncate(b)
	fillBittQueue(b, q.s, "bench", b.N)
	stores := make([]*Store, workers)
	for i := range stores {
		stores[i] = openBitt(b, q.url)
	}
	var acked atomic.Int64
	var failed atomic.Value
	var wg sync.WaitGroup
	timed(b, "jobs/s", func() {
		for _, s := range stores {
			wg.Add(1)
			go func(s *Store) {
				defer wg.Done()
				if err := drain(s, "bench", limit, ackEach, &acked); err != nil {
					failed.Store(err)
				}
			}(s)
		}
		wg.Wait()
	})
	for _, s := range stores {
		s.Close()
	}
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	if n := acked.Load(); n != int64(b.N) {
		b.Fatalf("bitt: %d of %d jobs acked", n, b.N)
	}
}

// workWorker: the same b.N jobs, done by one bitt.Worker (issue 23) of
// `concurrency` handlers on one store, a handler that returns nil; the timer
// stops when OnCompleted has seen every job (called once its ack committed).
func (q *bittQueueRef) workWorker(b *testing.B, concurrency int) {
	b.StopTimer()
	q.truncate(b)
	fillBittQueue(b, q.s, "bench", b.N)
	s := openBitt(b, q.url)
	defer s.Close()
	var done atomic.Int64
	all := make(chan struct{})
	w, err := bitt.NewWorker(s.Queue, "bench", func(context.Context, *bitt.Message) error { return nil },
		bitt.Concurrency(concurrency), bitt.WorkerLease(60*time.Second),
		bitt.WorkerWait(50*time.Millisecond), bitt.OnCompleted(func(*bitt.Message) {
			if done.Add(1) == int64(b.N) {
				close(all)
			}
		}))
	must(b, err, "bitt worker")
	timed(b, "jobs/s", func() {
		must(b, w.Start(), "bitt worker start")
		<-all
	})
	w.Stop(bg)
}
