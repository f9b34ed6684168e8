'use strict';
// bitt for Node: one durable state core (KV, queue, leases, outbox, pubsub,
// budgets, schedules) over memory, SQLite, PostgreSQL and Redis.
//
//   const s = bitt.open('sqlite:app.db');              // synchronous Store
//   const a = await bitt.openAsync('postgres://...');   // AsyncStore: Promises
//
// A thin layer over the SWIG addon (src/, generated from bindings/bitt.i):
// every rule is the C core's. The synchronous calls run on the calling
// thread (microseconds on memory and SQLite); every AsyncStore call runs its
// C call on the binding's threads (src/dispatch.hpp), so the event loop never waits on a database.
// Durations are numbers of milliseconds, absolute times Dates; every call
// that may wait takes {signal} (an AbortSignal).
const native = require('./native');
const errors = require('./errors');
const values = require('./values');
const api = require('./api');
const M = require('./model');
const { consume, Consumer } = require('./consumer');
const { Worker, Snooze } = require('./worker');
const { Entry } = require('./entry');
const { SyncKV } = require('./fast');
const cancel = require('./cancel');
const { endOf } = cancel;
const { duration, signalOf } = require('./args');

// A store wrapper dropped without close() still frees its box (which
// outlives calls in flight: they hold a reference on it in C). A wrapper
// that attached to a shared box gives its reference back instead.
const boxes = new FinalizationRegistry(({ box, owner }) => (owner ? native.bittw_free(box) : native.bittw_release(box)));

// What an attached wrapper holds after close(): a closed box, so that later
// calls fail with UsageError like on a closed store.
let closedBox = null;
function detached() {
  if (closedBox === null) {
    closedBox = native.bittw_open('memory:')[1];
    native.bittw_close(closedBox);
  }
  return closedBox;
}

/* Opener: closes the store. Attached: gives its reference back. */
function closeBox(store, close) {
  if (store._owner) return close(store._box);
  if (store._box !== detached()) {
    boxes.unregister(store);
    native.bittw_release(store._box);
    store._box = detached();
  }
  return undefined;
}

function adopt(store, box, owner) {
  store._box = box;
  store._owner = owner;
  store._subs = new Set();
  boxes.register(store, { box, owner }, store);
  namespaces(store);
}

function checkUrl(url) {
  if (typeof url !== 'string') throw new TypeError('url must be a string');
}

function namespaces(store) {
  store.kv = new api.KV(store);
  store.queue = new api.Queue(store);
  store.lease = new api.Leases(store);
  store.outbox = new api.Outbox(store);
  store.budget = new api.Budgets(store);
  store.schedule = new api.Schedules(store);
  store.clock = new api.Clock(store);
}

/* ---- synchronous -------------------------------------------------------------- */
class Atomic extends api.AtomicBase {
  /* Commits all or none; the transaction is then spent. */
  commit() {
    try {
      this.version = native.bitt_txn_commit(this._txn)[1];
      return this.version;
    } finally {
      this.close();
    }
  }
}

/* subscribe()'s signal, read before anything is made. */
const subscribeSignal = (o) => signalOf('pubsub.subscribe', api.opts('pubsub.subscribe', o).signal);

/* A signal given to subscribe() closes the subscription when it aborts. */
function closeOnAbort(sub, signal) {
  if (signal === null) return;
  sub._signal = signal;
  sub._onAbort = () => sub._abort();
  if (signal.aborted) sub._abort();
  else signal.addEventListener('abort', sub._onAbort, { once: true });
}

function stopListening(sub) {
  if (sub._signal) sub._signal.removeEventListener('abort', sub._onAbort);
}

class Subscription {
  constructor(store, channel, o) {
    const signal = subscribeSignal(o);
    this._store = store;
    this._signal = null;
    this._sub = native.bitt_pubsub_subscribe(store._box, channel)[1];
    store._subs.add(this);
    closeOnAbort(this, signal);
  }

  /* The next message, or null when none came within `timeout` ms. This
   * call blocks the thread: a signal can only have aborted before it. */
  next(timeout = 0, o) {
    const signal = signalOf('subscription.next', api.opts('subscription.next', o).signal);
    const ms = duration(timeout, 'timeout');
    return syncWait(signal, (token) => native.bitt_pubsub_next_cancel(this._sub, ms, token), (r) => M.message(r[1]));
  }

  close() {
    if (this._sub !== null) {
      stopListening(this);
      native.bitt_pubsub_close(this._sub);
      this._sub = null;
      this._store._subs.delete(this);
    }
  }

  _abort() {
    this.close();
  }

  [api.dispose]() {
    this.close();
  }
}

/* A synchronous call that may wait (the signal can only have aborted before
 * it: the thread is blocked): its cancellation carries the signal's reason. */
function syncWait(signal, call, post) {
  try {
    return post(call(cancel.syncToken(signal)));
  } catch (e) {
    throw cancel.withCause(e, signal);
  }
}

