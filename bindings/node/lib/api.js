'use strict';
// The namespaces of a store (kv, queue, lease, outbox, pubsub, budget,
// schedule, clock), written once for both APIs: each method names the raw
// call, its arguments and how to read the result, and the store's `_call`
// runs it synchronously (Store) or as a Promise (AsyncStore).
const { encodeKey, optKey, encodeValue } = require('./values');
const M = require('./model');

const NOTFOUND = 1;
const EXISTS = 2;
const DENIED = 3;
const REASONS = { any: 0, poison: 1, invalid: 2 };
const status = (r) => (typeof r === 'number' ? r : r[0]);
const ms = (v, what) => {
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' && typeof v !== 'bigint') throw new TypeError(`${what} must be a number of milliseconds`);
  return v;
};
const opts = (o) => {
  if (o === undefined || o === null) return {};
  if (typeof o !== 'object') throw new TypeError('options must be an object');
  return o;
};

class KV {
  constructor(s) { this._s = s; }

  get(key) {
    return this._s._call('bitt_kv_get', [encodeKey(key)], (r) => M.entry(r[1]));
  }

  set(key, value, o) {
    const [data, kind] = encodeValue(value);
    return this._s._call('bitt_kv_set', [encodeKey(key), data, kind, ms(opts(o).ttl, 'ttl')], (r) => r[1]);
  }

  /* The new version, or null when a live value was there. */
  add(key, value, o) {
    const [data, kind] = encodeValue(value);
    return this._s._call('bitt_kv_add', [encodeKey(key), data, kind, ms(opts(o).ttl, 'ttl')],
      (r) => (r[0] === 0 ? r[1] : null));
  }

  delete(key) {
    return this._s._call('bitt_kv_delete', [encodeKey(key)], (r) => r === 0);
  }

  take(key) {
    return this._s._call('bitt_kv_take', [encodeKey(key)], (r) => M.entry(r[1]));
  }

  /* The new counter value (bigint). */
  increment(key, delta = 1n, o) {
    return this._s._call('bitt_kv_increment', [encodeKey(key), delta, ms(opts(o).ttl, 'ttl')], (r) => r[1]);
  }

  getMany(keys) {
    if (!Array.isArray(keys)) throw new TypeError('keys must be an array');
    return this._s._call('bittw_kv_get_many', [keys.map((k) => encodeKey(k))], (r) => r[1].map(M.entry));
  }

  /* One page: {entries, cursor} (cursor null on the last page). */
  page(o) {
    const { prefix, start, end, limit = 0, reverse = false, cursor = null } = opts(o);
    return this._s._call('bittw_kv_list',
      [optKey(prefix, 'prefix'), optKey(start, 'start'), optKey(end, 'end'), limit, !!reverse, cursor],
      (r) => ({ entries: r[1].map(M.entry), cursor: r[2] }));
  }

  purgeExpired() {
    return this._s._call('bitt_kv_purge_expired', [], (r) => M.num(r[1]));
  }
}

class Queue {
  constructor(s) { this._s = s; }

  /* The new id (or the id of the live message holding dedupKey). */
  enqueue(topic, payload, o) {
    const { delay, maxAttempts = 0, dedupKey } = opts(o);
    const [data, kind] = encodeValue(payload);
    return this._s._call('bittw_queue_enqueue',
      [topic, data, kind, ms(delay, 'delay'), maxAttempts, optKey(dedupKey, 'dedupKey')], (r) => r[1]);
  }

  /* Up to `limit` messages, waiting up to `wait` ms for a first one. */
  dequeue(topic, o) {
    const { limit = 1, lease, wait } = opts(o);
    return this._s._call('bittw_queue_dequeue', [topic, limit, ms(lease, 'lease'), ms(wait, 'wait')],
      (r) => M.messages(r[1]));
  }

  ack(msg) {
    return this._s._call('bitt_queue_ack', [msg.topic, msg.id, msg.token], () => undefined);
  }

