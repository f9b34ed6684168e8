'use strict';
// The namespaces of a store (kv, queue, lease, outbox, budget, schedule,
// clock), written once for both APIs: each method names the raw call, its
// arguments and how to read the result, and the store's `_call` runs it
// synchronously (Store) or as a Promise (AsyncStore); `_wait` does the same
// for a call that may wait, under its AbortSignal (lib/cancel.js).
//
// Units (README): every duration is a number of milliseconds, every absolute
// time a Date, in and out. Every options object is checked: a name its call
// does not have is a TypeError (bindings/ERRORS.md).
const { encodeKey, optKey, encodeValue } = require('./values');
const { options, duration, time, date, optDate, integer, signalOf, typeName } = require('./args');
const M = require('./model');

const NOTFOUND = 1;
const EXISTS = 2;
const DENIED = 3;
const REASONS = { any: 0, poison: 1, invalid: 2 };
const status = (r) => (typeof r === 'number' ? r : r[0]);

// The option names of each call that takes options (the names listed in
// the TypeError of an unknown one).
const OPTIONS = {
  'kv.set': ['ttl'],
  'kv.add': ['ttl'],
  'kv.increment': ['ttl'],
  'kv.page': ['prefix', 'start', 'end', 'limit', 'reverse', 'cursor'],
  'kv.list': ['prefix', 'start', 'end', 'limit', 'reverse', 'cursor'],
  'queue.enqueue': ['delay', 'maxAttempts', 'dedupKey', 'priority'],
  'queue.dequeue': ['limit', 'lease', 'wait', 'signal'],
  'queue.ack': ['result'],
  'queue.nack': ['delay'],
  'queue.deadList': ['after', 'limit'],
  'queue.consume': ['prefetch', 'limit', 'lease', 'wait', 'signal'],
  'budget.take': ['capacity', 'refill', 'period', 'n'],
  'schedule.upsert': ['firstRunAt', 'cron', 'topic', 'maxAttempts', 'priority'],
  'pubsub.subscribe': ['signal'],
  'subscription.next': ['signal'],
  'atomic.set': ['ttl'],
  'atomic.enqueue': ['delay', 'maxAttempts', 'dedupKey', 'priority'],
  'atomic.queueAck': ['result'],
  'atomic.queueNack': ['delay'],
};
const opts = (call, o) => options(call, o, OPTIONS[call]);
const ttlOf = (call, o) => duration(opts(call, o).ttl, 'ttl');
/* An ack's {result}: [bytes, kind], or null for none (undefined). */
function resultOf(call, o) {
  const { result } = opts(call, o);
  return result === undefined ? null : encodeValue(result, 'result');
}

class KV {
  constructor(s) { this._s = s; }

  get(key) {
    return this._s._call('bitt_kv_get', [encodeKey(key)], (r) => M.entry(r[1]));
  }

  set(key, value, o) {
    const [data, kind] = encodeValue(value);
    return this._s._call('bitt_kv_set', [encodeKey(key), data, kind, ttlOf('kv.set', o)], (r) => r[1]);
  }

