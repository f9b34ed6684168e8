'use strict';
// Promise calls on a Redis store run on fibers of the event loop's thread
// (bindings/node/src/fibers.hpp) and share one connection (core/redis/pipe.c).
// These check what that could break: replies reaching the wrong call, errors
// of one call showing on another, the event loop blocked by a slow server, a
// timeout leaving calls hanging, worker threads (each its own fibers), a sync
// call on the same store while fibers hold its only connection, a worker torn
// down with calls suspended, and the BITT_NODE_FIBERS=0 escape. Run by
// scripts/test-node when Redis is among the backends. No timing assertions.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const net = require('net');
const path = require('path');
const { Worker } = require('worker_threads');
const { spawn } = require('child_process');
const bitt = require('../../bindings/node');

const URL_ = process.env.BITT_TEST_REDIS_URL;
const PKG = path.join(__dirname, '..', '..', 'bindings', 'node');
let seq = 0;
const urlFor = (opts = '') => `${URL_}?prefix=nfib${process.pid}x${seq++}${opts}`;

/* One command to the server on a raw socket (RESP), resolving to the reply's first line. */
function raw(...args) {
  const u = new URL(URL_);
  return new Promise((resolve, reject) => {
    const s = net.connect(Number(u.port), u.hostname);
    let buf = '';
    s.on('error', reject);
    s.on('data', (d) => {
      buf += d;
      if (buf.includes('\r\n')) {
        s.end();
        resolve(buf.split('\r\n')[0]);
      }
    });
    s.write(`*${args.length}\r\n` + args.map((a) => `$${Buffer.byteLength(String(a))}\r\n${a}\r\n`).join(''));
  });
}

function child(code, env = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, ['-e', code, PKG, urlFor('&pool=1')], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: { ...process.env, ...env },
    });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.on('error', reject);
    p.on('exit', (c) => resolve({ code: c, out }));
  });
}

test('hundreds of calls in flight (fibers sharing a connection, threads past their slots): each gets its own reply or error', { skip: !URL_ }, async () => {
  const a = await bitt.openAsync(urlFor('&pool=1'));
  await a.kv.set('text', 'not a counter');
  const calls = [];
  for (let i = 0; i < 500; i++) calls.push(a.kv.set(`k${i}`, `v${i}`).then(() => a.kv.get(`k${i}`)).then((e) => e.value));
  const fails = Promise.allSettled(Array.from({ length: 50 }, () => a.kv.increment('text', 1n)));
  const counts = Array.from({ length: 100 }, () => a.kv.increment('n', 1n));
  assert.deepEqual(await Promise.all(calls), Array.from({ length: 500 }, (_, i) => `v${i}`));
  for (const r of await fails) {
    assert.equal(r.status, 'rejected');
    assert.ok(r.reason instanceof bitt.NotACounter, String(r.reason));
  }
  const got = (await Promise.all(counts)).map(String).sort((x, y) => Number(x) - Number(y));
  assert.deepEqual(got, Array.from({ length: 100 }, (_, i) => String(i + 1)));
  await a.close();
});

test('the event loop runs while the server is paused, and each call times out with its own error', { skip: !URL_ }, async () => {
  // A timeout only the pause can reach: the calls before and after it run
  // on a busy machine too (CI, a CPU hog), where 300 ms was not enough for
  // an ordinary reply. The pause outlasts it by 7 s, a margin for the calls
  // to be sent; CLIENT UNPAUSE, itself held by a PAUSE ALL, returns when the
  // pause ends.
  const a = await bitt.openAsync(urlFor('&pool=2&timeout=3000'));
  await a.kv.set('k', 'v');
  assert.equal(await raw('CLIENT', 'PAUSE', '10000', 'ALL'), '+OK');
  let ticks = 0;
  const timer = setInterval(() => { ticks++; }, 10);
  const results = await Promise.allSettled(Array.from({ length: 20 }, () => a.kv.get('k')));
  clearInterval(timer);
  await raw('CLIENT', 'UNPAUSE');
  for (const r of results) {
    assert.equal(r.status, 'rejected');
    assert.ok(r.reason instanceof bitt.BackendError, String(r.reason));
    assert.match(r.reason.message, /no reply in time/);
  }
  assert.ok(ticks > 0, 'timers ran while the calls waited');
  assert.equal((await a.kv.get('k')).value, 'v'); // a new connection
  await a.close();
});

