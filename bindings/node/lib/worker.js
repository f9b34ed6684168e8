'use strict';
// bitt.Worker: runs a handler on the messages of a topic, `concurrency` at a
// time. Orchestration only over the queue calls the store already has
// (dequeue with wait and a signal, ack, nack, extend, snooze): attempts,
// dead letters, backoff and token checks are the C core's. This file only
// decides when to call them.
const { EventEmitter } = require('events');
const errors = require('./errors');
const { options, duration, typeName } = require('./args');
const { AckGroup } = require('./consumer');
const { encodeValue } = require('./values');
const { asyncDispose } = require('./api');

const NAMES = ['concurrency', 'prefetch', 'lease', 'heartbeat', 'wait'];
const DEQUEUE_MAX = 1000; // BITT_DEQUEUE_MAX: the most one dequeue claims
const ETOKEN = -14; // the lease ended or moved on: the delivery is no longer ours
const EUSAGE = -12;
// Errors a retry cannot mend (a bad topic, a closed store, a backend without
// the call): the worker stops with them instead of backing off forever.
const PERMANENT = new Set([-1, EUSAGE, -13]);
const BACKOFF_MIN = 100; // ms after a failed dequeue, doubled up to BACKOFF_MAX
const BACKOFF_MAX = 5000;

/* Thrown (or returned) by a handler: give the message back unseen,
 * claimable again delayMs from now (queue.snooze: no attempt used). */
class Snooze extends Error {
  constructor(delayMs = 0) {
    const ms = duration(delayMs, 'delayMs');
    if (ms < 0) throw errors.invalid(`Snooze: delayMs: ${ms} is negative`);
    super(`snoozed for ${ms} ms`);
    this.delayMs = ms;
  }

  get name() {
    return 'Snooze';
  }
}

/* An integer option of at least min (dflt when not given). */
function count(v, what, min, dflt) {
  if (v === undefined || v === null) return dflt;
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    throw new TypeError(`Worker: ${what}: ${typeof v === 'number' ? `number ${v}` : typeName(v)} is not an integer`);
  }
  if (v < min) throw errors.invalid(`Worker: ${what}: ${v} is ${min === 1 ? 'not a positive integer' : 'negative'}`);
  return v;
}

/* A duration option of at least min ms (null when not given). */
function ms(v, what, min) {
  if (v === undefined || v === null) return null;
  const d = Number(duration(v, `Worker: ${what}`));
  if (d < min) throw errors.invalid(`Worker: ${what}: ${d} ms is ${min === 1 ? 'not positive' : 'negative'}`);
  return d;
}

/* Whether a handler's return value is kept as its ack's result: a value by
 * VALUES.md (a Buffer, a bigint, JSON), not undefined; else (a function, a
 * symbol, a cycle) only 'completed' gets it. Returns the encoded value or
 * null. */
function storedResult(value) {
  if (value === undefined) return null;
  try {
    return encodeValue(value, 'result');
  } catch (e) {
    return null;
  }
}
// What the store answers to a result it cannot keep: the job fails with it.
const RESULT_REFUSED = [-1, -3]; // BITT_EINVAL, BITT_ETOOLARGE

/* The text a nack records for what a handler threw. */
function errorText(e) {
  if (e instanceof Error) return e.message || e.name;
  try {
    return String(e);
  } catch {
    return typeName(e);
  }
}

function checkStore(store) {
  const { AsyncStore, Store } = require('./index'); // loaded by now (index.js requires this file)
  if (store instanceof AsyncStore) return;
  const hint = store instanceof Store ? ' (a Worker runs on bitt.openAsync()\'s store)' : '';
  throw new TypeError(`Worker: store: ${typeName(store)} is not an AsyncStore${hint}`);
}

class Worker extends EventEmitter {
  /* Starts at once: claims messages of topic and runs handler(message,
   * {signal}) on each; see the README's Worker section. */
  constructor(store, topic, handler, o) {
    super();
    checkStore(store);
    if (typeof topic !== 'string' && !Buffer.isBuffer(topic)) {
      throw new TypeError(`Worker: topic: ${typeName(topic)} is not a string or a Buffer`);
    }
    if (typeof handler !== 'function') throw new TypeError(`Worker: handler: ${typeName(handler)} is not a function`);
    const { concurrency, prefetch, lease, heartbeat, wait } = options('Worker', o, NAMES);
    this.topic = topic;
    this._store = store;
    this._handler = handler;
    this._n = count(concurrency, 'concurrency', 1, 1);
    this._p = count(prefetch, 'prefetch', 0, 0);
    this._lease = ms(lease, 'lease', 1); // null: the store's, read off the first delivery
    this._heartbeat = ms(heartbeat, 'heartbeat', 1); // null: lease / 3
    this._wait = ms(wait, 'wait', 1) ?? 1000; // never 0: a loop on an empty topic would spin
    this._acks = new AckGroup(store, topic);
    this._c = { claimed: 0, completed: 0, failed: 0, snoozed: 0, stalled: 0, released: 0 };
    this._buf = []; // claimed, not started
    this._running = new Set(); // jobs whose handler has not returned
    this._jobs = new Set(); // every job not ended (running, or writing its result)
    this._held = 0; // claimed and not ended: never above concurrency + prefetch
    this._halted = false;
    this._stopped = null;
    this._done = false;
    this._deadlines = [];
    this._ac = new AbortController(); // ends the dequeue in flight
    this._wake = null;
    store._consumers.add(this); // store.close() stops it (_close)
    this._loop = this._run();
  }

