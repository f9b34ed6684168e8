package bench

// The queue on PostgreSQL: bitt against River (riverqueue/river with
// riverpgxv5), each in its own schema, jobs/s.
//
//   - enqueue: one job per call, from one goroutine; bitt Queue.Enqueue of a
//     32-byte payload, River Client.Insert of args carrying a 32-byte string
//     (JSON), each its own transaction.
//   - work: b.N jobs are put in first (timer off: bitt in transactions of
//     1000 enqueues, River with InsertMany by 1000), then the timer runs from
//     the workers' start until every job is done. bitt: queueWorkers
//     goroutines, a store each (a connection each), each dequeues up to
//     `limit` jobs with a 60 s lease and acks each; a worker stops when the
//     queue is empty (all the jobs were in before it started). River: one
//     client (pgxpool, its default size) started with MaxWorkers = the same
//     number of jobs in flight, a worker that returns nil, and the timer stops
//     when the client reported b.N EventKindJobCompleted (sent once the
//     completion is written). River's FetchCooldown is set to its minimum (1
//     ms; the default 100 ms would cap it at MaxWorkers jobs per 100 ms) and
//     FetchPollInterval to 50 ms; the table is truncated between runs.

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

const (
	queueWorkers = 4
	riverSchema  = "bench_go_river"
	fillBatch    = 1000
)

type benchJob struct {
	Payload string `json:"p"`
}

func (benchJob) Kind() string { return "bench" }

var riverPayload = strings.Repeat("j", jobSize)

type riverRef struct {
	pool    *pgxpool.Pool
	workers *river.Workers
	insert  *river.Client[pgx.Tx] // insert-only: no queues
}

var theRiver *riverRef

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func riverQueue(b *testing.B) *riverRef {
	if theRiver != nil {
		return theRiver
	}
	url := serverURL(b, "BITT_BENCH_POSTGRES_URL")
	pool, err := pgxpool.New(bg, url)
	must(b, err, "pgxpool")
	atExit(pool.Close)
	newSchema(b, pool, riverSchema)
	m, err := rivermigrate.New(riverpgxv5.New(pool),
		&rivermigrate.Config{Schema: riverSchema, Logger: quietLogger()})
	must(b, err, "rivermigrate")
	_, err = m.Migrate(bg, rivermigrate.DirectionUp, nil)
	must(b, err, "river migrations")
	r := &riverRef{pool: pool, workers: river.NewWorkers()}
	river.AddWorker(r.workers, river.WorkFunc(func(context.Context, *river.Job[benchJob]) error {
		return nil
	}))
	r.insert, err = river.NewClient(riverpgxv5.New(pool),
		&river.Config{Schema: riverSchema, Workers: r.workers, Logger: quietLogger()})
	must(b, err, "river client")
	theRiver = r
	return r
}

func (r *riverRef) truncate(b *testing.B) {
	_, err := r.pool.Exec(bg, `TRUNCATE `+riverSchema+`.river_job`)
	must(b, err, "truncate river_job")
}

func (r *riverRef) enqueue(b *testing.B) {
	r.truncate(b)
	b.ReportAllocs()
	timed(b, "jobs/s", func() {
		for i := 0; i < b.N; i++ {
			_, err := r.insert.Insert(bg, benchJob{Payload: riverPayload}, nil)
			must(b, err, "river insert")
		}
	})
}

func (r *riverRef) work(b *testing.B, inFlight int) {
	b.StopTimer()
	r.truncate(b)
	params := make([]river.InsertManyParams, 0, fillBatch)
	for left := b.N; left > 0; left -= len(params) {
		params = params[:0]
		for i := 0; i < left && i < fillBatch; i++ {
			params = append(params, river.InsertManyParams{Args: benchJob{Payload: riverPayload}})
		}
		_, err := r.insert.InsertManyFast(bg, params)
		must(b, err, "river fill")
	}
	client, err := river.NewClient(riverpgxv5.New(r.pool), &river.Config{
		Schema:            riverSchema,
		Workers:           r.workers,
		Queues:            map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: inFlight}},
		FetchCooldown:     river.FetchCooldownMin,
		FetchPollInterval: 50 * time.Millisecond,
		Logger:            quietLogger(),
	})
	must(b, err, "river client")
	events, cancel := client.SubscribeConfig(&river.SubscribeConfig{
		ChanSize: b.N + 1000, Kinds: []river.EventKind{river.EventKindJobCompleted}})
	defer cancel()
	ctx, stop := context.WithTimeout(bg, 10*time.Minute)
	defer stop()
	timed(b, "jobs/s", func() {
		must(b, client.Start(ctx), "river start")
		for done := 0; done < b.N; done++ {
			select {
			case <-events:
			case <-ctx.Done():
				b.Fatalf("river: %d of %d jobs done after 10 minutes", done, b.N)
			}
		}
	})
	must(b, client.Stop(bg), "river stop")
}
