'use strict';
// Cancellation (issue 22 defects 2 and 6): every call that may wait takes
// {signal}; an aborted signal rejects at once; an abort during the wait fires
// the call's cancel token, so the core's wait ends (BITT_ECANCELED) and
// leases nothing; the promise rejects with an AbortError (name, code 'ABORT_ERR',
// cause the signal's reason, status -16). consume() and subscriptions are async
// iterables that end at once on break/return(), even while idle, and give
// back the prefetched messages not handed out. Every wait here is a minute
// long: only the cancellation ends it (the test's timeout is the hang guard).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const bitt = require('../../bindings/node');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bitt-cancel-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const LONG = 60_000;
const GUARD = { timeout: 30_000 };
const turn = () => new Promise((r) => setImmediate(r));

function wanted(b) {
  const lst = (process.env.BITT_TEST_BACKENDS || '').split(',').filter(Boolean);
  return !lst.length || lst.includes(b);
}

const server = (env, opt) => (ns) => {
  const base = process.env[env];
  return `${base}${base.includes('?') ? '&' : '?'}${opt}=node_cancel_${ns}_${process.pid}`;
};
const URLS = [['memory', () => 'memory:'], ['sqlite', (ns) => `sqlite:${tmp}/${ns}.db`]];
if (wanted('postgres') && process.env.BITT_TEST_POSTGRES_URL) URLS.push(['postgres', server('BITT_TEST_POSTGRES_URL', 'schema')]);
if (wanted('redis') && process.env.BITT_TEST_REDIS_URL) URLS.push(['redis', server('BITT_TEST_REDIS_URL', 'prefix')]);

/* The AbortError of ERRORS.md, carrying reason. */
function isAbort(reason) {
  return (e) => e instanceof bitt.AbortError && e instanceof bitt.BittError && e.name === 'AbortError' &&
    e.code === 'ABORT_ERR' && e.status === -16 && e.cause === reason && e.message.length > 0;
}

/* Nothing leased: no message in processing, and a message enqueued now is
 * the next dequeue's, at its first attempt. */
async function nothingLeased(a, topic) {
  assert.equal((await a.queue.stats(topic)).processing, 0);
  const id = await a.queue.enqueue(topic, 'after');
  const got = await a.queue.dequeue(topic, { lease: LONG });
  assert.deepEqual(got.map((m) => [m.id, m.attempts]), [[id, 1]]);
  await a.queue.ack(got[0]);
}

test('an aborted signal: every waiting call rejects (or throws) at once with AbortError', GUARD, async () => {
  const reason = new Error('already');
  const signal = AbortSignal.abort(reason);
  const s = bitt.open('memory:');
  const a = await bitt.openAsync('memory:');
  assert.throws(() => s.queue.dequeue('t', { wait: LONG, signal }), isAbort(reason));
  assert.throws(() => s.queue.dequeue('t', { signal }), isAbort(reason));
  const sub = s.pubsub.subscribe('c');
  assert.throws(() => sub.next(LONG, { signal }), isAbort(reason));
  sub.close();
  await assert.rejects(a.queue.dequeue('t', { wait: LONG, signal }), isAbort(reason));
  const asub = a.pubsub.subscribe('c');
  await asub.ready;
  await assert.rejects(asub.next(LONG, { signal }), isAbort(reason));
  await a.queue.enqueue('t', 'x');
  await assert.rejects(a.queue.consume('t', { wait: LONG, signal }).next(), (e) => e.name === 'AbortError' && e.cause === reason);
  // The core checks the arguments first: a bad topic is still InvalidArgument.
  await assert.rejects(a.queue.dequeue('', { signal }), bitt.InvalidArgument);
  await nothingLeased(a, 't2');
  assert.equal((await a.queue.stats('t')).pending, 1);
  s.close();
  await a.close();
});

