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
// Durations are milliseconds.
const native = require('./native');
const errors = require('./errors');
const values = require('./values');
const api = require('./api');
const M = require('./model');
const { consume } = require('./consumer');
const { SyncKV } = require('./fast');

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

class Subscription {
  constructor(store, channel) {
    this._store = store;
    this._sub = native.bitt_pubsub_subscribe(store._box, channel)[1];
    store._subs.add(this);
  }

  /* The next message, or null when none came within timeout ms. */
  next(timeout = 0) {
    return M.message(native.bitt_pubsub_next(this._sub, timeout)[1]);
  }

  close() {
    if (this._sub !== null) {
      native.bitt_pubsub_close(this._sub);
      this._sub = null;
      this._store._subs.delete(this);
    }
  }

  [Symbol.dispose]() {
    this.close();
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
      subscribe: (channel) => new Subscription(self, channel),
    };
  }

  _call(name, args, post) {
    return post(native[name](this._box, ...args));
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

  [Symbol.dispose]() {
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

/* Iterate with `for await`; next(timeout) gives null when nothing came. The
 * subscription starts at once, on the binding's threads: `await sub.ready` before
 * publishing what it must see (async calls run side by side). */
class AsyncSubscription {
  constructor(store, channel) {
    this._store = store;
    this._sub = null;
    this._closed = false;
    this._busy = Promise.resolve();
    this._ready = store._call('bitt_pubsub_subscribe', [channel], (r) => {
      this._sub = r[1];
      if (this._closed) this._drop();
    });
    this._ready.catch(() => {});
    store._subs.add(this);
  }

  /* Settles once the subscription is in place (rejects if it failed). */
  get ready() {
    return this._ready;
  }

  async next(timeout = 0) {
    await this._ready;
    if (this._closed) throw errors.makeError(-12, 'the subscription is closed');
    const p = A.bitt_pubsub_next(this._sub, timeout);
    this._busy = p.catch(() => {});
    return M.message((await p)[1]);
  }

  async* [Symbol.asyncIterator]() {
    try {
      while (!this._closed) {
        const m = await this.next(250);
        if (m !== null) yield m;
      }
    } finally {
      await this.close();
    }
  }

  /* Closes after the wait in flight (at most its timeout). */
  async close() {
    if (this._closed) return;
    this._closed = true;
    this._store._subs.delete(this);
    await this._ready.catch(() => {});
    await this._busy;
    this._drop();
  }

  _drop() {
    if (this._sub !== null) {
      native.bitt_pubsub_close(this._sub);
      this._sub = null;
    }
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }
}

class AsyncStore {
  /* Use bitt.openAsync(url) or bitt.attachAsync(token). */
  constructor(box, owner) {
    adopt(this, box, owner);
    this._closing = false;
    this._consumers = new Set(); // the AckGroups of its consume() loops
    const self = this;
    this.queue.consume = (topic, o) => consume(self, topic, o);
    this.kv.list = (o) => listAll(self, o);
    this.pubsub = {
      publish: (channel, data) => self._call('bitt_pubsub_publish', [channel, pubData(data)], () => undefined),
      subscribe: (channel) => new AsyncSubscription(self, channel),
    };
  }

  _call(name, args, post) {
    try {
      return A[name](this._box, ...args).then(post);
    } catch (e) {
      return Promise.reject(e);
    }
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
   * with UsageError. Idempotent. On an attached handle: only this handle. */
  async close() {
    this._closing = true;
    // Acks the consumers were asked for commit first (nothing left unsettled).
    await Promise.all([...this._consumers].map((c) => c.drain()));
    await Promise.all([...this._subs].map((s) => s.close()));
    await closeBox(this, (box) => A.bittw_close(box));
  }

  [Symbol.asyncDispose]() {
    return this.close();
  }
}

/* Every entry of the selection, page by page. */
async function* listAll(store, o = {}) {
  let cursor = o.cursor ?? null;
  for (;;) {
    const page = await store.kv.page({ ...o, cursor });
    yield* page.entries;
    cursor = page.cursor;
    if (cursor === null) return;
  }
}

// The synchronous store iterates pages lazily too.
api.KV.prototype.list = function* list(o = {}) {
  let cursor = o.cursor ?? null;
  for (;;) {
    const page = this.page({ ...o, cursor });
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