class Store {
  /* Use bitt.open(url) or bitt.attach(token). */
  constructor(box, owner) {
    adopt(this, box, owner);
    this.kv = new SyncKV(this); // get/set of one key without SWIG's per-call costs
    const self = this;
    this.pubsub = {
      publish: (channel, data) => self._call('bitt_pubsub_publish', [channel, pubData(data)], () => undefined),
      subscribe: (channel, o) => new Subscription(self, channel, o),
    };
  }

  _call(name, args, post) {
    return post(native[name](this._box, ...args));
  }

  _wait(name, args, signal, post) {
    return syncWait(signal, (token) => native[name](this._box, ...args, token), post);
  }

  get backend() {
    return native.bitt_store_backend(this._box);
  }

  migrate() {
    native.bitt_store_migrate(this._box);
  }

  /* A transaction: chain check/set/delete/sum/enqueue/fence/outboxAppend,
   * then commit() (or close() to drop it). */
  atomic() {
    return new Atomic(native, native.bitt_txn_begin(this._box)[1]);
  }

  /* A token for bitt.attach() / bitt.attachAsync() in a worker thread: a
   * handle on this same store (a memory: store too). Attach it once. */
  share() {
    return native.bittw_share(this._box);
  }

  /* Closes the store: waits for calls in flight; later calls throw
   * UsageError. Idempotent. On an attached handle: only this handle. */
  close() {
    for (const sub of [...this._subs]) sub.close();
    closeBox(this, (box) => native.bittw_close(box));
  }

  [api.dispose]() {
    this.close();
  }
}

function pubData(data) {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  return data;
}

/* ---- Promises ------------------------------------------------------------------- */
const A = native.async;

class AsyncAtomic extends api.AtomicBase {
  constructor(store, txn) {
    super(native, txn);
    this._store = store;
  }

  async commit() {
    try {
      this.version = (await A.bitt_txn_commit(this._txn))[1];
      return this.version;
    } finally {
      this.close();
    }
  }
}

// One wait of an iteration, which waits again after it: close() and break
// end it at once through its token; the bound is for a wait whose thread
// outlives its environment (a worker terminated meanwhile).
const FOREVER = 30_000;

/* Iterate with `for await` (break closes it); next(timeout) gives null when
 * nothing came. The subscription starts at once, on the binding's threads:
 * `await sub.ready` before publishing what it must see (async calls run
 * side by side). Every wait has a cancel token: close() ends them at once. */
class AsyncSubscription {
  constructor(store, channel, o) {
    const signal = subscribeSignal(o);
    this._store = store;
    this._sub = null;
    this._closed = false;
    this._closing = null;
    this._error = null; // the AbortError of a subscription its signal closed
    this._signal = null;
    this._kept = []; // got by a next() whose own signal had aborted: handed out first
    this._waits = new Map(); // next() calls in flight: their promise -> token
    this._ready = store._call('bitt_pubsub_subscribe', [channel], (r) => {
      this._sub = r[1];
      if (this._closed) this._drop();
    });
    this._ready.catch(() => {});
    store._subs.add(this);
    closeOnAbort(this, signal);
  }

  /* Settles once the subscription is in place (rejects if it failed). */
  get ready() {
    return this._ready;
  }

  /* The next message, or null when none came within `timeout` ms; an abort
   * of `signal` ends the wait (AbortError), and a message that came as it
   * aborted is kept for the next call. */
  async next(timeout = 0, o) {
    const signal = signalOf('subscription.next', api.opts('subscription.next', o).signal);
    const ms = duration(timeout, 'timeout');
    await this._ready;
    if (this._kept.length) return this._kept.shift();
    if (this._closed) throw this._closedError();
    const [token, release] = cancel.tokenFor(signal);
    const mine = token ?? native.bittw_cancel_new();
    const p = A.bitt_pubsub_next_cancel(this._sub, ms, mine);
    this._waits.set(p, mine);
    let r;
    try {
      r = await p;
    } catch (e) {
      if (e.status === errors.ECANCELED && !(signal && signal.aborted)) throw this._closedError();
      throw cancel.withCause(e, signal);
    } finally {
      this._waits.delete(p);
      release();
    }
    const m = M.message(r[1]);
    if (signal && signal.aborted) {
      if (m !== null) this._kept.push(m);
      throw cancel.aborted('subscription wait', signal);
    }
    return m;
  }

  _closedError() {
    return this._error ?? errors.makeError(-12, 'the subscription is closed');
  }

  /* The messages as they come: `for await`; break (return()) closes the
   * subscription at once, and so does the signal given to subscribe() (the
   * loop then throws an AbortError). */
  [Symbol.asyncIterator]() {
    const self = this;
    return {
      async next() {
        for (;;) {
          if (self._closed && !self._kept.length) return self._endOfLoop();
          let m;
          try {
            m = await self.next(FOREVER);
          } catch (e) {
            if (self._closed) return self._endOfLoop();
            throw e;
          }
          if (m !== null) return { done: false, value: m };
        }
      },
      async return(value) {
        await self.close();
        return { done: true, value };
      },
      [Symbol.asyncIterator]() {
        return this;
      },
    };
  }

  _endOfLoop() {
    return endOf(this);
  }

