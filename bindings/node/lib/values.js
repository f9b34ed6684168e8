'use strict';
// Keys and values: the one table of bindings/VALUES.md.
//   Buffer/Uint8Array -> BYTES as is; bigint -> COUNTER (decimal ASCII);
//   anything else JSON can hold (null, boolean, number, string, array,
//   plain object) -> JSON (compact text, as JSON.stringify writes it, but a
//   negative zero as -0). NaN and infinities are refused.
// Keys: Buffer/Uint8Array as is, string as UTF-8, array as a tuple key.
const native = require('./native');
const { invalid } = require('./errors');
const { typeName } = require('./args');

const KIND_BYTES = 0;
const KIND_JSON = 1;
const KIND_COUNTER = 2;

function encodeKey(key, what = 'key') {
  if (Buffer.isBuffer(key)) return key;
  if (typeof key === 'string') return Buffer.from(key, 'utf8');
  if (Array.isArray(key)) return native.bittw_tuple_encode(key);
  if (key instanceof Uint8Array) return Buffer.from(key.buffer, key.byteOffset, key.byteLength);
  throw new TypeError(`${what}: ${typeName(key)} is not a Buffer, a Uint8Array, a string or an array (a tuple key)`);
}

function optKey(key, what) {
  return key === undefined || key === null ? null : encodeKey(key, what);
}

function decodeTuple(key) {
  return native.bittw_tuple_decode(key);
}

/* [bytes, kind] for a JS value. */
function encodeValue(value, what = 'value') {
  if (Buffer.isBuffer(value)) return [value, KIND_BYTES];
  if (value instanceof Uint8Array) return [Buffer.from(value.buffer, value.byteOffset, value.byteLength), KIND_BYTES];
  if (typeof value === 'bigint') return [Buffer.from(value.toString(), 'ascii'), KIND_COUNTER];
  return [Buffer.from(toJSON(value, what), 'utf8'), KIND_JSON];
}

// What the replacer met besides plain JSON; set during one stringify.
let negativeZero = false;
let problem = null;

function replacer(k, v) {
  if (typeof v === 'number') {
    if (v === 0 && 1 / v < 0) negativeZero = true;
    else if (!Number.isFinite(v)) throw (problem = invalid('value: NaN and infinities are not JSON'));
  } else if (typeof v === 'bigint') {
    throw (problem = new TypeError('value: a bigint inside an array or object is not JSON ' +
      '(a counter is a bigint alone; write a number or a string there)'));
  }
  return v;
}

function toJSON(value, what) {
  const t = typeof value;
  if (t === 'undefined' || t === 'function' || t === 'symbol') {
    throw new TypeError(`${what}: ${t} is not a Buffer, a Uint8Array, a bigint or a JSON value`);
  }
  negativeZero = false;
  problem = null;
  let text;
  try {
    text = JSON.stringify(value, replacer);
  } catch (e) {
    if (e === problem) throw e;
    throw new TypeError(`${what}: ${typeName(value)} is not a JSON value (${e.message})`);
  }
  if (text === undefined) throw new TypeError(`${what}: ${typeName(value)} is not a JSON value`);
  // The common path ends here; only a value that held a -0 is written again.
  return negativeZero ? withNegativeZeros(value, text) : text;
}

/* JSON.stringify writes -0 as 0: writes the value again with each -0 as a
 * marker string the first text does not hold, then puts -0 in its place.
 * The quoted marker can only come from a -0 (a string holding it would have
 * shown in the first text), and everything else is JSON.stringify's own. */
function withNegativeZeros(value, first) {
  let marker = 'bitt-negative-zero';
  for (let i = 0; first.includes(marker); i++) marker = `bitt-negative-zero-${i}`;
  const text = JSON.stringify(value, (k, v) => (typeof v === 'number' && v === 0 && 1 / v < 0 ? marker : v));
  return text.split(`"${marker}"`).join('-0');
}

function decodeValue(data, kind) {
  if (kind === KIND_BYTES) return data;
  if (kind === KIND_COUNTER) return BigInt(data.toString('ascii'));
  if (kind === KIND_JSON) return JSON.parse(data.toString('utf8'));
  return data;
}

module.exports = { KIND_BYTES, KIND_JSON, KIND_COUNTER, encodeKey, optKey, decodeTuple, encodeValue, decodeValue };
