'use strict';
// The expectations and saves of the contract (tests/contract/README.md).
const F = require('./contract_forms');
const CQ = require('./contract_queue');
const CR = require('./contract_retention');

const { Broken, Mismatch, STATUS, STATUS_NAME, bstr, num, kind, eq, has, checkMembers } = F;

const utf8 = (s) => Buffer.from(s, 'utf8');

function checkVersion(run, exp, v, what = 'version') {
  if (v !== null && v !== undefined && v < 1n) throw new Mismatch(`${what} ${v} < 1`);
  const ops = {
    version_eq: (a, b) => a === b, version_ne: (a, b) => a !== b,
    version_gt: (a, b) => a > b, version_lt: (a, b) => a < b,
  };
  for (const [op, f] of Object.entries(ops)) {
    if (!has(exp, op)) continue;
    const other = run.vars[exp[op]];
    if (other === undefined || other === null) throw new Broken(`variable ${exp[op]} not set`);
    if (!f(BigInt(v), BigInt(other))) throw new Mismatch(`${op}: ${v} vs ${exp[op]}=${other}`);
  }
}

function counterOf(value, k) {
  return k === 2 ? BigInt(value.toString('ascii')) : null;
}

function checkEntry(run, exp, e, what) {
  checkMembers(exp, ['key', 'value', 'kind', 'expires_at', 'counter', 'version_eq', 'version_ne', 'version_gt',
    'version_lt', 'status'], what);
  const { key: k, value: v, kind: kd, version: ver, expiresAt: expAt } = e;
  if (has(exp, 'key')) eq(`${what} key`, k, bstr(exp.key));
  if (has(exp, 'value')) eq(`${what} value`, v, bstr(exp.value));
  if (has(exp, 'kind')) eq(`${what} kind`, kd, kind(exp.kind));
  if (has(exp, 'expires_at')) eq(`${what} expires_at`, BigInt(expAt), num(exp.expires_at));
  if (has(exp, 'counter')) eq(`${what} counter`, counterOf(v, kd), exp.counter === null ? null : num(exp.counter));
  checkVersion(run, exp, ver, `${what} version`);
}

function schedFields(run, exp, t, what) {
  checkMembers(exp, ['key', 'interval', 'payload', 'kind', 'next_run_at', 'occurrence', 'status', ...CR.SCHED_FIELDS],
    what);
  const [key, interval, payload, kd, nra, occ] = t;
  CR.checkSchedule(run, exp, t, what);
  if (has(exp, 'key')) eq(`${what} key`, utf8(key), bstr(exp.key));
  if (has(exp, 'interval')) eq(`${what} interval`, interval, num(exp.interval));
  if (has(exp, 'payload')) eq(`${what} payload`, payload, bstr(exp.payload));
  if (has(exp, 'kind')) eq(`${what} kind`, kd, kind(exp.kind));
  if (has(exp, 'next_run_at')) eq(`${what} next_run_at`, nra, num(exp.next_run_at));
  if (has(exp, 'occurrence')) eq(`${what} occurrence`, occ, num(exp.occurrence));
}

const MSG_FIELDS = ['id', 'topic', 'payload', 'kind', 'attempts', 'max_attempts', 'last_error', 'created_at',
  'due_at', 'failed_at', 'park_reason', 'token', 'state', 'priority', ...CR.MSG_FIELDS];

function checkMessages(run, exp, msgs) {
  if (has(exp, 'count')) eq('count', msgs.length, num(exp.count));
  if (has(exp, 'ids')) eq('ids', msgs.map((m) => m[0]), exp.ids.map((x) => run.idnum(x)));
  if (has(exp, 'payloads')) eq('payloads', msgs.map((m) => m[2]), exp.payloads.map(bstr));
  if (!has(exp, 'messages')) return;
  eq('messages count', msgs.length, exp.messages.length);
  exp.messages.forEach((e, i) => checkMessage(run, e, msgs[i], `message ${i}`));
}