  /* Finishes many deliveries of topic in one call (one transaction): each
   * a message from dequeue or an [id, token] pair. One boolean per
   * delivery: true when acked, false when its token was stale (that
   * message is left alone). */
  ackMany(topic, deliveries) {
    if (!Array.isArray(deliveries)) throw new TypeError('deliveries must be an array');
    const pairs = deliveries.map((d) => (Array.isArray(d) ? d : [d.id, d.token]));
    return this._s._call('bitt_queue_ack_many', [topic, pairs], (r) => r[1].map((s) => s === 0));
  }

  nack(msg, error = null, o) {
    const { delay = -1 } = opts(o);
    return this._s._call('bitt_queue_nack', [msg.topic, msg.id, msg.token, error, delay], () => undefined);
  }

  extend(msg, lease) {
    return this._s._call('bitt_queue_extend', [msg.topic, msg.id, msg.token, lease], () => undefined);
  }

  deadList(topic, o) {
    const { after = 0, limit = 0 } = opts(o);
    return this._s._call('bitt_queue_dead_list', [topic, after, limit], (r) => M.messages(r[1]));
  }

  deadRetry(topic, id = 0) {
    return this._s._call('bitt_queue_dead_retry', [topic, id], (r) => M.num(r[1]));
  }

  deadDelete(topic, id = 0) {
    return this._s._call('bitt_queue_dead_delete', [topic, id], (r) => M.num(r[1]));
  }

  stats(topic) {
    return this._s._call('bittw_queue_stats', [topic], (r) => {
      const t = r[1];
      return { pending: M.num(t[0]), delayed: M.num(t[1]), processing: M.num(t[2]), dead: M.num(t[3]),
        oldestPendingAt: M.num(t[4]) };
    });
  }
}

class Leases {
  constructor(s) { this._s = s; }

  /* {name, owner, epoch, expiresAt}, or null while another holds it. */
  acquire(name, owner, ttl) {
    return this._s._call('bitt_lease_acquire', [name, owner, ttl],
      (r) => (r[0] === 0 ? { name: String(name), owner: String(owner), epoch: r[1], expiresAt: M.num(r[2]) } : null));
  }

  /* The new expiry time. */
  renew(name, owner, epoch, ttl) {
    return this._s._call('bitt_lease_renew', [name, owner, epoch, ttl], (r) => M.num(r[1]));
  }

  release(name, owner, epoch) {
    return this._s._call('bitt_lease_release', [name, owner, epoch], () => undefined);
  }

  get(name) {
    return this._s._call('bitt_lease_get', [name], (r) => (r[0] === 0
      ? { name: String(name), owner: r[1].toString('utf8'), epoch: r[2], expiresAt: M.num(r[3]) } : null));
  }
}

class Outbox {
  constructor(s) { this._s = s; }

  append(stream, event) {
    const [data, kind] = encodeValue(event);
    return this._s._call('bitt_outbox_append', [stream, data, kind], (r) => r[1]);
  }

  pending(stream, limit = 0) {
    return this._s._call('bitt_outbox_pending', [stream, limit], (r) => M.messages(r[1]));
  }

  ack(stream, seqs) {
    return this._s._call('bitt_outbox_ack', [stream, seqs], (r) => M.num(r[1]));
  }

  fail(stream, seq, error = null, nextAttemptAt = 0) {
    return this._s._call('bitt_outbox_fail', [stream, seq, error, nextAttemptAt], (r) => status(r) === 0);
  }

  park(stream, seq, reason, error = null) {
    return this._s._call('bitt_outbox_park', [stream, seq, reasonOf(reason), error], (r) => status(r) === 0);
  }

  parked(stream, reason = 0, limit = 0) {
    return this._s._call('bitt_outbox_parked', [stream, reasonOf(reason), limit], (r) => M.messages(r[1]));
  }

  retry(stream, seqs = null) {
    return this._s._call('bitt_outbox_retry', [stream, seqs], (r) => M.num(r[1]));
  }

  discard(stream, seqs = null) {
    return this._s._call('bitt_outbox_discard', [stream, seqs], (r) => M.num(r[1]));
  }

