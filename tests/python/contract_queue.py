"""The queue-control part of the Python contract runner (contract.py):
messages by id (queue.get, queue.cancel, queue.reschedule), a dequeue over
several topics, priorities, the queue ops of a txn, and a message's state and
priority, read as tests/contract/README.md says."""
from __future__ import annotations

import contract as C
import contract_public as pub
import contract_retention as cr
from bitt import raw

STATES = {"pending": 1, "delayed": 2, "leased": 3, "dead": 4, "done": 5}
STATE_NAME = {v: k for k, v in STATES.items()}
INT32 = (-2**31, 2**31 - 1)

# The ops this file adds (their arguments), for contract.ARGS.
ARGS = {"queue.get": ["topic", "id"], "queue.cancel": ["topic", "id"],
        "queue.reschedule": ["topic", "id", "delay"]}

# The txn actions (their members besides "op" and "refused").
ACTIONS = {"queue_ack": ["topic", "id", "token", "result", "result_kind"],
           "queue_nack": ["topic", "id", "token", "error", "delay"],
           "queue_snooze": ["topic", "id", "token", "delay"],
           "queue_extend": ["topic", "id", "token", "lease"],
           "queue_cancel": ["topic", "id"], "queue_reschedule": ["topic", "id", "delay"]}


def priority(v) -> int:
    """An optional int32 (a priority); a case with another number is broken."""
    n = C.num(0 if v is None else v)
    if not INT32[0] <= n <= INT32[1]:
        raise C.Broken(f"priority {n} is not an int32")
    return n


def topics(s):
    """A dequeue's topic (bytes) or topics (a list of bytes): exactly one."""
    if "topics" not in s:
        return C.name(s["topic"])
    if "topic" in s:
        raise C.Broken('a dequeue names "topic" or "topics", not both')
    if not isinstance(s["topics"], list):
        raise C.Broken('"topics" is an array of names')
    return [C.name(t) for t in s["topics"]]


def dequeue(run, s, limit):
    """queue.dequeue: (status, rest) through the raw call, or through the
    public API with a fired cancellation."""
    t = topics(s)
    lease, wait = C.num(s.get("lease", 0)), C.num(s.get("wait", 0))
    if "cancel" in s:
        return run.call(lambda *a: (0, pub.dequeue(*a)), run.store, t, limit, lease, wait,
                        pub.cancel_of(s))
    if isinstance(t, list):
        return run.call(raw.bittw_queue_dequeue_topics, run.box, t, limit, lease, wait, None)
    return run.call(raw.bittw_queue_dequeue, run.box, t, limit, lease, wait)


def exec_step(run, s):
    """queue.get, queue.cancel, queue.reschedule: (status, result)."""
    op = s["op"]
    topic = C.name(s["topic"])
    if "id" not in s:
        raise C.Broken(f"{op} needs an id")
    mid = run.idnum(s["id"])
    if op == "queue.get":
        st, r = run.call(raw.bitt_queue_get, run.box, topic, mid)
        m = r[0] if r else None
        if st == 0 and m is None:
            raise C.Mismatch("queue.get: ok without a message")
        if st != 0 and m is not None:
            raise C.Mismatch(f"queue.get: status {st} with a message")
        if m is not None:
            if m[4] is not None:
                raise C.Mismatch("queue.get handed out a token")
            if m[1].encode("utf-8", "surrogateescape") != topic:
                raise C.Mismatch(f"queue.get gave a message of topic {m[1]!r}")
            if m[0] != mid:
                raise C.Mismatch(f"queue.get gave message {m[0]}, not {mid}")
        return st, {"message": m}
    if op == "queue.cancel":
        return run.call(raw.bitt_queue_cancel, run.box, topic, mid)[0], {}
    return run.call(raw.bitt_queue_reschedule, run.box, topic, mid, C.num(s.get("delay", 0)))[0], {}


def check_get(run, exp, st, res):
    C.check_members(exp, ["status", "message"], "queue.get")
    if st == 0 and "message" in exp:
        C.check_message(run, exp["message"], res["message"], "message")


def check_fields(e, m, w):
    """The state and priority of an expected message."""
    if "state" in e:
        if e["state"] not in STATES:
            raise C.Broken("state is pending, delayed, leased, dead or done")
        C.eq(w + " state", STATE_NAME.get(m[12], m[12]), e["state"])
    if "priority" in e:
        C.eq(w + " priority", m[13], C.num(e["priority"]))


def txn_action(run, txn, a):
    """A queue op by id in a txn: (status, rest); None when a is another action."""
    op = a["op"]
    if op not in ACTIONS:
        return None
    C.check_members(a, ["op", "refused"] + ACTIONS[op], op)
    for m in ("topic", "id") + (("token",) if "token" in ACTIONS[op] else ()):
        if m not in a:
            raise C.Broken(f"{op} needs {m}")
    topic, mid = C.name(a["topic"]), run.idnum(a["id"])
    if op == "queue_cancel":
        return run.call(raw.bitt_txn_queue_cancel, txn, topic, mid)
    if op == "queue_reschedule":
        return run.call(raw.bitt_txn_queue_reschedule, txn, topic, mid, C.num(a.get("delay", 0)))
    tok = run.var(a["token"])
    if op == "queue_ack":
        res, kd = cr.result_of(a)
        if res is not None:
            return run.call(raw.bitt_txn_queue_ack_result, txn, topic, mid, tok, res, kd)
        return run.call(raw.bitt_txn_queue_ack, txn, topic, mid, tok)
    if op == "queue_nack":
        return run.call(raw.bitt_txn_queue_nack, txn, topic, mid, tok, C.opt_text(a.get("error")),
                        C.num(a.get("delay", -1)))
    if op == "queue_snooze":
        return run.call(raw.bitt_txn_queue_snooze, txn, topic, mid, tok, C.num(a.get("delay", 0)))
    if "lease" not in a:
        raise C.Broken("queue_extend needs lease")
    return run.call(raw.bitt_txn_queue_extend, txn, topic, mid, tok, C.num(a["lease"]))
