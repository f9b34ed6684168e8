'use strict';
// Node-specific behaviour: worker threads and child processes sharing a
// store, bad argument types (a TypeError, never a crash), close() with
// calls in flight, and the event loop kept free during a slow network call.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const { Worker } = require('worker_threads');
const { spawn } = require('child_process');
const bitt = require('../../bindings/node');

const PKG = path.join(__dirname, '..', '..', 'bindings', 'node');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bitt-node-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));

function wanted(b) {
  const lst = (process.env.BITT_TEST_BACKENDS || '').split(',').filter(Boolean);
  return !lst.length || lst.includes(b);
}

function serverUrl(env, opt, ns) {
  const base = process.env[env];
  if (!base) throw new Error(`${env} is not set (exclude the backend with BITT_TEST_BACKENDS)`);
  return `${base}${base.includes('?') ? '&' : '?'}${opt}=node_${ns}_${process.pid}`;
}

test('worker threads share a SQLite store: every increment lands once', async () => {
  const url = `sqlite:${tmp}/workers.db`;
  bitt.open(url).close(); // creates the schema once
  const code = `
    const { parentPort, workerData } = require('worker_threads');
    const bitt = require(workerData.pkg);
    const s = bitt.open(workerData.url);
    for (let i = 0; i < 200; i++) s.kv.increment('hits', 1n);
    let err = null;
    try { s.kv.increment('text', 1n); } catch (e) { err = [e.name, e instanceof bitt.BittError, e.code, e.status]; }
    s.close();
    parentPort.postMessage(err);`;
  const s = bitt.open(url);
  s.kv.set('text', 'not a counter');
  const results = await Promise.all([0, 1, 2, 3].map(() => new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: { pkg: PKG, url } });
    w.once('message', resolve);
    w.once('error', reject);
  })));
  for (const r of results) assert.deepEqual(r, ['NotACounter', true, 'ERR_BITT_NOT_COUNTER', -4]);
  assert.equal(s.kv.get('hits').value, 800n);
  s.close();
});

test('worker threads share one memory: store through share()/attach()', async () => {
  const s = bitt.open('memory:');
  s.kv.set('text', 'not a counter');
  const code = `
    const { parentPort, workerData } = require('worker_threads');
    const bitt = require(workerData.pkg);
    (async () => {
      const s = workerData.async ? await bitt.attachAsync(workerData.token) : bitt.attach(workerData.token);
      for (let i = 0; i < 200; i++) await s.kv.increment('hits', 1n);
      let err = null;
      try { await s.kv.increment('text', 1n); } catch (e) { err = [e.name, e instanceof bitt.BittError]; }
      await s.close(); // this handle only
      parentPort.postMessage(err);
    })();`;
  const results = await Promise.all([false, true, false, true].map((async) => new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: { pkg: PKG, token: s.share(), async } });
    w.once('message', resolve);
    w.once('error', reject);
  })));
  for (const r of results) assert.deepEqual(r, ['NotACounter', true]);
  assert.equal(s.kv.get('hits').value, 800n);
  assert.throws(() => bitt.attach(s.share() + 1n), bitt.UsageError);
  s.close();
});

test('child processes share a SQLite queue: each message is processed once', async () => {
  const url = `sqlite:${tmp}/procs.db`;
  const s = bitt.open(url);
  const ids = [];
  for (let i = 0; i < 90; i++) ids.push(s.queue.enqueue('jobs', { n: i }));
  const code = `
    const bitt = require(process.argv[1]);
    const s = bitt.open(process.argv[2]);
    const done = [];
    for (;;) {
      const batch = s.queue.dequeue('jobs', { limit: 3, lease: 60000 });
      if (!batch.length) break;
      for (const m of batch) { s.queue.ack(m); done.push(String(m.id)); }
    }
    s.close();
    process.stdout.write(JSON.stringify(done));`;
  const run = () => new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['-e', code, PKG, url], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.on('error', reject);
    p.on('exit', (c) => (c === 0 ? resolve(JSON.parse(out)) : reject(new Error(`child exited ${c}`))));
  });
  const all = (await Promise.all([run(), run(), run()])).flat();
  assert.equal(all.length, 90);
  assert.deepEqual(new Set(all), new Set(ids.map(String)));
  assert.equal(s.queue.stats('jobs').pending, 0);
  s.close();
});

