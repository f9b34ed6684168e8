'use strict';
// The contract's steps over the raw layer: each gives [status, result].
const bitt = require('../../bindings/node');
const native = require('../../bindings/node/lib/native');
const { BittError } = require('../../bindings/node/lib/errors');
const { tokenFor } = require('../../bindings/node/lib/cancel');
const F = require('./contract_forms');
const CQ = require('./contract_queue');
const CR = require('./contract_retention');

const { Broken, Mismatch, STATUS, STATUS_NAME, bstr, optBstr, num, name, optText, kind, has } = F;

module.exports = ({ Run, keylist, ARGS, PARALLEL_OK, checkExpect }) => {
  const A = native.async;

  async function doList(run, s, limit) {
    const prefix = optBstr(s.prefix);
    const start = optBstr(s.start);
    const end = optBstr(s.end);
    const reverse = !!(s.reverse ?? false);
    let cursor = s.cursor ?? null;
    if (cursor && typeof cursor === 'object') {
      cursor = run.variable(cursor);
      if (cursor === null || cursor === undefined) throw new Broken('the cursor variable holds no cursor');
    }
    const entries = [];
    let pages = 0;
    let cur = null;
    const cap = limit ? limit : 100n;
    for (;;) {
      const [st, r] = await run.call('bittw_kv_list', run.box, prefix, start, end, limit, reverse ? 1 : 0, cursor);
      pages++;
      if (st !== 0) return [st, null];
      const [page, c] = r;
      cur = c;
      if (BigInt(page.length) > cap) throw new Mismatch(`a page holds ${page.length} entries, over its limit ${cap}`);
      entries.push(...page);
      if (!s.follow || cur === null) break;
      if (!page.length) throw new Mismatch('a page with no entries but a cursor');
      cursor = cur;
    }
    for (let i = 1; i < entries.length; i++) {
      const c = Buffer.compare(entries[i - 1].key, entries[i].key);
      if (reverse ? c <= 0 : c >= 0) {
        throw new Mismatch(`list keys out of order: ${F.show(entries[i - 1].key)} then ${F.show(entries[i].key)}`);
      }
    }
    return [0, { entries, cursor: cur, pages }];
  }

  /* The error status a txn action's add must give (`refused`), 0 without one. */
  function refusedStatus(a) {
    if (!has(a, 'refused')) return 0;
    const code = typeof a.refused === 'string' ? F.STATUS[a.refused] : undefined;
    if (code === undefined || code >= 0) throw new Broken(`a txn action's refused must name an error status: ${a.refused}`);
    return code;
  }

  function txnAction(run, txn, a) {
    const t = (fn, ...args) => run.call(fn, txn, ...args);
    const q = CQ.txnAction(run, txn, a);
    if (q !== null) return q;
    switch (a.op) {
      case 'check':
        F.checkMembers(a, ['op', 'key', 'version', 'refused'], 'check');
        return t('bitt_txn_check', bstr(a.key), num(run.variable(a.version)));
      case 'set':
        F.checkMembers(a, ['op', 'key', 'value', 'kind', 'ttl', 'refused'], 'set');
        return t('bitt_txn_set', bstr(a.key), bstr(a.value ?? ''), kind(a.kind), num(a.ttl ?? 0));
      case 'delete':
        F.checkMembers(a, ['op', 'key', 'refused'], 'delete');
        return t('bitt_txn_delete', bstr(a.key));
      case 'sum':
        F.checkMembers(a, ['op', 'key', 'delta', 'refused'], 'sum');
        return t('bitt_txn_sum', bstr(a.key), num(a.delta));
      case 'enqueue':
        F.checkMembers(a, ['op', 'topic', 'payload', 'kind', 'delay', 'max_attempts', 'dedup', 'priority', 'refused'],
          'enqueue');
        return t('bittw_txn_enqueue2', name(a.topic), bstr(a.payload ?? ''), kind(a.kind), num(a.delay ?? 0),
          num(a.max_attempts ?? 0), optBstr(a.dedup), CQ.priority(a.priority));
      case 'fence':
        F.checkMembers(a, ['op', 'name', 'owner', 'epoch', 'refused'], 'fence');
        return t('bitt_txn_fence', name(a.name), name(a.owner), run.idnum(a.epoch));
      case 'outbox_append':
        F.checkMembers(a, ['op', 'stream', 'event', 'kind', 'refused'], 'outbox_append');
        return t('bitt_txn_outbox_append', name(a.stream), bstr(a.event ?? ''), kind(a.kind));
      default:
        throw new Broken(`unknown txn action ${a.op}`);
    }
  }

  /* Actions are in-memory work: plain (sync) calls in both modes, as the
   * binding's AsyncAtomic makes them; begin and commit follow the mode. */
  async function doTxn(run, s) {
    let [st, r] = await run.call('bitt_txn_begin', run.box);
    if (st !== 0) return [st, {}];
    const txn = r[0];
    const sync = Object.assign(Object.create(run), { R: native, mode: 'sync' });
    try {
      const actions = F.expandCopies(s.actions);
      const anyway = actions.some((a) => has(a, 'refused')); // add them all, then commit
      for (const [i, a] of actions.entries()) {
        const [ast] = await txnAction(sync, txn, a);
        if (anyway) {
          const want = refusedStatus(a);
          if (ast !== want) {
            throw new Mismatch(`txn action ${i} gave ${F.STATUS_NAME[ast] ?? ast}, expected ${F.STATUS_NAME[want]}`);
          }
        } else if (ast !== 0) return [ast, {}];
      }
      [st, r] = await run.call('bitt_txn_commit', txn);
      const res = { version: st === 0 ? r[0] : null };
      if (has(s, 'recommit')) {
        const [st2, r2] = await run.call('bitt_txn_commit', txn);
        checkExpect(run, 'txn', s.recommit, st2, { version: st2 === 0 ? r2[0] : null }, 'recommit');
      }
      return [st, res];
    } finally {
      native.bitt_txn_free(txn);
    }
  }

  /* Checks a message list: topic is the step's topic or its array of
   * topics; state the BITT_MSG_* state every message must have. */
  function msgList(run, lst, limit, topic, dequeue = false, state = 0) {
    const cap = dequeue ? (limit || 1n) : (limit || 100n);
    if (BigInt(lst.length) > cap) throw new Mismatch(`${lst.length} messages, over the limit ${cap}`);
    const ids = new Set();
    const toks = new Set();
    for (const m of lst) {
      if (m === null) throw new Mismatch('a NULL message in a list');
      if (!CQ.topicOfStep(m[1], topic)) throw new Mismatch(`message topic ${m[1]} is not the step's`);
      if (m[12] !== state) throw new Mismatch(`message ${m[0]} has the state ${m[12]}, not ${state}`);
      if (dequeue) {
        const tok = m[4];
        if (!tok || toks.has(tok) || run.tokensSeen.has(tok)) throw new Mismatch(`delivery token ${tok} missing or not fresh`);
        if (ids.has(m[0])) throw new Mismatch(`id ${m[0]} twice in one batch`);
        if (!(m[5] >= 1 && m[5] <= m[6])) throw new Mismatch(`attempts ${m[5]} outside 1..${m[6]}`);
        toks.add(tok);
        ids.add(m[0]);
      }
    }
    for (const t of toks) run.tokensSeen.add(t);
    return lst;
  }

  function increasing(ids, what) {
    for (let i = 1; i < ids.length; i++) if (!(ids[i - 1] < ids[i])) throw new Mismatch(`${what} not increasing: ${ids}`);
  }

  async function codec(f) {
    try {
      return [0, f()];
    } catch (e) {
      if (e instanceof BittError) return [e.status, {}];
      throw e;
    }
  }

  /* The token of a step's `cancel`: the one the binding makes for an
   * AbortSignal that has aborted (lib/cancel.js), or none. */
  function cancelOf(s) {
    if (!has(s, 'cancel')) return null;
    if (s.cancel !== 'fired') throw new Broken(`cancel must be "fired", not ${JSON.stringify(s.cancel)}`);
    return tokenFor(AbortSignal.abort())[0];
  }

  /* kv.roundtrip: the entry read through the public API, as a user gets it,
   * and set back to that value (no TTL) through it: a handle attached to
   * the run's store (bitt.attach). */
  async function doRoundtrip(run, s) {
    const token = native.bittw_share(run.box);
    const store = run.mode === 'sync' ? bitt.attach(token) : await bitt.attachAsync(token);
    try {
      const key = bstr(s.key);
      const e = await store.kv.get(key);
      if (e === null) return [F.STATUS.not_found, {}];
      await store.kv.set(key, e.value);
      return [0, {}];
    } catch (e) {
      if (e instanceof BittError) return [e.status, {}];
      throw e;
    } finally {
      await store.close();
    }
  }

  /* n concurrent loops: file-backed stores give each its own store; the
   * others share the box. The calls go through the Promise API in both
   * modes, so that they run at once on the binding's threads. */
  async function doParallel(run, s) {
    const inner = s.step;
    if (!PARALLEL_OK.has(inner.op) || has(inner, 'expect') || has(inner, 'save')) throw new Broken('parallel: bad inner step');
    F.checkMembers(inner, ['op', ...ARGS[inner.op]], inner.op);
    const n = Number(num(s.threads));
    const repeat = Number(num(s.repeat ?? 1));
    const now = (await A.bitt_clock_now(run.box))[1];
    const workers = [];
    for (let i = 0; i < n; i++) {
      const w = new Run(run.url, run.fileBacked, 'async');
      w.vars = run.vars;
      w.subs = run.subs;
      if (run.fileBacked) {
        await w.open();
        await A.bitt_clock_set_manual(w.box, now);
      } else {
        w.box = run.box;
      }
      workers.push(w);
    }
    const counts = {};
    try {
      await Promise.all(workers.map(async (w) => {
        for (let k = 0; k < repeat; k++) {
          const [st] = await execStep(w, inner);
          counts[st] = (counts[st] || 0) + 1;
        }
      }));
    } finally {
      if (run.fileBacked) for (const w of workers) await w.close();
    }
    const want = {};
    for (const [k, v] of Object.entries(s.expect_counts)) want[STATUS[k]] = Number(num(v));
    for (const code of new Set([...Object.keys(want), ...Object.keys(counts)])) {
      if ((counts[code] || 0) !== (want[code] || 0)) {
        const got = Object.fromEntries(Object.entries(counts).map(([k, v]) => [STATUS_NAME[k], v]));
        throw new Mismatch(`parallel counts: expected ${JSON.stringify(s.expect_counts)}, got ${JSON.stringify(got)}`);
      }
    }
    return 0;
  }

  async function execStep(run, s) {
    const op = s.op;
    const B = run.box;
    const c = (fn, ...args) => run.call(fn, ...args);
    switch (op) {
      case 'kv.get': case 'kv.take': {
        const [st, r] = await c(op === 'kv.get' ? 'bitt_kv_get' : 'bitt_kv_take', B, bstr(s.key));
        return [st, { entry: r ? r[0] : null }];
      }
      case 'kv.get_many': {
        const [st, r] = await c('bittw_kv_get_many', B, keylist(s.keys));
        return [st, { entries: r ? r[0] : null }];
      }
      case 'kv.set': case 'kv.add': {
        const [st, r] = await c(op === 'kv.set' ? 'bitt_kv_set' : 'bitt_kv_add', B, bstr(s.key), bstr(s.value ?? ''),
          kind(s.kind), num(s.ttl ?? 0));
        return [st, { version: r && st === 0 ? r[0] : null }];
      }
      case 'kv.delete': return [(await c('bitt_kv_delete', B, bstr(s.key)))[0], {}];
      case 'kv.increment': {
        const [st, r] = await c('bitt_kv_increment', B, bstr(s.key), num(s.delta), num(s.ttl ?? 0));
        return [st, st === 0 ? { counter: r[0], version: r[1] } : {}];
      }
      case 'kv.list': return doList(run, s, num(s.limit ?? 0));
      case 'kv.roundtrip': return doRoundtrip(run, s);
      case 'kv.purge': {
        const [st, r] = await c('bitt_kv_purge_expired', B);
        return [st, { removed: r ? r[0] : null }];
      }
      case 'kv.fill': {
        const v = bstr(s.value ?? '');
        const kd = kind(s.kind);
        const ttl = num(s.ttl ?? 0);
        for (const k of F.fillKeys(bstr(s.prefix ?? ''), num(s.count), num(s.width ?? 0))) {
          const [st] = await c('bitt_kv_set', B, k, v, kd, ttl);
          if (st !== 0) return [st, {}];
        }
        return [0, {}];
      }
      case 'txn': return doTxn(run, s);
      case 'clock.set': return [(await c('bitt_clock_set_manual', B, num(s.now)))[0], {}];
      case 'clock.advance': return [(await c('bitt_clock_advance', B, num(s.ms)))[0], {}];
      case 'clock.now': {
        const [st, r] = await c('bitt_clock_now', B);
        return [st, { now: r ? r[0] : null }];
      }
      case 'tuple.encode': return codec(() => ({ hex: F.tupleEncode(s.tuple).toString('hex') }));
      case 'tuple.decode': return codec(() => ({ tuple: native.bittw_tuple_decode(bstr(s.key)) }));
      case 'tuple.order': {
        const encs = [];
        for (const t of s.tuples) {
          const [st, r] = await codec(() => F.tupleEncode(t));
          if (st !== 0) return [st, {}];
          encs.push(r);
        }
        for (let i = 1; i < encs.length; i++) {
          if (!(Buffer.compare(encs[i - 1], encs[i]) < 0)) {
            throw new Mismatch(`tuple order: ${encs[i - 1].toString('hex')} is not below ${encs[i].toString('hex')}`);
          }
        }
        return [0, {}];
      }
      case 'parallel': return [await doParallel(run, s), {}];
      case 'store.open': {
        const o = s.options;
        if (!o || typeof o !== 'object' || !Object.values(o).every((v) => typeof v === 'string')) {
          throw new Broken('store.open options are an object of strings');
        }
        const url = run.url + (run.url.includes('?') ? '&' : '?') + Object.entries(o).map(([k, v]) => `${k}=${v}`).join('&');
        const [st, r] = await run.call('bittw_open', url);
        if (st === 0) {
          await run.R.bittw_close(r[0]);
          native.bittw_free(r[0]);
        }
        return [st, {}];
      }
      default: return execModule(run, s, c);
    }
  }

  async function execModule(run, s, c) {
    const op = s.op;
    const B = run.box;
    switch (op) {
      case 'queue.enqueue': {
        const [st, r] = await c('bittw_queue_enqueue2', B, name(s.topic), bstr(s.payload ?? ''), kind(s.kind),
          num(s.delay ?? 0), num(s.max_attempts ?? 0), optBstr(s.dedup), CQ.priority(s.priority));
        if ((st === 0 || st === 2) && r[0] === 0n) throw new Mismatch('enqueue gave id 0');
        return [st, { id: st === 0 || st === 2 ? r[0] : null }];
      }
      case 'queue.dequeue': {
        const limit = num(s.limit ?? 0);
        const [st, r] = await CQ.dequeue(run, s, c, limit, cancelOf(s));
        return [st, { messages: st === 0 ? msgList(run, r[0], limit, CQ.topics(s), true, 3) : null }];
      }
      case 'queue.get': case 'queue.cancel': case 'queue.reschedule': return CQ.execStep(run, s, c);
      case 'queue.ack': case 'queue.purge': case 'schedule.upsert': return CR.execStep(run, s, c);
      case 'queue.nack': case 'queue.extend': {
        const topic = name(s.topic);
        const id = run.idnum(s.id);
        const tok = run.variable(s.token);
        if (op === 'queue.nack') {
          return [(await c('bitt_queue_nack', B, topic, id, tok, optText(s.error), num(s.delay ?? -1)))[0], {}];
        }
        return [(await c('bitt_queue_extend', B, topic, id, tok, num(s.lease)))[0], {}];
      }
      case 'queue.snooze':
        return [(await c('bitt_queue_snooze', B, name(s.topic), run.idnum(s.id), run.variable(s.token),
          num(s.delay ?? 0)))[0], {}];
      case 'queue.ack_many': {
        if (!Array.isArray(s.items)) throw new Broken('queue.ack_many needs items (an array)');
        const pairs = F.expandCopies(s.items).map((it) => {
          F.checkMembers(it, ['id', 'token'], 'an ack_many item');
          return [run.idnum(it.id), run.variable(it.token)];
        });
        const [st, r] = await c('bitt_queue_ack_many', B, name(s.topic), pairs);
        return [st, st === 0 ? { statuses: r[0], count: BigInt(r[0].filter((x) => x === 0).length) } : {}];
      }
      case 'queue.dead_list': {
        const topic = name(s.topic);
        const after = run.idnum(s.after ?? 0);
        const limit = num(s.limit ?? 0);
        const [st, r] = await c('bitt_queue_dead_list', B, topic, after, limit);
        if (st === 0) {
          const ids = msgList(run, r[0], limit, topic, false, 4).map((m) => m[0]);
          if (ids.some((i) => i <= after)) throw new Mismatch(`dead list ids not above after: ${ids}`);
          increasing(ids, 'dead list ids');
        }
        return [st, { messages: st === 0 ? r[0] : null }];
      }
      case 'queue.dead_retry': case 'queue.dead_delete': {
        const fn = op === 'queue.dead_retry' ? 'bitt_queue_dead_retry' : 'bitt_queue_dead_delete';
        const [st, r] = await c(fn, B, name(s.topic), run.idnum(s.id ?? 0));
        return [st, { count: st === 0 ? r[0] : null }];
      }
      case 'queue.stats': {
        const [st, r] = await c('bittw_queue_stats', B, name(s.topic));
        if (st !== 0) return [st, {}];
        const t = r[0];
        return [st, { pending: t[0], delayed: t[1], processing: t[2], dead: t[3], oldest_pending_at: t[4], done: t[5] }];
      }
      case 'lease.acquire': {
        const [st, r] = await c('bitt_lease_acquire', B, name(s.name), name(s.owner), num(s.ttl));
        if (st === 0 && r[0] === 0n) throw new Mismatch('acquire gave epoch 0');
        return [st, st === 0 ? { epoch: r[0], expires_at: r[1] } : {}];
      }
      case 'lease.renew': {
        const [st, r] = await c('bitt_lease_renew', B, name(s.name), name(s.owner), run.idnum(s.epoch), num(s.ttl));
        return [st, st === 0 ? { expires_at: r[0] } : {}];
      }
      case 'lease.release':
        return [(await c('bitt_lease_release', B, name(s.name), name(s.owner), run.idnum(s.epoch)))[0], {}];
      case 'lease.get': {
        const [st, r] = await c('bitt_lease_get', B, name(s.name));
        return [st, st === 0 ? { owner: r[0], epoch: r[1], expires_at: r[2] } : {}];
      }
      case 'outbox.append': {
        const [st, r] = await c('bitt_outbox_append', B, name(s.stream), bstr(s.event ?? ''), kind(s.kind));
        if (st === 0 && r[0] === 0n) throw new Mismatch('append gave seq 0');
        return [st, { seq: st === 0 ? r[0] : null }];
      }
      case 'outbox.pending': case 'outbox.parked': {
        const stream = name(s.stream);
        const limit = num(s.limit ?? 0);
        const [st, r] = op === 'outbox.pending'
          ? await c('bitt_outbox_pending', B, stream, limit)
          : await c('bitt_outbox_parked', B, stream, F.reason(s.reason ?? 'any'), limit);
        if (st === 0) {
          const lst = msgList(run, r[0], limit, stream);
          increasing(lst.map((m) => m[0]), 'outbox ids');
          if (lst.some((m) => m[4] !== null)) throw new Mismatch('an outbox event carries a token');
        }
        return [st, { messages: st === 0 ? r[0] : null }];
      }
      case 'outbox.ack': case 'outbox.retry': case 'outbox.discard': {
        const seqs = s.seqs === undefined || s.seqs === null ? null : F.expandCopies(s.seqs).map((x) => run.idnum(x));
        if (op === 'outbox.ack' && seqs === null) throw new Broken('outbox.ack needs seqs');
        const fn = { 'outbox.ack': 'bitt_outbox_ack', 'outbox.retry': 'bitt_outbox_retry', 'outbox.discard': 'bitt_outbox_discard' }[op];
        const [st, r] = await c(fn, B, name(s.stream), seqs);
        return [st, { count: st === 0 ? r[0] : null }];
      }
      case 'outbox.fail':
        return [(await c('bitt_outbox_fail', B, name(s.stream), run.idnum(s.seq), optText(s.error),
          num(s.next_attempt_at ?? 0)))[0], {}];
      case 'outbox.park':
        return [(await c('bitt_outbox_park', B, name(s.stream), run.idnum(s.seq), F.reason(s.reason),
          optText(s.error)))[0], {}];
      case 'outbox.counts': {
        const [st, r] = await c('bitt_outbox_counts', B, name(s.stream));
        return [st, st === 0 ? { pending: r[0], parked: r[1] } : {}];
      }
      case 'pubsub.subscribe': {
        const [st, r] = await c('bitt_pubsub_subscribe', B, name(s.channel));
        if (st === 0) run.openSubs.add(r[0]);
        return [st, { sub: st === 0 ? r[0] : null }];
      }
      case 'pubsub.publish':
        return [(await c('bitt_pubsub_publish', B, name(s.channel), bstr(s.data ?? '')))[0], {}];
      case 'pubsub.next': {
        const sub = run.subs[s.sub];
        if (!sub) throw new Broken(`no subscription ${s.sub}`);
        const [st, r] = await c('bitt_pubsub_next_cancel', sub, num(s.timeout ?? 0), cancelOf(s));
        if (st !== 0) return [st, {}];
        const m = r[0];
        if (m === null) throw new Mismatch('next: ok without a message');
        if (m[4] !== null) throw new Mismatch('a published message carries a token');
        return [st, { payload: m[2], channel: Buffer.from(m[1], 'utf8'), created_at: m[8] }];
      }
      case 'pubsub.close': {
        const sub = run.subs[s.sub];
        if (!sub) throw new Broken(`no subscription ${s.sub}`);
        delete run.subs[s.sub];
        native.bitt_pubsub_close(sub);
        run.openSubs.delete(sub);
        return [0, {}];
      }
      case 'budget.take': {
        const [st, r] = await c('bitt_budget_take', B, name(s.name), num(s.capacity), num(s.refill), num(s.period),
          num(s.n));
        if (st === 3 && r[0] < 1n) throw new Mismatch(`a denial with wait ${r[0]} < 1`);
        return [st, st === 3 ? { wait: r[0] } : {}];
      }
      case 'schedule.claim': case 'schedule.get': {
        const [st, r] = op === 'schedule.claim'
          ? await c('bitt_schedule_claim', B, optBstr(s.prefix))
          : await c('bitt_schedule_get', B, name(s.key));
        if (st === 0 && r[0] === null) throw new Mismatch('ok without a schedule');
        return [st, { schedule: st === 0 ? r[0] : null }];
      }
      case 'schedule.list': {
        const [st, r] = await c('bittw_schedule_list', B);
        if (st === 0) {
          const ks = r[0].map((t) => Buffer.from(t[0], 'utf8'));
          for (let i = 1; i < ks.length; i++) {
            if (Buffer.compare(ks[i - 1], ks[i]) >= 0) throw new Mismatch(`schedule keys not increasing: ${ks.map(F.show)}`);
          }
        }
        return [st, { schedules: st === 0 ? r[0] : null }];
      }
      case 'schedule.delete': return [(await c('bitt_schedule_delete', B, name(s.key)))[0], {}];
      default: throw new Broken(`unknown op ${op}`);
    }
  }

  return { execStep };
};
