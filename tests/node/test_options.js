'use strict';
// Unknown option names (issue 22 defect 4): every options object of every
// call is checked, and a name the call does not have (Python's `dedup` for
// `dedupKey`, `TTL` for `ttl`) is a TypeError naming it and the call's
// names (bindings/ERRORS.md). The table below has a row for every public
// call, found by walking the API's objects: a new call without a row fails
// here, so that whoever adds it says whether and which options it takes.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const bitt = require('../../bindings/node');

// call -> null (no options), or [how to call it with options o, the option
// names, the call its error names when not this one].
const msg = { topic: 't', id: 1n, token: 'x' };
const CALLS = {
  'kv.get': null, 'kv.delete': null, 'kv.take': null, 'kv.getMany': null, 'kv.purgeExpired': null,
  'kv.set': [(x, o) => x.kv.set('k', 1, o), ['ttl']],
  'kv.add': [(x, o) => x.kv.add('k', 1, o), ['ttl']],
  'kv.increment': [(x, o) => x.kv.increment('n', 1n, o), ['ttl']],
  'kv.page': [(x, o) => x.kv.page(o), ['prefix', 'start', 'end', 'limit', 'reverse', 'cursor']],
  'kv.list': [async (x, o) => { for await (const e of x.kv.list(o)) void e; }, ['prefix', 'start', 'end', 'limit', 'reverse', 'cursor']],
  'queue.enqueue': [(x, o) => x.queue.enqueue('t', 1, o), ['delay', 'maxAttempts', 'dedupKey', 'priority']],
  'queue.dequeue': [(x, o) => x.queue.dequeue('t', o), ['limit', 'lease', 'wait', 'signal']],
  'queue.nack': [(x, o) => x.queue.nack(msg, null, o), ['delay']],
  'queue.deadList': [(x, o) => x.queue.deadList('t', o), ['after', 'limit']],
  'queue.consume': [(x, o) => x.queue.consume('t', o), ['prefetch', 'limit', 'lease', 'wait', 'signal']],
  'queue.ack': [(x, o) => x.queue.ack(msg, o), ['result']], 'queue.purge': null, 'queue.ackMany': null, 'queue.extend': null, 'queue.snooze': null, 'queue.deadRetry': null,
  'queue.deadDelete': null, 'queue.stats': null, 'queue.get': null, 'queue.cancel': null, 'queue.reschedule': null,
  'lease.acquire': null, 'lease.renew': null, 'lease.release': null, 'lease.get': null,
  'outbox.append': null, 'outbox.pending': null, 'outbox.ack': null, 'outbox.fail': null, 'outbox.park': null,
  'outbox.parked': null, 'outbox.retry': null, 'outbox.discard': null, 'outbox.counts': null,
  'budget.take': [(x, o) => x.budget.take('b', o), ['capacity', 'refill', 'period', 'n']],
  'schedule.upsert': [(x, o) => x.schedule.upsert('s', 1000, null, o), ['firstRunAt', 'cron', 'topic', 'maxAttempts',
    'priority']],
  'schedule.claim': null, 'schedule.get': null, 'schedule.list': null, 'schedule.delete': null,
  'clock.setManual': null, 'clock.advance': null, 'clock.useSystem': null, 'clock.now': null,
  'pubsub.publish': null,
  'pubsub.subscribe': [(x, o) => x.pubsub.subscribe('c', o), ['signal']],
  'subscription.next': [(x, o) => x.pubsub.subscribe('c').next(0, o), ['signal']],
  'subscription.close': null,
  'atomic.set': [async (x, o) => (await x.atomic()).set('k', 1, o), ['ttl']],
  'atomic.enqueue': [async (x, o) => (await x.atomic()).enqueue('t', 1, o), ['delay', 'maxAttempts', 'dedupKey', 'priority']],
  'atomic.queueNack': [async (x, o) => (await x.atomic()).queueNack(msg, null, o), ['delay']],
  'atomic.queueAck': [async (x, o) => (await x.atomic()).queueAck(msg, o), ['result']], 'atomic.queueSnooze': null, 'atomic.queueExtend': null, 'atomic.queueCancel': null,
  'atomic.queueReschedule': null,
  'atomic.check': null, 'atomic.delete': null, 'atomic.sum': null, 'atomic.fence': null, 'atomic.outboxAppend': null,
  'atomic.commit': null, 'atomic.close': null,
  'store.migrate': null, 'store.atomic': null, 'store.share': null, 'store.close': null,
  'message.ack': null, 'message.extend': null,
  'message.nack': [async (x, o) => {
    await x.queue.enqueue('m', 1);
    const c = x.queue.consume('m', { wait: 0 });
    const { value } = await c.next();
    try {
      await value.nack('e', o);
    } finally {
      await c.return();
    }
  }, ['delay'], 'queue.nack'],
};

