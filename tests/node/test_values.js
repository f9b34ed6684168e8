'use strict';
// Values (bindings/VALUES.md, issue 22 defect 1): a negative zero is written
// as -0; a value another runtime wrote, read and written back, keeps its kind
// and bytes (the one exception Node cannot hold is pinned here too);
// JSON.stringify works on what the API returns; the rate-limiter pattern
// (a bigint with a TTL, then increment) keeps the TTL. Sync and Promise API.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const bitt = require('../../bindings/node');

const raw = bitt.raw;
const K = { bytes: 0, json: 1, counter: 2 };

/* The stored [bytes as text, kind] of key, read past the JS layer. */
function stored(s, key) {
  const e = raw.bitt_kv_get(s._box, Buffer.from(key))[1];
  return e === null ? null : [e.value.toString('latin1'), e.kind];
}

/* Writes bytes and kind as another runtime would (the raw call). */
function written(s, key, text, kind) {
  raw.bitt_kv_set(s._box, Buffer.from(key), Buffer.from(text, 'latin1'), kind, 0);
}

const both = async (f) => {
  const s = bitt.open('memory:');
  const a = await bitt.attachAsync(s.share());
  try {
    await f(s, s, 'sync');
    await f(a, s, 'async');
  } finally {
    await a.close();
    s.close();
  }
};

test('a negative zero is written as -0, at the top and inside (JSON.stringify writes 0)', () => both(async (x, s, mode) => {
  const cases = [
    [-0, '-0'],
    [0, '0'],
    [{ a: -0 }, '{"a":-0}'],
    [[0, -0, [-0]], '[0,-0,[-0]]'],
    // A string that looks like what the respelling uses stays a string.
    [['bitt-negative-zero', -0, '"bitt-negative-zero"'], '["bitt-negative-zero",-0,"\\"bitt-negative-zero\\""]'],
    [{ 'bitt-negative-zero': -0 }, '{"bitt-negative-zero":-0}'],
  ];
  for (const [value, text] of cases) {
    await x.kv.set(`z-${mode}`, value);
    assert.deepEqual(stored(s, `z-${mode}`), [text, K.json], text);
    const back = (await x.kv.get(`z-${mode}`)).value;
    assert.deepEqual(back, value, text);
    if (Object.is(value, -0)) assert.ok(Object.is(back, -0));
    // The same spelling in every other value-taking call.
    await x.queue.enqueue(`q-${mode}`, value);
    const [m] = await x.queue.dequeue(`q-${mode}`);
    assert.equal(m.payload.toString(), text);
    await x.queue.ack(m);
  }
}));

// [stored text, kind]: what Python, Go or the C tool may have written.
const FOREIGN = [
  ['3', K.json], ['2', K.json], ['-12', K.json], ['0', K.json], ['-0', K.json], ['2.5', K.json], ['0.1', K.json],
  ['0.00001', K.json], ['1e-7', K.json], ['1e+21', K.json], ['-1.5e-300', K.json], ['[1,2]', K.json],
  ['{"a":-0}', K.json], ['[[[-0,0.5]]]', K.json], ['{"a":1,"b":[true,false,null,"x"]}', K.json], ['"text"', K.json],
  ['null', K.json], ['3', K.counter], ['0', K.counter], ['-9223372036854775808', K.counter],
  ['9223372036854775807', K.counter], ['', K.bytes], ['3', K.bytes], ['{"a":1}', K.bytes], ['\x00\xff', K.bytes],
];

test('a value written by another runtime, read and written back, keeps its kind and bytes', () => both(async (x, s, mode) => {
  for (const [i, [text, kind]] of FOREIGN.entries()) {
    const key = `f-${mode}-${i}`;
    written(s, key, text, kind);
    const e = await x.kv.get(key);
    await x.kv.set(key, e.value);
    assert.deepEqual(stored(s, key), [text, kind], `${text} (kind ${kind})`);
  }
  // What Node cannot hold (VALUES.md): Python's 2.0 reads as the number 2 and
  // is written back as 2, still JSON.
  written(s, `p-${mode}`, '2.0', K.json);
  const e = await x.kv.get(`p-${mode}`);
  assert.equal(e.value, 2);
  await x.kv.set(`p-${mode}`, e.value);
  assert.deepEqual(stored(s, `p-${mode}`), ['2', K.json]);
}));