/* One message array against an expected message object. */
function checkMessage(run, e, m, w) {
  checkMembers(e, MSG_FIELDS, w);
  if (has(e, 'id')) eq(`${w} id`, m[0], run.idnum(e.id));
  if (has(e, 'topic')) eq(`${w} topic`, utf8(m[1]), bstr(e.topic));
  if (has(e, 'payload')) eq(`${w} payload`, m[2], bstr(e.payload));
  if (has(e, 'kind')) eq(`${w} kind`, m[3], kind(e.kind));
  if (has(e, 'token')) eq(`${w} token`, m[4], e.token === null ? null : run.variable(e.token));
  for (const [j, f] of [[5, 'attempts'], [6, 'max_attempts'], [8, 'created_at'], [9, 'due_at'], [10, 'failed_at']]) {
    if (has(e, f)) eq(`${w} ${f}`, m[j], num(e[f]));
  }
  if (has(e, 'last_error')) eq(`${w} last_error`, m[7], e.last_error);
  if (has(e, 'park_reason')) eq(`${w} park_reason`, m[11], F.reason(e.park_reason));
  CQ.checkFields(e, m, w);
  CR.checkMessage(e, m, w);
}

function checkTupleDecode(exp, got) {
  const want = exp.tuple.map(F.tuplePart);
  eq('tuple length', got.length, want.length);
  want.forEach((b, i) => {
    const a = got[i];
    const bad = () => new Mismatch(`part ${i}: expected ${F.show(b)}, got ${F.show(a)}`);
    if (b && typeof b === 'object' && !Buffer.isBuffer(b)) { // a string part from raw bytes
      if (typeof a !== 'string' || !utf8(a).equals(b.string)) throw bad();
    } else if (typeof b === 'number') {
      const x = Buffer.alloc(8);
      const y = Buffer.alloc(8);
      if (typeof a !== 'number') throw bad();
      x.writeDoubleLE(a);
      y.writeDoubleLE(b);
      if (!x.equals(y)) throw bad();
    } else if (typeof a !== typeof b || Buffer.isBuffer(a) !== Buffer.isBuffer(b) || !F.same(a, b)) {
      throw bad();
    }
  });
}

