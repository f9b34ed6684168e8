'use strict';
// bindings/ERRORS.md, read here and checked row by row against the binding
// (issue 22 defect 3): every status row gives its class, string code and
// number, from the addon's own error path and, where a test can cause it, from
// the real failure with the core's message; every argument row is caused and
// its message compared with the table's template. A row this file has no
// check for fails the test.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const bitt = require('../../bindings/node');
// The function the addon calls to make the error of a status (lib/native.js).
const { makeError } = require('../../bindings/node/lib/errors');

const ERRORS = path.join(__dirname, '..', '..', 'bindings', 'ERRORS.md');

/* The rows of the markdown table whose header row starts with `first`. */
function table(text, first) {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.startsWith(`| ${first} |`));
  assert.ok(at >= 0, `ERRORS.md has no table starting with "${first}"`);
  const rows = [];
  for (const l of lines.slice(at + 2)) {
    if (!l.startsWith('|')) break;
    rows.push(l.split('|').slice(1, -1).map((c) => c.trim().replace(/^`|`$/g, '')));
  }
  return rows;
}

const text = fs.readFileSync(ERRORS, 'utf8');
const STATUSES = table(text, 'status');
const ARGUMENTS = table(text, 'argument error');

// A real failure per status a test can cause, on a memory store (sync).
const CAUSES = {
  BITT_EINVAL: (s) => s.kv.set('k', 'v', { ttl: -1 }),
  BITT_ETOOLARGE: (s) => s.kv.set('k', Buffer.alloc(70_000)),
  BITT_ENOTCOUNTER: (s) => { s.kv.set('text', 'x'); s.kv.increment('text'); },
  BITT_EOVERFLOW: (s) => { s.kv.set('max', 2n ** 63n - 1n); s.kv.increment('max'); },
  BITT_ECONFLICT: (s) => { s.kv.set('c', 1); s.atomic().check('c', null).set('c', 2).commit(); },
  BITT_EURL: () => bitt.open('nosuch://x'),
  BITT_ECURSOR: (s) => s.kv.page({ cursor: 'not a cursor' }),
  BITT_EUSAGE: (s) => s.clock.advance(1),
  BITT_ETOKEN: (s) => s.queue.ack({ topic: 't', id: 1n, token: 'stale' }),
  BITT_ELEASELOST: (s) => {
    const l = s.lease.acquire('l', 'me', 1000);
    s.lease.release('l', 'me', l.epoch);
    s.lease.renew('l', 'me', l.epoch, 1000);
  },
  BITT_ECANCELED: (s) => s.queue.dequeue('t', { wait: 60_000, signal: AbortSignal.abort() }),
};
// The ones a test cannot cause on purpose here: the class still comes from
// the addon's error path (the factory it calls with the status).
const NOT_CAUSED = new Set(['BITT_ENOMEM', 'BITT_EBACKEND', 'BITT_EBUSY', 'BITT_ESCHEMA', 'BITT_EUNSUPPORTED']);

test('ERRORS.md: the status table has every status of the binding, and nothing else', () => {
  assert.deepEqual(STATUSES.map((r) => Number(r[1])), Array.from({ length: 16 }, (_, i) => -(i + 1)));
  const names = Object.keys(bitt).filter((k) => typeof bitt[k] === 'function' && bitt[k].prototype instanceof bitt.BittError);
  assert.deepEqual(names.sort(), STATUSES.map((r) => r[3]).sort());
});

for (const [status, number, , cls, code] of STATUSES) {
  test(`ERRORS.md: ${status} (${number}) is ${cls}, code '${code}'`, () => {
    const n = Number(number);
    const Cls = bitt[cls];
    assert.equal(typeof Cls, 'function', `bitt.${cls} is not exported`);
    const check = (e, what) => {
      assert.ok(e instanceof Cls && e instanceof bitt.BittError && e instanceof Error, `${what}: ${e}`);
      assert.equal(e.name, cls, what);
      assert.equal(e.code, code, what);
      assert.equal(e.status, n, what);
      assert.ok(typeof e.message === 'string' && e.message.length > 0, what);
    };
    check(makeError(n, 'm'), 'the factory');
    if (NOT_CAUSED.has(status)) return;
    assert.ok(CAUSES[status], `no check for ${status}: add one to CAUSES or NOT_CAUSED`);
    const s = bitt.open('memory:');
    try {
      let err = null;
      try {
        CAUSES[status](s);
      } catch (e) {
        err = e;
      }
      assert.ok(err !== null, `${status}: nothing was thrown`);
      check(err, 'the real failure');
      // The core's own message, read in the failing call.
      assert.doesNotMatch(err.message, /^m$/);
    } finally {
      s.close();
    }
  });
}

