'use strict';
// queue.consume's acks: msg.ack() commits in groups (one ackMany for the acks
// asked for in one turn or while another call of the consumer is in flight),
// settles each Promise only once its call returned, rejects a stale token for
// that message alone (StaleToken, as a single ack), and close() or a broken
// loop leaves no ack unsettled. The grouping rules are checked on a stand-in
// store whose calls settle when the test says (deterministic, no timing);
// the rest on real stores (memory, SQLite, and Redis when set).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const bitt = require('../../bindings/node');
const { AckGroup } = require('../../bindings/node/lib/consumer');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bitt-consume-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const turn = () => new Promise((r) => setImmediate(r));
// An ack's Promise kept for later: its rejection is read later (not unhandled).
const kept = (p) => {
  p.catch(() => {});
  return p;
};

/* A store whose ack / ackMany calls are recorded and settled by hand. */
function standIn() {
  const calls = [];
  const call = (name, arg) => new Promise((resolve, reject) => calls.push({ name, arg, resolve, reject }));
  return { calls, queue: { ack: (m) => call('ack', m), ackMany: (_t, ms) => call('ackMany', ms) } };
}

/* Whether p has settled yet: 'pending', 'resolved' or 'rejected'. */
async function state(p) {
  const mark = {};
  try {
    return (await Promise.race([p, Promise.resolve(mark)])) === mark ? 'pending' : 'resolved';
  } catch {
    return 'rejected';
  }
}

test('acks in one turn go in one ackMany; acks during a call wait for the next', async () => {
  const s = standIn();
  const g = new AckGroup(s, 't');
  const m = (id) => ({ id: BigInt(id), topic: 't', token: `k${id}` });
  const first = [g.ack(m(1)), g.ack(m(2)), g.ack(m(3))].map(kept);
  assert.equal(s.calls.length, 0, 'sent before the end of the turn');
  await turn();
  assert.deepEqual(s.calls.map((c) => [c.name, c.arg.map((x) => x.id)]), [['ackMany', [1n, 2n, 3n]]]);
  // Asked for while that call is in flight: they wait, and nothing settles early.
  const second = [g.ack(m(4)), g.ack(m(5))].map(kept);
  await turn();
  assert.equal(s.calls.length, 1);
  for (const p of [...first, ...second]) assert.equal(await state(p), 'pending');
  s.calls[0].resolve([true, false, true]);
  await turn();
  assert.deepEqual(await Promise.all([state(first[0]), state(first[1]), state(first[2])]), ['resolved', 'rejected', 'resolved']);
  await assert.rejects(first[1], (e) => e instanceof bitt.StaleToken && e.code === 'ERR_BITT_TOKEN' && e.status === -14 && /message 2\b/.test(e.message));
  assert.deepEqual(s.calls.map((c) => c.name), ['ackMany', 'ackMany']);
  assert.deepEqual(s.calls[1].arg.map((x) => x.id), [4n, 5n]);
  // A failed call rejects each of its acks with its error; the group goes on.
  const boom = new bitt.BackendError(-7, 'connection lost');
  s.calls[1].reject(boom);
  for (const p of second) await assert.rejects(p, (e) => e === boom);
  // One ack alone is the single call, its error as it comes.
  const alone = kept(g.ack(m(6)));
  await turn();
  assert.deepEqual(s.calls.map((c) => c.name), ['ackMany', 'ackMany', 'ack']);
  s.calls[2].reject(new bitt.StaleToken(-14, 'stale'));
  await assert.rejects(alone, bitt.StaleToken);
  // drain() settles once nothing is left, never rejecting.
  await g.drain();
  assert.equal(g.pending, 0);
});

test('flush() sends at once; more than 1000 acks split into calls of 1000', async () => {
  const s = standIn();
  const g = new AckGroup(s, 't');
  const acks = Array.from({ length: 1001 }, (_, i) => g.ack({ id: BigInt(i), topic: 't', token: 'k' }));
  g.flush();
  assert.deepEqual(s.calls.map((c) => c.arg.length), [1000]);
  s.calls[0].resolve(Array(1000).fill(true));
  await turn();
  assert.deepEqual(s.calls.map((c) => c.name), ['ackMany', 'ack']);
  s.calls[1].resolve();
  await Promise.all(acks);
});

function wanted(b) {
  const lst = (process.env.BITT_TEST_BACKENDS || '').split(',').filter(Boolean);
  return !lst.length || lst.includes(b);
}

