'use strict';
// A runner of tests/contract/*.json over the Node binding's raw layer,
// reading the format of tests/contract/README.md (a port of
// tests/python/contract.py). mode 'sync' calls SWIG's wrappers, mode
// 'async' the Promise API (the C call on the binding's threads); both return the
// same shapes, so one runner awaits either. kv.roundtrip goes through the
// public API (a handle attached to the same store), and `cancel: "fired"`
// passes the cancel token the binding makes for an aborted AbortSignal.
const fs = require('fs');
const path = require('path');
const native = require('../../bindings/node/lib/native');
const { BittError } = require('../../bindings/node/lib/errors');
const F = require('./contract_forms');
const { checkExpect, doSave } = require('./contract_expect');
const CQ = require('./contract_queue');
const CR = require('./contract_retention');

const { Broken, Mismatch, bstr, optBstr, num, name, optText, kind, has } = F;
const CONTRACT_DIR = path.join(__dirname, '..', 'contract');

function loadCases() {
  const out = [];
  for (const f of fs.readdirSync(CONTRACT_DIR).filter((x) => x.endsWith('.json')).sort()) {
    const stem = f.slice(0, -5);
    for (const c of JSON.parse(fs.readFileSync(path.join(CONTRACT_DIR, f), 'utf8')).cases) out.push([stem, c]);
  }
  return out;
}

const ARGS = {
  'kv.get': ['key'], 'kv.take': ['key'], 'kv.get_many': ['keys'],
  'kv.set': ['key', 'value', 'kind', 'ttl'], 'kv.add': ['key', 'value', 'kind', 'ttl'],
  'kv.delete': ['key'], 'kv.increment': ['key', 'delta', 'ttl'], 'kv.roundtrip': ['key'],
  'kv.list': ['prefix', 'start', 'end', 'limit', 'reverse', 'cursor', 'follow'],
  'kv.purge': [], 'kv.fill': ['prefix', 'count', 'width', 'value', 'kind', 'ttl'],
  txn: ['actions', 'recommit'], 'clock.set': ['now'], 'clock.advance': ['ms'],
  'clock.now': [], 'tuple.encode': ['tuple'], 'tuple.decode': ['key'],
  'tuple.order': ['tuples'], parallel: ['threads', 'repeat', 'step', 'expect_counts'],
  'store.open': ['options'],
  'queue.enqueue': ['topic', 'payload', 'kind', 'delay', 'max_attempts', 'dedup', 'priority'],
  'queue.dequeue': ['topic', 'topics', 'limit', 'lease', 'wait', 'cancel'],
  'queue.ack_many': ['topic', 'items'],
  'queue.nack': ['topic', 'id', 'token', 'error', 'delay'],
  'queue.extend': ['topic', 'id', 'token', 'lease'], 'queue.snooze': ['topic', 'id', 'token', 'delay'],
  'queue.dead_list': ['topic', 'after', 'limit'], 'queue.dead_retry': ['topic', 'id'],
  'queue.dead_delete': ['topic', 'id'], 'queue.stats': ['topic'],
  'lease.acquire': ['name', 'owner', 'ttl'], 'lease.renew': ['name', 'owner', 'epoch', 'ttl'],
  'lease.release': ['name', 'owner', 'epoch'], 'lease.get': ['name'],
  'outbox.append': ['stream', 'event', 'kind'], 'outbox.pending': ['stream', 'limit'],
  'outbox.ack': ['stream', 'seqs'], 'outbox.fail': ['stream', 'seq', 'error', 'next_attempt_at'],
  'outbox.park': ['stream', 'seq', 'reason', 'error'],
  'outbox.parked': ['stream', 'reason', 'limit'], 'outbox.retry': ['stream', 'seqs'],
  'outbox.discard': ['stream', 'seqs'], 'outbox.counts': ['stream'],
  'pubsub.subscribe': ['channel'], 'pubsub.publish': ['channel', 'data'],
  'pubsub.next': ['sub', 'timeout', 'cancel'], 'pubsub.close': ['sub'],
  'budget.take': ['name', 'capacity', 'refill', 'period', 'n'],
  'schedule.claim': ['prefix'], 'schedule.get': ['key'], 'schedule.list': [],
  'schedule.delete': ['key'],
  ...CQ.ARGS,
  ...CR.ARGS,
};