  /* A snapshot: claimed, completed, failed, snoozed, stalled, released, running. */
  get counters() {
    return Object.freeze({ ...this._c, running: this._running.size });
  }

  /* Stops claiming (the dequeue waiting is cancelled), gives back the
   * prefetched messages not started (snooze 0: no attempt used) and waits
   * for the handlers running; after `timeout` ms those still running are
   * given back the same way, their signals aborted and their results
   * ignored (counted as released). Resolves with the counters. */
  stop(o) {
    const { timeout } = options('worker.stop', o, ['timeout']);
    const limit = ms(timeout, 'timeout', 0);
    if (this._stopped === null) this._stopped = this._stop();
    if (limit !== null && !this._done) this._deadlines.push(setTimeout(() => this._releaseRunning(), limit));
    return this._stopped;
  }

  [asyncDispose]() {
    return this.stop().then(() => undefined);
  }

  /* store.close(): stops at once (as stop({timeout: 0})). */
  _close() {
    return this.stop({ timeout: 0 });
  }

  async _run() {
    let backoff = 0;
    while (!this._halted) {
      const room = Math.min(this._n + this._p - this._held, DEQUEUE_MAX);
      if (room <= 0) {
        await new Promise((resolve) => (this._wake = resolve));
        continue;
      }
      let batch;
      try {
        batch = await this._store.queue.dequeue(this.topic,
          { limit: room, lease: this._lease ?? undefined, wait: this._wait, signal: this._ac.signal });
      } catch (e) {
        if (this._halted) break;
        if (!(e.status === EUSAGE && this._store._closing)) this._report(e);
        if (e.status === undefined || PERMANENT.has(e.status)) { // not a store's error: a bug, not a blip
          this.stop();
          break;
        }
        backoff = Math.min(Math.max(backoff * 2, BACKOFF_MIN), BACKOFF_MAX);
        await new Promise((resolve) => {
          const t = setTimeout(resolve, backoff);
          this._wake = () => {
            clearTimeout(t);
            resolve();
          };
        });
        continue;
      }
      backoff = 0;
      if (batch.length === 0) continue;
      this._c.claimed += batch.length;
      this._held += batch.length;
      if (this._lease === null) await this._measure(batch[0]);
      this._buf.push(...batch);
      this._pump();
    }
  }

  /* The store's lease, when none was given: what the first delivery got
   * (its lease's end less the store's clock), for the heartbeat's extends. */
  async _measure(m) {
    try {
      const now = await this._store.clock.now();
      this._lease = Math.max(1, m.dueAt.getTime() - now.getTime());
    } catch (e) {
      this._report(e); // measured again with the next batch; no heartbeat meanwhile
    }
  }

  _wakeLoop() {
    const w = this._wake;
    this._wake = null;
    if (w) w();
  }

  _pump() {
    while (!this._halted && this._running.size < this._n && this._buf.length) this._start(this._buf.shift());
  }

  _start(msg) {
    const job = { msg, ac: new AbortController(), beat: null, extending: null, over: false, stalled: false,
      released: false, ended: false, settle: null };
    job.end = new Promise((resolve) => (job.settle = resolve));
    this._running.add(job);
    this._jobs.add(job);
    this._beat(job);
    this._work(job);
  }

  async _work(job) {
    let kind;
    let value;
    try {
      value = await this._handler(job.msg, { signal: job.ac.signal });
      kind = value instanceof Snooze ? 'snooze' : 'ok';
    } catch (e) {
      value = e;
      kind = e instanceof Snooze ? 'snooze' : 'fail';
    }
    job.over = true;
    clearTimeout(job.beat);
    this._running.delete(job);
    this._pump(); // the next handler starts while this result is written
    if (job.extending) await job.extending; // its answer may be the stall
    if (job.released) return; // given back at stop's deadline, which ends it
    if (!job.stalled) await this._finish(job, kind, value);
    this._end(job);
  }

