'use strict';
// The addon itself: its SQLite is the built-in one (deps/sqlite, staged by
// `npm run stage`) and private to it, so that another SQLite in the process
// keeps its own; and the synchronous kv get/set of one key (src/fast.hpp,
// lib/fast.js) give what the Promise API gives for the same store: the
// same entries, versions and errors.
const { test } = require('node:test');
const assert = require('node:assert/strict');
const { execFileSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const bitt = require('../../bindings/node');
const { fast } = require('../../bindings/node/lib/fast');
const { candidates } = require('../../bindings/node/lib/native-path');

const PKG = path.join(__dirname, '..', '..', 'bindings', 'node');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'bitt-addon-'));
test.after(() => fs.rmSync(tmp, { recursive: true, force: true }));

/* The addon lib/native.js loaded (the first candidate that exists). */
const addon = candidates(PKG).find((f) => fs.existsSync(f));

test('the addon carries the staged SQLite and links no other', () => {
  const header = fs.readFileSync(path.join(PKG, 'deps', 'sqlite', 'sqlite3.h'), 'utf8');
  const sourceId = header.match(/^#define SQLITE_SOURCE_ID\s+"([^"]+)"/m)[1];
  assert.ok(fs.readFileSync(addon).includes(sourceId), `${addon} does not hold SQLite ${sourceId}`);
  const needed = execFileSync('readelf', ['-d', addon], { encoding: 'utf8' });
  assert.doesNotMatch(needed, /libsqlite3/);
});

test('the addon exports and imports no sqlite3_* symbol', () => {
  const dynamic = execFileSync('nm', ['-D', addon], { encoding: 'utf8' });
  assert.match(dynamic, /napi_register_module_v1/); // the table was read
  assert.deepEqual(dynamic.split('\n').filter((l) => /sqlite3_/.test(l)), []);
});

test('another SQLite in the process keeps its own (better-sqlite3, when bench/node has it)', (t) => {
  let Database;
  try {
    Database = require(require.resolve('better-sqlite3', { paths: [path.join(__dirname, '..', '..', 'bench', 'node')] }));
  } catch (e) {
    t.skip('better-sqlite3 is not installed (npm ci --prefix bench/node)');
    return;
  }
  const s = bitt.open(`sqlite:${tmp}/mine.db`);
  const db = new Database(path.join(tmp, 'theirs.db'));
  try {
    db.exec('CREATE TABLE t (k TEXT PRIMARY KEY, v BLOB)');
    for (let i = 0; i < 50; i++) {
      s.kv.set(`k${i}`, Buffer.from([i]));
      db.prepare('INSERT INTO t VALUES (?, ?)').run(`k${i}`, Buffer.from([i]));
    }
    for (let i = 0; i < 50; i++) {
      assert.deepEqual(s.kv.get(`k${i}`).value, Buffer.from([i]));
      assert.deepEqual(db.prepare('SELECT v FROM t WHERE k = ?').get(`k${i}`).v, Buffer.from([i]));
    }
    assert.match(db.prepare('SELECT sqlite_version() AS v').get().v, /^3\./);
  } finally {
    db.close();
    s.close();
  }
});

const VALUES = [
  ['empty bytes', Buffer.alloc(0)],
  ['16 bytes', Buffer.alloc(16, 'x')],
  ['a Uint8Array', new Uint8Array([1, 2, 3])],
  ['4096 bytes (the most a pool takes)', Buffer.alloc(4096, 7)],
  ['4097 bytes (a Buffer of its own)', Buffer.alloc(4097, 8)],
  ['60 KiB', Buffer.alloc(60 * 1024, 9)],
  ['JSON', { a: [1, 'two', null], b: true }],
  ['a JSON string', 'text'],
  ['a counter', -1234567890123456789n],
];

for (const backend of ['memory', 'sqlite']) {
  test(`${backend}: sync get/set give what the Promise API gives`, async () => {
    const s = bitt.open(backend === 'memory' ? 'memory:' : `sqlite:${tmp}/same-${process.pid}.db`);
    const a = await bitt.attachAsync(s.share());
    try {
      for (const [what, value] of VALUES) {
        const key = ['same', what];
        const version = s.kv.set(key, value);
        assert.equal(typeof version, 'bigint', what);
        const got = s.kv.get(key);
        assert.equal(got.version, version, what);
        assert.deepEqual(got, await a.kv.get(key), what);
        const want = value instanceof Uint8Array ? Buffer.from(value) : value;
        assert.deepEqual(got.value, want, what);
        // The async set's version follows; the sync get sees it.
        const next = await a.kv.set(key, value);
        assert.equal(s.kv.get(key).version, next, what);
      }
      s.kv.set('ttl', 'soon', { ttl: 60000 });
      const e = s.kv.get('ttl');
      assert.ok(e.expiresAt instanceof Date);
      assert.ok(e.expiresAt.getTime() > Date.now());
      assert.equal(s.kv.get(['same', 'JSON']).expiresAt, null);
      assert.deepEqual(e, await a.kv.get('ttl'));
      assert.equal(s.kv.get('missing'), null);
    } finally {
      await a.close();
      s.close();
    }
  });
}

test('a value got is a copy of its own: later gets and writes leave it alone', () => {
  const s = bitt.open('memory:');
  s.kv.set('a', Buffer.from('aaaa'));
  s.kv.set('b', Buffer.from('bbbbbbbb'));
  const a = s.kv.get('a').value;
  const b = s.kv.get('b').value;
  assert.deepEqual([a.toString(), b.toString()], ['aaaa', 'bbbbbbbb']);
  a.fill(0);
  assert.equal(s.kv.get('a').value.toString(), 'aaaa');
  assert.equal(b.toString(), 'bbbbbbbb');
  s.close();
});

test('values got one after another never overlap (slices of the addon\'s pools)', () => {
  const s = bitt.open('memory:');
  const want = [];
  for (let i = 0; i < 100; i++) {
    want.push(Buffer.alloc(1 + ((i * 37) % 300), i));
    s.kv.set(`k${i}`, want[i]);
  }
  s.kv.set('big', Buffer.alloc(4000, 1)); // leaves less than 4 KiB in a pool: the next get takes a new one
  const got = [];
  for (let n = 0; n < 3000; n++) {
    const i = n % 100;
    got.push([i, s.kv.get(`k${i}`).value]);
    if (n % 7 === 0) got.push([-1, s.kv.get('big').value]);
  }
  for (const [i, v] of got) assert.deepEqual(v, i < 0 ? Buffer.alloc(4000, 1) : want[i]);
  s.close();
});

test('a value\'s pool cannot be detached by a transfer', () => {
  const s = bitt.open('memory:');
  s.kv.set('a', Buffer.from('aaaa'));
  const a = s.kv.get('a').value;
  const { port1, port2 } = new MessageChannel();
  try {
    port1.postMessage(a, [a.buffer]);
  } catch (e) {
    assert.equal(e.name, 'DataCloneError'); // newer Node refuses; older ones copy instead
  }
  port1.close();
  port2.close();
  assert.equal(a.toString(), 'aaaa');
  assert.equal(s.kv.get('a').value.toString(), 'aaaa');
  s.close();
});

test('two copies of lib/fast.js (a fresh module registry) each read their own results', () => {
  const file = require.resolve('../../bindings/node/lib/fast');
  const first = require.cache[file];
  delete require.cache[file];
  const { SyncKV } = require(file); // the same addon, a second copy of the module
  require.cache[file] = first;
  const s = bitt.open('memory:');
  const other = new SyncKV(s);
  s.kv.set('a', Buffer.from('from the first'));
  other.set('b', Buffer.from('from the second'));
  for (let i = 0; i < 600; i++) {
    const a = s.kv.get('a');
    const b = other.get('b');
    assert.equal(a.value.toString(), 'from the first');
    assert.equal(b.value.toString(), 'from the second');
    assert.ok(b.version > a.version);
  }
  assert.equal(other.set('a', 'x'), s.kv.get('a').version);
  s.close();
});

test('sync get/set refuse bad arguments as before: TypeError, BittError, UsageError', () => {
  const s = bitt.open('memory:');
  assert.throws(() => s.kv.get(42), TypeError);
  assert.throws(() => s.kv.set('k', undefined), TypeError);
  assert.throws(() => s.kv.set('k', 'v', { ttl: 'soon' }), TypeError);
  assert.throws(() => s.kv.set('k', 'v', 5), TypeError);
  assert.throws(() => s.kv.set('k', 'v', { ttl: -1 }), (e) => e instanceof bitt.BittError && e.status === -1 && e.code === 'ERR_BITT_INVALID' && /ttl/.test(e.message));
  assert.throws(() => s.kv.set('k', Buffer.alloc(65537)), (e) => e.name === 'TooLarge' && e.status === -3 && e.code === 'ERR_BITT_TOO_LARGE');
  // The addon's own checks, past the JS layer.
  assert.throws(() => fast.get({}, Buffer.from('k')), { name: 'TypeError', message: 'expected a bitt store handle' });
  assert.throws(() => fast.get(s._box, 'k'), { name: 'TypeError', message: 'key: string is not a Buffer or a Uint8Array' });
  assert.throws(() => fast.set(s._box, Buffer.from('k'), 'v', 0, 0), { name: 'TypeError', message: 'value: string is not a Buffer or a Uint8Array' });
  assert.throws(() => fast.set(s._box, Buffer.from('k'), Buffer.from('v'), 0, 1.5), TypeError);
  assert.throws(() => fast.set(s._box, Buffer.from('k'), Buffer.from('v'), 9, 0), bitt.BittError);
  assert.throws(() => fast.pool(new ArrayBuffer(16)), TypeError);
  s.close();
  assert.throws(() => s.kv.get('k'), (e) => e.name === 'UsageError' && e.status === -12 && e.code === 'ERR_BITT_USAGE');
  assert.throws(() => s.kv.set('k', 'v'), (e) => e.name === 'UsageError' && e.status === -12 && e.code === 'ERR_BITT_USAGE');
});
