'use strict';
// bitt.Worker (issue 23 item 8): ack on return, nack with the error's text on
// a throw (attempts and lastError on redelivery, dead letter after the last
// attempt), snooze, the concurrency and prefetch bounds, lease renewal while a
// handler runs past its lease, stall detection, graceful stop, stop's
// deadline, hook exceptions. Time is the store's manual clock: the tests
// advance it and then wait on a condition (a counter, a handler's start),
// never on elapsed time; the 30 s timeouts are hang guards only.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const bitt = require('../../bindings/node');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bitt-worker-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const GUARD = { timeout: 30_000 };
const LONG = 60_000;
const T0 = new Date(Date.UTC(2030, 0, 1));

function wanted(b) {
  const lst = (process.env.BITT_TEST_BACKENDS || '').split(',').filter(Boolean);
  return !lst.length || lst.includes(b);
}

const server = (env, opt) => (ns) => {
  const base = process.env[env];
  return `${base}${base.includes('?') ? '&' : '?'}${opt}=node_worker_${ns}_${process.pid}`;
};
const URLS = [['memory', () => 'memory:'], ['sqlite', (ns) => `sqlite:${tmp}/${ns}.db`]];
if (wanted('postgres') && process.env.BITT_TEST_POSTGRES_URL) URLS.push(['postgres', server('BITT_TEST_POSTGRES_URL', 'schema')]);
if (wanted('redis') && process.env.BITT_TEST_REDIS_URL) URLS.push(['redis', server('BITT_TEST_REDIS_URL', 'prefix')]);

/* Resolves once pred() holds, checked every few ms (a condition, not a
 * duration: the bound only turns a hang into a failure naming it). */