test('bad argument types throw TypeError (sync) or reject with it (async), never crash', async () => {
  const s = bitt.open('memory:');
  const a = await bitt.openAsync('memory:');
  const bad = [
    (x) => x.kv.get(123),
    (x) => x.kv.get({}),
    (x) => x.kv.set('k', undefined),
    (x) => x.kv.set('k', () => 1),
    (x) => x.kv.set('k', 1n, { ttl: 'long' }),
    (x) => x.kv.increment('k', 'one'),
    (x) => x.kv.increment('k', 1.5),
    (x) => x.kv.getMany('k'),
    (x) => x.kv.get(['tuple', {}]),
    (x) => x.queue.enqueue(5, 'payload'),
    (x) => x.queue.dequeue('t', { wait: 'soon' }),
    (x) => x.lease.acquire('l', 'me', 'ttl'),
    (x) => x.outbox.ack('s', 'not an array'),
    (x) => x.outbox.ack('s', [1n, 'two']),
    (x) => x.queue.ackMany('t', 'not an array'),
    (x) => x.queue.ackMany('t', [['one', 'tok']]),
    (x) => x.queue.ackMany('t', [[1n, 2]]),
    (x) => x.pubsub.publish('c', 42),
    (x) => x.budget.take('b', { capacity: 'x', refill: 1, period: 1 }),
  ];
  for (const [i, f] of bad.entries()) {
    assert.throws(() => f(s), TypeError, `sync case ${i}`);
    await assert.rejects(async () => f(a), TypeError, `async case ${i}`);
  }
  // An integer the C call cannot hold, a NaN: InvalidArgument (ERRORS.md).
  const invalid = [
    (x) => x.kv.set('k', NaN),
    (x) => x.queue.dequeue('t', { limit: 2 ** 40 }),
    (x) => x.queue.dequeue('t', { limit: -1 }),
    (x) => x.kv.increment('k', 2n ** 63n),
    (x) => x.kv.set('k', 1n, { ttl: 2n ** 64n }),
  ];
  for (const [i, f] of invalid.entries()) {
    assert.throws(() => f(s), bitt.InvalidArgument, `sync case ${i}`);
    await assert.rejects(async () => f(a), bitt.InvalidArgument, `async case ${i}`);
  }
  assert.throws(() => bitt.open(42), TypeError);
  await assert.rejects(bitt.openAsync(null), TypeError);
  assert.throws(() => bitt.raw.bitt_kv_get({}, Buffer.from('k')), TypeError);
  assert.throws(() => bitt.raw.async.bitt_kv_get('box', Buffer.from('k')), TypeError);
  assert.throws(() => s.queue.enqueue('t\0x', 'p'), bitt.InvalidArgument);
  s.kv.set('still', 'works');
  assert.equal(s.kv.get('still').value, 'works');
  s.close();
  await a.close();
});

test('queue.ackMany takes messages or [id, token] pairs, sync and async', async () => {
  const s = bitt.open('memory:');
  const a = await bitt.openAsync('memory:');
  for (const x of [s, a]) {
    for (let i = 0; i < 3; i++) await x.queue.enqueue('q', i);
    const [m1, m2, m3] = await x.queue.dequeue('q', { limit: 3 });
    assert.deepEqual(await x.queue.ackMany('q', [m1, [m2.id, m2.token], [m3.id, 'stale']]), [true, true, false]);
    assert.deepEqual(await x.queue.ackMany('q', [m1, m3]), [false, true]);
    assert.deepEqual(await x.queue.ackMany('q', []), []);
    assert.equal((await x.queue.stats('q')).processing, 0);
  }
  assert.throws(() => s.queue.ackMany('q', [[1n, null]]), bitt.InvalidArgument);
  await assert.rejects(a.queue.ackMany('q', [[1n, null]]), bitt.InvalidArgument);
  s.close();
  await a.close();
});

test('errors carry the status code, its name and the core message', async () => {
  const s = bitt.open('memory:?max_value_size=4');
  assert.throws(() => s.kv.set('k', Buffer.alloc(10)), (e) => e instanceof bitt.TooLarge && e.status === -3 &&
    e.code === 'ERR_BITT_TOO_LARGE' && e.name === 'TooLarge' && e.message.length > 0);
  s.close();
  assert.throws(() => s.kv.get('k'), bitt.UsageError);
  await assert.rejects(bitt.openAsync('nosuch://x'), bitt.URLError);
});

test('close() waits for the calls in flight; later calls reject with UsageError', async () => {
  const a = await bitt.openAsync('memory:');
  const t0 = Date.now();
  const waiting = a.queue.dequeue('empty', { wait: 300 });
  await new Promise((r) => setTimeout(r, 20)); // the wait has started on the pool
  await a.close();
  assert.deepEqual(await waiting, []);
  assert.ok(Date.now() - t0 >= 250, 'close returned before the wait in flight ended');
  await assert.rejects(a.kv.get('k'), bitt.UsageError);
  await a.close(); // idempotent
});

/* Waits run on threads of their own (bindings/node/src/async.hpp): with more
 * waits in progress than the dispatcher has threads (12 waits, 8 threads),
 * other calls still run. On the dispatcher they would queue behind the
 * 2-minute waits, past the test's timeout. */