const PARALLEL_OK = new Set(['kv.get', 'kv.take', 'kv.get_many', 'kv.set', 'kv.add', 'kv.delete',
  'kv.increment', 'kv.list', 'kv.purge', 'txn', 'queue.enqueue', 'queue.dequeue', 'lease.acquire',
  'outbox.append', 'pubsub.publish', 'budget.take', 'schedule.claim']);

class Run {
  constructor(url, fileBacked, mode) {
    this.url = url;
    this.fileBacked = fileBacked;
    this.mode = mode;
    this.R = mode === 'sync' ? native : native.async;
    this.vars = {};
    this.tokensSeen = new Set();
    this.subs = {};
    this.openSubs = new Set();
  }

  async open() {
    const r = await this.R.bittw_open(this.url);
    this.box = r[1];
    await this.R.bitt_clock_set_manual(this.box, 1000000);
  }

  async close() {
    for (const s of this.openSubs) native.bitt_pubsub_close(s);
    this.openSubs.clear();
    await this.R.bittw_close(this.box);
    native.bittw_free(this.box);
  }

  variable(v) {
    if (v && typeof v === 'object') {
      F.checkMembers(v, ['var'], 'var');
      if (!has(this.vars, v.var)) throw new Broken(`variable ${v.var} not set`);
      return this.vars[v.var];
    }
    return v;
  }

  idnum(v) {
    const x = this.variable(v);
    return typeof x === 'bigint' ? x : num(x);
  }

  /* [status, outputs] of a raw call; an error becomes its status after the
   * checks of the README (a message; the last-error code in this thread for
   * the synchronous calls: async ones fail on a pool thread). */
  async call(fn, ...args) {
    let r;
    try {
      r = await this.R[fn](...args);
    } catch (e) {
      if (!(e instanceof BittError)) throw e;
      if (!e.message) throw new Mismatch(`status ${e.status}: empty error message`);
      if (this.mode === 'sync') {
        const lc = native.bitt_error_last_code();
        if (lc !== e.status) throw new Mismatch(`bitt_error_last_code() is ${lc} after status ${e.status}`);
      }
      return [e.status, null];
    }
    if (typeof r === 'number') return [r, []];
    return [r[0], r.slice(1)];
  }
}

function keylist(items, allowNull = false) {
  const out = [];
  for (const it of items) {
    if (it === null && allowNull) {
      out.push(null);
    } else if (it && typeof it === 'object' && has(it, 'copies')) {
      F.checkMembers(it, ['copies', 'of'], 'copies');
      const one = keylist([it.of], allowNull);
      for (let i = 0n; i < num(it.copies); i++) out.push(...one);
    } else if (it && typeof it === 'object' && has(it, 'fill')) {
      const f = it.fill;
      F.checkMembers(f, ['prefix', 'count', 'width'], 'fill');
      out.push(...F.fillKeys(bstr(f.prefix ?? ''), num(f.count), num(f.width ?? 0)));
    } else {
      out.push(bstr(it));
    }
  }
  return out;
}

const { execStep } = require('./contract_steps')({ Run, keylist, ARGS, PARALLEL_OK, checkExpect });

async function runCase(url, fileBacked, c, mode) {
  F.checkMembers(c, ['name', 'description', 'url_options', 'steps'], 'case');
  const o = c.url_options;
  if (o && Object.keys(o).length) {
    url += (url.includes('?') ? '&' : '?') + Object.entries(o).map(([k, v]) => `${k}=${v}`).join('&');
  }
  const run = new Run(url, fileBacked, mode);
  await run.open();
  try {
    for (let i = 0; i < c.steps.length; i++) {
      const s = c.steps[i];
      const op = s.op;
      try {
        if (!has(ARGS, op)) throw new Broken(`unknown op ${JSON.stringify(op)}`);
        F.checkMembers(s, ['op', 'expect', 'save', ...ARGS[op]], `(${op})`);
        const [st, res] = await execStep(run, s);
        if (op !== 'parallel') checkExpect(run, op, s.expect ?? { status: 'ok' }, st, res);
        else if (has(s, 'expect')) throw new Broken('parallel takes expect_counts');
        if (has(s, 'save')) doSave(run, op, s.save, st, res);
      } catch (e) {
        if (e instanceof Mismatch || e instanceof Broken) {
          e.message = `step ${i} (${op}): ${e.message}`;
        }
        throw e;
      }
    }
  } finally {
    await run.close();
  }
}

module.exports = { loadCases, runCase, Run, keylist, ARGS, optBstr, optText, name, kind };