test('a sync call on the same store completes while fibers hold its only connection', { skip: !URL_ }, async () => {
  const a = await bitt.openAsync(urlFor('&pool=1'));
  const sync = bitt.attach(a.share());
  const inflight = Array.from({ length: 50 }, (_, i) => a.kv.set(`a${i}`, i));
  sync.kv.set('sync', 'yes'); // on the thread's own stack: an extra connection
  await Promise.all(inflight);
  assert.equal((await a.kv.get('sync')).value, 'yes');
  assert.equal(sync.kv.get('a49').value, 49);
  sync.close();
  await a.close();
});

test('worker threads sharing a store each run their own fibers', { skip: !URL_ }, async () => {
  const a = await bitt.openAsync(urlFor('&pool=2'));
  const code = `
    const { parentPort, workerData } = require('worker_threads');
    const bitt = require(workerData.pkg);
    (async () => {
      const s = await bitt.attachAsync(workerData.token);
      const got = await Promise.all(Array.from({ length: 200 }, (_, i) =>
        s.kv.set('w' + workerData.id + '/' + i, i).then(() => s.kv.get('w' + workerData.id + '/' + i)).then((e) => e.value)));
      await s.close();
      parentPort.postMessage(got.every((v, i) => v === i));
    })().catch((e) => parentPort.postMessage(String(e)));`;
  const run = (id) => new Promise((resolve, reject) => {
    const w = new Worker(code, { eval: true, workerData: { pkg: PKG, token: a.share(), id } });
    w.on('message', resolve);
    w.on('error', reject);
  });
  const mine = Promise.all(Array.from({ length: 200 }, (_, i) => a.kv.increment('n', 1n)));
  assert.deepEqual(await Promise.all([run(1), run(2), run(3)]), [true, true, true]);
  await mine;
  assert.equal((await a.kv.get('n')).value, 200n);
  await a.close();
});

test('a worker terminated with calls suspended on a paused server neither crashes nor hangs', { skip: !URL_ }, async () => {
  const a = await bitt.openAsync(urlFor('&pool=1&timeout=2000'));
  const token = a.share();
  const code = `
    const { parentPort, workerData } = require('worker_threads');
    const bitt = require(workerData.pkg);
    (async () => {
      const s = await bitt.attachAsync(workerData.token);
      await s.kv.set('x', 1);
      for (let i = 0; i < 30; i++) s.kv.get('x').catch(() => {});
      parentPort.postMessage('suspended');
    })();`;
  await raw('CLIENT', 'PAUSE', '700', 'ALL');
  const w = new Worker(code, { eval: true, workerData: { pkg: PKG, token } });
  await new Promise((resolve, reject) => { w.on('message', resolve); w.on('error', reject); });
  await w.terminate();
  await raw('CLIENT', 'UNPAUSE');
  await a.kv.set('after', 'ok');
  assert.equal((await a.kv.get('after')).value, 'ok');
  await a.close();
});

test('BITT_NODE_FIBERS=0 runs the same calls on the dispatcher threads', { skip: !URL_ }, async () => {
  const code = `
    const bitt = require(process.argv[1]);
    (async () => {
      const a = await bitt.openAsync(process.argv[2]);
      const got = await Promise.all(Array.from({ length: 200 }, (_, i) => a.kv.increment('n', 1n)));
      await a.close();
      process.stdout.write(String(got.length) + ' ' + String(got.reduce((m, x) => (x > m ? x : m), 0n)));
    })().catch((e) => { console.error(e); process.exit(1); });`;
  for (const env of [{ BITT_NODE_FIBERS: '0' }, {}]) {
    const r = await child(code, env);
    assert.equal(r.code, 0);
    assert.equal(r.out, '200 200');
  }
});

test('a process exiting with calls suspended exits cleanly', { skip: !URL_ }, async () => {
  const code = `
    const bitt = require(process.argv[1]);
    (async () => {
      const a = await bitt.openAsync(process.argv[2]);
      await a.kv.set('x', 1);
      for (let i = 0; i < 20; i++) a.kv.get('x').catch(() => {});
      process.stdout.write('exiting');
      process.exit(0);
    })();`;
  const r = await child(code);
  assert.equal(r.code, 0);
  assert.equal(r.out, 'exiting');
});

test('a dequeue with a wait: taken on a fiber when there are messages, waited for on a thread when not', { skip: !URL_ }, async () => {
  const a = await bitt.openAsync(urlFor());
  await a.queue.enqueue('t', 'first');
  const now = await a.queue.dequeue('t', { wait: 5000 });
  assert.deepEqual(now.map((m) => m.value), ['first']);
  await a.queue.ack(now[0]);
  // nothing there: the wait runs on a thread and is woken by the enqueue
  setTimeout(() => { a.queue.enqueue('t', 'later'); }, 100);
  const later = await a.queue.dequeue('t', { wait: 5000 });
  assert.deepEqual(later.map((m) => m.value), ['later']);
  await a.queue.ack(later[0]);
  assert.deepEqual(await a.queue.dequeue('t', { wait: 50 }), []);
  await a.close();
});