test('calls that wait do not hold up the other async calls', { timeout: 60000 }, async () => {
  const a = await bitt.openAsync('memory:');
  const n = 12;
  const waits = Array.from({ length: n }, () => a.queue.dequeue('w', { lease: 60000, wait: 120000 }));
  assert.ok((await a.kv.set('k', 1)) >= 1n);
  assert.deepEqual((await a.kv.get('k')).value, 1);
  for (let i = 0; i < n; i++) await a.queue.enqueue('w', { i });
  const got = (await Promise.all(waits)).flat();
  assert.deepEqual(got.map((m) => m.value.i).sort((x, y) => x - y), [...Array(n).keys()]);
  await a.close();
});

test('async iterators: consume a queue and a subscription', async () => {
  const a = await bitt.openAsync('memory:');
  const sub = a.pubsub.subscribe('news');
  await sub.ready;
  setTimeout(() => { a.queue.enqueue('q', { job: 1 }); a.pubsub.publish('news', 'hello'); }, 30);
  for await (const m of a.queue.consume('q', { lease: 1000, wait: 200 })) {
    assert.deepEqual(m.value, { job: 1 });
    await a.queue.ack(m);
    break;
  }
  for await (const m of sub) {
    assert.equal(m.payload.toString(), 'hello');
    break;
  }
  await a.close();
});

/* The event loop stays free while a slow call waits on the server: a
 * dequeue with a 500 ms wait on an empty topic, while a 10 ms interval
 * measures how late it fires. */
async function loopLag(url) {
  const a = await bitt.openAsync(url);
  await a.queue.dequeue('warm', {}); // connection and schema ready
  let last = performance.now();
  let maxLag = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    maxLag = Math.max(maxLag, now - last - 10);
    last = now;
  }, 10);
  const t0 = performance.now();
  const got = await a.queue.dequeue('empty', { wait: 500 });
  const took = performance.now() - t0;
  clearInterval(timer);
  await a.close();
  assert.deepEqual(got, []);
  return { took, maxLag };
}

for (const [backend, env, opt] of [['postgres', 'BITT_TEST_POSTGRES_URL', 'schema'], ['redis', 'BITT_TEST_REDIS_URL', 'prefix']]) {
  if (!wanted(backend)) continue;
  test(`the event loop is not blocked during a slow ${backend} call`, async (t) => {
    const { took, maxLag } = await loopLag(serverUrl(env, opt, 'lag'));
    t.diagnostic(`${backend}: dequeue wait=500ms took ${took.toFixed(0)} ms; max event-loop lag ${maxLag.toFixed(1)} ms`);
    assert.ok(took >= 400, `the wait returned early (${took} ms)`);
    assert.ok(maxLag < took / 2, `the loop was blocked ${maxLag} ms during a ${took} ms call`);
  });
}

test('consume with prefetch: one dequeue leases a batch, handed out one by one', async () => {
  const a = await bitt.openAsync('memory:');
  await a.clock.setManual(new Date(1_000_000));
  for (let i = 0; i < 10; i++) await a.queue.enqueue('pf', { i });
  const seen = [];
  for await (const m of a.queue.consume('pf', { prefetch: 4, lease: 5000, wait: 0 })) {
    // The whole batch is leased as the first one comes.
    if (seen.length === 0) assert.deepEqual([(await a.queue.stats('pf')).processing, (await a.queue.stats('pf')).pending], [4, 6]);
    seen.push(m.value.i);
    await a.queue.ack(m);
    if (seen.length === 6) break; // mid-batch: 2 of the second batch never handed out
  }
  assert.deepEqual(seen, [0, 1, 2, 3, 4, 5]);
  // The two never handed out were given back as the loop broke, unseen: no
  // attempt used, claimable at once (no clock moved).
  let st = await a.queue.stats('pf');
  assert.deepEqual([st.processing, st.pending], [0, 4]);
  const back = [];
  for await (const m of a.queue.consume('pf', { prefetch: 3, lease: 5000, wait: 0 })) {
    back.push([m.value.i, m.attempts]);
    await a.queue.ack(m);
    if (back.length === 4) break;
  }
  assert.deepEqual(back.sort((x, y) => x[0] - y[0]), [[6, 1], [7, 1], [8, 1], [9, 1]]);
  st = await a.queue.stats('pf');
  assert.deepEqual([st.processing, st.pending], [0, 0]);
  // `limit` is the older name; a bad prefetch is a TypeError.
  await a.queue.enqueue('pf', { i: 10 });
  for await (const m of a.queue.consume('pf', { limit: 2, wait: 0 })) { await a.queue.ack(m); break; }
  assert.throws(() => a.queue.consume('pf', { prefetch: 0 }), TypeError);
  await a.close();
});
