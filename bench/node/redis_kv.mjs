// bench/node/redis_kv.mjs: bitt's async KV on Redis against ioredis GET/SET,
// on the same server.
//
// What each side sends per operation (one round trip each):
//   bitt set: FCALL of its set function (HINCRBY the versionstamp, HSET the
//             key's hash v/t/s/e, ZADD the key index): a versioned write.
//   bitt get: HMGET P k:<key> v t s e, the expiry decided by bitt's clock.
//   ioredis:  SET key value / GET key (getBuffer: the value as a Buffer, as
//             bitt returns it).
// Two shapes: sequential (await each call: one in flight) and `inflight`
// concurrent loops sharing the one client. ioredis writes every command as it
// is issued and matches replies in order, so its in-flight calls share round
// trips (pipelining on one connection). A bitt store has a pool of
// connections (bitt.h, "Threads"): in flight, its calls run side by side, one
// round trip each, as many as the libuv pool has threads.
import { config, duel, inFlight, loadPeer, median, withParam } from './util.mjs';

const KEYS = 1000;
const CHUNK = 2000;

export async function benchRedisKv(bitt, tag) {
  const { n, rounds, inflight, redisUrl } = config;
  const Redis = loadPeer('ioredis');
  const keys = Array.from({ length: KEYS }, (_, i) => Buffer.from(`key:${i}`));
  const peerKeys = keys.map((k) => Buffer.concat([Buffer.from(`${tag}:ref:`), k]));
  const value = Buffer.alloc(16, 'x');
  const r = new Redis(redisUrl, { lazyConnect: true });
  await r.connect();
  const a = bitt ? await bitt.openAsync(withParam(redisUrl, 'prefix', `${tag}:bitt`)) : null;
  const got = { bs: [], bg: [], ps: [], pg: [], bsc: [], bgc: [], psc: [], pgc: [] };
  // Chunk bodies over keys [from, to): one call in flight, or `inflight`.
  const seq = (op) =>
    op &&
    (async (from, to) => {
      for (let i = from; i < to; i++) await op(i % KEYS);
    });
  const conc = (op) => op && ((from, to) => inFlight(to - from, inflight, (i) => op((from + i) % KEYS)));
  const bset = a && ((i) => a.kv.set(keys[i], value));
  const bget = a && ((i) => a.kv.get(keys[i]));
  const pset = (i) => r.set(peerKeys[i], value);
  const pget = (i) => r.getBuffer(peerKeys[i]);
  const push = (kb, kp, [b, p]) => {
    got[kb].push(b);
    got[kp].push(p);
  };
  try {
    await duel(KEYS, KEYS, seq(bset), seq(pset)); // every key present
    for (let round = 0; round < rounds; round++) {
      push('bs', 'ps', await duel(n, CHUNK, seq(bset), seq(pset)));
      push('bg', 'pg', await duel(n, CHUNK, seq(bget), seq(pget)));
      push('bsc', 'psc', await duel(n, CHUNK, conc(bset), conc(pset)));
      push('bgc', 'pgc', await duel(n, CHUNK, conc(bget), conc(pget)));
    }
    if (a) {
      const e = await a.kv.get(keys[1]);
      if (!e || !Buffer.from(e.value).equals(value)) throw new Error('bitt redis get returned a wrong value');
    }
    if (!(await r.getBuffer(peerKeys[1])).equals(value)) throw new Error('ioredis get returned a wrong value');
  } finally {
    await a?.close();
    await r.quit();
  }
  const b = (xs) => (a ? median(xs) : null);
  const c = `${inflight} in flight`;
  return [
    { op: 'redis set, sequential', bitt: b(got.bs), peerName: 'ioredis SET', peer: median(got.ps) },
    { op: 'redis get, sequential', bitt: b(got.bg), peerName: 'ioredis GET', peer: median(got.pg) },
    { op: `redis set, ${c}`, bitt: b(got.bsc), peerName: 'ioredis SET', peer: median(got.psc) },
    { op: `redis get, ${c}`, bitt: b(got.bgc), peerName: 'ioredis GET', peer: median(got.pgc) },
  ];
}