test('the rate-limiter pattern: set(k, 0n, {ttl}) then increment counts and keeps the TTL', () => both(async (x, s, mode) => {
  // A JSON number and a counter stay apart: 3 is JSON, 3n a counter.
  await x.kv.set(`n-${mode}`, 3);
  await x.kv.set(`c-${mode}`, 3n);
  assert.deepEqual(stored(s, `n-${mode}`), ['3', K.json]);
  assert.deepEqual(stored(s, `c-${mode}`), ['3', K.counter]);
  assert.equal((await x.kv.get(`n-${mode}`)).value, 3);
  assert.equal((await x.kv.get(`c-${mode}`)).value, 3n);
  await assert.rejects(async () => x.kv.increment(`n-${mode}`), bitt.NotACounter);

  await x.clock.setManual(new Date(1_000_000));
  const key = `rl-${mode}`;
  await x.kv.set(key, 0n, { ttl: 1000 });
  assert.equal(await x.kv.increment(key), 1n);
  await x.clock.advance(500);
  assert.equal(await x.kv.increment(key, 1n), 2n);
  const e = await x.kv.get(key);
  assert.equal(e.value, 2n);
  assert.deepEqual(e.expiresAt, new Date(1_001_000));
  await x.clock.advance(500);
  assert.equal(await x.kv.get(key), null);
  assert.equal(await x.kv.increment(key), 1n); // a new window, no TTL
  assert.equal((await x.kv.get(key)).expiresAt, null);
}));

test('NaN and infinities anywhere in a JSON value: InvalidArgument with the table\'s message', () => both(async (x) => {
  for (const v of [NaN, Infinity, -Infinity, { a: [1, NaN] }, [Infinity]]) {
    await assert.rejects(async () => x.kv.set('nan', v), (e) => e instanceof bitt.InvalidArgument && e.status === -1 &&
      e.code === 'ERR_BITT_INVALID' && e.message === 'value: NaN and infinities are not JSON');
  }
  await assert.rejects(async () => x.kv.set('big', { n: 1n }), (e) => e instanceof TypeError &&
    /^value: a bigint inside an array or object is not JSON/.test(e.message));
}));

test('JSON.stringify works on entries, messages, leases and schedules', () => both(async (x, s, mode) => {
  await x.clock.setManual(new Date(1_000_000));
  await x.kv.set(`j-${mode}`, { a: 1 }, { ttl: 5000 });
  await x.kv.set(`c-${mode}`, 42n);
  await x.kv.set(`b-${mode}`, Buffer.from([1, 2]));
  const j = JSON.parse(JSON.stringify(await x.kv.get(`j-${mode}`)));
  assert.deepEqual(Object.keys(j), ['key', 'value', 'kind', 'version', 'expiresAt']);
  assert.deepEqual(j.key, { type: 'Buffer', data: [...Buffer.from(`j-${mode}`)] }); // Node's Buffer JSON
  assert.deepEqual(j.value, { a: 1 });
  assert.match(j.version, /^[1-9][0-9]*$/); // the bigint as a decimal string
  assert.equal(j.expiresAt, new Date(1_005_000).toISOString());
  const c = JSON.parse(JSON.stringify(await x.kv.get(`c-${mode}`)));
  assert.deepEqual([c.value, c.kind, c.expiresAt], ['42', K.counter, null]);
  const b = JSON.parse(JSON.stringify(await x.kv.get(`b-${mode}`)));
  assert.deepEqual(b.value, { type: 'Buffer', data: [1, 2] });
  assert.deepEqual(Buffer.from(b.value), Buffer.from([1, 2]));
  const list = [];
  for await (const e of x.kv.list({ prefix: `j-${mode}` })) list.push(e);
  assert.equal(JSON.parse(JSON.stringify(list))[0].version, j.version);

  await x.queue.enqueue(`t-${mode}`, { job: 1 });
  const [m] = await x.queue.dequeue(`t-${mode}`, { lease: 1000 });
  const mj = JSON.parse(JSON.stringify(m));
  assert.equal(mj.id, String(m.id));
  assert.deepEqual(mj.value, { job: 1 });
  assert.equal(mj.createdAt, new Date(1_000_000).toISOString());
  assert.equal(mj.dueAt, new Date(1_001_000).toISOString());
  assert.equal(mj.failedAt, null);
  const lease = await x.lease.acquire(`l-${mode}`, 'me', 2000);
  assert.deepEqual(JSON.parse(JSON.stringify(lease)),
    { name: `l-${mode}`, owner: 'me', epoch: String(lease.epoch), expiresAt: new Date(1_002_000).toISOString() });
  await x.schedule.upsert(`s-${mode}`, 60_000, 7n);
  const sj = JSON.parse(JSON.stringify(await x.schedule.get(`s-${mode}`)));
  assert.deepEqual([sj.value, sj.interval, sj.nextRunAt], ['7', 60_000, new Date(1_060_000).toISOString()]);
}));