  /* The new version, or null when a live value was there. */
  add(key, value, o) {
    const [data, kind] = encodeValue(value);
    return this._s._call('bitt_kv_add', [encodeKey(key), data, kind, ttlOf('kv.add', o)],
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
    return this._s._call('bitt_kv_increment', [encodeKey(key), integer(delta, 'delta'), ttlOf('kv.increment', o)],
      (r) => r[1]);
  }

  getMany(keys) {
    if (!Array.isArray(keys)) throw new TypeError(`keys: ${typeName(keys)} is not an array of keys`);
    return this._s._call('bittw_kv_get_many', [keys.map((k) => encodeKey(k))], (r) => r[1].map(M.entry));
  }

  /* One page: {entries, cursor} (cursor null on the last page). */
  page(o) {
    return this._page(opts('kv.page', o));
  }

  _page(o) {
    const { prefix, start, end, limit = 0, reverse = false, cursor = null } = o;
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

  /* The new id (or the id of the live message holding dedupKey). A higher
   * `priority` (an int32, default 0) is claimed first. */
  enqueue(topic, payload, o) {
    const { delay, maxAttempts = 0, dedupKey, priority = 0 } = opts('queue.enqueue', o);
    const [data, kind] = encodeValue(payload, 'payload');
    return this._s._call('bittw_queue_enqueue2',
      [topic, data, kind, duration(delay, 'delay'), maxAttempts, optKey(dedupKey, 'dedupKey'), priority],
      (r) => r[1]);
  }

  /* Up to `limit` messages of `topic`, or of any of an array of topics (1
   * to 64 distinct names; each message names its own), waiting up to `wait`
   * ms for a first one; an abort of `signal` ends the wait (AbortError)
   * with nothing leased. */
  dequeue(topic, o) {
    const { limit = 1, lease, wait, signal } = opts('queue.dequeue', o);
    const several = Array.isArray(topic);
    return this._s._wait(several ? 'bittw_queue_dequeue_topics' : 'bittw_queue_dequeue_cancel',
      [topic, limit, duration(lease, 'lease'), duration(wait, 'wait')], signalOf('queue.dequeue', signal),
      (r) => M.messages(r[1]), (msgs) => this._giveBack(msgs));
  }

  /* Message `id` of `topic` as it is now (state, attempts, dueAt, lastError,
   * priority; never a token), or null when the topic holds no such message. */
  get(topic, id) {
    return this._s._call('bitt_queue_get', [topic, id], (r) => M.message(r[1]));
  }

  /* Deletes a pending, delayed or leased message (its delivery's ack, nack,
   * extend and snooze are then StaleToken): whether it was there. */
  cancel(topic, id) {
    return this._s._call('bitt_queue_cancel', [topic, id], (r) => status(r) === 0);
  }

  /* Makes a pending or delayed message claimable delayMs from now (0: at
   * once), attempts and error kept: whether it applied (not to a live lease). */
  reschedule(topic, id, delayMs = 0) {
    return this._s._call('bitt_queue_reschedule', [topic, id, duration(delayMs, 'delayMs')],
      (r) => status(r) === 0);
  }

  /* What a dequeue got as its signal aborted, given back unseen. */
  _giveBack(msgs) {
    return Promise.all(msgs.map((m) => Promise.resolve()
      .then(() => this.snooze(m.topic, m.id, m.token, 0))
      .catch(() => {}))); // not given back: it comes back when its lease ends
  }

  /* Finishes a delivery; {result} (any value a payload can be; undefined:
   * none) is kept with the message, done, under queue_done_retention. */
  ack(msg, o) {
    const r = resultOf('queue.ack', o);
    if (r === null) return this._s._call('bitt_queue_ack', [msg.topic, msg.id, msg.token], () => undefined);
    return this._s._call('bitt_queue_ack_result', [msg.topic, msg.id, msg.token, r[0], r[1]], () => undefined);
  }

  /* Finishes many deliveries of topic in one call (one transaction): each
   * a message from dequeue or an [id, token] pair. One boolean per
   * delivery: true when acked, false when its token was stale (that
   * message is left alone). */
  ackMany(topic, deliveries) {
    if (!Array.isArray(deliveries)) {
      throw new TypeError(`deliveries: ${typeName(deliveries)} is not an array of messages or [id, token] pairs`);
    }
    const pairs = deliveries.map((d) => (Array.isArray(d) ? d : [d.id, d.token]));
    return this._s._call('bitt_queue_ack_many', [topic, pairs], (r) => r[1].map((s) => s === 0));
  }

  nack(msg, error = null, o) {
    const { delay } = opts('queue.nack', o);
    return this._s._call('bitt_queue_nack', [msg.topic, msg.id, msg.token, error, duration(delay, 'delay', -1)],
      () => undefined);
  }

  extend(msg, lease) {
    return this._s._call('bitt_queue_extend', [msg.topic, msg.id, msg.token, duration(lease, 'lease')],
      () => undefined);
  }

  /* Gives a delivery back unseen, claimable again delayMs from now: no
   * attempt used, no error recorded (unlike nack). */
  snooze(topic, id, token, delayMs = 0) {
    return this._s._call('bitt_queue_snooze', [topic, id, token, duration(delayMs, 'delayMs')], () => undefined);
  }

  deadList(topic, o) {
    const { after = 0, limit = 0 } = opts('queue.deadList', o);
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
        oldestPendingAt: optDate(t[4]), done: M.num(t[5]) };
    });
  }

  /* Drops the done messages and dead letters of topic (null: of every
   * topic) that outlived their retention: how many. */
  purge(topic = null) {
    return this._s._call('bitt_queue_purge', [topic], (r) => M.num(r[1]));
  }
}

