'use strict';
// The synchronous Store's kv: get and set of one key call the addon's own
// functions (src/fast.hpp) instead of the SWIG wrappers, which cost as much
// as the C call on SQLite. Same C calls, checks, errors and entries as
// api.KV's; only the way the results come back differs: an entry's fields
// through a small head private to this module (its layout: src/fast.hpp),
// its value copied by the addon into a pool that the value's Buffer is a
// slice of, as Buffer.from's are of Node's pool.
const { Buffer } = require('buffer'); // the global is a getter, slower
const { markAsUntransferable } = require('worker_threads');
const native = require('./native');
const { KV, ttlOf } = require('./api');
const { encodeKey, encodeValue } = require('./values');
const { Entry } = require('./entry');
const M = require('./model');

const head = new ArrayBuffer(48); // sizeof(bittw_fast_head)
const version = new BigUint64Array(head, 0, 1);
const fields = new Float64Array(head, 8, 4); // kind, expiresAt, offset, low
// Functions of this copy of the module, on memory of their own.
const fast = native.bittw_fast_bind(head);

const POOL_SIZE = 8192; // as Node's Buffer.poolSize; values over 4 KiB get an ArrayBuffer of their own
let pool;
function newPool() {
  pool = new ArrayBuffer(POOL_SIZE);
  // A slice's .buffer is this pool: transferring it must not detach it
  // under the addon (Node marks its own pools so too).
  markAsUntransferable(pool);
  fast.pool(pool);
}
newPool();

class SyncKV extends KV {
  get(key) {
    const k = encodeKey(key);
    const r = fast.get(this._s._box, k);
    if (r === null) return null;
    let value = r;
    if (typeof r === 'number') {
      value = Buffer.from(pool, fields[2], r);
      if (fields[3] !== 0) newPool();
    }
    return M.entry(new Entry(k, value, fields[0], version[0], fields[1]));
  }

  set(key, value, o) {
    const [data, kind] = encodeValue(value);
    fast.set(this._s._box, encodeKey(key), data, kind, ttlOf('kv.set', o));
    return version[0];
  }
}

module.exports = { SyncKV, fast };
