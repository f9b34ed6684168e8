package bitt

// KV calls of many goroutines on one Redis store go out combined, and gets
// on one PostgreSQL store (combine.go): each keeps its own result and error.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
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
				e.Kind != KindBytes || e.ExpiresAt == 0 || string(e.Key) != string(key) {
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
