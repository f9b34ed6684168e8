// Package bench sets bitt's Go binding side by side with the Go clients people
// would use instead, each doing the same work, in one `go test -bench` run:
//
//   - bitt on SQLite against database/sql with mattn/go-sqlite3 running the
//     statements bitt's SQLite backend runs (sqlite_peer_test.go);
//   - bitt on Redis against go-redis GET/SET (redis_peer_test.go);
//   - bitt on PostgreSQL against pgx sending the statements bitt's PostgreSQL
//     backend sends (postgres_peer_test.go);
//   - the bitt queue on PostgreSQL against River (queue_test.go).
//
// Each Benchmark has a "Bitt" sub-benchmark and one or more peers, run in
// interleaved rounds; ./run turns the output into ops/s and bitt/peer ratios. These are benchmarks, not
// tests: nothing here asserts a figure, and a benchmark whose server URL is
// unset (BITT_BENCH_POSTGRES_URL, BITT_BENCH_REDIS_URL) is skipped.
package bench

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

const (
	keyCount  = 10000 // preloaded keys: every get finds its row
	valueSize = 64    // bytes per value, as in bench/postgres_bench.c
	jobSize   = 32    // bytes per queue payload
)

var (
	benchKeys  = makeKeys("key")
	benchCtrs  = makeKeys("ctr")[:1000]
	benchValue = bytesOf('v', valueSize)
	jobPayload = bytesOf('j', jobSize)
)

func makeKeys(tag string) [][]byte {
	keys := make([][]byte, keyCount)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("%s:%08d", tag, i))
	}
	return keys
}

func bytesOf(c byte, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return b
}

// picker walks keys in a fixed pseudo-random order (xorshift64), the same
// for bitt and its peer, so both touch the same rows in the same order.
type picker struct{ s uint64 }

func newPicker() *picker { return &picker{0x9e3779b97f4a7c15} }

func (p *picker) next(keys [][]byte) []byte {
	p.s ^= p.s << 13
	p.s ^= p.s >> 7
	p.s ^= p.s << 17
	return keys[p.s%uint64(len(keys))]
}

// closers run after every benchmark: fixtures are made once per process
// (go test calls a benchmark function several times while it sizes b.N).
var closers []func()

func atExit(f func()) { closers = append(closers, f) }

func TestMain(m *testing.M) {
	code := m.Run()
	for i := len(closers) - 1; i >= 0; i-- {
		closers[i]()
	}
	os.Exit(code)
}

var toldUnset = map[string]bool{}

// serverURL is the URL in the environment variable name, or skips b; the
// first skip of each says why on stderr (go test shows skips only with -v).
func serverURL(b *testing.B, name string) string {
	u := os.Getenv(name)
	if u == "" {
		msg := fmt.Sprintf("%s is unset: no server to measure against, skipped "+
			"(scripts/postgres-test-server or scripts/redis-test-server start DIR prints one)", name)
		if !toldUnset[name] {
			toldUnset[name] = true
			fmt.Fprintln(os.Stderr, "bench: "+msg)
		}
		b.Skip(msg)
	}
	return u
}

func must(b *testing.B, err error, what string) {
	if err != nil {
		b.Fatalf("%s: %v", what, err)
	}
}