const urls = [['memory', () => 'memory:'], ['sqlite', () => `sqlite:${tmp}/c.db`]];
if (wanted('redis') && process.env.BITT_TEST_REDIS_URL) {
  const base = process.env.BITT_TEST_REDIS_URL;
  urls.push(['redis', () => `${base}${base.includes('?') ? '&' : '?'}prefix=node_consume_${process.pid}`]);
}

for (const [backend, url] of urls) {
  test(`${backend}: msg.ack() groups a batch; a stale token rejects only its message`, async () => {
    const a = await bitt.openAsync(url());
    const topic = `g-${backend}`;
    const sizes = []; // of each ack call the consumer made: ackMany's length, 1 for a single ack
    const [one, many] = [a.queue.ack.bind(a.queue), a.queue.ackMany.bind(a.queue)];
    a.queue.ack = (m) => { sizes.push(1); return one(m); };
    a.queue.ackMany = (t, ds) => { sizes.push(ds.length); return many(t, ds); };
    for (let i = 0; i < 8; i++) await a.queue.enqueue(topic, { i });
    const acks = [];
    const got = [];
    for await (const m of a.queue.consume(topic, { prefetch: 4, lease: 60000, wait: 0 })) {
      got.push(m);
      if (got.length === 4) {
        await one(got[1]); // acked already: its token is now stale
        acks.push(...got.map((x) => kept(x.ack()))); // one turn: one call
      } else if (got.length > 4) {
        acks.push(kept(m.ack()));
      }
      if (got.length === 8) break;
    }
    const res = await Promise.allSettled(acks);
    assert.deepEqual(res.map((r) => r.status), ['fulfilled', 'rejected', ...Array(6).fill('fulfilled')]);
    // The same class a single ack of a stale token gives.
    const single = await one(got[1]).catch((e) => e);
    assert.ok(single instanceof bitt.StaleToken);
    assert.equal(res[1].reason.constructor, single.constructor);
    assert.equal(res[1].reason.code, single.code);
    assert.equal(res[1].reason.status, single.status);
    // Grouped: fewer calls than acks.
    assert.equal(sizes.reduce((x, y) => x + y, 0), 8);
    assert.ok(sizes.length < 8, `acks went in ${sizes.length} calls`);
    assert.ok(sizes[0] === 4, `the batch's acks went in calls of ${sizes}`);
    const st = await a.queue.stats(topic);
    assert.deepEqual([st.pending, st.processing], [0, 0]);
    await a.close();
  });
}

test('break and close with acks pending: every ack commits before close() returns', async () => {
  const url = `sqlite:${tmp}/close.db`;
  const a = await bitt.openAsync(url);
  for (let i = 0; i < 5; i++) await a.queue.enqueue('c', { i });
  const acks = [];
  for await (const m of a.queue.consume('c', { prefetch: 5, lease: 60000, wait: 0 })) {
    acks.push(m.ack());
    if (acks.length === 3) break; // two prefetched, never handed out: given back
  }
  await a.close();
  for (const p of acks) assert.equal(await state(p), 'resolved');
  const b = await bitt.openAsync(url);
  const st = await b.queue.stats('c');
  assert.deepEqual([st.pending, st.processing], [2, 0]);
  await b.close();
});

test('close() while a consume loop waits: the loop ends, its acks committed', async () => {
  const a = await bitt.openAsync('memory:');
  await a.queue.enqueue('w', { i: 0 });
  const acks = [];
  const loop = (async () => {
    for await (const m of a.queue.consume('w', { lease: 60000, wait: 200 })) acks.push(m.ack());
  })();
  while (acks.length === 0) await turn();
  await a.close();
  await loop;
  assert.equal(await state(acks[0]), 'resolved');
  // After close, an ack rejects as any call on a closed store.
  await assert.rejects(a.queue.ack({ topic: 'w', id: 1n, token: 'x' }), bitt.UsageError);
});

test('msg.nack() and msg.extend() act on the message; they are not enumerable', async () => {
  const a = await bitt.openAsync('memory:');
  await a.clock.setManual(new Date(1_000_000));
  await a.queue.enqueue('n', { i: 0 });
  for await (const m of a.queue.consume('n', { lease: 1000, wait: 0 })) {
    assert.deepEqual(Object.keys(m).includes('ack'), false);
    await m.extend(5000);
    await a.clock.advance(2000); // past the first lease, within the extended one
    await m.nack('retry later', { delay: 0 });
    break;
  }
  const [again] = await a.queue.dequeue('n', { lease: 1000 });
  assert.equal(again.lastError, 'retry later');
  assert.equal(again.ack, undefined); // a plain dequeue's message has no ack()
  await a.queue.ack(again);
  await a.close();
});