function checkExpect(run, op, exp, st, res, what = 'expect') {
  if (!exp || typeof exp !== 'object') throw new Broken('expect must be an object');
  const want = STATUS[exp.status ?? 'ok'];
  if (want === undefined) throw new Broken(`unknown status ${exp.status}`);
  if (st !== want) {
    throw new Mismatch(`${what}: status: expected ${STATUS_NAME[want] ?? want}, got ${STATUS_NAME[st] ?? st}`);
  }
  const fields = Object.keys(exp).filter((k) => k !== 'status' && k !== 'note');
  if (st < 0) {
    if (fields.length) throw new Broken(`result fields ${fields} with an error status`);
    return;
  }
  if (op === 'kv.get' || op === 'kv.take') {
    if (st === 0) {
      if (res.entry === null || res.entry === undefined) throw new Mismatch('ok without an entry');
      checkEntry(run, exp, res.entry, 'entry');
    } else if (fields.length) {
      throw new Broken('result fields with not_found on get/take');
    }
    return;
  }
  if (op === 'kv.get_many' || op === 'kv.list') {
    checkMembers(exp, ['status', 'entries', 'keys', 'count', 'has_cursor', 'pages'], op);
    const ents = res.entries;
    if (has(exp, 'count')) eq('count', ents.length, num(exp.count));
    if (has(exp, 'keys')) {
      const { keylist } = require('./contract');
      eq('keys', ents.map((e) => (e === null ? null : e.key)), keylist(exp.keys, true));
    }
    if (has(exp, 'entries')) {
      eq('entries count', ents.length, exp.entries.length);
      exp.entries.forEach((x, i) => {
        const e = ents[i];
        if (x === null || e === null) eq(`slot ${i}`, e, x);
        else checkEntry(run, x, e, `slot ${i}`);
      });
    }
    if (has(exp, 'has_cursor')) eq('has_cursor', res.cursor !== null, !!exp.has_cursor);
    if (has(exp, 'pages')) eq('pages', res.pages, num(exp.pages));
    for (const e of ents) if (e !== null && e.version < 1n) throw new Mismatch('version < 1');
    return;
  }
  if (['kv.set', 'kv.add', 'kv.increment', 'txn'].includes(op)) {
    checkMembers(exp, ['status', 'version_eq', 'version_ne', 'version_gt', 'version_lt', 'counter'], op);
    if (st === 0) checkVersion(run, exp, res.version);
    if (has(exp, 'counter')) eq('counter', res.counter ?? null, num(exp.counter));
    return;
  }
  if (op === 'queue.ack_many') {
    checkMembers(exp, ['status', 'statuses', 'count'], op);
    if (st === 0 && has(exp, 'statuses')) eq('statuses', res.statuses.map((x) => STATUS_NAME[x] ?? x), exp.statuses);
    if (st === 0 && has(exp, 'count')) eq('count', res.count, num(exp.count));
    return;
  }
  if (['queue.dequeue', 'queue.dead_list', 'outbox.pending', 'outbox.parked'].includes(op)) {
    checkMembers(exp, ['status', 'count', 'ids', 'payloads', 'messages'], op);
    checkMessages(run, exp, res.messages);
    return;
  }
  if (op === 'queue.get') {
    CQ.checkGet(run, exp, st, res, checkMessage);
    return;
  }
  if (op === 'schedule.claim' || op === 'schedule.get') {
    if (st === 0) schedFields(run, exp, res.schedule, 'schedule');
    return;
  }
  if (op === 'schedule.list') {
    checkMembers(exp, ['status', 'schedules', 'keys', 'count'], op);
    const sc = res.schedules;
    if (has(exp, 'count')) eq('count', sc.length, num(exp.count));
    if (has(exp, 'keys')) eq('keys', sc.map((t) => utf8(t[0])), exp.keys.map(bstr));
    if (has(exp, 'schedules')) {
      eq('schedules count', sc.length, exp.schedules.length);
      exp.schedules.forEach((x, i) => schedFields(run, x, sc[i], `schedule ${i}`));
    }
    return;
  }
  if (op === 'tuple.decode') {
    checkMembers(exp, ['status', 'tuple'], op);
    if (has(exp, 'tuple')) checkTupleDecode(exp, res.tuple);
    return;
  }
  if (op === 'tuple.encode') {
    checkMembers(exp, ['status', 'hex'], op);
    if (has(exp, 'hex')) eq('hex', res.hex, exp.hex.toLowerCase());
    return;
  }
  for (const f of fields) { // scalar fields
    const v = exp[f];
    if (op === 'queue.enqueue' && f === 'id') eq('id', res.id, run.idnum(v));
    else if (op === 'queue.enqueue' && f === 'id_ne') {
      if (res.id === run.idnum(v)) throw new Mismatch(`id ${res.id} equals ${v}`);
    } else if (op === 'outbox.append' && f === 'seq_gt') {
      if (!(res.seq > run.idnum(v))) throw new Mismatch(`seq ${res.seq} not > ${v}`);
    } else if (f === 'epoch') eq('epoch', res.epoch, run.idnum(v));
    else if (['owner', 'payload', 'channel'].includes(f)) eq(f, res[f], bstr(v));
    else if (has(res, f)) eq(f, res[f], num(v));
    else throw new Broken(`${op}: unknown expect member ${f}`);
  }
}

function doSave(run, op, save, st, res) {
  for (const [what, target] of Object.entries(save)) {
    if (what === 'version') {
      const v = op === 'kv.get' || op === 'kv.take' ? (res.entry ? res.entry.version : null) : res.version;
      if (v === null || v === undefined) throw new Broken('save: no version');
      run.vars[target] = v;
    } else if (['cursor', 'id', 'seq', 'epoch'].includes(what)) {
      run.vars[target] = res[what];
    } else if (what === 'sub') {
      run.subs[target] = res.sub;
    } else if (what === 'ids' || what === 'tokens') {
      const msgs = res.messages;
      if (!msgs) throw new Broken('save: no messages');
      target.forEach((t, i) => {
        if (t === null) return;
        if (i >= msgs.length) throw new Mismatch(`save ${what}: index ${i} past the end (${msgs.length})`);
        run.vars[t] = what === 'ids' ? msgs[i][0] : msgs[i][4];
      });
    } else {
      throw new Broken(`unknown save ${what}`);
    }
  }
}

module.exports = { checkExpect, doSave };