// cpuTime is the CPU time this process has used (user + system, every
// thread: the Go runtime, cgo calls into libbitt, the peers' goroutines).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// timed runs f (b.N operations) with the timer on, and reports the rate
// (unit: ops/s or jobs/s) and the client's CPU time per operation
// (cpu-ns/op), which a loaded machine's waits for the server do not touch.
func timed(b *testing.B, unit string, f func()) {
	b.ResetTimer()
	cpu := cpuTime()
	b.StartTimer()
	f()
	b.StopTimer()
	cpu = cpuTime() - cpu
	if s := b.Elapsed().Seconds(); s > 0 {
		b.ReportMetric(float64(b.N)/s, unit)
	}
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// loop runs op b.N times, timed.
func loop(b *testing.B, op func(key []byte) error, keys [][]byte) {
	p := newPicker()
	b.ReportAllocs()
	timed(b, "ops/s", func() {
		for i := 0; i < b.N; i++ {
			if err := op(p.next(keys)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// parallelCallers is how many goroutines ploop calls from at once.
const parallelCallers = 16

// ploop runs op b.N times in all, from parallelCallers goroutines at once
// (each walking the keys from its own start), timed: throughput with calls
// in flight, where a client that serializes them shows.
func ploop(b *testing.B, op func(key []byte) error, keys [][]byte) {
	b.ReportAllocs()
	timed(b, "ops/s", func() {
		var wg sync.WaitGroup
		errs := make(chan error, parallelCallers)
		for g := 0; g < parallelCallers; g++ {
			n := b.N / parallelCallers
			if g < b.N%parallelCallers {
				n++
			}
			wg.Add(1)
			go func(g, n int) {
				defer wg.Done()
				p := &picker{0x9e3779b97f4a7c15 + uint64(g)*7919}
				for i := 0; i < n; i++ {
					if err := op(p.next(keys)); err != nil {
						errs <- err
						return
					}
				}
			}(g, n)
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	})
}

// side is one contender of a benchmark.
type side struct {
	name string
	run  func(b *testing.B)
}

// compare runs the sides in turn, BITT_BENCH_ROUNDS times (default 3): the
// rounds interleave, so a slow spell of a shared machine hits every side
// alike. go test names the later rounds Side#01, Side#02...
func compare(b *testing.B, sides ...side) {
	rounds, err := strconv.Atoi(os.Getenv("BITT_BENCH_ROUNDS"))
	if err != nil || rounds < 1 {
		rounds = 3
	}
	for r := 0; r < rounds; r++ {
		for _, s := range sides {
			b.Run(s.name, s.run)
		}
	}
}

var bg = context.Background()

func nowMillis() int64 { return time.Now().UnixMilli() }

// bittSet and bittGet are the Bitt sides of the set and get benchmarks, on
// the store that open gives.
func bittSet(open func(*testing.B) *Store) side {
	return side{"Bitt", func(b *testing.B) {
		kv := open(b).KV
		loop(b, func(k []byte) error { _, err := kv.Set(bg, k, benchValue); return err }, benchKeys)
	}}
}

func bittGet(open func(*testing.B) *Store) side {
	return side{"Bitt", func(b *testing.B) {
		kv := open(b).KV
		loop(b, func(k []byte) error { return found(kv.Get(bg, k)) }, benchKeys)
	}}
}

// ---- SQLite ------------------------------------------------------------------

func BenchmarkSQLiteSet(b *testing.B) {
	compare(b,
		bittSet(bittSQLite),
		side{"GoSQLite3", func(b *testing.B) { loop(b, sqlitePeer(b).set, benchKeys) }},
		side{"GoSQLite3BareUpsert", func(b *testing.B) { loop(b, sqlitePeer(b).bareUpsert, benchKeys) }})
}

func BenchmarkSQLiteGet(b *testing.B) {
	compare(b,
		bittGet(bittSQLite),
		side{"GoSQLite3", func(b *testing.B) { loop(b, sqlitePeer(b).get, benchKeys) }})
}

// ---- Redis -------------------------------------------------------------------

func BenchmarkRedisSet(b *testing.B) {
	compare(b,
		bittSet(bittRedis),
		side{"GoRedis", func(b *testing.B) { loop(b, redisPeer(b, 1).set, benchKeys) }},
		side{"GoRedisPool", func(b *testing.B) { loop(b, redisPeer(b, 0).set, benchKeys) }})
}

func BenchmarkRedisGet(b *testing.B) {
	compare(b,
		bittGet(bittRedis),
		side{"GoRedis", func(b *testing.B) { loop(b, redisPeer(b, 1).get, benchKeys) }},
		side{"GoRedisPool", func(b *testing.B) { loop(b, redisPeer(b, 0).get, benchKeys) }},
		side{"GoRedisHMGet", func(b *testing.B) { loop(b, redisPeer(b, 1).hmget, benchKeys) }})
}

// The same with parallelCallers goroutines on one bitt store (its pool of
// Redis connections, default 16) and on one go-redis client (its default
// pool, 10 per CPU).
func BenchmarkRedisSetParallel(b *testing.B) {
	compare(b,
		side{"Bitt", func(b *testing.B) {
			kv := bittRedis(b).KV
			ploop(b, func(k []byte) error { _, err := kv.Set(bg, k, benchValue); return err }, benchKeys)
		}},
		side{"GoRedisPool", func(b *testing.B) { ploop(b, redisPeer(b, 0).set, benchKeys) }})
}

func BenchmarkRedisGetParallel(b *testing.B) {
	compare(b,
		side{"Bitt", func(b *testing.B) {
			kv := bittRedis(b).KV
			ploop(b, func(k []byte) error { return found(kv.Get(bg, k)) }, benchKeys)
		}},
		side{"GoRedisPool", func(b *testing.B) {
			redisPeer(b, 1) // preloads the keys
			ploop(b, redisPeer(b, 0).get, benchKeys)
		}})
}

// ---- PostgreSQL --------------------------------------------------------------

func BenchmarkPostgresSet(b *testing.B) {
	compare(b,
		bittSet(bittPostgres),
		side{"Pgx", func(b *testing.B) { loop(b, pgxPeer(b).set, benchKeys) }},
		side{"PgxPlainUpsert", func(b *testing.B) { loop(b, pgxPeer(b).plainUpsert, benchKeys) }})
}

func BenchmarkPostgresGet(b *testing.B) {
	compare(b,
		bittGet(bittPostgres),
		side{"Pgx", func(b *testing.B) { loop(b, pgxPeer(b).get, benchKeys) }},
		side{"PgxPlainSelect", func(b *testing.B) { loop(b, pgxPeer(b).plainSelect, benchKeys) }})
}

func BenchmarkPostgresIncrement(b *testing.B) {
	compare(b,
		side{"Bitt", func(b *testing.B) {
			kv := bittPostgres(b).KV
			loop(b, func(k []byte) error { _, err := kv.Increment(bg, k, 1); return err }, benchCtrs)
		}},
		side{"Pgx", func(b *testing.B) { loop(b, pgxPeer(b).increment, benchCtrs) }})
}

// The same with parallelCallers goroutines on one bitt store (its pool of
// PostgreSQL connections, default 16) and on a pgxpool.Pool of as many.
func BenchmarkPostgresSetParallel(b *testing.B) {
	compare(b,
		side{"Bitt", func(b *testing.B) {
			kv := bittPostgres(b).KV
			ploop(b, func(k []byte) error { _, err := kv.Set(bg, k, benchValue); return err }, benchKeys)
		}},
		side{"PgxPool", func(b *testing.B) { ploop(b, pgxPoolPeer(b).set, benchKeys) }})
}

func BenchmarkPostgresGetParallel(b *testing.B) {
	compare(b,
		side{"Bitt", func(b *testing.B) {
			kv := bittPostgres(b).KV
			ploop(b, func(k []byte) error { return found(kv.Get(bg, k)) }, benchKeys)
		}},
		side{"PgxPool", func(b *testing.B) { ploop(b, pgxPoolPeer(b).get, benchKeys) }})
}

// ---- queue on PostgreSQL: bitt against River ------------------------------------

// Enqueue: one job per call (one transaction each), from one goroutine.
func BenchmarkQueuePostgresEnqueue(b *testing.B) {
	compare(b,
		side{"Bitt", func(b *testing.B) { bittQueue(b).enqueue(b) }},
		side{"River", func(b *testing.B) { riverQueue(b).enqueue(b) }})
}

// Work: b.N jobs waiting, then workers until every one is done (acked /
// completed). Four jobs in flight at most: bitt's River-shaped client (one
// fetcher claiming up to the free slots, four handlers, a completer acking
// finished jobs together with AckMany: bitt_client_test.go), River with
// MaxWorkers 4. BittAckEach: the plain loop of four workers, a job per
// dequeue and an Ack (a transaction) per job, as before AckMany. BittWorker:
// one bitt.Worker of concurrency 4 (the binding's worker, issue 23).
func BenchmarkQueuePostgresWork(b *testing.B) {
	compare(b,
		side{"Bitt", func(b *testing.B) { bittQueue(b).workPipelined(b, queueWorkers) }},
		side{"BittAckEach", func(b *testing.B) { bittQueue(b).work(b, queueWorkers, 1, true) }},
		side{"BittWorker", func(b *testing.B) { bittQueue(b).workWorker(b, queueWorkers) }},
		side{"River", func(b *testing.B) { riverQueue(b).work(b, queueWorkers) }})
}

// WorkBatch: the same with 128 jobs in flight: four bitt workers taking up to
// 32 jobs per dequeue and acking each batch with one AckMany, River with
// MaxWorkers 128.
func BenchmarkQueuePostgresWorkBatch(b *testing.B) {
	compare(b,
		side{"Bitt", func(b *testing.B) { bittQueue(b).work(b, queueWorkers, 32, false) }},
		side{"River", func(b *testing.B) { riverQueue(b).work(b, queueWorkers*32) }})
}
