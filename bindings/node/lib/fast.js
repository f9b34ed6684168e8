'use strict';
// The synchronous Store's kv: get and set of one key call the addon's own
// functions (src/fast.hpp) instead of the SWIG wrappers, which cost as much
// as the C call on SQLite. Same C calls, checks, errors and entries as
// api.KV's; only the way the results come back differs: through a scratch
// ArrayBuffer private to this module (its layout: src/fast.hpp), the value
// copied out of it into a Buffer from Node's pool.
const native = require('./native');
const { KV, ms, opts } = require('./api');
const { encodeKey, encodeValue } = require('./values');
const M = require('./model');

const HEAD = 32; // sizeof(bittw_fast_head)
const VALUE_MAX = 4096; // bittw_fast_value_max
const scratch = new ArrayBuffer(HEAD + VALUE_MAX);
const version = new BigUint64Array(scratch, 0, 1);
const head = new Float64Array(scratch, 8, 2); // kind, expiresAt
const bytes = Buffer.from(scratch, HEAD, VALUE_MAX);
native.bittw_fast_init(scratch);

/* A copy of the value's n bytes in the scratch. */
function valueOut(n) {
  const b = Buffer.allocUnsafe(n);
  bytes.copy(b, 0, 0, n);
  return b;
}

class SyncKV extends KV {
  get(key) {
    const k = encodeKey(key);
    const r = native.bittw_kv_get1(this._s._box, k);
    if (r === null) return null;
    const value = typeof r === 'number' ? valueOut(r) : r;
    return M.entry({ key: k, value, kind: head[0], version: version[0], expiresAt: head[1] });
  }

  set(key, value, o) {
    const [data, kind] = encodeValue(value);
    native.bittw_kv_set1(this._s._box, encodeKey(key), data, kind, ms(opts(o).ttl, 'ttl'));
    return version[0];
  }
}

module.exports = { SyncKV };