for (const [backend, url] of URLS) {
  test(`${backend}: an abort during a dequeue's wait ends it; nothing is leased afterwards`, GUARD, async () => {
    const a = await bitt.openAsync(url('dq'));
    await a.queue.dequeue('warm', {}); // connection and schema ready
    const ac = new AbortController();
    const reason = new Error('shutting down');
    const waiting = a.queue.dequeue('q', { wait: LONG, lease: LONG, signal: ac.signal });
    await turn();
    ac.abort(reason);
    await assert.rejects(waiting, isAbort(reason));
    await nothingLeased(a, 'q');
    await a.close();
  });

  test(`${backend}: an abort as a dequeue returns still rejects, and what it got is given back`, GUARD, async () => {
    const a = await bitt.openAsync(url('late'));
    for (let i = 0; i < 3; i++) {
      await a.queue.enqueue('late', i);
      const ac = new AbortController();
      const p = a.queue.dequeue('late', { lease: LONG, signal: ac.signal });
      ac.abort(`late ${i}`); // before or after the core's claim: the same outcome
      await assert.rejects(p, isAbort(`late ${i}`));
      const [m] = await a.queue.dequeue('late', { lease: LONG });
      assert.deepEqual([m.value, m.attempts], [i, 1]);
      await a.queue.ack(m);
    }
    const sub = a.pubsub.subscribe('late');
    await sub.ready;
    await a.pubsub.publish('late', 'kept');
    const ac = new AbortController();
    const p = sub.next(LONG, { signal: ac.signal });
    ac.abort('gone');
    await assert.rejects(p, isAbort('gone'));
    assert.equal((await sub.next(LONG)).payload.toString(), 'kept');
    await a.close();
  });

  test(`${backend}: a subscription's next ends on abort, and loses nothing`, GUARD, async () => {
    const a = await bitt.openAsync(url('sub'));
    const sub = a.pubsub.subscribe('news');
    await sub.ready;
    const ac = new AbortController();
    const waiting = sub.next(LONG, { signal: ac.signal });
    await turn();
    ac.abort('enough');
    await assert.rejects(waiting, isAbort('enough'));
    await a.pubsub.publish('news', 'after');
    const m = await sub.next(LONG);
    assert.equal(m.payload.toString(), 'after');
    await sub.close();
    await a.close();
  });

  test(`${backend}: consume ends at once on return() while idle, and on break gives back what it prefetched`, GUARD,
    async () => {
      const a = await bitt.openAsync(url('consume'));
      await a.queue.dequeue('warm', {});
      const idle = a.queue.consume('idle', { wait: LONG, lease: LONG });
      const pending = idle.next(); // waits on the empty topic
      await turn();
      assert.deepEqual(await idle.return(), { done: true, value: undefined });
      assert.deepEqual(await pending, { done: true, value: undefined });
      assert.deepEqual(await idle.next(), { done: true, value: undefined });
      await nothingLeased(a, 'idle');

      for (let i = 0; i < 5; i++) await a.queue.enqueue('pf', i);
      const seen = [];
      for await (const m of a.queue.consume('pf', { prefetch: 5, lease: LONG, wait: LONG })) {
        seen.push(m.value);
        await m.ack();
        if (seen.length === 2) break;
      }
      assert.deepEqual(seen, [0, 1]);
      const st = await a.queue.stats('pf');
      assert.deepEqual([st.pending, st.processing], [3, 0]);
      const again = await a.queue.dequeue('pf', { limit: 5, lease: LONG });
      // (In any order: given back at the same time.)
      assert.deepEqual(again.map((m) => [m.value, m.attempts]).sort(), [[2, 1], [3, 1], [4, 1]]);
      await a.queue.ackMany('pf', again);
      await a.close();
    });

  test(`${backend}: consume's signal ends the loop (AbortError) and nothing stays leased`, GUARD, async () => {
    const a = await bitt.openAsync(url('consig'));
    await a.queue.dequeue('warm', {});
    const ac = new AbortController();
    await a.queue.enqueue('s', 'first');
    await a.queue.enqueue('s', 'second');
    const got = [];
    await assert.rejects((async () => {
      for await (const m of a.queue.consume('s', { prefetch: 2, wait: LONG, lease: LONG, signal: ac.signal })) {
        got.push(m.value);
        await m.ack();
        ac.abort('stop'); // 'second' is prefetched, not handed out
      }
    })(), isAbort('stop'));
    assert.deepEqual(got, ['first']);
    const [back] = await a.queue.dequeue('s', { lease: LONG });
    assert.deepEqual([back.value, back.attempts], ['second', 1]);
    await a.queue.ack(back);
    // An abort while the loop waits on an empty topic ends it too.
    const ac2 = new AbortController();
    const loop = (async () => {
      for await (const m of a.queue.consume('s', { wait: LONG, signal: ac2.signal })) assert.fail(`got ${m.value}`);
    })();
    await turn();
    ac2.abort('idle stop');
    await assert.rejects(loop, isAbort('idle stop'));
    await nothingLeased(a, 's');
    await a.close();
  });
}

