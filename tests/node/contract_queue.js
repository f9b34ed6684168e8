'use strict';
// The queue-control part of the Node contract runner (contract.js): messages
// by id (queue.get, queue.cancel, queue.reschedule), a dequeue over several
// topics, priorities, the queue ops of a txn, and a message's state and
// priority, read as tests/contract/README.md says.
const F = require('./contract_forms');

const { Broken, Mismatch, num, name, optText, eq, has, checkMembers } = F;

const STATES = { pending: 1, delayed: 2, leased: 3, dead: 4, done: 5 };
const STATE_NAME = Object.fromEntries(Object.entries(STATES).map(([k, v]) => [v, k]));
const INT32_MIN = -(2n ** 31n);
const INT32_MAX = 2n ** 31n - 1n;

// The ops this file adds (their arguments), for contract.js's ARGS.
const ARGS = { 'queue.get': ['topic', 'id'], 'queue.cancel': ['topic', 'id'], 'queue.reschedule': ['topic', 'id', 'delay'] };

// The txn actions (their members besides "op" and "refused").
const ACTIONS = {
  queue_ack: ['topic', 'id', 'token', 'result', 'result_kind'],
  queue_nack: ['topic', 'id', 'token', 'error', 'delay'],
  queue_snooze: ['topic', 'id', 'token', 'delay'],
  queue_extend: ['topic', 'id', 'token', 'lease'],
  queue_cancel: ['topic', 'id'],
  queue_reschedule: ['topic', 'id', 'delay'],
};

/* An optional int32 (a priority); a case with another number is broken. */
function priority(v) {
  const n = num(v ?? 0);
  if (n < INT32_MIN || n > INT32_MAX) throw new Broken(`priority ${n} is not an int32`);
  return n;
}

/* A dequeue's topic (a Buffer) or topics (an array of Buffers): exactly one. */
function topics(s) {
  if (!has(s, 'topics')) return name(s.topic);
  if (has(s, 'topic')) throw new Broken('a dequeue names "topic" or "topics", not both');
  if (!Array.isArray(s.topics)) throw new Broken('"topics" is an array of names');
  return s.topics.map(name);
}

/* Whether a message's topic is the step's topic, or one of its topics. */
function topicOfStep(t, topic) {
  const got = Buffer.from(t, 'utf8');
  return Array.isArray(topic) ? topic.some((x) => got.equals(x)) : got.equals(topic);
}

/* queue.dequeue: [status, outputs]; cancel is the step's token (or null). */
function dequeue(run, s, c, limit, cancel) {
  const t = topics(s);
  const lease = num(s.lease ?? 0);
  const wait = num(s.wait ?? 0);
  if (Array.isArray(t)) return c('bittw_queue_dequeue_topics', run.box, t, limit, lease, wait, cancel);
  return c(run.mode === 'sync' ? 'bittw_queue_dequeue_cancel' : 'bittw_queue_dequeue', run.box, t, limit, lease, wait,
    cancel);
}

/* queue.get, queue.cancel, queue.reschedule: [status, result]. */
async function execStep(run, s, c) {
  const topic = name(s.topic);
  if (!has(s, 'id')) throw new Broken(`${s.op} needs an id`);
  const id = run.idnum(s.id);
  if (s.op === 'queue.get') {
    const [st, r] = await c('bitt_queue_get', run.box, topic, id);
    const m = r ? r[0] : null;
    if (st === 0 && m === null) throw new Mismatch('queue.get: ok without a message');
    if (st !== 0 && m !== null) throw new Mismatch(`queue.get: status ${st} with a message`);
    if (m !== null) {
      if (m[4] !== null) throw new Mismatch('queue.get handed out a token');
      if (!topicOfStep(m[1], topic)) throw new Mismatch(`queue.get gave a message of topic ${m[1]}`);
      if (BigInt(m[0]) !== BigInt(id)) throw new Mismatch(`queue.get gave message ${m[0]}, not ${id}`);
    }
    return [st, { message: m }];
  }
  if (s.op === 'queue.cancel') return [(await c('bitt_queue_cancel', run.box, topic, id))[0], {}];
  return [(await c('bitt_queue_reschedule', run.box, topic, id, num(s.delay ?? 0)))[0], {}];
}

/* The state and priority of an expected message. */
function checkFields(e, m, w) {
  if (has(e, 'state')) {
    if (!has(STATES, e.state)) throw new Broken('state is pending, delayed, leased, dead or done');
    eq(`${w} state`, STATE_NAME[m[12]] ?? m[12], e.state);
  }
  if (has(e, 'priority')) eq(`${w} priority`, m[13], num(e.priority));
}

function checkGet(run, exp, st, res, checkMessage) {
  checkMembers(exp, ['status', 'message'], 'queue.get');
  if (st === 0 && has(exp, 'message')) checkMessage(run, exp.message, res.message, 'message');
}

/* A queue op by id in a txn: a Promise of [status, outputs]; null when a is
 * another action. */
function txnAction(run, txn, a) {
  if (!has(ACTIONS, a.op)) return null;
  const op = a.op;
  checkMembers(a, ['op', 'refused', ...ACTIONS[op]], op);
  for (const m of ['topic', 'id', ...(ACTIONS[op].includes('token') ? ['token'] : [])]) {
    if (!has(a, m)) throw new Broken(`${op} needs ${m}`);
  }
  const t = (fn, ...args) => run.call(fn, txn, ...args);
  const topic = name(a.topic);
  const id = run.idnum(a.id);
  if (op === 'queue_cancel') return t('bitt_txn_queue_cancel', topic, id);
  if (op === 'queue_reschedule') return t('bitt_txn_queue_reschedule', topic, id, num(a.delay ?? 0));
  const tok = run.variable(a.token);
  if (op === 'queue_ack') {
    const [res, kd] = require('./contract_retention').resultOf(a); // (a cycle: required here)
    return res === null ? t('bitt_txn_queue_ack', topic, id, tok) : t('bitt_txn_queue_ack_result', topic, id, tok, res, kd);
  }
  if (op === 'queue_nack') return t('bitt_txn_queue_nack', topic, id, tok, optText(a.error), num(a.delay ?? -1));
  if (op === 'queue_snooze') return t('bitt_txn_queue_snooze', topic, id, tok, num(a.delay ?? 0));
  if (!has(a, 'lease')) throw new Broken('queue_extend needs lease');
  return t('bitt_txn_queue_extend', topic, id, tok, num(a.lease));
}

module.exports = { ARGS, priority, topics, topicOfStep, dequeue, execStep, checkFields, checkGet, txnAction };
