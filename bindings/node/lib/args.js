'use strict';
// The argument forms every call shares, with the errors of bindings/ERRORS.md
// (second table): an options object refuses names its call does not have;
// a duration is a number of milliseconds; an absolute time is a Date (and
// comes back as one); a signal is an AbortSignal. What the core checks (a
// negative TTL, a lease of 0) it still checks: these only refuse what cannot
// reach the C call as meant.
const { invalid } = require('./errors');

const I64_MIN = -(2n ** 63n);
const I64_MAX = 2n ** 63n - 1n;
const DATE_MAX = 8.64e15; // the latest time a Date holds (ECMA-262), ms

/* The type of v as the messages name it. */
function typeName(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') {
    const c = v.constructor && v.constructor.name;
    return c && c !== 'Object' ? c : 'an object';
  }
  return typeof v;
}

/* An integer within int64, else InvalidArgument (number or bigint). */
function checkInt64(v, what) {
  const big = typeof v === 'bigint' ? v : BigInt(v);
  if (big < I64_MIN || big > I64_MAX) throw invalid(`${what}: integer ${big} is outside the int64 range`);
  return v;
}

const NONE = Object.freeze({});

/* The options object of `call` ({} when not given), every name checked
 * against `names`. */
function options(call, o, names) {
  if (o === undefined || o === null) return NONE;
  if (typeof o !== 'object' || Array.isArray(o)) throw new TypeError(`${call}: options: ${typeName(o)} is not an object`);
  for (const k in o) {
    if (!names.includes(k)) throw new TypeError(`${call}: unknown option '${k}' (options: ${names.join(', ')})`);
  }
  return o;
}

/* A duration: a number (or bigint) of whole milliseconds; dflt when not
 * given. */
function duration(v, what, dflt = 0) {
  if (v === undefined || v === null) return dflt;
  if (typeof v === 'bigint') return checkInt64(v, what);
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) {
      throw new TypeError(`${what}: ${Number.isFinite(v) ? `number ${v}` : String(v)} is not a whole number of milliseconds`);
    }
    return checkInt64(v, what);
  }
  const hint = v instanceof Date ? ' (a duration; absolute times are Dates)' : '';
  throw new TypeError(`${what}: ${typeName(v)} is not a number of milliseconds${hint}`);
}

/* An absolute time: a Date, as ms since the epoch; 0 (the core's "none" or
 * "default") when not given and optional. */
function time(v, what, optional = true) {
  if (optional && (v === undefined || v === null)) return 0;
  if (v instanceof Date) {
    const t = v.getTime();
    if (Number.isNaN(t)) throw new TypeError(`${what}: an invalid Date is not a time`);
    return t;
  }
  const hint = typeof v === 'number' || typeof v === 'bigint' ? ' (absolute times are Dates; durations are numbers)' : '';
  throw new TypeError(`${what}: ${typeName(v)} is not a Date${hint}`);
}

/* A time from the core (ms, number or bigint) as a Date; past what a Date
 * holds (a saturated time, which never comes) the latest Date. */
function date(ms) {
  const n = Number(ms);
  return new Date(n > DATE_MAX ? DATE_MAX : n);
}

/* The same, null for 0 (the core's "none"). */
function optDate(ms) {
  return ms === 0 || ms === 0n ? null : date(ms);
}

/* An integer count or identity as given (the addon checks its range), or
 * a TypeError naming it. */
function integer(v, what) {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  throw new TypeError(`${what}: ${typeof v === 'number' ? `number ${v}` : typeName(v)} is not an integer`);
}

/* The signal option: an AbortSignal, or null when not given. */
function signalOf(call, s) {
  if (s === undefined || s === null) return null;
  if (typeof s !== 'object' || typeof s.aborted !== 'boolean' || typeof s.addEventListener !== 'function') {
    throw new TypeError(`${call}: signal: ${typeName(s)} is not an AbortSignal`);
  }
  return s;
}

module.exports = { typeName, checkInt64, options, duration, time, date, optDate, integer, signalOf, DATE_MAX };