class Leases {
  constructor(s) { this._s = s; }

  /* A Lease {name, owner, epoch, expiresAt}, or null while another holds it. */
  acquire(name, owner, ttl) {
    return this._s._call('bitt_lease_acquire', [name, owner, duration(ttl, 'ttl')],
      (r) => (r[0] === 0 ? new M.Lease(String(name), String(owner), r[1], r[2]) : null));
  }

  /* The new expiry time (a Date). */
  renew(name, owner, epoch, ttl) {
    return this._s._call('bitt_lease_renew', [name, owner, epoch, duration(ttl, 'ttl')], (r) => date(r[1]));
  }

  release(name, owner, epoch) {
    return this._s._call('bitt_lease_release', [name, owner, epoch], () => undefined);
  }

  get(name) {
    return this._s._call('bitt_lease_get', [name], (r) => (r[0] === 0
      ? new M.Lease(String(name), r[1].toString('utf8'), r[2], r[3]) : null));
  }
}

class Outbox {
  constructor(s) { this._s = s; }

  append(stream, event) {
    const [data, kind] = encodeValue(event, 'event');
    return this._s._call('bitt_outbox_append', [stream, data, kind], (r) => r[1]);
  }

  pending(stream, limit = 0) {
    return this._s._call('bitt_outbox_pending', [stream, limit], (r) => M.messages(r[1]));
  }

  ack(stream, seqs) {
    return this._s._call('bitt_outbox_ack', [stream, seqs], (r) => M.num(r[1]));
  }

  /* nextAttemptAt: a Date, or null for none. */
  fail(stream, seq, error = null, nextAttemptAt = null) {
    return this._s._call('bitt_outbox_fail', [stream, seq, error, time(nextAttemptAt, 'nextAttemptAt')],
      (r) => status(r) === 0);
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
    const { capacity, refill, period, n = 1 } = opts('budget.take', o);
    return this._s._call('bitt_budget_take', [name, capacity, refill, duration(period, 'period'), n],
      (r) => (r[0] === 0 ? 0 : M.num(r[1])));
  }
}

class Schedules {
  constructor(s) { this._s = s; }

  /* Every `interval` ms, or at the minutes of {cron} (a 5-field UTC
   * expression; interval then null or 0); firstRunAt (a Date) when new or
   * its cadence changed (default: now + interval, or the first cron minute
   * after now). {topic}: each occurrence's claim enqueues the payload there
   * (with maxAttempts and priority). */
  upsert(key, interval, payload = Buffer.alloc(0), o) {
    const { firstRunAt, cron = null, topic = null, maxAttempts = 0, priority = 0 } = opts('schedule.upsert', o);
    const [data, kind] = encodeValue(payload, 'payload');
    if (cron !== null && typeof cron !== 'string') throw new TypeError(`cron: ${typeName(cron)} is not a string`);
    return this._s._call('bittw_schedule_set',
      [key, duration(interval, 'interval'), data, kind, cron, time(firstRunAt, 'firstRunAt'), topic,
        maxAttempts, priority], () => undefined);
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

  /* A manual clock at `now` (a Date), moved only by advance(). */
  setManual(now) {
    return this._s._call('bitt_clock_set_manual', [time(now, 'now', false)], () => undefined);
  }

  advance(ms) {
    return this._s._call('bitt_clock_advance', [duration(ms, 'ms')], () => undefined);
  }

  useSystem() {
    return this._s._call('bitt_clock_use_system', [], () => undefined);
  }

  /* The store's time, a Date. */
  now() {
    return this._s._call('bitt_clock_now', [], (r) => date(r[1]));
  }
}

/* A transaction handle dropped without commit() or close() is freed when
 * collected. */
const txns = new FinalizationRegistry(({ native, txn }) => native.bitt_txn_free(txn));
// `using` / `await using`: Node 20 has both symbols; on Node 18 the ones
// Node's own objects use (Symbol.for('nodejs.dispose')), as TypeScript's
// and the polyfills' Symbol.dispose are there.
const dispose = Symbol.dispose ?? Symbol.for('nodejs.dispose');
const asyncDispose = Symbol.asyncDispose ?? Symbol.for('nodejs.asyncDispose');

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

