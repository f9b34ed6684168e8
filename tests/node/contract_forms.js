'use strict';
// The value forms and comparisons of tests/contract/README.md, for the Node
// runner (contract.js): byte strings, 64-bit numbers, kinds, statuses.
const native = require('../../bindings/node/lib/native');

const STATUS = {
  ok: 0, not_found: 1, exists: 2, denied: 3, invalid: -1, nomem: -2, too_large: -3, not_counter: -4,
  overflow: -5, conflict: -6, backend: -7, busy: -8, schema: -9, url: -10, cursor: -11, usage: -12,
  unsupported: -13, token: -14, lease_lost: -15, canceled: -16,
};
const STATUS_NAME = Object.fromEntries(Object.entries(STATUS).map(([k, v]) => [v, k]));
const KINDS = { bytes: 0, json: 1, counter: 2 };
const REASONS = { poison: 1, invalid: 2, any: 0 };

class Broken extends Error {}
class Mismatch extends Error {}

function checkMembers(obj, allowed, what) {
  const extra = Object.keys(obj).filter((k) => !allowed.includes(k) && k !== 'note');
  if (extra.length) throw new Broken(`${what}: unknown member(s) ${extra.sort().join(', ')}`);
}

const has = (o, k) => Object.prototype.hasOwnProperty.call(o, k);

function bstr(v) {
  if (typeof v === 'string') return Buffer.from(v, 'utf8');
  if (v && typeof v === 'object') {
    if (has(v, 'hex')) {
      checkMembers(v, ['hex'], 'hex');
      return hex(v.hex);
    }
    if (has(v, 'repeat')) {
      const r = v.repeat;
      checkMembers(r, ['hex', 'string', 'count'], 'repeat');
      const unit = has(r, 'hex') ? hex(r.hex) : Buffer.from(r.string, 'utf8');
      return Buffer.concat(Array(Number(num(r.count))).fill(unit));
    }
    if (has(v, 'concat')) return Buffer.concat(v.concat.map(bstr));
    if (has(v, 'tuple')) return tupleEncode(v.tuple);
  }
  throw new Broken(`not a byte string: ${JSON.stringify(v)}`);
}

function hex(h) {
  if (h.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(h)) throw new Broken(`bad hex ${h}`);
  return Buffer.from(h, 'hex');
}

const optBstr = (v) => (v === undefined || v === null ? null : bstr(v));

/* Every integer as a BigInt (64-bit exact). */
function num(v) {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^-?[0-9]+$/.test(v)) return BigInt(v);
  throw new Broken(`not a number: ${JSON.stringify(v)}`);
}

function fnum(v) {
  if (typeof v === 'number') return v;
  const special = { nan: NaN, inf: Infinity, '-inf': -Infinity };
  if (has(special, v)) return special[v];
  const f = Number(v);
  if (Number.isNaN(f)) throw new Broken(`not a float: ${v}`);
  return f;
}

/* A part as the addon's tuple codec takes it. */
function tuplePart(p) {
  checkMembers(p, ['bytes_hex', 'string', 'string_hex', 'int', 'float', 'bool'], 'part');
  if (has(p, 'bytes_hex')) return hex(p.bytes_hex);
  if (has(p, 'string')) return p.string;
  if (has(p, 'string_hex')) return { string: hex(p.string_hex) };
  if (has(p, 'int')) return num(p.int);
  if (has(p, 'float')) return fnum(p.float);
  if (has(p, 'bool')) return !!p.bool;
  throw new Broken(`bad tuple part ${JSON.stringify(p)}`);
}

function tupleEncode(parts) {
  return native.bittw_tuple_encode(parts.map(tuplePart));
}

function name(v) {
  const b = bstr(v);
  if (b.includes(0)) throw new Broken('a name holds a NUL byte');
  return b;
}

const optText = (v) => (v === undefined || v === null ? null : name(v));

function kind(v) {
  if (v === undefined || v === null) return 0;
  if (typeof v === 'number') return v;
  if (!has(KINDS, v)) throw new Broken(`unknown kind ${v}`);
  return KINDS[v];
}

function reason(v) {
  return typeof v === 'string' ? REASONS[v] : Number(num(v));
}

/* Equality over the addon's values: numbers and bigints by value, Buffers
 * by bytes, arrays element by element. */
function same(a, b) {
  if ((typeof a === 'bigint' || typeof a === 'number') && (typeof b === 'bigint' || typeof b === 'number')) {
    return BigInt(a) === BigInt(b);
  }
  if (Buffer.isBuffer(a) && Buffer.isBuffer(b)) return a.equals(b);
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => same(x, b[i]));
  return a === b;
}

function show(v) {
  if (Buffer.isBuffer(v)) return `<${v.toString('hex')}>`;
  if (typeof v === 'bigint') return v.toString();
  if (Array.isArray(v)) return `[${v.map(show).join(', ')}]`;
  return JSON.stringify(v);
}

function eq(what, got, want) {
  if (!same(got, want)) throw new Mismatch(`${what}: expected ${show(want)}, got ${show(got)}`);
}

function fillKeys(prefix, count, width) {
  const out = [];
  for (let i = 0n; i < count; i++) {
    out.push(Buffer.concat([prefix, Buffer.from(i.toString().padStart(Number(width), '0'))]));
  }
  return out;
}

function expandCopies(items) {
  const out = [];
  for (const it of items) {
    if (it && typeof it === 'object' && has(it, 'copies')) {
      for (let i = 0n; i < num(it.copies); i++) out.push(it.of);
    } else {
      out.push(it);
    }
  }
  return out;
}

module.exports = {
  STATUS, STATUS_NAME, KINDS, REASONS, Broken, Mismatch, checkMembers, has, bstr, optBstr, num, fnum, tuplePart,
  tupleEncode, name, optText, kind, reason, same, show, eq, fillKeys, expandCopies,
};
