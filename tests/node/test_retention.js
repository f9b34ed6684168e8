'use strict';
// Queue retention and cron/topic schedules through the Node layer (bitt.h 0.6,
// version 7), synchronous and Promise: ack with a result (the store call, a
// consumed message's ack, an atomic commit, the Worker's handler results),
// purge, stats' done, a done message's fields, schedule upsert with cron /
// topic / maxAttempts / priority and a schedule's cron / topic / messageId;
// the argument checks that are the binding's own. The rules themselves are
// the contract's (queue_retention.json, schedule_cron.json).
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const os = require('os');
const path = require('path');
const bitt = require('../../bindings/node');

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bitt-retention-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));
const T0 = new Date(Date.UTC(2030, 0, 1));
const KEEP = 'queue_done_retention=3600000'; // an hour
const at = (ms) => new Date(T0.getTime() + ms);

function wanted(b) {
  const lst = (process.env.BITT_TEST_BACKENDS || '').split(',').filter(Boolean);
  return !lst.length || lst.some((x) => x.split('-')[0] === b);
}
const server = (env, opt) => (ns) => {
  const base = process.env[env];
  return `${base}${base.includes('?') ? '&' : '?'}${opt}=node_ret_${ns}_${process.pid}&${KEEP}`;
};
// Every backend the run has (all four implement retention and cron).
const URLS = [['memory', () => `memory:?${KEEP}`], ['sqlite', (ns) => `sqlite:${tmp}/${ns}.db?${KEEP}`]]
  .filter(([b]) => wanted(b));
if (wanted('postgres') && process.env.BITT_TEST_POSTGRES_URL) URLS.push(['postgres', server('BITT_TEST_POSTGRES_URL', 'schema')]);
if (wanted('redis') && process.env.BITT_TEST_REDIS_URL) URLS.push(['redis', server('BITT_TEST_REDIS_URL', 'prefix')]);

