'use strict';
// queue.consume: the messages of a topic as they come, each with ack() (group
// commit of the consumer's acks), nack() and extend(). Every rule is the C
// core's (bitt_queue_ack / bitt_queue_ack_many); this file only decides when
// to call them.
const errors = require('./errors');

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
    ack: { value: () => acks.ack(m) },
    nack: { value: (error, o) => store.queue.nack(m, error, o) },
    extend: { value: (lease) => store.queue.extend(m, lease) },
  });
  return m;
}

/* Messages as they come, until the loop breaks or the store closes: one
 * dequeue (with wait) leases up to `prefetch` messages at once (`limit` is
 * its older name), handed out one by one; each is still the caller's to ack
 * (msg.ack(), grouped as AckGroup says, or queue.ack) or nack. The leases of
 * prefetched messages run from that dequeue, not from when the loop reaches
 * them: `lease` must cover handling the whole batch (or extend() them).
 * Messages prefetched but not handed out when the loop breaks stay leased
 * until their lease ends, then come back. Acks asked for still commit after
 * the loop ends; store.close() waits for them. */
async function* consume(store, topic, o = {}) {
  const { lease = 0, wait = 1000 } = o;
  const prefetch = o.prefetch ?? o.limit ?? 1;
  if (!Number.isInteger(prefetch) || prefetch < 1) throw new TypeError('prefetch must be a positive integer');
  const acks = new AckGroup(store, topic);
  store._consumers.add(acks);
  try {
    while (!store._closing) {
      // The acks of the batch used up go now, and the next dequeue is issued
      // while they are in flight (rather than an event-loop turn later).
      acks.flush();
      let batch;
      try {
        batch = await store.queue.dequeue(topic, { limit: prefetch, lease, wait });
      } catch (e) {
        if (store._closing && e instanceof errors.UsageError) return;
        throw e;
      }
      for (const m of batch) yield bind(store, acks, m);
    }
  } finally {
    // Acks asked for still commit; close() waits for them until then.
    acks.drain().then(() => store._consumers.delete(acks));
  }
}

module.exports = { consume, AckGroup };