  /* Closes it: a wait in flight ends at once (its next() rejects with
   * UsageError). Idempotent. */
  close() {
    if (this._closing === null) {
      this._closed = true;
      stopListening(this);
      this._store._subs.delete(this);
      for (const token of this._waits.values()) native.bittw_cancel_fire(token);
      this._closing = (async () => {
        await this._ready.catch(() => {});
        await Promise.all([...this._waits.keys()].map((p) => p.catch(() => {})));
        this._drop();
      })();
    }
    return this._closing;
  }

  _abort() {
    if (!this._closed) this._error = cancel.aborted('subscription', this._signal);
    this.close();
  }

  _drop() {
    if (this._sub !== null) {
      native.bitt_pubsub_close(this._sub);
      this._sub = null;
    }
  }

  [api.asyncDispose]() {
    return this.close();
  }
}

class AsyncStore {
  /* Use bitt.openAsync(url) or bitt.attachAsync(token). */
  constructor(box, owner) {
    adopt(this, box, owner);
    this._closing = false;
    this._consumers = new Set(); // its consume() loops (lib/consumer.js)
    const self = this;
    this.queue.consume = (topic, o) => consume(self, topic, o);
    this.kv.list = (o) => listAll(self, api.opts('kv.list', o));
    this.pubsub = {
      publish: (channel, data) => self._call('bitt_pubsub_publish', [channel, pubData(data)], () => undefined),
      subscribe: (channel, o) => new AsyncSubscription(self, channel, o),
    };
  }

  _call(name, args, post) {
    try {
      return A[name](this._box, ...args).then(post);
    } catch (e) {
      return Promise.reject(e);
    }
  }

  /* A call that may wait, under signal; late(result) gives back what it
   * got when the signal aborted after the core's call returned. */
  _wait(name, args, signal, post, late) {
    return cancel.underSignal(signal, (token) => this._call(name, [...args, token], post)).then(async (v) => {
      if (signal && signal.aborted) {
        await late(v);
        throw cancel.aborted('dequeue', signal);
      }
      return v;
    });
  }

  get backend() {
    return native.bitt_store_backend(this._box);
  }

  migrate() {
    return this._call('bitt_store_migrate', [], () => undefined);
  }

  async atomic() {
    const txn = await this._call('bitt_txn_begin', [], (r) => r[1]);
    return new AsyncAtomic(this, txn);
  }

  share() {
    return native.bittw_share(this._box);
  }

  /* Closes the store once the calls in flight are done; later calls reject
   * with UsageError. Idempotent. On an attached handle: only this handle.
   * Its consume() loops and subscriptions end at once first (their waits
   * cancelled, prefetched messages given back, acks asked for committed). */
  async close() {
    this._closing = true;
    await Promise.all([...this._consumers].map((c) => c._close()));
    await Promise.all([...this._subs].map((s) => s.close()));
    await closeBox(this, (box) => A.bittw_close(box));
  }

  [api.asyncDispose]() {
    return this.close();
  }
}

/* Every entry of the selection, page by page. */
async function* listAll(store, o) {
  let cursor = o.cursor ?? null;
  for (;;) {
    const page = await store.kv._page({ ...o, cursor });
    yield* page.entries;
    cursor = page.cursor;
    if (cursor === null) return;
  }
}

// The synchronous store iterates pages lazily too.
api.KV.prototype.list = function list(o) {
  return listPages(this, api.opts('kv.list', o));
};

function* listPages(kv, o) {
  let cursor = o.cursor ?? null;
  for (;;) {
    const page = kv._page({ ...o, cursor });
    yield* page.entries;
    cursor = page.cursor;
    if (cursor === null) return;
  }
};

/* ---- entry points --------------------------------------------------------------- */
/* memory:, sqlite:PATH, postgres://..., redis://... (synchronous: meant for
 * memory and SQLite; on a network backend every call blocks this thread). */
function open(url) {
  checkUrl(url);
  return new Store(native.bittw_open(url)[1], true);
}

async function openAsync(url) {
  checkUrl(url);
  const r = await A.bittw_open(url);
  return new AsyncStore(r[1], true);
}

/* A handle on the store another thread shared (store.share()). Closing it
 * leaves the store open for the others; the opener's close() closes it. */
function attach(token) {
  return new Store(native.bittw_attach(token), false);
}

async function attachAsync(token) {
  return new AsyncStore(native.bittw_attach(token), false);
}

module.exports = {
  open,
  openAsync,
  attach,
  attachAsync,
  Store,
  AsyncStore,
  Atomic,
  AsyncAtomic,
  Subscription,
  AsyncSubscription,
  Message: M.Message,
  Schedule: M.Schedule,
  Lease: M.Lease,
  Entry,
  Consumer,
  Worker,
  Snooze,
  ...errors,
  encodeKey: values.encodeKey,
  decodeTuple: values.decodeTuple,
  encodeValue: values.encodeValue,
  decodeValue: values.decodeValue,
  KIND_BYTES: values.KIND_BYTES,
  KIND_JSON: values.KIND_JSON,
  KIND_COUNTER: values.KIND_COUNTER,
  version: native.bitt_version(),
  raw: native,
};
