package bench

// The Redis peer: go-redis GET and SET of the same keys and values, on one
// connection (PoolSize 1, like a bitt store) and on go-redis's default pool.
// This is less than bitt does: bitt's set runs a Lua script (versionstamp,
// the hash k:<key> with value, kind, version and expiry, the key index), its
// get is one HMGET of that hash's four fields (core/redis/kv.c). GoRedisHMGet
// does that HMGET, for reference.

import (
	"testing"

	"github.com/redis/go-redis/v9"
)

const redisPeerPrefix = "bitt_gobench_peer:"

type redisRef struct {
	c    *redis.Client
	keys map[string]string // bench key -> prefixed key, made once
}

var redisPeers = map[int]*redisRef{}

// redisPeer is a go-redis client with pool size poolSize (0: the default).
func redisPeer(b *testing.B, poolSize int) *redisRef {
	if p := redisPeers[poolSize]; p != nil {
		return p
	}
	opt, err := redis.ParseURL(serverURL(b, "BITT_BENCH_REDIS_URL"))
	must(b, err, "redis url")
	opt.PoolSize = poolSize
	p := &redisRef{c: redis.NewClient(opt), keys: map[string]string{}}
	for _, k := range benchKeys {
		p.keys[string(k)] = redisPeerPrefix + string(k)
	}
	redisPeers[poolSize] = p
	atExit(func() { p.c.Close() })
	if poolSize == 1 {
		atExit(func() { cleanRedisKeys(p.c, redisPeerPrefix+"*") }) // runs before the close
		must(b, p.preload(), "redis preload")
	}
	return p
}

// preload sets every key and its hash twin in one pipeline.
func (p *redisRef) preload() error {
	pipe := p.c.Pipeline()
	for _, k := range benchKeys {
		pk := p.keys[string(k)]
		pipe.Set(bg, pk, benchValue, 0)
		pipe.HSet(bg, pk+":h", "v", benchValue, "t", 0, "s", 1, "e", 0)
	}
	_, err := pipe.Exec(bg)
	return err
}

func (p *redisRef) set(key []byte) error {
	return p.c.Set(bg, p.keys[string(key)], benchValue, 0).Err()
}

func (p *redisRef) get(key []byte) error {
	_, err := p.c.Get(bg, p.keys[string(key)]).Bytes()
	return err
}

func (p *redisRef) hmget(key []byte) error {
	return p.c.HMGet(bg, p.keys[string(key)]+":h", "v", "t", "s", "e").Err()
}

// cleanRedisKeys deletes the keys matching pattern.
func cleanRedisKeys(c *redis.Client, pattern string) {
	var cursor uint64
	for {
		keys, next, err := c.Scan(bg, cursor, pattern, 1000).Result()
		if err != nil {
			return
		}
		if len(keys) > 0 {
			c.Del(bg, keys...)
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}
