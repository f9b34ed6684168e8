package bitt

// KV calls of many goroutines on one Redis store go out combined, and gets
// on one PostgreSQL store (combine.go): each keeps its own result and error.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func redisT(t *testing.T, tag string) *Store {
	u := os.Getenv("BITT_TEST_REDIS_URL")
	if u == "" {
		t.Fatal("BITT_TEST_REDIS_URL is not set (scripts/test starts a server and sets it)")
	}
	return openT(t, fmt.Sprintf("%s?prefix=%s%d", u, tag, time.Now().UnixNano()%1e9))
}

func postgresT(t *testing.T, tag string) *Store {
	u := os.Getenv("BITT_TEST_POSTGRES_URL")
	if u == "" {
		t.Fatal("BITT_TEST_POSTGRES_URL is not set (scripts/test starts a server and sets it)")
	}
	return openT(t, fmt.Sprintf("%s?schema=%s%d", u, tag, time.Now().UnixNano()%1e9))
}

func TestCombinedKVCallsKeepTheirResults(t *testing.T) {
	combinedCallsKeepTheirResults(t, redisT(t, "comb"))
}

// On PostgreSQL gets go out as one get_many; sets are not combined.
func TestCombinedPostgresGetsKeepTheirResults(t *testing.T) {
	s := postgresT(t, "comb")
	if s.comb == nil || !s.comb.getMany {
		t.Fatal("a PostgreSQL store combines gets into get_many")
	}
	combinedCallsKeepTheirResults(t, s)
}

func combinedCallsKeepTheirResults(t *testing.T, s *Store) {
	if s.comb == nil {
		t.Fatal("the store combines KV calls")
	}
	ctx := context.Background()
	const workers, each = 32, 150
	tooLong := bytes.Repeat([]byte("k"), 4096)
	runWorkers(t, workers, func(w int) error {
		var last uint64
		for i := 0; i < each; i++ {
			key := []byte(fmt.Sprintf("w%02d", w))
			val := bytes.Repeat([]byte{byte('a' + i%26)}, 1+(w*37+i)%300)
			ver, err := s.KV.Set(ctx, key, val, WithKind(KindBytes), TTL(time.Hour))
			if err != nil || ver <= last {
				return fmt.Errorf("set %d: version %d after %d, %v", i, ver, last, err)
			}
			last = ver
			e, err := s.KV.Get(ctx, key)
			if err != nil || e == nil || !bytes.Equal(e.Value, val) || e.Version != ver ||
				e.Kind != KindBytes || e.ExpiresAt.IsZero() || string(e.Key) != string(key) {
				return fmt.Errorf("get %d: %+v, %v (want version %d)", i, e, err, ver)
			}
			// a refused call among the others fails alone, with its message
			if _, err := s.KV.Set(ctx, key, val, WithKind(Kind(99))); !errors.Is(err, ErrInvalid) ||
				!strings.Contains(err.Error(), "kind") {
				return fmt.Errorf("set with kind 99: %v", err)
			}
			if i%5 == w%5 {
				if e, err := s.KV.Get(ctx, tooLong); e != nil || !errors.Is(err, ErrTooLarge) ||
					!strings.Contains(err.Error(), "key of 4096 bytes") {
					return fmt.Errorf("get of a key over the limit: %+v, %v", e, err)
				}
			}
			if e, err := s.KV.Get(ctx, []byte(fmt.Sprintf("absent%d", w))); e != nil || err != nil {
				return fmt.Errorf("get of an absent key: %+v, %v", e, err)
			}
		}
		return nil
	})
	if n := s.comb.combined.Load(); n == 0 {
		t.Fatal("no call went out combined with others")
	} else {
		t.Logf("%d calls went out combined with others", n)
	}
}

func TestCombinedCallsAfterClose(t *testing.T) {
	closeWhileWriting(t, redisT(t, "combclose"))
	closeWhileWriting(t, postgresT(t, "combclose"))
}

// psql runs sql on the test server with psql (PostgreSQL's client, which
// the server's packages install) and returns its output.
func psql(t *testing.T, sql string) string {
	t.Helper()
	out, err := exec.Command("psql", "-X", "-q", "-tA", "-v", "ON_ERROR_STOP=1",
		os.Getenv("BITT_TEST_POSTGRES_URL"), "-c", sql).CombinedOutput()
	if err != nil {
		t.Fatalf("psql %q: %v: %s", sql, err, out)
	}
	return strings.TrimSpace(string(out))
}

// A get queued behind running reads leaves the queue when its context
// ends; one with a live context still gets its value. The reads are held
// up by a lock another session takes on the table until the checks end
// that session, so which calls are running and which are queued is known
// (no timing is asserted).
func TestQueuedGetHonoursItsContext(t *testing.T) {
	base := os.Getenv("BITT_TEST_POSTGRES_URL")
	if base == "" {
		t.Fatal("BITT_TEST_POSTGRES_URL is not set (scripts/test starts a server and sets it)")
	}
	if _, err := exec.LookPath("psql"); err != nil {
		t.Fatal("psql is not on PATH (scripts/install-deps installs it with the server)")
	}
	ctx := context.Background()
	tag := fmt.Sprintf("combctx%d", time.Now().UnixNano()%1e9)
	url := base + "?schema=" + tag + "&application_name=" + tag
	// the tables are made before the lock is taken
	if _, err := openT(t, url).KV.Set(ctx, []byte("k"), []byte("v")); err != nil {
		t.Fatal(err)
	}
	s := openT(t, url)
	// The lock is held until the checks below end its session (or 20 s pass).
	locker := exec.Command("psql", "-X", "-q", base+"?application_name="+tag+"_lock", "-c",
		"BEGIN; LOCK TABLE "+tag+".kv IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(20); COMMIT;")
	if err := locker.Start(); err != nil {
		t.Fatal(err)
	}
	unlock := func() {
		psql(t, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "+
			"WHERE application_name = '"+tag+"_lock'")
	}
	defer locker.Wait() // it fails: its session is ended on purpose
	defer unlock()
	until := func(what, sql, want string) {
		for i := 0; psql(t, sql) != want; i++ {
			if i == 200 {
				t.Fatalf("%s: never", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	until("the lock", "SELECT count(*) FROM pg_locks WHERE relation = to_regclass('"+tag+
		".kv') AND mode = 'AccessExclusiveLock' AND granted", "1")

	results := make(chan error, 3)
	get := func(ctx context.Context) {
		e, err := s.KV.Get(ctx, []byte("k"))
		if err == nil && (e == nil || string(e.Value) != "v") {
			err = fmt.Errorf("got %+v", e)
		}
		results <- err
	}
	// two leaders (the most that run at once), each held by the lock
	go get(ctx)
	go get(ctx)
	until("two gets waiting for the lock", "SELECT count(*) FROM pg_stat_activity WHERE "+
		"application_name = '"+tag+"' AND wait_event_type = 'Lock'", "2")
	go get(ctx) // queued; read in the next batch
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if e, err := s.KV.Get(short, []byte("k")); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a queued get whose context ended: %+v, %v (want context.DeadlineExceeded)", e, err)
	}
	unlock()
	for i := 0; i < 3; i++ {
		if err := <-results; err != nil {
			t.Fatalf("get %d: %v", i, err)
		}
	}
}