/* The table's message template as a pattern: {x} matches anything. */
function template(t) {
  return new RegExp(`^${t.split(/\{[a-z]+\}/).map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.+')}$`);
}

// Each argument row: the failures that must give it, sync and async.
const ARGUMENT_CAUSES = {
  'an integer (counter value, delta, tuple int part) beyond int64': [
    [(x) => x.kv.get(['t', 2n ** 63n]), 'tuple part 1: integer 9223372036854775808 is outside the int64 range'],
    [(x) => x.kv.increment('k', 2n ** 63n), 'delta: integer 9223372036854775808 is outside the int64 range'],
    [(x) => x.kv.increment('k', -(2n ** 63n) - 1n), 'delta: integer -9223372036854775809 is outside the int64 range'],
    [async (x) => (await x.atomic()).sum('k', 2n ** 64n), 'delta: integer 18446744073709551616 is outside the int64 range'],
    [(x) => x.kv.set('k', 1, { ttl: 2n ** 63n }), 'ttl: integer 9223372036854775808 is outside the int64 range'],
  ],
  'NaN or an infinity inside a JSON value': [
    [(x) => x.kv.set('k', NaN), 'value: NaN and infinities are not JSON'],
    [(x) => x.queue.enqueue('t', { a: [Infinity] }), 'value: NaN and infinities are not JSON'],
  ],
  'an option name the call does not have': [
    [(x) => x.kv.set('k', 1, { TTL: 1000 }), "kv.set: unknown option 'TTL' (options: ttl)"],
    [(x) => x.queue.enqueue('t', 1, { dedup: 'k' }),
      "queue.enqueue: unknown option 'dedup' (options: delay, maxAttempts, dedupKey, priority)"],
  ],
  'a value, key or part of a type the value table does not map': [
    [(x) => x.kv.get(42), 'key: number is not a Buffer, a Uint8Array, a string or an array (a tuple key)'],
    [(x) => x.kv.set('k', undefined), 'value: undefined is not a Buffer, a Uint8Array, a bigint or a JSON value'],
    [(x) => x.kv.get(['t', {}]),
      'tuple part 1: an object is not a Buffer, a Uint8Array, a string, a bigint, a number or a boolean'],
  ],
};
const ROW_CLASS = { InvalidArgument: bitt.InvalidArgument, TypeError };

for (const [what, , node, , message] of ARGUMENTS) {
  test(`ERRORS.md: ${what} -> ${node}`, async () => {
    const causes = ARGUMENT_CAUSES[what];
    assert.ok(causes, `no check for the row "${what}": add one to ARGUMENT_CAUSES`);
    const Cls = ROW_CLASS[node];
    assert.ok(Cls, `unknown Node error ${node}`);
    const pattern = template(message);
    const s = bitt.open('memory:');
    const a = await bitt.openAsync('memory:');
    try {
      for (const [f, want] of causes) {
        assert.match(want, pattern, 'the expected text itself fits the template');
        const ok = (e) => {
          assert.ok(e instanceof Cls, `${want}: got ${e && e.name}: ${e && e.message}`);
          if (Cls === bitt.InvalidArgument) assert.deepEqual([e.status, e.code], [-1, 'ERR_BITT_INVALID']);
          assert.equal(e.message, want);
          return true;
        };
        await assert.rejects(async () => f(s), ok, `sync: ${want}`);
        await assert.rejects(async () => f(a), ok, `async: ${want}`);
      }
    } finally {
      s.close();
      await a.close();
    }
  });
}