test('subscriptions iterate with for await; break and return() end them at once, even idle', GUARD, async () => {
  const a = await bitt.openAsync('memory:');
  const sub = a.pubsub.subscribe('c');
  await sub.ready;
  await a.pubsub.publish('c', 'one');
  await a.pubsub.publish('c', 'two');
  const got = [];
  for await (const m of sub) {
    got.push(m.payload.toString());
    if (got.length === 2) break; // closes the subscription
  }
  assert.deepEqual(got, ['one', 'two']);
  await assert.rejects(sub.next(), bitt.UsageError);
  // An idle iteration: return() ends the wait at once.
  const idle = a.pubsub.subscribe('c');
  await idle.ready;
  const it = idle[Symbol.asyncIterator]();
  const pending = it.next();
  await turn();
  await it.return();
  assert.deepEqual(await pending, { done: true, value: undefined });
  // close() ends a next() in flight at once.
  const s3 = a.pubsub.subscribe('c');
  await s3.ready;
  const waiting = s3.next(LONG);
  await turn();
  await s3.close();
  await assert.rejects(waiting, bitt.UsageError);
  await a.close();
});

test('a signal given to subscribe() ends its iteration with AbortError', GUARD, async () => {
  const a = await bitt.openAsync('memory:');
  const ac = new AbortController();
  const sub = a.pubsub.subscribe('c', { signal: ac.signal });
  await sub.ready;
  const loop = (async () => {
    for await (const m of sub) assert.fail(`got ${m.payload}`);
  })();
  await turn();
  ac.abort('bye');
  await assert.rejects(loop, isAbort('bye'));
  // Already aborted: closed from the start.
  const early = a.pubsub.subscribe('c', { signal: AbortSignal.abort('early') });
  await assert.rejects((async () => {
    for await (const m of early) assert.fail(`got ${m.payload}`);
  })(), isAbort('early'));
  // The sync one closes too.
  const s = bitt.open('memory:');
  assert.throws(() => s.pubsub.subscribe('c', { signal: AbortSignal.abort() }).next(), bitt.UsageError);
  const ac2 = new AbortController();
  const ssub = s.pubsub.subscribe('c', { signal: ac2.signal });
  ac2.abort();
  await turn();
  assert.throws(() => ssub.next(), bitt.UsageError);
  s.close();
  await a.close();
});

test('store.close() ends an idle consume loop and an idle subscription at once', GUARD, async () => {
  const a = await bitt.openAsync('memory:');
  const sub = a.pubsub.subscribe('c');
  await sub.ready;
  const loops = [
    (async () => {
      for await (const m of a.queue.consume('idle', { wait: LONG })) assert.fail(`got ${m.value}`);
    })(),
    (async () => {
      for await (const m of sub) assert.fail(`got ${m.payload}`);
    })(),
  ];
  await turn();
  await a.close();
  await Promise.all(loops);
});

test('queue.snooze gives a delivery back unseen: no attempt used', async () => {
  for (const x of [bitt.open('memory:'), await bitt.openAsync('memory:')]) {
    await x.queue.enqueue('t', 'a', { maxAttempts: 1 });
    const [m] = await x.queue.dequeue('t', { lease: LONG });
    await x.queue.snooze('t', m.id, m.token);
    const [again] = await x.queue.dequeue('t', { lease: LONG });
    assert.deepEqual([again.id, again.attempts], [m.id, 1]);
    await x.queue.snooze('t', again.id, again.token, 5000);
    assert.equal((await x.queue.stats('t')).delayed, 1);
    await assert.rejects(async () => x.queue.snooze('t', again.id, again.token), bitt.StaleToken);
    await assert.rejects(async () => x.queue.snooze('t', again.id, 'tok', '5'), TypeError);
    await x.close();
  }
});

test('await using: a consumer and a subscription dispose of themselves', GUARD, async () => {
  const a = await bitt.openAsync('memory:');
  await a.queue.enqueue('t', 1);
  await a.queue.enqueue('t', 2);
  const c = a.queue.consume('t', { prefetch: 2, lease: LONG, wait: LONG });
  const first = await c.next();
  assert.equal(first.value.value, 1);
  await first.value.ack();
  await c[Symbol.asyncDispose]();
  assert.deepEqual(await c.next(), { done: true, value: undefined });
  assert.equal((await a.queue.stats('t')).pending, 1); // the second, given back
  const sub = a.pubsub.subscribe('c');
  await sub[Symbol.asyncDispose]();
  await assert.rejects(sub.next(), bitt.UsageError);
  await a.close();
});
