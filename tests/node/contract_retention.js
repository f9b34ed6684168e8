'use strict';
// The retention and cron part of the Node contract runner (contract.js):
// queue.ack with a result, queue.purge, a done message's done_at / result /
// result_kind, stats' done, schedule.upsert with cron / topic / max_attempts /
// priority (bittw_schedule_set, as the C runner calls bitt_schedule_set) and
// a schedule's cron / topic / message_id, read as tests/contract/README.md says.
const F = require('./contract_forms');
const CQ = require('./contract_queue');

const { Broken, num, name, bstr, kind, eq, has } = F;

const SCHED_OPTS = ['cron', 'topic', 'max_attempts', 'priority'];
const UINT32_MAX = 2n ** 32n - 1n;

// The ops this file adds or widens (their arguments), for contract.js's ARGS.
const ARGS = {
  'queue.ack': ['topic', 'id', 'token', 'result', 'result_kind'],
  'queue.purge': ['topic'],
  'schedule.upsert': ['key', 'interval', 'payload', 'kind', 'first_run_at', ...SCHED_OPTS],
};
// Members of an expected message and schedule this file checks.
const MSG_FIELDS = ['done_at', 'result', 'result_kind'];
const SCHED_FIELDS = ['cron', 'topic', 'message_id'];

/* An ack's [result Buffer or null, kind]: "result_kind" only with a result. */
function resultOf(s) {
  if (s.result === undefined || s.result === null) {
    if (has(s, 'result_kind')) throw new Broken('result_kind without a result');
    return [null, 0];
  }
  return [bstr(s.result), kind(s.result_kind)];
}

const optName = (v) => (v === undefined || v === null ? null : name(v));

/* queue.ack, queue.purge, schedule.upsert: [status, result]. */
async function execStep(run, s, c) {
  const B = run.box;
  if (s.op === 'queue.ack') {
    const args = [B, name(s.topic), run.idnum(s.id), run.variable(s.token)];
    const [res, kd] = resultOf(s);
    if (res === null) return [(await c('bitt_queue_ack', ...args))[0], {}];
    return [(await c('bitt_queue_ack_result', ...args, res, kd))[0], {}];
  }
  if (s.op === 'queue.purge') {
    const [st, r] = await c('bitt_queue_purge', B, optName(s.topic));
    return [st, st === 0 ? { removed: r[0] } : {}];
  }
  const args = [B, name(s.key), num(s.interval), bstr(s.payload ?? ''), kind(s.kind)];
  const first = num(s.first_run_at ?? 0);
  if (!SCHED_OPTS.some((k) => has(s, k))) return [(await c('bitt_schedule_upsert', ...args, first))[0], {}];
  const ma = num(s.max_attempts ?? 0);
  if (ma < 0n || ma > UINT32_MAX) throw new Broken(`max_attempts ${ma} is not a uint32`);
  const cron = s.cron ?? null;
  if (cron !== null && typeof cron !== 'string') throw new Broken('cron is a string or null');
  return [(await c('bittw_schedule_set', ...args, cron, first, optName(s.topic), ma, CQ.priority(s.priority)))[0], {}];
}

/* A text field (null when absent) against a string or null. */
function textEq(what, got, want) {
  eq(what, got === null ? null : Buffer.from(got, 'utf8'), want === null ? null : bstr(want));
}

/* done_at, result and result_kind of an expected message (an array m). */
function checkMessage(e, m, w) {
  if (has(e, 'done_at')) eq(`${w} done_at`, m[14], num(e.done_at));
  if (has(e, 'result')) eq(`${w} result`, m[15], e.result === null ? null : bstr(e.result));
  if (has(e, 'result_kind')) eq(`${w} result_kind`, m[16], e.result_kind === null ? -1 : kind(e.result_kind));
}

/* cron, topic and message_id of an expected schedule (an array t). */
function checkSchedule(run, exp, t, what) {
  if (has(exp, 'cron')) textEq(`${what} cron`, t[6], exp.cron);
  if (has(exp, 'topic')) textEq(`${what} topic`, t[7], exp.topic);
  if (has(exp, 'message_id')) eq(`${what} message_id`, t[8], run.idnum(exp.message_id));
}

module.exports = { ARGS, MSG_FIELDS, SCHED_FIELDS, resultOf, execStep, checkMessage, checkSchedule };
