'use strict';
// The Promise API's dispatcher (bindings/node/src/dispatch.hpp): many calls
// in flight settle, each with its own result or error, on few threads too;
// a pending call keeps the process alive and an idle store does not; a
// worker thread torn down, or a process exiting, with calls in flight
// neither crashes nor hangs.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const path = require('path');
const { Worker } = require('worker_threads');
const { spawn } = require('child_process');
const bitt = require('../../bindings/node');

const PKG = path.join(__dirname, '..', '..', 'bindings', 'node');

/* Runs `code` in a fresh node (argv[1]: the package) with `env` added;
 * resolves to {code, out}. */
function child(code, env = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['-e', code, PKG], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...env },
    });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.on('error', reject);
    p.on('exit', (c, sig) => resolve({ code: c, sig, out }));
  });
}

test('hundreds of calls in flight on several stores settle, each with its own result', async () => {
  const stores = await Promise.all([0, 1, 2].map(() => bitt.openAsync('memory:')));
  await stores[0].kv.set('text', 'not a counter');
  const calls = [];
  for (let i = 0; i < 600; i++) {
    const a = stores[i % 3];
    calls.push(a.kv.set(`k${i}`, i).then(() => a.kv.get(`k${i}`)).then((e) => e.value));
  }
  const fails = Promise.allSettled(Array.from({ length: 50 }, () => stores[0].kv.increment('text', 1n)));
  assert.deepEqual(await Promise.all(calls), [...Array(600).keys()]);
  for (const r of await fails) {
    assert.equal(r.status, 'rejected');
    assert.ok(r.reason instanceof bitt.NotACounter, String(r.reason));
  }
  await Promise.all(stores.map((a) => a.close()));
});

test('one dispatcher thread (BITT_NODE_THREADS=1) still runs every call, close() too', async () => {
  const code = `
    const bitt = require(process.argv[1]);
    (async () => {
      const stores = await Promise.all([0, 1].map(() => bitt.openAsync('memory:')));
      const got = await Promise.all(Array.from({ length: 300 }, (_, i) =>
        stores[i % 2].kv.increment('n', 1n)));
      const closing = stores.map((a) => a.close());
      await Promise.all(closing);
      let err = null;
      try { await stores[0].kv.get('n'); } catch (e) { err = e.name; }
      process.stdout.write(JSON.stringify([got.length, String(got.reduce((m, x) => (x > m ? x : m), 0n)), err]));
    })();`;
  const r = await child(code, { BITT_NODE_THREADS: '1' });
  assert.equal(r.code, 0);
  assert.deepEqual(JSON.parse(r.out), [300, '150', 'UsageError']);
});

test('a pending call keeps the process alive; an open idle store does not', async () => {
  // No await at the top: only the call in flight keeps the loop running
  // until its then() prints; then the process ends with the store open.
  const code = `
    const bitt = require(process.argv[1]);
    bitt.openAsync('memory:').then((a) => a.kv.set('k', 1)).then((v) => process.stdout.write('set ' + v));`;
  const r = await child(code);
  assert.equal(r.code, 0);
  assert.equal(r.out, 'set 1');
});

test('process.exit() with calls in flight exits cleanly', async () => {
  const code = `
    const bitt = require(process.argv[1]);
    bitt.openAsync('memory:').then((a) => {
      for (let i = 0; i < 2000; i++) a.kv.set('k' + i, i);
      setImmediate(() => process.exit(7));
    });`;
  const r = await child(code);
  assert.equal(r.sig, null);
  assert.equal(r.code, 7);
});

test('a worker thread terminated with calls in flight leaves the store working', async () => {
  const s = bitt.open('memory:');
  const code = `
    const { parentPort, workerData } = require('worker_threads');
    const bitt = require(workerData.pkg);
    bitt.attachAsync(workerData.token).then((a) => {
      for (let i = 0; i < 5000; i++) a.kv.increment('n', 1n);
      parentPort.postMessage('busy');
    });`;
  for (let round = 0; round < 3; round++) {
    const w = new Worker(code, { eval: true, workerData: { pkg: PKG, token: s.share() } });
    await new Promise((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    });
    await w.terminate();
  }
  // Calls of the terminated workers may still run (they were queued); the
  // store stays usable, and this thread's calls settle as before.
  const a = await bitt.attachAsync(s.share());
  const n = (await a.kv.increment('n', 1n)) - 1n;
  assert.ok(n >= 0n && n <= 15000n, String(n));
  await a.close();
  s.close();
});

test('a worker thread terminated during waits (dequeue with wait) exits cleanly', async () => {
  const s = bitt.open('memory:');
  const code = `
    const { parentPort, workerData } = require('worker_threads');
    const bitt = require(workerData.pkg);
    bitt.attachAsync(workerData.token).then(async (a) => {
      for (let i = 0; i < 4; i++) a.queue.dequeue('none', { wait: 200 }).catch(() => {});
      a.pubsub.subscribe('none');
      await a.kv.set('ready', 1);
      parentPort.postMessage('waiting');
    });`;
  const w = new Worker(code, { eval: true, workerData: { pkg: PKG, token: s.share() } });
  await new Promise((resolve, reject) => {
    w.once('message', resolve);
    w.once('error', reject);
  });
  await w.terminate();
  await new Promise((r) => setTimeout(r, 300)); // the waits end after their worker is gone
  assert.equal(s.kv.get('ready').value, 1);
  s.close();
});
