// bench/node/util.mjs: what every part of the Node benchmark shares: the
// settings, loading bitt, timing, and the table.
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));

function envInt(name, fallback) {
  const v = process.env[name];
  if (v === undefined || v === '') return fallback;
  const n = Number(v);
  if (Number.isInteger(n) && n >= 1) return n;
  console.error(`bench: ${name} must be a positive integer, not '${v}'`);
  process.exit(2);
}

export const config = {
  n: envInt('BITT_BENCH_N', 20000), // KV operations per measurement
  jobs: envInt('BITT_BENCH_JOBS', 5000), // queue jobs per measurement
  inflight: envInt('BITT_BENCH_INFLIGHT', 64), // calls in flight in the concurrent KV rows
  rounds: envInt('BITT_BENCH_ROUNDS', 3), // each figure is the median of this many rounds
  batch: envInt('BITT_BENCH_BATCH', 16), // consume prefetch of the batched bitt worker row
  prefetch: envInt('BITT_BENCH_PREFETCH', 1), // consume prefetch of the other bitt worker rows
  redisUrl: process.env.BITT_BENCH_REDIS_URL || '',
  // The bitt package: the repository's binding unless BITT_NODE names another.
  bittPath: process.env.BITT_NODE || path.resolve(here, '../../bindings/node'),
};

// bitt, or null with the reason printed: the peer side still runs without it.
export function loadBitt() {
  try {
    return require(config.bittPath);
  } catch (e) {
    console.error(`bitt: cannot load ${config.bittPath}: ${e.message.split('\n')[0]}`);
    console.error('bitt: build bindings/node first (see bench/node/README.md); the bitt column stays empty');
    return null;
  }
}

export const loadPeer = (name) => require(name);

// A redis:// URL with one more query parameter.
export function withParam(url, name, value) {
  return `${url}${url.includes('?') ? '&' : '?'}${name}=${encodeURIComponent(value)}`;
}

// Ops per second of an async or sync body that does `count` operations.
export async function rate(count, body) {
  const t0 = process.hrtime.bigint();
  await body();
  const s = Number(process.hrtime.bigint() - t0) / 1e9;
  return count / s;
}

// Runs n operations on each side in alternating chunks (a then b, b then a,
// ...) and returns both rates: load that comes and goes on a shared machine
// then slows both alike. A body(from, to) does operations [from, to); a null
// side is skipped and gets a null rate.
export async function duel(n, chunk, a, b) {
  const spent = [0n, 0n];
  const sides = [a, b];
  for (let from = 0, turn = 0; from < n; from += chunk, turn ^= 1) {
    const to = Math.min(n, from + chunk);
    for (const k of turn ? [1, 0] : [0, 1]) {
      if (!sides[k]) continue;
      const t0 = process.hrtime.bigint();
      await sides[k](from, to);
      spent[k] += process.hrtime.bigint() - t0;
    }
  }
  return spent.map((t, k) => (sides[k] ? n / (Number(t) / 1e9) : null));
}

export function median(xs) {
  const s = xs.filter((x) => x !== null).sort((a, b) => a - b);
  if (!s.length) return null;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

// Runs `body(i, worker)` for i in [0, count) on `width` concurrent async
// loops (worker = the loop's number): `width` calls in flight at all times.
export async function inFlight(count, width, body) {
  let next = 0;
  const loop = async (w) => {
    for (let i = next++; i < count; i = next++) await body(i, w);
  };
  await Promise.all(Array.from({ length: Math.min(width, count) }, (_, w) => loop(w)));
}

// One promise and its resolve, for "the last job is done".
export function signal() {
  let resolve;
  const promise = new Promise((r) => (resolve = r));
  return { promise, resolve };
}

const fmt = (x) => (x === null || x === undefined ? '-' : Math.round(x).toLocaleString('en-US'));

// rows: {op, bitt, peer, peerName}; ratio = bitt / peer (> 1: bitt is faster).
export function printTable(rows) {
  const head = ['operation', 'bitt ops/s', 'peer', 'peer ops/s', 'ratio'];
  const body = rows.map((r) => [
    r.op,
    fmt(r.bitt),
    r.peerName,
    fmt(r.peer),
    r.bitt && r.peer ? (r.bitt / r.peer).toFixed(2) : '-',
  ]);
  const widths = head.map((h, c) => Math.max(h.length, ...body.map((b) => b[c].length)));
  const line = (cells) =>
    cells.map((x, c) => (c === 0 || c === 2 ? x.padEnd(widths[c]) : x.padStart(widths[c]))).join('  ');
  console.log(line(head));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const b of body) console.log(line(b));
}
