'use strict';
// Units and shapes (issue 22 defects 5 and 7): every duration is a number of
// milliseconds and every absolute time a Date, in and out, and the one is
// refused where the other is meant; the objects `using` / `await using` take
// really dispose of themselves (Symbol.dispose / Symbol.asyncDispose, Node's
// own symbols where the language has none).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const bitt = require('../../bindings/node');

const T0 = 1_000_000;
const at = (ms) => new Date(T0 + ms);

for (const [kind, make] of [['sync', () => bitt.open('memory:')], ['async', () => bitt.openAsync('memory:')]]) {
  test(`${kind}: absolute times are Dates, durations numbers of ms`, async () => {
    const x = await make();
    await x.clock.setManual(new Date(T0));
    assert.deepEqual(await x.clock.now(), new Date(T0));
    await x.clock.advance(10);
    assert.deepEqual(await x.clock.now(), at(10));

    await x.kv.set('k', 'v', { ttl: 5000 });
    assert.deepEqual((await x.kv.get('k')).expiresAt, at(5010));
    await x.kv.set('never', 'v');
    assert.equal((await x.kv.get('never')).expiresAt, null);

    await x.queue.enqueue('t', 'm', { delay: 100 });
    const st0 = await x.queue.stats('t');
    assert.deepEqual([st0.delayed, st0.oldestPendingAt], [1, null]);
    await x.clock.advance(100);
    assert.deepEqual((await x.queue.stats('t')).oldestPendingAt, at(110));
    const [m] = await x.queue.dequeue('t', { lease: 2000 });
    assert.deepEqual([m.createdAt, m.dueAt, m.failedAt], [at(10), at(2110), null]);
    await x.queue.nack(m, 'boom', { delay: 50 });

    const lease = await x.lease.acquire('l', 'me', 3000);
    assert.ok(lease instanceof bitt.Lease);
    assert.deepEqual(lease.expiresAt, at(3110));
    assert.deepEqual(await x.lease.renew('l', 'me', lease.epoch, 4000), at(4110));
    assert.deepEqual((await x.lease.get('l')).expiresAt, at(4110));

    await x.schedule.upsert('s', 60_000, 'p', { firstRunAt: at(200) });
    const sc = await x.schedule.get('s');
    assert.deepEqual([sc.interval, sc.nextRunAt, sc.occurrence], [60_000, at(200), null]);
    await x.clock.advance(100);
    assert.deepEqual((await x.schedule.claim()).occurrence, at(200));

    const seq = await x.outbox.append('o', 'e');
    assert.equal(await x.outbox.fail('o', seq, 'down', at(999)), true);
    const [ev] = await x.outbox.pending('o');
    assert.deepEqual(ev.dueAt, at(999));
    assert.equal(typeof await x.budget.take('b', { capacity: 1, refill: 1, period: 1000 }), 'number');
    assert.equal(await x.budget.take('b', { capacity: 1, refill: 1, period: 1000 }), 1000); // ms to wait

    // The one is refused where the other is meant, before the core is called.
    const refused = [
      [(y) => y.clock.setManual(T0), /^now: number is not a Date/],
      [(y) => y.schedule.upsert('s2', 1000, 'p', { firstRunAt: T0 }), /^firstRunAt: number is not a Date/],
      [(y) => y.outbox.fail('o', seq, 'x', 5), /^nextAttemptAt: number is not a Date/],
      [(y) => y.kv.set('k', 1, { ttl: new Date() }), /^ttl: Date is not a number of milliseconds/],
      [(y) => y.queue.dequeue('t', { wait: new Date() }), /^wait: Date is not a number of milliseconds/],
      [(y) => y.clock.advance(new Date()), /^ms: Date is not a number of milliseconds/],
      [(y) => y.kv.set('k', 1, { ttl: 1.5 }), /^ttl: number 1.5 is not a whole number of milliseconds/],
      [(y) => y.lease.acquire('l2', 'me', '1000'), /^ttl: string is not a number of milliseconds/],
      [(y) => y.clock.setManual(new Date(NaN)), /^now: an invalid Date is not a time/],
    ];
    for (const [f, message] of refused) await assert.rejects(async () => f(x), (e) => e instanceof TypeError && message.test(e.message));
    await x.close();
  });
}

test('sub.next(ms): the timeout is milliseconds, as every duration', async () => {
  const s = bitt.open('memory:');
  const sub = s.pubsub.subscribe('c');
  assert.equal(sub.next(1), null);
  s.pubsub.publish('c', 'x');
  assert.equal(sub.next(1).payload.toString(), 'x');
  assert.throws(() => sub.next(new Date()), /^TypeError: timeout: Date is not a number of milliseconds/);
  s.close();
});

test('a time past what a Date holds (saturated: it never comes) reads as the latest Date', () => {
  const s = bitt.open('memory:');
  s.kv.set('far', 1, { ttl: 2n ** 63n - 1n });
  assert.equal(s.kv.get('far').expiresAt.getTime(), 8.64e15);
  s.close();
});

test('Symbol.dispose / Symbol.asyncDispose are Node\'s symbols, and they dispose', async () => {
  assert.equal(Symbol.dispose ?? Symbol.for('nodejs.dispose'), Symbol.for('nodejs.dispose'));
  assert.equal(Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose'), Symbol.for('nodejs.asyncDispose'));
  const s = bitt.open('memory:');
  const tx = s.atomic().set('k', 1);
  tx[Symbol.dispose]();
  assert.throws(() => tx.commit(), bitt.UsageError); // dropped, not committed
  assert.equal(s.kv.get('k'), null);
  const sub = s.pubsub.subscribe('c');
  sub[Symbol.dispose]();
  assert.throws(() => sub.next(), bitt.UsageError);
  s[Symbol.dispose]();
  assert.throws(() => s.kv.get('k'), bitt.UsageError);

  const a = await bitt.openAsync('memory:');
  const asub = a.pubsub.subscribe('c');
  await asub[Symbol.asyncDispose]();
  await assert.rejects(asub.next(), bitt.UsageError);
  const c = a.queue.consume('t', { wait: 0 });
  await c[Symbol.asyncDispose]();
  assert.deepEqual(await c.next(), { done: true, value: undefined });
  await a[Symbol.asyncDispose]();
  await assert.rejects(a.kv.get('k'), bitt.UsageError);
});