// A reply can be there before the fiber would park: with the server and the
// client on one CPU, writing the command lets the server run at once (it was
// asleep: the scheduler prefers it), and the call ends inside the JS call that
// made it. Such a call settles in the loop's next check phase (settle_later in
// fibers.hpp), so a loop of awaited calls still lets timers, I/O and
// immediates run, as with replies that come through the loop. A private Redis
// and a child process, both pinned to CPU 0 (taskset).
const tools = require('child_process').spawnSync('sh', ['-c', 'command -v taskset && command -v chrt && command -v redis-server']).status === 0;
test('calls whose reply is there before they park still let the event loop run', { skip: !URL_ || !tools }, async () => {
  const fs = require('fs');
  const os = require('os');
  const { execFileSync } = require('child_process');
  const script = path.join(__dirname, '..', '..', 'scripts', 'redis-test-server');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bitt-fib-cpu0-'));
  const url = execFileSync(script, ['start', dir]).toString().trim();
  try {
    const pid = fs.readFileSync(path.join(dir, 'redis.pid'), 'utf8').trim();
    execFileSync('taskset', ['-a', '-p', '-c', '0', pid]);
    // Real-time priority: woken by a command, the server runs before the
    // client's next instruction every time (root only; else by chance).
    try { execFileSync('chrt', ['-a', '-f', '-p', '1', pid], { stdio: 'ignore' }); } catch (e) { /* not root */ }
    const code = `
      const bitt = require(process.argv[1]);
      (async () => {
        const a = await bitt.openAsync(process.argv[2]);
        const counts = [];
        for (let round = 0; round < 5; round++) {
          let immediates = 0, stop = false;
          const tick = () => { immediates++; if (!stop) setImmediate(tick); };
          setImmediate(tick);
          for (let i = 0; i < 200; i++) {
            await a.kv.set('k' + (i % 5), 'v' + i);
            if ((await a.kv.get('k' + (i % 5))).value !== 'v' + i) throw new Error('wrong value');
          }
          stop = true;
          counts.push(immediates);
        }
        await a.close();
        process.stdout.write(JSON.stringify(counts));
      })().catch((e) => { console.error(e); process.exit(1); });`;
    const r = await new Promise((resolve, reject) => {
      const p = spawn('taskset', ['-c', '0', process.execPath, '-e', code, PKG, `${url}?prefix=cpu0`], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      p.stdout.on('data', (d) => { out += d; });
      p.on('error', reject);
      p.on('exit', (c) => resolve({ code: c, out }));
    });
    assert.equal(r.code, 0);
    for (const n of JSON.parse(r.out)) assert.ok(n >= 50, `${r.out}: immediates per 400 round trips`);
  } finally {
    execFileSync(script, ['stop', dir]);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// Before the loop sleeps with a reply due, the scheduler spins on the sockets
// (spin_us, fibers.hpp): only when the loop has nothing else to do, and it
// stops at once when any other descriptor of the loop is ready. With each
// setting: immediates queued meanwhile keep running between the round trips,
// replies to another client's socket arrive, values are right, and a process
// whose store is closed exits on its own (the prepare handle holds no loop).
test('the spin before the loop sleeps leaves immediates, other sockets and exit alone', { skip: !URL_ }, async () => {
  for (const opts of ['', '&spin_us=0', '&spin_us=10000']) {
    const a = await bitt.openAsync(urlFor(opts));
    let immediates = 0;
    let stop = false;
    const tick = () => { immediates++; if (!stop) setImmediate(tick); };
    setImmediate(tick);
    const pings = [];
    for (let i = 0; i < 200; i++) {
      if (i % 4 === 0) pings.push(raw('PING'));
      await a.kv.set(`k${i % 5}`, `v${i}`);
      assert.equal((await a.kv.get(`k${i % 5}`)).value, `v${i}`);
    }
    stop = true;
    assert.ok(immediates >= 50, `${opts}: ${immediates} immediates ran during 400 round trips`);
    assert.deepEqual(await Promise.all(pings), Array(50).fill('+PONG'));
    await a.close();
  }
  const r = await child(`
    const bitt = require(process.argv[1]);
    (async () => {
      const a = await bitt.openAsync(process.argv[2]);
      for (let i = 0; i < 50; i++) await a.kv.set('x', i);
      await a.close();
      process.stdout.write('done');
    })();`);
  assert.equal(r.code, 0);
  assert.equal(r.out, 'done');
});