  async _finish(job, kind, value) {
    const { msg } = job;
    const q = this._store.queue;
    try {
      const keep = kind === 'ok' ? storedResult(value) : null;
      if (keep !== null) {
        // one ack of its own: ackMany carries no results
        const refused = await q.ack(msg, { result: value }).then(() => null,
          (e) => { if (RESULT_REFUSED.includes(e.status)) return e; throw e; });
        if (refused === null) {
          this._c.completed++;
          this._emit('completed', msg, value);
        } else { // the store cannot keep it (too large, a counter out of range): a failure
          await q.nack(msg, errorText(refused));
          this._c.failed++;
          this._emit('failed', msg, refused);
        }
      } else if (kind === 'ok') {
        await this._acks.ack(msg);
        this._c.completed++;
        this._emit('completed', msg, value);
      } else if (kind === 'snooze') {
        await q.snooze(msg.topic, msg.id, msg.token, value.delayMs);
        this._c.snoozed++;
      } else {
        await q.nack(msg, errorText(value)); // no delay: the store's backoff
        this._c.failed++;
        this._emit('failed', msg, value);
      }
    } catch (e) {
      if (e.status === ETOKEN) this._stall(job, e);
      else this._report(e, msg); // left leased: it comes back when its lease ends
    }
  }

  /* Once per job: its claim no longer counts. */
  _end(job) {
    if (job.ended) return;
    job.ended = true;
    this._jobs.delete(job);
    this._held--;
    job.settle();
    this._wakeLoop();
  }

  /* The next renewal of a running job's lease, one heartbeat on. */
  _beat(job) {
    const every = this._heartbeat ?? (this._lease === null ? null : Math.max(1, Math.floor(this._lease / 3)));
    if (every === null || job.over || job.stalled || job.released) return;
    job.beat = setTimeout(() => {
      job.beat = null;
      if (job.over || job.stalled || job.released) return;
      job.extending = this._store.queue.extend(job.msg, this._lease).then(() => {}, (e) => {
        if (e.status === ETOKEN) this._stall(job, e);
        else this._report(e, job.msg); // tried again at the next heartbeat
      }).finally(() => {
        job.extending = null;
        this._beat(job);
      });
    }, every);
  }

  /* The delivery is no longer ours (ETOKEN): counted, its handler's signal
   * aborted, nothing acked or nacked for it. */
  _stall(job, e) {
    if (job.stalled) return;
    job.stalled = true;
    clearTimeout(job.beat);
    this._c.stalled++;
    job.ac.abort(e);
    this._emit('stalled', job.msg);
  }

  async _stop() {
    this._halted = true;
    this._ac.abort();
    this._wakeLoop();
    await this._loop;
    const left = this._buf.splice(0);
    await Promise.all(left.map((m) => this._handBack(m)));
    this._held -= left.length;
    await Promise.all([...this._jobs].map((j) => j.end));
    await this._acks.drain();
    this._done = true;
    for (const t of this._deadlines) clearTimeout(t);
    this._store._consumers.delete(this);
    return this.counters;
  }

  /* A claimed message not finished, given back unseen (snooze 0). */
  async _handBack(msg) {
    try {
      await this._store.queue.snooze(msg.topic, msg.id, msg.token, 0);
      this._c.released++;
    } catch (e) {
      if (e.status === ETOKEN) {
        this._c.stalled++; // its lease ran out meanwhile: nothing to give back
        this._emit('stalled', msg);
      }
      else this._report(e, msg);
    }
  }

  /* stop()'s deadline: the handlers still running are given back. */
  _releaseRunning() {
    for (const job of [...this._running]) {
      this._running.delete(job);
      if (job.stalled) {
        this._end(job); // not ours any more: nothing to give back
        continue;
      }
      job.released = true;
      clearTimeout(job.beat);
      job.ac.abort(errors.makeError(errors.ECANCELED, 'the worker stopped: this delivery was given back'));
      (async () => {
        if (job.extending) await job.extending;
        await this._handBack(job.msg);
        this._end(job);
      })();
    }
  }

  /* A hook's exception goes to 'error'; it never ends the loop. */
  _emit(name, ...args) {
    try {
      this.emit(name, ...args);
    } catch (e) {
      this._report(e);
    }
  }

  /* The worker's own errors: the 'error' listeners, else a process warning
   * (an 'error' event nobody listens to would throw). */
  _report(e, msg) {
    try {
      if (this.listenerCount('error') > 0) {
        this.emit('error', e, msg);
        return;
      }
    } catch (e2) {
      e = e2;
    }
    process.emitWarning(`bitt Worker on topic '${this.topic}': ${errorText(e)}`, 'BittWorkerWarning');
  }
}

module.exports = { Worker, Snooze };