  counts(stream) {
    return this._s._call('bitt_outbox_counts', [stream], (r) => ({ pending: M.num(r[1]), parked: M.num(r[2]) }));
  }
}

function reasonOf(r) {
  return typeof r === 'string' && r in REASONS ? REASONS[r] : r;
}

class Budgets {
  constructor(s) { this._s = s; }

  /* 0 when taken, else the ms to wait until `n` tokens are there. */
  take(name, o) {
    const { capacity, refill, period, n = 1 } = opts(o);
    return this._s._call('bitt_budget_take', [name, capacity, refill, period, n],
      (r) => (r[0] === 0 ? 0 : M.num(r[1])));
  }
}

class Schedules {
  constructor(s) { this._s = s; }

  upsert(key, interval, payload = Buffer.alloc(0), o) {
    const { firstRunAt = 0 } = opts(o);
    const [data, kind] = encodeValue(payload);
    return this._s._call('bitt_schedule_upsert', [key, interval, data, kind, firstRunAt], () => undefined);
  }

  claim(prefix = null) {
    return this._s._call('bitt_schedule_claim', [prefix], (r) => M.schedule(r[1]));
  }

  get(key) {
    return this._s._call('bitt_schedule_get', [key], (r) => M.schedule(r[1]));
  }

  list() {
    return this._s._call('bittw_schedule_list', [], (r) => r[1].map((t) => new M.Schedule(t)));
  }

  delete(key) {
    return this._s._call('bitt_schedule_delete', [key], (r) => r === 0);
  }
}

class Clock {
  constructor(s) { this._s = s; }

  setManual(nowMs) {
    return this._s._call('bitt_clock_set_manual', [nowMs], () => undefined);
  }

  advance(ms_) {
    return this._s._call('bitt_clock_advance', [ms_], () => undefined);
  }

  useSystem() {
    return this._s._call('bitt_clock_use_system', [], () => undefined);
  }

  now() {
    return this._s._call('bitt_clock_now', [], (r) => M.num(r[1]));
  }
}

/* A transaction handle dropped without commit() or close() is freed when
 * collected. */
const txns = new FinalizationRegistry(({ native, txn }) => native.bitt_txn_free(txn));

/* Adds actions to a transaction handle: in-memory work, plain calls for
 * both APIs; commit is the store's (sync or Promise) and spends it. */
class AtomicBase {
  constructor(native, txn) {
    this._n = native;
    this._txn = txn;
    this.version = null;
    txns.register(this, { native, txn }, this);
  }

  /* Drops the transaction (idempotent). */
  close() {
    if (this._txn !== null) {
      txns.unregister(this);
      this._n.bitt_txn_free(this._txn);
      this._txn = null;
    }
  }

  check(key, version) {
    this._n.bitt_txn_check(this._txn, encodeKey(key), version || 0);
    return this;
  }

  set(key, value, o) {
    const [data, kind] = encodeValue(value);
    this._n.bitt_txn_set(this._txn, encodeKey(key), data, kind, ms(opts(o).ttl, 'ttl'));
    return this;
  }

  delete(key) {
    this._n.bitt_txn_delete(this._txn, encodeKey(key));
    return this;
  }

  sum(key, delta) {
    this._n.bitt_txn_sum(this._txn, encodeKey(key), delta);
    return this;
  }

  enqueue(topic, payload, o) {
    const { delay, maxAttempts = 0, dedupKey } = opts(o);
    const [data, kind] = encodeValue(payload);
    this._n.bittw_txn_enqueue(this._txn, topic, data, kind, ms(delay, 'delay'), maxAttempts,
      optKey(dedupKey, 'dedupKey'));
    return this;
  }

  fence(name, owner, epoch) {
    this._n.bitt_txn_fence(this._txn, name, owner, epoch);
    return this;
  }

  outboxAppend(stream, event) {
    const [data, kind] = encodeValue(event);
    this._n.bitt_txn_outbox_append(this._txn, stream, data, kind);
    return this;
  }
}

module.exports = { KV, Queue, Leases, Outbox, Budgets, Schedules, Clock, AtomicBase, NOTFOUND, EXISTS, DENIED, ms, opts };
