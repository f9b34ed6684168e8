'use strict';
// Keys and values: the one table of bindings/VALUES.md.
//   Buffer/Uint8Array -> BYTES as is; bigint -> COUNTER (decimal ASCII);
//   anything else JSON can hold (null, boolean, number, string, array,
//   plain object) -> JSON (compact text). NaN and infinities are refused.
// Keys: Buffer/Uint8Array as is, string as UTF-8, array as a tuple key.
const native = require('./native');

const KIND_BYTES = 0;
const KIND_JSON = 1;
const KIND_COUNTER = 2;

function encodeKey(key, what = 'key') {
  if (Buffer.isBuffer(key)) return key;
  if (typeof key === 'string') return Buffer.from(key, 'utf8');
  if (Array.isArray(key)) return native.bittw_tuple_encode(key);
  if (key instanceof Uint8Array) return Buffer.from(key.buffer, key.byteOffset, key.byteLength);
  throw new TypeError(`${what} must be a Buffer, a string or an array (tuple key), not ${typeOf(key)}`);
}

function optKey(key, what) {
  return key === undefined || key === null ? null : encodeKey(key, what);
}

function decodeTuple(key) {
  return native.bittw_tuple_decode(key);
}

function typeOf(v) {
  if (v === null) return 'null';
  if (typeof v === 'object') return v.constructor ? v.constructor.name : 'object';
  return typeof v;
}

/* [bytes, kind] for a JS value. */
function encodeValue(value) {
  if (Buffer.isBuffer(value)) return [value, KIND_BYTES];
  if (value instanceof Uint8Array) return [Buffer.from(value.buffer, value.byteOffset, value.byteLength), KIND_BYTES];
  if (typeof value === 'bigint') return [Buffer.from(value.toString(), 'ascii'), KIND_COUNTER];
  const text = toJSON(value);
  return [Buffer.from(text, 'utf8'), KIND_JSON];
}

function toJSON(value) {
  const t = typeof value;
  if (t === 'undefined' || t === 'function' || t === 'symbol') {
    throw new TypeError(`a value must be a Buffer, a bigint or a JSON value, not ${t}`);
  }
  let text;
  try {
    text = JSON.stringify(value, (k, v) => {
      if (typeof v === 'number' && !Number.isFinite(v)) throw new TypeError('NaN and infinities are not JSON');
      if (typeof v === 'bigint') throw new TypeError('a bigint inside a JSON value');
      return v;
    });
  } catch (e) {
    throw new TypeError(`value is not JSON-serialisable: ${e.message}`);
  }
  if (text === undefined) throw new TypeError('value is not JSON-serialisable');
  return text;
}

function decodeValue(data, kind) {
  if (kind === KIND_BYTES) return data;
  if (kind === KIND_COUNTER) return BigInt(data.toString('ascii'));
  if (kind === KIND_JSON) return JSON.parse(data.toString('utf8'));
  return data;
}

module.exports = { KIND_BYTES, KIND_JSON, KIND_COUNTER, encodeKey, optKey, decodeTuple, encodeValue, decodeValue };
