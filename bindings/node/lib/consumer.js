'use strict';
// queue.consume: the messages of a topic as they come, each with ack() (group
// commit of the consumer's acks), nack() and extend(). Every rule is the C
// core's (bitt_queue_ack / bitt_queue_ack_many); this file only decides when
// to call them.
const native = require('./native');
const errors = require('./errors');
const M = require('./model');
const { opts, asyncDispose } = require('./api');
const { duration, signalOf, typeName } = require('./args');
const { aborted, endOf } = require('./cancel');

const ACK_MANY_MAX = 1000; // bitt_queue_ack_many's limit per call
const STALE = -14; // BITT_ETOKEN: the class a single ack rejects with

/* The acks of one consumer, committed in groups: an ack asked for while
 * another call of the group is in flight, or in the same event-loop turn,
 * goes with the next ackMany (one transaction, one round trip). Each ack's
 * Promise settles only once its call returned: resolved when committed,
 * rejected with StaleToken for that message alone when its token was stale,
 * or with the call's error for every ack of a call that failed. */
class AckGroup {
  constructor(store, topic) {
    this._store = store;
    this._topic = topic;
    this._waiting = []; // {msg, resolve, reject}, not sent yet
    this._flight = null; // the call in flight, settled only (never rejects)
    this._timer = null;
  }

  ack(msg) {
    return new Promise((resolve, reject) => {
      this._waiting.push({ msg, resolve, reject });
      // Waits for the end of the turn, so that the acks of a batch handed out
      // in one turn go together; a call in flight sends them when it ends.
      if (this._flight === null && this._timer === null) {
        this._timer = setImmediate(() => {
          this._timer = null;
          this.flush();
        });
      }
    });
  }

  get pending() {
    return this._waiting.length + (this._flight !== null ? 1 : 0);
  }

  /* Sends the waiting acks now, unless a call is in flight (its end sends them). */
  flush() {
    if (this._timer !== null) {
      clearImmediate(this._timer);
      this._timer = null;
    }
    if (this._flight !== null || this._waiting.length === 0) return;
    const group = this._waiting.splice(0, ACK_MANY_MAX);
    this._flight = this._send(group).finally(() => {
      this._flight = null;
      this.flush();
    });
  }

  async _send(group) {
    const q = this._store.queue;
    if (group.length === 1) {
      // One ack alone: the single call, its own error as it comes.
      const { msg, resolve, reject } = group[0];
      try {
        resolve(await q.ack(msg));
      } catch (e) {
        reject(e);
      }
      return;
    }
    let oks;
    try {
      oks = await q.ackMany(this._topic, group.map((w) => w.msg));
    } catch (e) {
      for (const w of group) w.reject(e);
      return;
    }
    group.forEach((w, i) => (oks[i] ? w.resolve() : w.reject(stale(w.msg))));
  }

  /* Settles once every ack asked for so far has settled (never rejects). */
  async drain() {
    for (;;) {
      this.flush();
      if (this._flight === null) return;
      await this._flight;
    }
  }
}

function stale(msg) {
  return errors.makeError(STALE,
    `queue ack: the token of message ${msg.id} on topic '${msg.topic}' is stale (its lease ended or it was acked)`);
}

/* The consumer's methods on a message it handed out (not enumerable: the
 * message still compares and prints as any other). */
function bind(store, acks, m) {
  Object.defineProperties(m, {
    // with {result}: its own ack (ackMany carries no results)
    ack: { value: (o) => (o === undefined ? acks.ack(m) : store.queue.ack(m, o)) },
    nack: { value: (error, o) => store.queue.nack(m, error, o) },
    extend: { value: (lease) => store.queue.extend(m, lease) },
  });
  return m;
}

/* queue.consume(topic, options): the messages of a topic as they come, an
 * async iterator (`for await`). One dequeue (with wait) leases up to
 * `prefetch` messages at once (`limit` is its older name), handed out one
 * by one; each is still the caller's to ack (msg.ack(), grouped as AckGroup
 * says, or queue.ack) or nack. The leases of prefetched messages run from
 * that dequeue, not from when the loop reaches them: `lease` must cover
 * handling the whole batch (or extend() them).
 *
 * It ends at once, whatever it is doing: `break` (return()), `await using`,
 * the signal's abort (the loop then throws an AbortError, as events.on's
 * does), store.close(). A dequeue waiting then is ended through its cancel
 * token (the core leases nothing more), and the prefetched messages not
 * handed out are given back unseen (queue.snooze, no delay: no attempt
 * used). Acks asked for still commit; store.close() waits for them. */
