#!/usr/bin/env node
// bench/node/bench.mjs: bitt from Node against the usual Node packages, in one
// run, printing one table (ops/s, and ratio = bitt / peer: > 1 means bitt is
// faster):
//   - bitt on SQLite vs better-sqlite3 12 doing the same SQL work (sqlite.mjs);
//   - bitt's async KV on Redis vs ioredis GET/SET (redis_kv.mjs);
//   - the bitt queue on Redis vs BullMQ, 1 and 4 workers (queue.mjs).
//
//   npm ci --prefix bench/node
//   BITT_BENCH_REDIS_URL=redis://127.0.0.1:PORT/0 node bench/node/bench.mjs
//
// Settings (environment): BITT_BENCH_N (KV ops, 20000), BITT_BENCH_JOBS (queue
// jobs, 5000), BITT_BENCH_INFLIGHT (64), BITT_BENCH_ROUNDS (3: each figure is
// a median), BITT_BENCH_BATCH (16), BITT_NODE (the bitt package directory,
// default bindings/node), BITT_BENCH_ONLY (a comma list of sqlite, redis,
// queue: the parts to run; all by default). Without BITT_BENCH_REDIS_URL only
// SQLite runs.
import { benchQueue } from './queue.mjs';
import { benchRedisKv } from './redis_kv.mjs';
import { benchSqlite } from './sqlite.mjs';
import { config, loadBitt, loadPeer, printTable } from './util.mjs';

// Removes every key this run wrote (both sides use names holding `tag`).
async function dropKeys(tag) {
  const Redis = loadPeer('ioredis');
  const r = new Redis(config.redisUrl);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await r.scan(cursor, 'MATCH', `*${tag}*`, 'COUNT', 1000);
      if (keys.length) await r.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    await r.quit();
  }
}

async function main() {
  const bitt = loadBitt();
  const rows = [];
  const say = (what) => console.error(`.. ${what}`);
  console.error(
    `node ${process.version}; n=${config.n} jobs=${config.jobs} in flight=${config.inflight} ` +
      `rounds=${config.rounds} (medians)`
  );
  const only = (process.env.BITT_BENCH_ONLY || 'sqlite,redis,queue').split(',');
  if (only.includes('sqlite')) {
    say('sqlite');
    rows.push(...(await benchSqlite(bitt)));
  }
  if (config.redisUrl) {
    const tag = `nodebench${process.pid}`;
    try {
      if (only.includes('redis')) {
        say('redis kv');
        rows.push(...(await benchRedisKv(bitt, tag)));
      }
      if (only.includes('queue')) {
        say('queue');
        rows.push(...(await benchQueue(bitt, tag, { queueWait: 1000 })));
      }
    } finally {
      await dropKeys(tag);
    }
  } else {
    console.error('BITT_BENCH_REDIS_URL is not set: the Redis and queue rows are skipped');
  }
  printTable(rows);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