/* The public methods of an object: own and inherited, not `_`-prefixed. */
function methods(o) {
  const out = new Set();
  for (let p = o; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const k of Object.getOwnPropertyNames(p)) {
      const d = Object.getOwnPropertyDescriptor(p, k);
      if (k !== 'constructor' && !k.startsWith('_') && typeof d.value === 'function') out.add(k);
    }
  }
  return [...out];
}

/* Every public call of a store, as 'namespace.method'. */
async function calls(x) {
  const found = [];
  for (const ns of ['kv', 'queue', 'lease', 'outbox', 'budget', 'schedule', 'clock', 'pubsub']) {
    for (const m of methods(x[ns])) found.push(`${ns}.${m}`);
  }
  for (const m of methods(x)) found.push(`store.${m}`);
  const tx = await x.atomic();
  for (const m of methods(tx)) found.push(`atomic.${m}`);
  tx.close();
  const sub = x.pubsub.subscribe('c');
  for (const m of methods(sub)) found.push(`subscription.${m}`);
  await sub.close();
  if (x instanceof bitt.AsyncStore) {
    await x.queue.enqueue('intro', 1);
    const c = x.queue.consume('intro', { wait: 0 });
    const { value } = await c.next();
    for (const m of Object.getOwnPropertyNames(value).filter((k) => typeof value[k] === 'function')) {
      found.push(`message.${m}`);
    }
    await value.ack();
    await c.return();
  }
  return found;
}

for (const [kind, make] of [['sync', () => bitt.open('memory:')], ['async', () => bitt.openAsync('memory:')]]) {
  test(`${kind}: an unknown option name is a TypeError naming it and the call's options, in every call`, async () => {
    const x = await make();
    try {
      // Every public call has a row (whether it takes options, and which).
      const missing = (await calls(x)).filter((c) => !(c in CALLS));
      assert.deepEqual(missing, [], 'calls with no row in CALLS');
      for (const [call, row] of Object.entries(CALLS)) {
        if (row === null) continue;
        if (kind === 'sync' && (call === 'queue.consume' || call === 'message.nack')) continue; // async only
        const [f, names, named = call] = row;
        for (const bad of ['bogus', 'TTL', 'dedup', 'timeout', 'ttl_ms']) {
          if (names.includes(bad)) continue;
          await assert.rejects(async () => f(x, { [bad]: 1 }), (e) => e instanceof TypeError &&
            e.message === `${named}: unknown option '${bad}' (options: ${names.join(', ')})`, `${call} {${bad}}`);
        }
        // The names it lists are its own: none of them is refused as unknown.
        for (const name of names) {
          try {
            await f(x, { [name]: undefined });
          } catch (e) {
            assert.doesNotMatch(e.message, /unknown option/, `${call} refuses its own option ${name}`);
          }
        }
        await assert.rejects(async () => f(x, 5), (e) => e instanceof TypeError &&
          e.message === `${named}: options: number is not an object`, `${call} 5`);
      }
    } finally {
      await x.close();
    }
  });
}

test('the names other bindings use do not pass silently: dedup gives no dedup, TTL no expiry', async () => {
  const s = bitt.open('memory:');
  assert.throws(() => s.queue.enqueue('t', 'job', { dedup: 'k' }), {
    name: 'TypeError',
    message: "queue.enqueue: unknown option 'dedup' (options: delay, maxAttempts, dedupKey, priority)" });
  assert.throws(() => s.kv.set('k', 1, { TTL: 1000 }), {
    name: 'TypeError', message: "kv.set: unknown option 'TTL' (options: ttl)" });
  assert.equal(s.kv.get('k'), null); // nothing written
  assert.equal(s.queue.stats('t').pending, 0);
  s.close();
});