class Consumer {
  constructor(store, topic, o) {
    const { lease, wait = 1000, signal, prefetch: pf, limit } = opts('queue.consume', o);
    const prefetch = pf ?? limit ?? 1;
    if (!Number.isInteger(prefetch) || prefetch < 1) {
      throw new TypeError(`prefetch: ${typeof prefetch === 'number' ? `number ${prefetch}` : typeName(prefetch)} ` +
        'is not a positive integer');
    }
    this._store = store;
    this._topic = topic;
    this._args = [topic, prefetch, duration(lease, 'lease'), duration(wait, 'wait')];
    this._signal = signalOf('queue.consume', signal);
    this._acks = new AckGroup(store, topic);
    this._buf = []; // leased, not handed out yet
    this._token = native.bittw_cancel_new(); // ends the dequeue in flight
    this._inflight = null; // that dequeue; settles null once the consumer has ended
    this._ended = false;
    this._error = null; // the AbortError the next next() rejects with
    this._released = null;
    this._queue = Promise.resolve(); // next() calls, one after the other
    store._consumers.add(this);
    if (this._signal) {
      this._onAbort = () => this._end(aborted('consume', this._signal));
      if (this._signal.aborted) this._onAbort();
      else this._signal.addEventListener('abort', this._onAbort, { once: true });
    }
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  next() {
    const p = this._queue.then(() => this._next());
    this._queue = p.catch(() => {});
    return p;
  }

  /* Ends the loop (break calls it): at once, also while a dequeue waits. */
  async return(value) {
    this._end(null);
    await this._queue;
    await this._release();
    return { done: true, value };
  }

  async throw(err) {
    await this.return();
    throw err;
  }

  [asyncDispose]() {
    return this.return().then(() => undefined);
  }

  async _next() {
    for (;;) {
      if (this._ended) return this._stop();
      if (this._buf.length) return { done: false, value: bind(this._store, this._acks, this._buf.shift()) };
      // The acks of the batch used up go now, and the next dequeue is issued
      // while they are in flight (rather than an event-loop turn later).
      this._acks.flush();
      let batch;
      try {
        batch = await this._dequeue();
      } catch (e) {
        if (this._store._closing && e instanceof errors.UsageError) return this._stop();
        this._end(null);
        await this._release();
        throw e;
      }
      if (batch === null) return this._stop();
      this._buf = batch;
    }
  }

  /* The dequeue, under the consumer's token; what it gets once the
   * consumer has ended goes to the buffer (given back), and it then
   * settles null. */
  _dequeue() {
    const call = this._store._call('bittw_queue_dequeue_cancel', [...this._args, this._token], (r) => M.messages(r[1]));
    this._inflight = call.then((batch) => {
      if (!this._ended) return batch;
      this._buf.push(...batch);
      return null;
    }, (e) => {
      if (this._ended) return null;
      throw e;
    });
    return this._inflight;
  }

  _end(error) {
    if (this._ended) return;
    this._ended = true;
    this._error = error;
    native.bittw_cancel_fire(this._token);
    if (this._signal) this._signal.removeEventListener('abort', this._onAbort);
    // An abort with no next() in flight gives back at once too.
    if (error) this._release();
  }

  async _stop() {
    await this._release();
    return endOf(this);
  }

  /* Once ended: the dequeue in flight settled, the buffer given back, the
   * acks asked for committed. Never rejects. */
  _release() {
    if (this._released === null) {
      this._released = (async () => {
        if (this._inflight) await this._inflight.catch(() => {});
        const left = this._buf.splice(0);
        await this._store.queue._giveBack(left);
        await this._acks.drain();
        this._store._consumers.delete(this);
      })();
    }
    return this._released;
  }

  /* store.close(): ends the loop and settles what it owes. */
  _close() {
    this._end(null);
    return this._release();
  }
}

function consume(store, topic, o) {
  return new Consumer(store, topic, o);
}

module.exports = { consume, Consumer, AckGroup };