  /* `using tx = store.atomic()`: dropped at the end of the block unless
   * committed (commit spends it). */
  [dispose]() {
    this.close();
  }

  check(key, version) {
    this._n.bitt_txn_check(this._txn, encodeKey(key), version || 0);
    return this;
  }

  set(key, value, o) {
    const [data, kind] = encodeValue(value);
    this._n.bitt_txn_set(this._txn, encodeKey(key), data, kind, ttlOf('atomic.set', o));
    return this;
  }

  delete(key) {
    this._n.bitt_txn_delete(this._txn, encodeKey(key));
    return this;
  }

  sum(key, delta) {
    this._n.bitt_txn_sum(this._txn, encodeKey(key), integer(delta, 'delta'));
    return this;
  }

  enqueue(topic, payload, o) {
    const { delay, maxAttempts = 0, dedupKey, priority = 0 } = opts('atomic.enqueue', o);
    const [data, kind] = encodeValue(payload, 'payload');
    this._n.bittw_txn_enqueue2(this._txn, topic, data, kind, duration(delay, 'delay'), maxAttempts,
      optKey(dedupKey, 'dedupKey'), priority);
    return this;
  }

  /* The queue ops of store.queue, applied with the commit. A delivery op
   * (ack, nack, snooze, extend) needs its lease live and its token current
   * when the commit runs, else the commit fails (StaleToken) and writes
   * nothing; cancel and reschedule do nothing to a message they do not
   * apply to. At most one of these per message id in a transaction. */
  queueAck(msg, o) {
    const r = resultOf('atomic.queueAck', o);
    if (r === null) this._n.bitt_txn_queue_ack(this._txn, msg.topic, msg.id, msg.token);
    else this._n.bitt_txn_queue_ack_result(this._txn, msg.topic, msg.id, msg.token, r[0], r[1]);
    return this;
  }

  queueNack(msg, error = null, o) {
    const { delay } = opts('atomic.queueNack', o);
    this._n.bitt_txn_queue_nack(this._txn, msg.topic, msg.id, msg.token, error, duration(delay, 'delay', -1));
    return this;
  }

  queueSnooze(topic, id, token, delayMs = 0) {
    this._n.bitt_txn_queue_snooze(this._txn, topic, id, token, duration(delayMs, 'delayMs'));
    return this;
  }

  queueExtend(msg, lease) {
    this._n.bitt_txn_queue_extend(this._txn, msg.topic, msg.id, msg.token, duration(lease, 'lease'));
    return this;
  }

  queueCancel(topic, id) {
    this._n.bitt_txn_queue_cancel(this._txn, topic, id);
    return this;
  }

  queueReschedule(topic, id, delayMs = 0) {
    this._n.bitt_txn_queue_reschedule(this._txn, topic, id, duration(delayMs, 'delayMs'));
    return this;
  }

  fence(name, owner, epoch) {
    this._n.bitt_txn_fence(this._txn, name, owner, epoch);
    return this;
  }

  outboxAppend(stream, event) {
    const [data, kind] = encodeValue(event, 'event');
    this._n.bitt_txn_outbox_append(this._txn, stream, data, kind);
    return this;
  }
}

module.exports = { resultOf, KV, Queue, Leases, Outbox, Budgets, Schedules, Clock, AtomicBase, NOTFOUND, EXISTS, DENIED,
  OPTIONS, opts, ttlOf, dispose, asyncDispose };