async function until(pred, what) {
  const give = Date.now() + 25_000;
  while (!(await pred())) {
    if (Date.now() > give) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/* A promise opened by the test: gate.open(value). */
function gate() {
  let open;
  const p = new Promise((r) => (open = r));
  p.open = open;
  return p;
}

/* A store on the manual clock, at T0. */
async function store(url, ns) {
  const a = await bitt.openAsync(url(ns));
  await a.clock.setManual(T0);
  return a;
}

/* The worker's 'error' events, kept (none expected unless a test says so). */
function errorsOf(w) {
  const seen = [];
  w.on('error', (e) => seen.push(e));
  return seen;
}

test('options: unknown names, bad values and wrong types are refused, naming them', GUARD, async () => {
  const a = await bitt.openAsync('memory:');
  const h = async () => {};
  const mk = (o) => () => new bitt.Worker(a, 't', h, o);
  assert.throws(mk({ concurency: 2 }), { name: 'TypeError', message: /Worker: unknown option 'concurency' \(options: concurrency, prefetch, lease, heartbeat, wait\)/ });
  assert.throws(mk({ concurrency: 0 }), (e) => e instanceof bitt.InvalidArgument && /concurrency: 0 is not a positive integer/.test(e.message));
  assert.throws(mk({ concurrency: -2 }), (e) => e instanceof bitt.InvalidArgument && /concurrency/.test(e.message));
  assert.throws(mk({ concurrency: 1.5 }), { name: 'TypeError', message: /concurrency: number 1.5 is not an integer/ });
  assert.throws(mk({ prefetch: -1 }), (e) => e instanceof bitt.InvalidArgument && /prefetch: -1 is negative/.test(e.message));
  assert.throws(mk({ prefetch: '2' }), { name: 'TypeError', message: /prefetch: string is not an integer/ });
  assert.throws(mk({ lease: 0 }), (e) => e instanceof bitt.InvalidArgument && /lease: 0 ms is not positive/.test(e.message));
  assert.throws(mk({ heartbeat: -5 }), (e) => e instanceof bitt.InvalidArgument && /heartbeat/.test(e.message));
  assert.throws(mk({ wait: 0 }), (e) => e instanceof bitt.InvalidArgument && /wait: 0 ms is not positive/.test(e.message));
  assert.throws(mk({ lease: new Date() }), { name: 'TypeError', message: /lease: Date is not a number of milliseconds/ });
  assert.throws(mk('x'), { name: 'TypeError', message: /Worker: options: string is not an object/ });
  assert.throws(() => new bitt.Worker(a, 't', 'h'), { name: 'TypeError', message: /handler: string is not a function/ });
  const s = bitt.open('memory:');
  assert.throws(() => new bitt.Worker(s, 't', h), { name: 'TypeError', message: /store: Store is not an AsyncStore \(a Worker runs on bitt.openAsync\(\)'s store\)/ });
  s.close();
  assert.throws(() => new bitt.Snooze(-1), (e) => e instanceof bitt.InvalidArgument && /delayMs: -1 is negative/.test(e.message));
  const w = new bitt.Worker(a, 't', h);
  assert.throws(() => w.stop({ deadline: 1 }), { name: 'TypeError', message: /worker.stop: unknown option 'deadline' \(options: timeout\)/ });
  assert.throws(() => w.stop({ timeout: -1 }), (e) => e instanceof bitt.InvalidArgument && /timeout/.test(e.message));
  assert.deepEqual(await w.stop(), { claimed: 0, completed: 0, failed: 0, snoozed: 0, stalled: 0, released: 0, running: 0 });
  await a.close();
});

test('a bad topic: the worker reports the core\'s error and stops', GUARD, async () => {
  const a = await bitt.openAsync('memory:');
  const w = new bitt.Worker(a, '', async () => {});
  const seen = errorsOf(w);
  await until(() => seen.length === 1, 'the error event');
  assert.ok(seen[0] instanceof bitt.InvalidArgument, String(seen[0]));
  assert.equal((await w.stop()).claimed, 0);
  await a.close();
});

for (const [backend, url] of URLS) {
  test(`${backend}: a handler that returns: acked, 'completed' with its result`, GUARD, async () => {
    const a = await store(url, 'ack');
    for (let i = 0; i < 5; i++) await a.queue.enqueue('ack', { i });
    const done = [];
    const seen = [];
    const w = new bitt.Worker(a, 'ack', async (m, { signal }) => {
      assert.ok(signal instanceof AbortSignal && !signal.aborted);
      seen.push(m.value.i);
      return m.value.i * 10;
    }, { concurrency: 2, wait: 100 });
    const errs = errorsOf(w);
    w.on('completed', (m, r) => done.push([m.value.i, r]));
    await until(() => done.length === 5, 'five completed');
    const c = await w.stop();
    assert.deepEqual([c.claimed, c.completed, c.failed, c.running], [5, 5, 0, 0]);
    assert.deepEqual(done.sort((x, y) => x[0] - y[0]), [[0, 0], [1, 10], [2, 20], [3, 30], [4, 40]]);
    const st = await a.queue.stats('ack');
    assert.deepEqual([st.pending, st.delayed, st.processing, st.dead], [0, 0, 0, 0]);
    assert.deepEqual(errs, []);
    await a.close();
  });

  test(`${backend}: a throw: nacked with its text and the store's backoff; dead after the last attempt`, GUARD, async () => {
    const a = await store(url, 'nack');
    const id = await a.queue.enqueue('nack', 'job', { maxAttempts: 2 });
    const tries = [];
    const failed = [];
    const w = new bitt.Worker(a, 'nack', (m) => {
      tries.push([m.attempts, m.lastError]);
      throw new Error(`boom ${m.attempts}`); // a synchronous throw too
    }, { wait: 100 });
    const errs = errorsOf(w);
    w.on('failed', (m, e) => failed.push([m.id, e.message]));
    await until(() => failed.length === 1, 'the first failure');
    const st = await a.queue.stats('nack');
    assert.deepEqual([st.delayed, st.processing], [1, 0], 'retried after the backoff, not at once');
    await a.clock.advance(400_000); // past any backoff of the default exp:1000:300000
    await until(() => failed.length === 2, 'the second failure');
    await until(async () => (await a.queue.stats('nack')).dead === 1, 'the dead letter');
    assert.deepEqual(tries, [[1, null], [2, 'boom 1']]);
    assert.deepEqual(failed, [[id, 'boom 1'], [id, 'boom 2']]);
    const [dead] = await a.queue.deadList('nack');
    assert.deepEqual([dead.id, dead.attempts, dead.lastError], [id, 2, 'boom 2']);
    const c = await w.stop();
    assert.deepEqual([c.claimed, c.completed, c.failed], [2, 0, 2]);
    assert.deepEqual(errs, []);
    await a.close();
  });

  test(`${backend}: Snooze thrown or returned gives the message back, no attempt used`, GUARD, async () => {
    const a = await store(url, 'snooze');
    await a.queue.enqueue('snooze', 'job', { maxAttempts: 1 });
    const tries = [];
    const done = gate();
    const w = new bitt.Worker(a, 'snooze', (m) => {
      tries.push(m.attempts);
      if (tries.length === 1) throw new bitt.Snooze(5000);
      if (tries.length === 2) return new bitt.Snooze(); // at once
      done.open();
      return 'ok';
    }, { wait: 100 });
    const errs = errorsOf(w);
    await until(() => w.counters.snoozed === 1, 'the first snooze');
    await until(async () => (await a.queue.stats('snooze')).delayed === 1, 'delayed by 5 s');
    await a.clock.advance(5000);
    await done;
    await until(() => w.counters.completed === 1, 'completed');
    // maxAttempts 1: had a snooze used an attempt, the third delivery would not have come.
    assert.deepEqual(tries, [1, 1, 1]);
    const c = await w.stop();
    assert.deepEqual([c.claimed, c.snoozed, c.completed, c.failed], [3, 2, 1, 0]);
    assert.deepEqual(errs, []);
    await a.close();
  });

  test(`${backend}: concurrency N: N handlers at once, never N + 1`, GUARD, async () => {
    const a = await store(url, 'conc');
    for (let i = 0; i < 8; i++) await a.queue.enqueue('conc', i);
    const gates = [];
    let now = 0;
    let most = 0;
    const w = new bitt.Worker(a, 'conc', async () => {
      now++;
      most = Math.max(most, now);
      const g = gate();
      gates.push(g);
      await g;
      now--;
    }, { concurrency: 3, lease: LONG, wait: 100 });
    const errs = errorsOf(w);
    await until(() => gates.length === 3, 'three handlers running');
    assert.equal(w.counters.running, 3);
    assert.equal(w.counters.claimed, 3, 'no prefetch: nothing claimed beyond the handlers');
    assert.equal((await a.queue.stats('conc')).processing, 3);
    for (let k = 0; k < 8; k++) {
      gates[k].open();
      await until(() => w.counters.completed === k + 1, `completion ${k + 1}`);
      await until(() => gates.length === Math.min(8, k + 4), 'the next handler');
      assert.ok(w.counters.running <= 3);
    }
    assert.equal(most, 3);
    const c = await w.stop();
    assert.deepEqual([c.claimed, c.completed, c.running], [8, 8, 0]);
    assert.deepEqual(errs, []);
    await a.close();
  });

  test(`${backend}: prefetch P holds at most N + P; stop hands the prefetched back unseen and lets in-flight finish`,
    GUARD, async () => {
      const a = await store(url, 'pre');
      for (let i = 0; i < 10; i++) await a.queue.enqueue('pre', i);
      const gates = [];
      const started = [];
      const w = new bitt.Worker(a, 'pre', async (m) => {
        started.push(m.value);
        const g = gate();
        gates.push(g);
        return g;
      }, { concurrency: 2, prefetch: 3, lease: LONG, wait: 100 });
      const errs = errorsOf(w);
      await until(() => gates.length === 2 && w.counters.claimed === 5, 'two running, three prefetched');
      assert.equal((await a.queue.stats('pre')).processing, 5);
      assert.equal(w.counters.running, 2);
      const stopping = w.stop();
      // The prefetched ones go back while the two handlers still run.
      await until(async () => (await a.queue.stats('pre')).pending === 8, 'the prefetched given back');
      assert.equal((await a.queue.stats('pre')).processing, 2);
      gates[0].open('a');
      gates[1].open('b');
      const c = await stopping;
      assert.deepEqual([c.claimed, c.completed, c.released, c.running], [5, 2, 3, 0]);
      assert.equal(started.length, 2);
      // None of the eight left used an attempt: each comes at its first.
      const rest = await a.queue.dequeue('pre', { limit: 10, lease: LONG });
      assert.equal(rest.length, 8);
      assert.deepEqual(rest.map((m) => m.attempts), Array(8).fill(1));
      assert.ok(!rest.some((m) => started.includes(m.value)));
      assert.deepEqual(errs, []);
      await a.close();
    });

  test(`${backend}: a handler running past its lease keeps it: the heartbeat extends it`, GUARD, async () => {
    const a = await store(url, 'beat');
    await a.queue.enqueue('beat', 'long job');
    const extend = a.queue.extend.bind(a.queue);
    let phase = 0;
    const renewed = [0, 0, 0]; // extends that succeeded, by the phase they started in
    a.queue.extend = (m, lease) => {
      const p = phase;
      return extend(m, lease).then((v) => {
        renewed[p]++;
        return v;
      });
    };
    const g = gate();
    let running = false;
    const w = new bitt.Worker(a, 'beat', async () => {
      running = true;
      return g;
    }, { lease: 1000, heartbeat: 10, wait: 100 });
    const errs = errorsOf(w);
    await until(() => running, 'the handler');
    await a.clock.advance(600);
    phase = 1;
    await until(() => renewed[1] > 0, 'a renewal after 600 ms');
    await a.clock.advance(600); // 1200 ms since the claim: past the first lease, within the renewed one
    phase = 2;
    await until(() => renewed[2] > 0, 'a renewal after 1200 ms');
    assert.deepEqual(await a.queue.dequeue('beat', { lease: LONG }), [], 'still leased to the worker');
    g.open('done');
    await until(() => w.counters.completed === 1, 'completed');
    const c = await w.stop();
    assert.deepEqual([c.completed, c.stalled, c.failed], [1, 0, 0]);
    assert.equal((await a.queue.stats('beat')).processing, 0);
    assert.deepEqual(errs, []);
    await a.close();
  });

  test(`${backend}: a lease lost (taken elsewhere): stalled, the signal aborted, nothing acked`, GUARD, async () => {
    const a = await store(url, 'stall');
    const id = await a.queue.enqueue('stall', 'job');
    let signal = null;
    let returned = false;
    // The handler is held until the test has taken the message: a handler
    // that returned at the abort would free the worker to claim it again
    // before the test's dequeue does.
    const taken = gate();
    const w = new bitt.Worker(a, 'stall', async (m, ctx) => {
      signal = ctx.signal;
      await new Promise((r) => ctx.signal.addEventListener('abort', r, { once: true }));
      await taken;
      returned = true;
      return 'late';
    }, { lease: 1000, heartbeat: 10, wait: 100 });
    const errs = errorsOf(w);
    const stalled = [];
    w.on('stalled', (m) => stalled.push(m.id));
    await until(() => signal !== null, 'the handler');
    await a.clock.advance(2000); // past the lease: every renewal from now on is refused
    const [stolen] = await a.queue.dequeue('stall', { lease: LONG });
    taken.open();
    assert.deepEqual([stolen.id, stolen.attempts], [id, 2]);
    await until(() => stalled.length === 1, 'the stall');
    assert.ok(signal.aborted);
    assert.ok(signal.reason instanceof bitt.StaleToken, String(signal.reason));
    await until(() => returned && w.counters.running === 0, 'the handler returned');
    await a.queue.ack(stolen); // the worker acked nothing: the thief's delivery is intact
    const c = await w.stop();
    assert.deepEqual([c.claimed, c.stalled, c.completed, c.failed], [1, 1, 0, 0]);
    assert.deepEqual(stalled, [id]);
    assert.deepEqual(errs, []);
    await a.close();
  });

  test(`${backend}: stop's deadline hands back a handler still running; its late result is ignored`, GUARD, async () => {
    const a = await store(url, 'deadline');
    await a.queue.enqueue('deadline', 'job');
    const g = gate();
    let signal = null;
    let returned = false;
    const w = new bitt.Worker(a, 'deadline', async (m, ctx) => {
      signal = ctx.signal;
      await g; // ignores its signal
      returned = true;
      throw new Error('too late to count');
    }, { lease: LONG, wait: 100 });
    const errs = errorsOf(w);
    await until(() => signal !== null, 'the handler');
    const c = await w.stop({ timeout: 1 });
    assert.deepEqual([c.claimed, c.released, c.completed, c.failed, c.running], [1, 1, 0, 0, 0]);
    assert.ok(signal.aborted);
    // Given back unseen: the next delivery is at its first attempt.
    const [again] = await a.queue.dequeue('deadline', { lease: LONG });
    assert.deepEqual([again.attempts, again.lastError], [1, null]);
    g.open();
    await until(() => returned, 'the late handler');
    await new Promise((r) => setImmediate(r));
    await a.queue.ack(again);
    assert.deepEqual(w.counters, { claimed: 1, completed: 0, failed: 0, snoozed: 0, stalled: 0, released: 1, running: 0 });
    assert.deepEqual(errs, []);
    await a.close();
  });
}

test('hooks that throw: reported through \'error\', the loop goes on', GUARD, async () => {
  const a = await store(URLS[0][1], 'hooks');
  for (let i = 0; i < 4; i++) await a.queue.enqueue('hooks', i);
  const w = new bitt.Worker(a, 'hooks', (m) => {
    if (m.value % 2) throw new Error(`odd ${m.value}`);
    return m.value;
  }, { wait: 100 });
  const errs = [];
  w.on('error', (e) => errs.push(e.message));
  w.on('completed', (m) => {
    throw new Error(`completed hook ${m.value}`);
  });
  w.on('failed', (m) => {
    throw new Error(`failed hook ${m.value}`);
  });
  await until(() => w.counters.completed === 2 && w.counters.failed === 2, 'all four handled');
  assert.deepEqual(errs.sort(), ['completed hook 0', 'completed hook 2', 'failed hook 1', 'failed hook 3']);
  // An 'error' listener that throws, or none at all: a process warning instead.
  const warned = [];
  const onWarning = (wn) => warned.push(wn);
  process.on('warning', onWarning);
  w.removeAllListeners('error');
  w.on('error', () => {
    throw new Error('error hook');
  });
  await a.queue.enqueue('hooks', 4);
  await until(() => warned.some((x) => /error hook/.test(x.message)), 'the warning');
  process.off('warning', onWarning);
  assert.equal(warned[0].name, 'BittWorkerWarning');
  const c = await w.stop();
  assert.deepEqual([c.completed, c.failed], [3, 2]);
  await a.close();
});

test('store errors go to \'error\': a failed dequeue is tried again, a failed ack leaves the message leased', GUARD,
  async () => {
    const a = await store(URLS[0][1], 'errors');
    const [dequeue, ack] = [a.queue.dequeue.bind(a.queue), a.queue.ack.bind(a.queue)];
    let dequeues = 0;
    a.queue.dequeue = (t, o) => (++dequeues === 1 ? Promise.reject(new bitt.BackendError(-7, 'connection lost')) : dequeue(t, o));
    a.queue.ack = (m) => (m.value === 'first' ? Promise.reject(new bitt.BusyError(-8, 'busy')) : ack(m));
    await a.queue.enqueue('errors', 'first');
    const w = new bitt.Worker(a, 'errors', () => 'ok', { lease: LONG, wait: 100 });
    const seen = [];
    w.on('error', (e, m) => seen.push([e.message, m ? m.value : null]));
    await until(() => seen.length === 2, 'two errors');
    assert.deepEqual(seen, [['connection lost', null], ['busy', 'first']]);
    assert.equal((await a.queue.stats('errors')).processing, 1, 'not acked: it comes back when its lease ends');
    await a.queue.enqueue('errors', 'second');
    await until(() => w.counters.completed === 1, 'the second completed');
    const c = await w.stop();
    assert.deepEqual([c.claimed, c.completed, c.failed], [2, 1, 0]);
    await a.close();
  });

test('the store\'s lease when none is given, renewed by the heartbeat; store.close() stops the worker', GUARD,
  async () => {
    const file = `${tmp}/default-lease.db`;
    const a = await bitt.openAsync(`sqlite:${file}?queue_lease=900`);
    await a.clock.setManual(T0);
    await a.queue.enqueue('d', 'job');
    const extend = a.queue.extend.bind(a.queue);
    const leases = [];
    a.queue.extend = (m, lease) => {
      leases.push(lease);
      return extend(m, lease);
    };
    let signal = null;
    const w = new bitt.Worker(a, 'd', async (m, ctx) => {
      signal = ctx.signal;
      return new Promise(() => {}); // never ends
    }, { heartbeat: 10, wait: 100 });
    const errs = errorsOf(w);
    await until(() => leases.length > 0, 'a renewal');
    assert.equal(leases[0], 900);
    await a.close(); // the worker stops at once: the running delivery given back
    assert.ok(signal.aborted);
    assert.deepEqual(w.counters, { claimed: 1, completed: 0, failed: 0, snoozed: 0, stalled: 0, released: 1, running: 0 });
    assert.deepEqual(errs, []);
    const b = await bitt.openAsync(`sqlite:${file}`);
    await b.clock.setManual(T0); // given back at T0 of the manual clock
    const [m] = await b.queue.dequeue('d', { lease: LONG });
    assert.equal(m.attempts, 1);
    await b.close();
  });
