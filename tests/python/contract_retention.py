"""The retention and cron part of the Python contract runner (contract.py):
queue.ack with a result, queue.purge, a done message's done_at / result /
result_kind, stats' done, schedule.upsert with cron / topic / max_attempts /
priority (bittw_schedule_set, as the C runner calls bitt_schedule_set) and a
schedule's cron / topic / message_id, read as tests/contract/README.md says."""
from __future__ import annotations

import contract as C
import contract_queue as cq
from bitt import raw

SCHED_OPTS = ("cron", "topic", "max_attempts", "priority")

# The ops this file adds or widens (their arguments), for contract.ARGS.
ARGS = {"queue.ack": ["topic", "id", "token", "result", "result_kind"],
        "queue.purge": ["topic"],
        "schedule.upsert": ["key", "interval", "payload", "kind", "first_run_at", *SCHED_OPTS]}

# Members of an expected message and schedule this file checks.
MSG_FIELDS = ["done_at", "result", "result_kind"]
SCHED_FIELDS = ["cron", "topic", "message_id"]

UINT32_MAX = 2**32 - 1


def result_of(s):
    """An ack's (result bytes or None, kind): "result_kind" only with a result."""
    r = s.get("result")
    if r is None:
        if "result_kind" in s:
            raise C.Broken("result_kind without a result")
        return None, 0
    return C.bstr(r), C.kind(s.get("result_kind"))


def opt_name(v):
    return None if v is None else C.name(v)


def exec_step(run, s):
    """queue.ack, queue.purge, schedule.upsert: (status, result)."""
    op, g = s["op"], s.get
    if op == "queue.ack":
        topic, mid, tok = C.name(s["topic"]), run.idnum(s["id"]), run.var(s["token"])
        res, kd = result_of(s)
        if res is None:
            return run.call(raw.bitt_queue_ack, run.box, topic, mid, tok)[0], {}
        return run.call(raw.bitt_queue_ack_result, run.box, topic, mid, tok, res, kd)[0], {}
    if op == "queue.purge":
        st, r = run.call(raw.bitt_queue_purge, run.box, opt_name(g("topic")))
        return st, ({"removed": r[0]} if st == 0 else {})
    args = (run.box, C.name(s["key"]), C.num(s["interval"]), C.bstr(g("payload", "")),
            C.kind(g("kind")))
    first = C.num(g("first_run_at", 0))
    if not any(k in s for k in SCHED_OPTS):
        return run.call(raw.bitt_schedule_upsert, *args, first)[0], {}
    ma = C.num(g("max_attempts", 0))
    if not 0 <= ma <= UINT32_MAX:
        raise C.Broken(f"max_attempts {ma} is not a uint32")
    cron = g("cron")
    if cron is not None and not isinstance(cron, str):
        raise C.Broken("cron is a string or null")
    return run.call(raw.bittw_schedule_set, *args, cron, first, opt_name(g("topic")), ma,
                    cq.priority(g("priority")))[0], {}


def opt_text_eq(what, got, want):
    """A text field (None when absent) against a string or null."""
    C.eq(what, None if got is None else got.encode("utf-8", "surrogateescape"),
         None if want is None else C.bstr(want))


def check_message(e, m, w):
    """done_at, result and result_kind of an expected message (a tuple m)."""
    if "done_at" in e:
        C.eq(w + " done_at", m[14], C.num(e["done_at"]))
    if "result" in e:
        C.eq(w + " result", m[15], None if e["result"] is None else C.bstr(e["result"]))
    if "result_kind" in e:
        C.eq(w + " result_kind", m[16], -1 if e["result_kind"] is None else C.kind(e["result_kind"]))


def check_schedule(run, exp, t, what):
    """cron, topic and message_id of an expected schedule (a tuple t)."""
    if "cron" in exp:
        opt_text_eq(f"{what} cron", t[6], exp["cron"])
    if "topic" in exp:
        opt_text_eq(f"{what} topic", t[7], exp["topic"])
    if "message_id" in exp:
        C.eq(f"{what} message_id", t[8], run.idnum(exp["message_id"]))
