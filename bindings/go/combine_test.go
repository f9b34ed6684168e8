package bitt

// KV calls of many goroutines on one Redis store go out combined
// (combine.go): each keeps its own result and error.

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

func TestCombinedKVCallsKeepTheirResults(t *testing.T) {
	s := redisT(t, "comb")
	if s.comb == nil {
		t.Fatal("a Redis store combines KV calls")
	}
	ctx := context.Background()
	const workers, each = 32, 150
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
			if e, err := s.KV.Get(ctx, []byte(fmt.Sprintf("absent%d", w))); e != nil || err != nil {
				return fmt.Errorf("get of an absent key: %+v, %v", e, err)
			}
		}
		return nil
	})
	if n := s.comb.combined.Load(); n == 0 {
		t.Fatal("no call went out combined with others")
	} else {
		t.Logf("%d of %d calls went out combined", n, workers*each*4)
	}
}

func TestCombinedCallsAfterClose(t *testing.T) {
	closeWhileWriting(t, redisT(t, "combclose"))
}