async function until(pred, what) {
  const give = Date.now() + 25_000; // a hang guard only
  while (!(await pred())) {
    if (Date.now() > give) throw new Error(`never happened: ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

let n = 0;
for (const [backend, url] of URLS) {
  for (const [mode, open] of [['sync', bitt.open], ['async', bitt.openAsync]]) {
    const make = async () => {
      const s = await open(url(`${mode}_${n++}`));
      await s.clock.setManual(T0);
      return s;
    };

    test(`${backend} ${mode}: ack with a result keeps the message done`, async () => {
      const x = await make();
      try {
        const q = x.queue;
        const ids = [];
        for (let i = 0; i < 4; i++) ids.push(await q.enqueue('t', Buffer.from(`p${i}`)));
        const [a, b, c, d] = await q.dequeue('t', { limit: 4 });
        await q.ack(a, { result: { ok: true } });
        await q.ack(b, { result: 7n });
        await q.ack(c, { result: Buffer.from('raw') });
        await q.ack(d); // no result: done all the same
        const got = [];
        for (const id of ids) got.push(await q.get('t', id));
        assert.ok(got.every((m) => m.state === 'done' && m.doneAt.getTime() === T0.getTime() && m.token === null));
        assert.deepEqual(got.map((m) => [m.result && m.result.toString(), m.resultKind, m.resultValue]), [
          ['{"ok":true}', bitt.KIND_JSON, { ok: true }], ['7', bitt.KIND_COUNTER, 7n],
          ['raw', bitt.KIND_BYTES, Buffer.from('raw')], [null, null, undefined]]);
        assert.equal(got[0].toJSON().state, 'done');
        assert.deepEqual(got[0].toJSON().result, { ok: true });
        const st = await q.stats('t');
        assert.equal(st.done, 4);
        assert.equal(st.pending, 0);
        await assert.rejects(async () => q.ack(a, { result: 'again' }), bitt.StaleToken);
        await assert.rejects(async () => q.ack(a, { results: 1 }), TypeError); // an unknown option
      } finally {
        await x.close();
      }
    });

    test(`${backend} ${mode}: result checks write nothing; null is JSON null`, async () => {
      const x = await make();
      try {
        const q = x.queue;
        const id = await q.enqueue('t', 'x');
        const [m] = await q.dequeue('t');
        await assert.rejects(async () => q.ack(m, { result: () => 1 }), TypeError);
        await assert.rejects(async () => q.ack(m, { result: 2n ** 70n }), bitt.InvalidArgument);
        assert.equal((await q.get('t', id)).state, 'leased');
        await q.ack(m, { result: null });
        const done = await q.get('t', id);
        assert.equal(done.resultKind, bitt.KIND_JSON);
        assert.equal(done.resultValue, null);
      } finally {
        await x.close();
      }
    });

    test(`${backend} ${mode}: atomic queueAck and a consumed message's ack with a result; purge`, async () => {
      const x = await make();
      try {
        const q = x.queue;
        const id1 = await q.enqueue('a', 'x');
        const [m] = await q.dequeue('a');
        const tx = await x.atomic();
        await tx.set('k', 1n).queueAck(m, { result: ['a', 1] }).commit();
        assert.deepEqual((await q.get('a', id1)).resultValue, ['a', 1]);
        const id2 = await q.enqueue('b', 'y');
        if (mode === 'async') { // (consume is the Promise API's)
          for await (const c of q.consume('b')) {
            await c.ack({ result: 'consumed' });
            break;
          }
          assert.equal((await q.get('b', id2)).resultValue, 'consumed');
        } else {
          const [c] = await q.dequeue('b');
          await q.ack(c, { result: 'consumed' });
        }
        assert.equal(await q.purge(), 0);
        await x.clock.advance(3_600_001);
        assert.equal(await q.purge('a'), 1);
        assert.equal(await q.purge(null), 1);
        assert.equal(await q.purge(), 0);
        await assert.rejects(async () => q.purge(''), bitt.InvalidArgument);
        await assert.rejects(async () => q.purge(1), TypeError);
      } finally {
        await x.close();
      }
    });

    test(`${backend} ${mode}: a cron schedule with a topic, and its checks`, async () => {
      const x = await make();
      try {
        const sch = x.schedule;
        await sch.upsert('every5', null, { n: 1 }, { cron: '*/5 * * * *', topic: 'jobs', maxAttempts: 2, priority: 3 });
        const s = await sch.get('every5');
        assert.deepEqual([s.cron, s.topic, s.interval, s.messageId], ['*/5 * * * *', 'jobs', 0, 0n]);
        assert.equal(s.nextRunAt.getTime(), at(300_000).getTime());
        assert.equal(s.toJSON().cron, '*/5 * * * *');
        await x.clock.advance(300_000);
        const c = await sch.claim();
        assert.equal(c.occurrence.getTime(), at(300_000).getTime());
        assert.ok(c.messageId > 0n);
        const m = await x.queue.get('jobs', c.messageId);
        assert.deepEqual([m.value, m.maxAttempts, m.priority], [{ n: 1 }, 2, 3]);
        await sch.upsert('plain', 60_000);
        const p = await sch.get('plain');
        assert.deepEqual([p.cron, p.topic, p.messageId, p.interval], [null, null, 0n, 60_000]);
        await assert.rejects(async () => sch.upsert('k', 60_000, 'x', { cron: '* * * * *' }),
          (e) => e instanceof bitt.InvalidArgument && /interval must be 0 with a cron/.test(e.message));
        await assert.rejects(async () => sch.upsert('k', null), bitt.InvalidArgument);
        await assert.rejects(async () => sch.upsert('k', null, 'x', { cron: '0 0 30 2 *' }), bitt.InvalidArgument);
        await assert.rejects(async () => sch.upsert('k', null, 'x', { cron: 5 }), TypeError);
        await assert.rejects(async () => sch.upsert('k', 1000, 'x', { every: 5 }), TypeError);
        await assert.rejects(async () => sch.upsert('k', 1000, 'x', { topic: 't', priority: 2 ** 31 }),
          bitt.InvalidArgument);
        assert.equal((await sch.list()).length, 2); // nothing more was written
      } finally {
        await x.close();
      }
    });
  }

  test(`${backend}: the Worker's return values become results`, async () => {
    const x = await bitt.openAsync(url(`worker_${n++}`));
    try {
      await x.clock.setManual(T0);
      const vals = { j: { done: 1 }, s: 'text', u: undefined, f: () => 1, b: Buffer.from('raw'), n: null };
      const ids = {};
      for (const k of Object.keys(vals)) ids[k] = await x.queue.enqueue('w', Buffer.from(k));
      const seen = [];
      const w = new bitt.Worker(x, 'w', (m) => vals[m.payload.toString()], { wait: 50, lease: 60_000 });
      w.on('completed', (m) => seen.push(m.id));
      await until(() => seen.length === Object.keys(vals).length, 'every message completed');
      await w.stop();
      const got = {};
      for (const [k, id] of Object.entries(ids)) got[k] = await x.queue.get('w', id);
      assert.ok(Object.values(got).every((m) => m.state === 'done'));
      assert.deepEqual(Object.fromEntries(Object.entries(got).map(([k, m]) => [k, m.resultValue])),
        { j: { done: 1 }, s: 'text', u: undefined, f: undefined, b: Buffer.from('raw'), n: null });
    } finally {
      await x.close();
    }
  });

  test(`${backend}: a Worker result the store refuses fails the job`, async () => {
    const x = await bitt.openAsync(url(`refused_${n++}`));
    try {
      await x.clock.setManual(T0);
      const id = await x.queue.enqueue('w', 'x', { maxAttempts: 1 });
      const failed = [];
      const w = new bitt.Worker(x, 'w', () => 2n ** 70n, { wait: 50, lease: 60_000 });
      w.on('failed', (m, e) => failed.push(e));
      await until(() => failed.length === 1, 'the job failed');
      const c = await w.stop();
      assert.ok(failed[0] instanceof bitt.InvalidArgument);
      assert.equal(c.failed, 1);
      assert.equal(c.completed, 0);
      const m = await x.queue.get('w', id);
      assert.equal(m.state, 'dead');
      assert.equal(m.lastError, failed[0].message);
    } finally {
      await x.close();
    }
  });
}
