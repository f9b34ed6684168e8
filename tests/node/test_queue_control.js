'use strict';
// The queue-control API of the Node layer (bitt.h 0.6), synchronous and
// Promise: priorities, a dequeue over several topics, messages by id, the
// queue ops of an atomic commit, and a message's state and priority; the
// argument checks that are the binding's own. The rules themselves are the
// contract's (queue_control.json, run by contract.js).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const bitt = require('../../bindings/node');

const T0 = 1_000_000;
const at = (ms) => new Date(T0 + ms);

for (const [kind, make] of [['sync', () => bitt.open('memory:')], ['async', () => bitt.openAsync('memory:')]]) {
  test(`${kind}: priority orders the claims, is kept and shown; out of range is refused`, async () => {
    const x = await make();
    try {
      const low = await x.queue.enqueue('t', 'low');
      const top = await x.queue.enqueue('t', 'top', { priority: 2 ** 31 - 1 });
      const neg = await x.queue.enqueue('t', 'neg', { priority: -(2 ** 31) });
      const got = await x.queue.dequeue('t', { limit: 3 });
      assert.deepEqual(got.map((m) => [m.id, m.priority, m.state]),
        [[top, 2 ** 31 - 1, 'leased'], [low, 0, 'leased'], [neg, -(2 ** 31), 'leased']]);
      assert.equal(got[0].toJSON().state, 'leased');
      for (const bad of [2 ** 31, -(2 ** 31) - 1, 2n ** 31n]) {
        await assert.rejects(async () => x.queue.enqueue('t', 1, { priority: bad }),
          (e) => e instanceof bitt.InvalidArgument && e.message === `priority: integer ${bad} is outside the int32 range`);
        await assert.rejects(async () => (await x.atomic()).enqueue('t', 1, { priority: bad }), bitt.InvalidArgument);
      }
      for (const bad of [1.5, '1', true]) {
        await assert.rejects(async () => x.queue.enqueue('t', 1, { priority: bad }), TypeError);
      }
      assert.equal((await x.queue.stats('t')).pending, 0); // nothing written by a refusal
    } finally {
      await x.close();
    }
  });

  test(`${kind}: a dequeue over several topics; bad lists are refused`, async () => {
    const x = await make();
    try {
      await x.clock.setManual(new Date(T0));
      const a = await x.queue.enqueue('a', 1);
      await x.clock.advance(1);
      const b = await x.queue.enqueue(Buffer.from('b'), 2, { priority: 1 });
      const got = await x.queue.dequeue(['a', Buffer.from('b'), 'c'], { limit: 5 });
      assert.deepEqual(got.map((m) => [m.id, m.topic]), [[b, 'b'], [a, 'a']]);
      await x.queue.ack(got[0]);
      await assert.rejects(async () => x.queue.dequeue(['a', 'a']), bitt.InvalidArgument);
      await assert.rejects(async () => x.queue.dequeue([]), bitt.InvalidArgument);
      await assert.rejects(async () => x.queue.dequeue(Array.from({ length: 65 }, (_, i) => `t${i}`)), bitt.TooLarge);
      await assert.rejects(async () => x.queue.dequeue(['a', 1]), TypeError);
      await assert.rejects(async () => x.queue.dequeue(['a\0b']), bitt.InvalidArgument);
      await x.queue.enqueue('c', 3);
      await assert.rejects(async () => x.queue.dequeue(['a', 'c'], { wait: 5000, signal: AbortSignal.abort() }),
        bitt.AbortError);
      assert.equal((await x.queue.stats('c')).pending, 1); // the aborted dequeue took nothing
    } finally {
      await x.close();
    }
  });

  test(`${kind}: get, cancel and reschedule by id`, async () => {
    const x = await make();
    try {
      await x.clock.setManual(new Date(T0));
      const id = await x.queue.enqueue('t', { job: 1 }, { delay: 60_000, maxAttempts: 4, priority: 3 });
      const m = await x.queue.get('t', id);
      assert.ok(m instanceof bitt.Message);
      assert.deepEqual([m.state, m.token, m.priority, m.attempts, m.maxAttempts, m.topic, m.id],
        ['delayed', null, 3, 0, 4, 't', id]);
      assert.deepEqual(m.dueAt, at(60_000));
      assert.deepEqual(m.value, { job: 1 });
      assert.equal(await x.queue.get('u', id), null);
      assert.equal(await x.queue.get('t', 0), null);
      assert.equal(await x.queue.reschedule('t', id, 5000), true);
      assert.deepEqual((await x.queue.get('t', id)).dueAt, at(5000));
      assert.equal(await x.queue.reschedule('t', id), true); // default: now
      assert.equal((await x.queue.get('t', Number(id))).state, 'pending');
      const [d] = await x.queue.dequeue('t', { lease: 10_000 });
      assert.equal((await x.queue.get('t', id)).state, 'leased');
      assert.equal(await x.queue.reschedule('t', id, 0), false);
      assert.equal(await x.queue.cancel('t', id), true);
      assert.equal(await x.queue.cancel('t', id), false);
      await assert.rejects(async () => x.queue.ack(d), bitt.StaleToken);
      await assert.rejects(async () => x.queue.reschedule('t', id, -1), bitt.InvalidArgument);
      await assert.rejects(async () => x.queue.reschedule('t', id, new Date()), TypeError);
      await assert.rejects(async () => x.queue.get('t', 'one'), TypeError);
      const dead = await x.queue.enqueue('t', 'x', { maxAttempts: 1 });
      const [e] = await x.queue.dequeue('t');
      await x.queue.nack(e, 'boom');
      const g = await x.queue.get('t', dead);
      assert.deepEqual([g.state, g.lastError], ['dead', 'boom']);
      assert.deepEqual((await x.queue.deadList('t')).map((q) => q.state), ['dead']);
      await x.outbox.append('s', 'e');
      assert.equal((await x.outbox.pending('s'))[0].state, null);
    } finally {
      await x.close();
    }
  });

  test(`${kind}: the queue ops of an atomic commit`, async () => {
    const x = await make();
    try {
      await x.clock.setManual(new Date(T0));
      const a = await x.queue.enqueue('t', 'a');
      const b = await x.queue.enqueue('t', 'b', { maxAttempts: 3 });
      const c = await x.queue.enqueue('t', 'c');
      const [ma, mb, mc] = await x.queue.dequeue('t', { limit: 3, lease: 10_000 });
      await (await x.atomic()).set('result', 1).queueAck(ma).queueNack(mb, 'e1', { delay: 2000 })
        .queueExtend(mc, 30_000).commit();
      assert.equal(await x.queue.get('t', a), null);
      const gb = await x.queue.get('t', b);
      assert.deepEqual([gb.state, gb.lastError, gb.dueAt], ['delayed', 'e1', at(2000)]);
      assert.deepEqual((await x.queue.get('t', c)).dueAt, at(30_000));
      await (await x.atomic()).queueSnooze('t', c, mc.token, 1000).queueReschedule('t', b, 0).commit();
      assert.equal((await x.queue.get('t', c)).state, 'delayed');
      assert.equal((await x.queue.get('t', b)).state, 'pending');
      await (await x.atomic()).queueCancel('t', b).queueCancel('t', 999).commit();
      assert.equal(await x.queue.get('t', b), null);
      // a stale token fails the whole commit, which writes nothing
      const tx = (await x.atomic()).set('k', 1).queueAck(ma);
      await assert.rejects(async () => tx.commit(), bitt.StaleToken);
      assert.equal(await x.kv.get('k'), null);
      // one queue op per message id; bad arguments are refused when added
      await assert.rejects(async () => (await x.atomic()).queueCancel('t', c).queueReschedule('t', c, 0),
        bitt.InvalidArgument);
      await assert.rejects(async () => (await x.atomic()).queueExtend(mc, -1), bitt.InvalidArgument);
      await assert.rejects(async () => (await x.atomic()).queueNack(mc, null, { dely: 1 }), TypeError);
      await assert.rejects(async () => (await x.atomic()).queueSnooze('t', c, mc.token, '1'), TypeError);
    } finally {
      await x.close();
    }
  });
}
