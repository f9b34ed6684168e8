"""A runner of tests/contract/*.json over the Python binding (bitt.raw plus
the value/key helpers), reading the format of tests/contract/README.md."""
from __future__ import annotations

import json
import os
import struct
import tempfile
import threading
import uuid
from pathlib import Path

import bitt
import contract_public as pub
import contract_queue as cq
import contract_retention as cr
from bitt import raw

CONTRACT_DIR = Path(__file__).resolve().parents[1] / "contract"

STATUS = {"ok": 0, "not_found": 1, "exists": 2, "denied": 3, "invalid": -1, "nomem": -2,
          "too_large": -3, "not_counter": -4, "overflow": -5, "conflict": -6, "backend": -7,
          "busy": -8, "schema": -9, "url": -10, "cursor": -11, "usage": -12,
          "unsupported": -13, "token": -14, "lease_lost": -15, "canceled": -16}
STATUS_NAME = {v: k for k, v in STATUS.items()}
KINDS = {"bytes": 0, "json": 1, "counter": 2}
REASONS = {"poison": 1, "invalid": 2, "any": 0}


class Broken(pub.BrokenCase):
    """The case itself is malformed."""


class Mismatch(AssertionError):
    pass


def load_cases():
    out = []
    for f in sorted(CONTRACT_DIR.glob("*.json")):
        for c in json.loads(f.read_text())["cases"]:
            out.append((f.stem, c))
    return out


# ---- the value forms ----------------------------------------------------------
def check_members(obj, allowed, what):
    extra = set(obj) - set(allowed) - {"note"}
    if extra:
        raise Broken(f"{what}: unknown member(s) {sorted(extra)}")


def bstr(v) -> bytes:
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, dict):
        if "hex" in v:
            check_members(v, ["hex"], "hex")
            return bytes.fromhex(v["hex"])
        if "repeat" in v:
            r = v["repeat"]
            check_members(r, ["hex", "string", "count"], "repeat")
            unit = bytes.fromhex(r["hex"]) if "hex" in r else r["string"].encode("utf-8")
            return unit * num(r["count"])
        if "concat" in v:
            return b"".join(bstr(x) for x in v["concat"])
        if "tuple" in v:
            return tuple_encode(v["tuple"])
    raise Broken(f"not a byte string: {v!r}")


def opt_bstr(v):
    return None if v is None else bstr(v)


def num(v) -> int:
    if isinstance(v, bool):
        raise Broken(f"not a number: {v!r}")
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        return int(v)
    raise Broken(f"not a number: {v!r}")


def fnum(v) -> float:
    if isinstance(v, str):
        return float(v)
    return float(v)


def tuple_part(p):
    check_members(p, ["bytes_hex", "string", "string_hex", "int", "float", "bool"], "part")
    if "bytes_hex" in p:
        return bytes.fromhex(p["bytes_hex"])
    if "string" in p:
        return p["string"]
    if "string_hex" in p:
        return bytes.fromhex(p["string_hex"]).decode("utf-8", "surrogateescape")
    if "int" in p:
        return num(p["int"])
    if "float" in p:
        return fnum(p["float"])
    if "bool" in p:
        return bool(p["bool"])
    raise Broken(f"bad tuple part {p!r}")


def tuple_encode(parts) -> bytes:
    return raw.bittw_tuple_encode([tuple_part(p) for p in parts])


def name(v) -> bytes:
    b = bstr(v)
    if b"\0" in b:
        raise Broken("a name holds a NUL byte")
    return b


def kind(v) -> int:
    if v is None:
        return 0
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    return KINDS[v]


# ---- a case ---------------------------------------------------------------------
class Run:
    def __init__(self, url: str, file_backed: bool, case: dict):
        self.url = url
        self.file_backed = file_backed
        self.case = case
        self.vars: dict = {}
        self.tokens_seen: set = set()
        self.subs: dict = {}
        self.open_subs: list = []
        self.store = bitt.open(url)
        self.box = self.store._box
        raw.bitt_clock_set_manual(self.box, 1000000)

    def close(self):
        for s in self.open_subs:
            s.close()
        self.open_subs = []
        self.store.close()

    # variables
    def var(self, v, kind_=None):
        if isinstance(v, dict):
            check_members(v, ["var"], "var")
            if v["var"] not in self.vars:
                raise Broken(f"variable {v['var']} not set")
            return self.vars[v["var"]]
        return v

    def idnum(self, v):
        return num(self.var(v))

    # calls: (status, rest)
    def call(self, fn, *args):
        try:
            r = fn(*args)
        except bitt.Error as e:
            if not e.message:
                raise Mismatch(f"status {e.code}: empty error message")
            lc = raw.bitt_error_last_code()
            if lc != e.code:
                raise Mismatch(f"bitt_error_last_code() is {lc} after status {e.code}")
            return e.code, None
        if isinstance(r, int):
            return r, ()
        return r[0], tuple(r[1:])


def keylist(run, items, allow_null=False):
    out = []
    for it in items:
        if it is None and allow_null:
            out.append(None)
        elif isinstance(it, dict) and "copies" in it:
            check_members(it, ["copies", "of"], "copies")
            out.extend(keylist(run, [it["of"]], allow_null) * num(it["copies"]))
        elif isinstance(it, dict) and "fill" in it:
            f = it["fill"]
            check_members(f, ["prefix", "count", "width"], "fill")
            out.extend(fill_keys(bstr(f.get("prefix", "")), num(f["count"]), num(f.get("width", 0))))
        else:
            out.append(bstr(it))
    return out


def fill_keys(prefix, count, width):
    return [prefix + str(i).zfill(width).encode() for i in range(count)]


def expand_copies(items):
    out = []
    for it in items:
        if isinstance(it, dict) and "copies" in it:
            out.extend([it["of"]] * num(it["copies"]))
        else:
            out.append(it)
    return out


def eq(what, got, want):
    if got != want:
        raise Mismatch(f"{what}: expected {want!r}, got {got!r}")


def counter_of(value: bytes, k: int):
    return int(value) if k == 2 else None


def check_version(run, exp, v, what="version"):
    if v is not None and v < 1:
        raise Mismatch(f"{what} {v} < 1")
    for op, f in (("version_eq", lambda a, b: a == b), ("version_ne", lambda a, b: a != b),
                  ("version_gt", lambda a, b: a > b), ("version_lt", lambda a, b: a < b)):
        if op in exp:
            other = run.vars.get(exp[op])
            if other is None:
                raise Broken(f"variable {exp[op]} not set")
            if not f(v, other):
                raise Mismatch(f"{op}: {v} vs {exp[op]}={other}")


def check_entry(run, exp, e, what):
    check_members(exp, ["key", "value", "kind", "expires_at", "counter", "version_eq",
                        "version_ne", "version_gt", "version_lt", "status"], what)
    k, v, kd, ver, exp_at = e
    if "key" in exp:
        eq(f"{what} key", k, bstr(exp["key"]))
    if "value" in exp:
        eq(f"{what} value", v, bstr(exp["value"]))
    if "kind" in exp:
        eq(f"{what} kind", kd, kind(exp["kind"]))
    if "expires_at" in exp:
        eq(f"{what} expires_at", exp_at, num(exp["expires_at"]))
    if "counter" in exp:
        eq(f"{what} counter", counter_of(v, kd), None if exp["counter"] is None else num(exp["counter"]))
    check_version(run, exp, ver, what + " version")


# ---- ops: each returns (status, result) -------------------------------------------
ARGS = {
    "kv.get": ["key"], "kv.take": ["key"], "kv.get_many": ["keys"], "kv.roundtrip": ["key"],
    "kv.set": ["key", "value", "kind", "ttl"], "kv.add": ["key", "value", "kind", "ttl"],
    "kv.delete": ["key"], "kv.increment": ["key", "delta", "ttl"],
    "kv.list": ["prefix", "start", "end", "limit", "reverse", "cursor", "follow"],
    "kv.purge": [], "kv.fill": ["prefix", "count", "width", "value", "kind", "ttl"],
    "txn": ["actions", "recommit"], "clock.set": ["now"], "clock.advance": ["ms"],
    "clock.now": [], "tuple.encode": ["tuple"], "tuple.decode": ["key"],
    "tuple.order": ["tuples"], "parallel": ["threads", "repeat", "step", "expect_counts"], "store.open": ["options"],
    "queue.enqueue": ["topic", "payload", "kind", "delay", "max_attempts", "dedup", "priority"],
    "queue.dequeue": ["topic", "topics", "limit", "lease", "wait", "cancel"],
    "queue.snooze": ["topic", "id", "token", "delay"],
    "queue.ack_many": ["topic", "items"],
    "queue.nack": ["topic", "id", "token", "error", "delay"],
    "queue.extend": ["topic", "id", "token", "lease"],
    "queue.dead_list": ["topic", "after", "limit"], "queue.dead_retry": ["topic", "id"],
    "queue.dead_delete": ["topic", "id"], "queue.stats": ["topic"],
    "lease.acquire": ["name", "owner", "ttl"], "lease.renew": ["name", "owner", "epoch", "ttl"],
    "lease.release": ["name", "owner", "epoch"], "lease.get": ["name"],
    "outbox.append": ["stream", "event", "kind"], "outbox.pending": ["stream", "limit"],
    "outbox.ack": ["stream", "seqs"], "outbox.fail": ["stream", "seq", "error", "next_attempt_at"],
    "outbox.park": ["stream", "seq", "reason", "error"],
    "outbox.parked": ["stream", "reason", "limit"], "outbox.retry": ["stream", "seqs"],
    "outbox.discard": ["stream", "seqs"], "outbox.counts": ["stream"],
    "pubsub.subscribe": ["channel"], "pubsub.publish": ["channel", "data"],
    "pubsub.next": ["sub", "timeout", "cancel"], "pubsub.close": ["sub"],
    "budget.take": ["name", "capacity", "refill", "period", "n"],
    "schedule.claim": ["prefix"], "schedule.get": ["key"], "schedule.list": [],
    "schedule.delete": ["key"],
    **cq.ARGS,
    **cr.ARGS,
}


def opt_text(v):
    return None if v is None else name(v)


def do_list(run, s, limit):
    prefix, start, end = opt_bstr(s.get("prefix")), opt_bstr(s.get("start")), opt_bstr(s.get("end"))
    reverse = bool(s.get("reverse", False))
    cursor = s.get("cursor")
    if isinstance(cursor, dict):
        cursor = run.var(cursor)
        if cursor is None:
            raise Broken("the cursor variable holds no cursor")
    entries, pages = [], 0
    cap = limit if limit else 100
    while True:
        st, r = run.call(raw.bittw_kv_list, run.box, prefix, start, end, limit, reverse, cursor)
        pages += 1
        if st != 0:
            return st, None
        page, cur = r
        if len(page) > cap:
            raise Mismatch(f"a page holds {len(page)} entries, over its limit {cap}")
        entries.extend(page)
        if not s.get("follow") or cur is None:
            break
        if not page:
            raise Mismatch("a page with no entries but a cursor")
        cursor = cur
    keys = [e[0] for e in entries]
    for a, b in zip(keys, keys[1:]):
        if (a >= b) if not reverse else (a <= b):
            raise Mismatch(f"list keys out of order: {a!r} then {b!r}")
    return 0, {"entries": entries, "cursor": cur, "pages": pages}


def refused_status(a):
    """The error status a txn action's add must give (`refused`), 0 without one."""
    if "refused" not in a:
        return 0
    code = STATUS.get(a["refused"]) if isinstance(a["refused"], str) else None
    if code is None or code >= 0:
        raise Broken(f"a txn action's refused must name an error status: {a['refused']!r}")
    return code


def txn_action(run, txn, a):
    op = a["op"]
    r = cq.txn_action(run, txn, a)
    if r is not None:
        return r
    if op == "check":
        check_members(a, ["op", "key", "version", "refused"], "check")
        return run.call(raw.bitt_txn_check, txn, bstr(a["key"]), num(run.var(a["version"])))
    if op == "set":
        check_members(a, ["op", "key", "value", "kind", "ttl", "refused"], "set")
        return run.call(raw.bitt_txn_set, txn, bstr(a["key"]), bstr(a.get("value", "")),
                        kind(a.get("kind")), num(a.get("ttl", 0)))
    if op == "delete":
        check_members(a, ["op", "key", "refused"], "delete")
        return run.call(raw.bitt_txn_delete, txn, bstr(a["key"]))
    if op == "sum":
        check_members(a, ["op", "key", "delta", "refused"], "sum")
        return run.call(raw.bitt_txn_sum, txn, bstr(a["key"]), num(a["delta"]))
    if op == "enqueue":
        check_members(a, ["op", "topic", "payload", "kind", "delay", "max_attempts", "dedup",
                          "priority", "refused"], "enqueue")
        return run.call(raw.bittw_txn_enqueue2, txn, name(a["topic"]), bstr(a.get("payload", "")),
                        kind(a.get("kind")), num(a.get("delay", 0)), num(a.get("max_attempts", 0)),
                        opt_bstr(a.get("dedup")), cq.priority(a.get("priority")))
    if op == "fence":
        check_members(a, ["op", "name", "owner", "epoch", "refused"], "fence")
        return run.call(raw.bitt_txn_fence, txn, name(a["name"]), name(a["owner"]),
                        run.idnum(a["epoch"]))
    if op == "outbox_append":
        check_members(a, ["op", "stream", "event", "kind", "refused"], "outbox_append")
        return run.call(raw.bitt_txn_outbox_append, txn, name(a["stream"]),
                        bstr(a.get("event", "")), kind(a.get("kind")))
    raise Broken(f"unknown txn action {op}")


def msg_list(run, step, lst, limit, topic, dequeue=False, max_cap=None, state=0):
    """Checks a message list: topic is the step's topic, or its list of
    topics; state the BITT_MSG_* state every message must have."""
    cap = (limit or 1) if dequeue else (limit or 100)
    if len(lst) > cap:
        raise Mismatch(f"{len(lst)} messages, over the limit {cap}")
    ids, toks = set(), set()
    topics = topic if isinstance(topic, list) else [topic]
    for m in lst:
        if m is None:
            raise Mismatch("a NULL message in a list")
        if m[1].encode("utf-8", "surrogateescape") not in topics:
            raise Mismatch(f"message topic {m[1]!r} is not the step's")
        if m[12] != state:
            raise Mismatch(f"message {m[0]} has the state {m[12]}, not {state}")
        if dequeue:
            tok = m[4]
            if not tok or tok in toks or tok in run.tokens_seen:
                raise Mismatch(f"delivery token {tok!r} missing or not fresh")
            if m[0] in ids:
                raise Mismatch(f"id {m[0]} twice in one batch")
            if not (1 <= m[5] <= m[6]):
                raise Mismatch(f"attempts {m[5]} outside 1..{m[6]}")
            toks.add(tok)
            ids.add(m[0])
    run.tokens_seen |= toks
    return lst


def exec_step(run, s):
    op = s["op"]
    g = s.get
    if op in ("kv.get", "kv.take"):
        fn = raw.bitt_kv_get if op == "kv.get" else raw.bitt_kv_take
        st, r = run.call(fn, run.box, bstr(s["key"]))
        return st, {"entry": r[0] if r else None}
    if op == "kv.roundtrip":
        return run.call(pub.roundtrip, run.store, bstr(s["key"]))[0], {}
    if op == "kv.get_many":
        keys = keylist(run, s["keys"])
        st, r = run.call(raw.bittw_kv_get_many, run.box, keys)
        return st, {"entries": r[0] if r else None}
    if op in ("kv.set", "kv.add"):
        fn = raw.bitt_kv_set if op == "kv.set" else raw.bitt_kv_add
        st, r = run.call(fn, run.box, bstr(s["key"]), bstr(g("value", "")), kind(g("kind")),
                         num(g("ttl", 0)))
        return st, {"version": r[0] if r and st == 0 else None}
    if op == "kv.delete":
        return run.call(raw.bitt_kv_delete, run.box, bstr(s["key"]))[0], {}
    if op == "kv.increment":
        st, r = run.call(raw.bitt_kv_increment, run.box, bstr(s["key"]), num(s["delta"]),
                         num(g("ttl", 0)))
        return st, ({"counter": r[0], "version": r[1]} if st == 0 else {})
    if op == "kv.list":
        return do_list(run, s, num(g("limit", 0)))
    if op == "kv.purge":
        st, r = run.call(raw.bitt_kv_purge_expired, run.box)
        return st, {"removed": r[0] if r else None}
    if op == "kv.fill":
        v, kd, ttl = bstr(g("value", "")), kind(g("kind")), num(g("ttl", 0))
        for k in fill_keys(bstr(g("prefix", "")), num(s["count"]), num(g("width", 0))):
            st, _ = run.call(raw.bitt_kv_set, run.box, k, v, kd, ttl)
            if st != 0:
                return st, {}
        return 0, {}
    if op == "txn":
        st, r = run.call(raw.bitt_txn_begin, run.box)
        if st != 0:
            return st, {}
        txn = r[0]
        try:
            actions = expand_copies(s["actions"])
            anyway = any("refused" in a for a in actions)  # add all, then commit
            for i, a in enumerate(actions):
                ast, _ = txn_action(run, txn, a)
                if anyway:
                    want = refused_status(a)
                    if ast != want:
                        raise Mismatch(f"txn action {i} gave {STATUS_NAME.get(ast, ast)}, "
                                       f"expected {STATUS_NAME[want]}")
                elif ast != 0:
                    return ast, {}
            st, r = run.call(raw.bitt_txn_commit, txn)
            res = {"version": r[0] if st == 0 else None}
            if "recommit" in s:
                st2, r2 = run.call(raw.bitt_txn_commit, txn)
                check_expect(run, "txn", s["recommit"], st2,
                             {"version": r2[0] if st2 == 0 else None}, "recommit")
            return st, res
        finally:
            raw.bitt_txn_free(txn)
    if op == "clock.set":
        return run.call(raw.bitt_clock_set_manual, run.box, num(s["now"]))[0], {}
    if op == "clock.advance":
        return run.call(raw.bitt_clock_advance, run.box, num(s["ms"]))[0], {}
    if op == "clock.now":
        st, r = run.call(raw.bitt_clock_now, run.box)
        return st, {"now": r[0] if r else None}
    if op == "tuple.encode":
        try:
            return 0, {"hex": tuple_encode(s["tuple"]).hex()}
        except bitt.Error as e:
            return e.code, {}
    if op == "tuple.decode":
        try:
            return 0, {"tuple": raw.bittw_tuple_decode(bstr(s["key"]))}
        except bitt.Error as e:
            return e.code, {}
    if op == "tuple.order":
        encs = []
        for t in s["tuples"]:
            try:
                encs.append(tuple_encode(t))
            except bitt.Error as e:
                return e.code, {}
        for a, b in zip(encs, encs[1:]):
            if not a < b:
                raise Mismatch(f"tuple order: {a.hex()} is not below {b.hex()}")
        return 0, {}
    if op == "parallel":
        return do_parallel(run, s), {}
    if op == "store.open":
        opts = s["options"]
        if not isinstance(opts, dict) or not all(isinstance(v, str) for v in opts.values()):
            raise Broken("store.open options are an object of strings")
        url = run.url + ("&" if "?" in run.url else "?") + "&".join(f"{k}={v}" for k, v in opts.items())
        st, r = run.call(raw.bittw_open, url)
        if st == 0:
            raw.bittw_close(r[0])
            raw.bittw_free(r[0])
        return st, {}
    # ---- modules
    if op == "queue.enqueue":
        topic = name(s["topic"])
        st, r = run.call(raw.bittw_queue_enqueue2, run.box, topic, bstr(g("payload", "")),
                         kind(g("kind")), num(g("delay", 0)), num(g("max_attempts", 0)),
                         opt_bstr(g("dedup")), cq.priority(g("priority")))
        if st in (0, 2) and r[0] == 0:
            raise Mismatch("enqueue gave id 0")
        return st, {"id": r[0] if st in (0, 2) else None}
    if op == "queue.dequeue":
        limit = num(g("limit", 0))
        # a fired cancel goes through the binding's own cancellation (public API)
        st, r = cq.dequeue(run, s, limit)
        return st, {"messages": msg_list(run, s, r[0], limit, cq.topics(s), True, state=3)
                    if st == 0 else None}
    if op in cq.ARGS:
        return cq.exec_step(run, s)
    if op in cr.ARGS:
        return cr.exec_step(run, s)
    if op == "queue.snooze":
        return run.call(raw.bitt_queue_snooze, run.box, name(s["topic"]), run.idnum(s["id"]),
                        run.var(s["token"]), num(g("delay", 0)))[0], {}
    if op in ("queue.nack", "queue.extend"):  # (queue.ack: contract_retention.py)
        topic, mid = name(s["topic"]), run.idnum(s["id"])
        tok = run.var(s["token"])
        if op == "queue.nack":
            return run.call(raw.bitt_queue_nack, run.box, topic, mid, tok, opt_text(g("error")),
                            num(g("delay", -1)))[0], {}
        return run.call(raw.bitt_queue_extend, run.box, topic, mid, tok, num(s["lease"]))[0], {}
    if op == "queue.ack_many":
        if not isinstance(s.get("items"), list):
            raise Broken("queue.ack_many needs items (an array)")
        pairs = []
        for it in expand_copies(s["items"]):
            check_members(it, ["id", "token"], "an ack_many item")
            pairs.append((run.idnum(it["id"]), run.var(it["token"])))
        st, r = run.call(raw.bitt_queue_ack_many, run.box, name(s["topic"]), pairs)
        return st, ({"statuses": r[0], "count": r[0].count(0)} if st == 0 else {})
    if op == "queue.dead_list":
        topic, after, limit = name(s["topic"]), run.idnum(g("after", 0)), num(g("limit", 0))
        st, r = run.call(raw.bitt_queue_dead_list, run.box, topic, after, limit)
        if st == 0:
            lst = msg_list(run, s, r[0], limit, topic, state=4)
            ids = [m[0] for m in lst]
            if any(i <= after for i in ids) or ids != sorted(set(ids)):
                raise Mismatch(f"dead list ids not increasing above after: {ids}")
        return st, {"messages": r[0] if st == 0 else None}
    if op in ("queue.dead_retry", "queue.dead_delete"):
        fn = raw.bitt_queue_dead_retry if op == "queue.dead_retry" else raw.bitt_queue_dead_delete
        st, r = run.call(fn, run.box, name(s["topic"]), run.idnum(g("id", 0)))
        return st, {"count": r[0] if st == 0 else None}
    if op == "queue.stats":
        st, r = run.call(raw.bittw_queue_stats, run.box, name(s["topic"]))
        return st, (dict(zip(("pending", "delayed", "processing", "dead", "oldest_pending_at",
                              "done"), r[0]))
                    if st == 0 else {})
    if op == "lease.acquire":
        st, r = run.call(raw.bitt_lease_acquire, run.box, name(s["name"]), name(s["owner"]),
                         num(s["ttl"]))
        if st == 0 and r[0] == 0:
            raise Mismatch("acquire gave epoch 0")
        return st, ({"epoch": r[0], "expires_at": r[1]} if st == 0 else {})
    if op == "lease.renew":
        st, r = run.call(raw.bitt_lease_renew, run.box, name(s["name"]), name(s["owner"]),
                         run.idnum(s["epoch"]), num(s["ttl"]))
        return st, ({"expires_at": r[0]} if st == 0 else {})
    if op == "lease.release":
        return run.call(raw.bitt_lease_release, run.box, name(s["name"]), name(s["owner"]),
                        run.idnum(s["epoch"]))[0], {}
    if op == "lease.get":
        st, r = run.call(raw.bitt_lease_get, run.box, name(s["name"]))
        return st, ({"owner": r[0], "epoch": r[1], "expires_at": r[2]} if st == 0 else {})
    if op == "outbox.append":
        st, r = run.call(raw.bitt_outbox_append, run.box, name(s["stream"]), bstr(g("event", "")),
                         kind(g("kind")))
        if st == 0 and r[0] == 0:
            raise Mismatch("append gave seq 0")
        return st, {"seq": r[0] if st == 0 else None}
    if op in ("outbox.pending", "outbox.parked"):
        stream, limit = name(s["stream"]), num(g("limit", 0))
        if op == "outbox.pending":
            st, r = run.call(raw.bitt_outbox_pending, run.box, stream, limit)
        else:
            reason = g("reason", "any")
            reason = REASONS[reason] if isinstance(reason, str) else num(reason)
            st, r = run.call(raw.bitt_outbox_parked, run.box, stream, reason, limit)
        if st == 0:
            lst = msg_list(run, s, r[0], limit, stream)
            ids = [m[0] for m in lst]
            if ids != sorted(set(ids)):
                raise Mismatch(f"outbox ids not increasing: {ids}")
            if any(m[4] is not None for m in lst):
                raise Mismatch("an outbox event carries a token")
        return st, {"messages": r[0] if st == 0 else None}
    if op in ("outbox.ack", "outbox.retry", "outbox.discard"):
        seqs = s.get("seqs")
        seqs = None if seqs is None else [run.idnum(x) for x in expand_copies(seqs)]
        fn = {"outbox.ack": raw.bitt_outbox_ack, "outbox.retry": raw.bitt_outbox_retry,
              "outbox.discard": raw.bitt_outbox_discard}[op]
        if op == "outbox.ack" and seqs is None:
            raise Broken("outbox.ack needs seqs")
        st, r = run.call(fn, run.box, name(s["stream"]), seqs)
        return st, {"count": r[0] if st == 0 else None}
    if op == "outbox.fail":
        return run.call(raw.bitt_outbox_fail, run.box, name(s["stream"]), run.idnum(s["seq"]),
                        opt_text(g("error")), num(g("next_attempt_at", 0)))[0], {}
    if op == "outbox.park":
        reason = s["reason"]
        reason = REASONS[reason] if isinstance(reason, str) else num(reason)
        return run.call(raw.bitt_outbox_park, run.box, name(s["stream"]), run.idnum(s["seq"]),
                        reason, opt_text(g("error")))[0], {}
    if op == "outbox.counts":
        st, r = run.call(raw.bitt_outbox_counts, run.box, name(s["stream"]))
        return st, ({"pending": r[0], "parked": r[1]} if st == 0 else {})
    if op == "pubsub.subscribe":
        st, r = run.call(lambda c: (0, run.store.pubsub.subscribe(c)), name(s["channel"]))
        if st == 0:
            run.open_subs.append(r[0])
        return st, {"sub": r[0] if st == 0 else None}
    if op == "pubsub.publish":
        return run.call(raw.bitt_pubsub_publish, run.box, name(s["channel"]),
                        bstr(g("data", "")))[0], {}
    if op == "pubsub.next":
        sub = run.subs.get(s["sub"])
        if sub is None:
            raise Broken(f"no subscription {s['sub']}")
        st, r = run.call(lambda *a: (1, None) if (m := pub.sub_next(*a)) is None else (0, m),
                         sub, num(g("timeout", 0)), pub.cancel_of(s))
        if st == 0:
            m = r[0]
            if m is None:
                raise Mismatch("next: ok without a message")
            if m[4] is not None:
                raise Mismatch("a published message carries a token")
            return st, {"payload": m[2], "channel": m[1].encode("utf-8", "surrogateescape"),
                        "created_at": m[8]}
        return st, {}
    if op == "pubsub.close":
        sub = run.subs.pop(s["sub"], None)
        if sub is None:
            raise Broken(f"no subscription {s['sub']}")
        sub.close()
        run.open_subs.remove(sub)
        return 0, {}
    if op == "budget.take":
        st, r = run.call(raw.bitt_budget_take, run.box, name(s["name"]), num(s["capacity"]),
                         num(s["refill"]), num(s["period"]), num(s["n"]))
        if st == 3 and r[0] < 1:
            raise Mismatch(f"a denial with wait {r[0]} < 1")
        return st, ({"wait": r[0]} if st == 3 else {})
    if op in ("schedule.claim", "schedule.get"):
        if op == "schedule.claim":
            st, r = run.call(raw.bitt_schedule_claim, run.box, opt_bstr(g("prefix")))
        else:
            st, r = run.call(raw.bitt_schedule_get, run.box, name(s["key"]))
        if st == 0 and r[0] is None:
            raise Mismatch("ok without a schedule")
        return st, {"schedule": r[0] if st == 0 else None}
    if op == "schedule.list":
        st, r = run.call(raw.bittw_schedule_list, run.box)
        if st == 0:
            ks = [t[0].encode("utf-8", "surrogateescape") for t in r[0]]
            if ks != sorted(set(ks)):
                raise Mismatch(f"schedule keys not increasing: {ks}")
        return st, {"schedules": r[0] if st == 0 else None}
    if op == "schedule.delete":
        return run.call(raw.bitt_schedule_delete, run.box, name(s["key"]))[0], {}
    raise Broken(f"unknown op {op}")


def sched_fields(run, exp, t, what):
    check_members(exp, ["key", "interval", "payload", "kind", "next_run_at", "occurrence", "status",
                        *cr.SCHED_FIELDS], what)
    key, interval, payload, kd, nra, occ = t[:6]
    cr.check_schedule(run, exp, t, what)
    if "key" in exp:
        eq(f"{what} key", key.encode("utf-8", "surrogateescape"), bstr(exp["key"]))
    if "interval" in exp:
        eq(f"{what} interval", interval, num(exp["interval"]))
    if "payload" in exp:
        eq(f"{what} payload", payload, bstr(exp["payload"]))
    if "kind" in exp:
        eq(f"{what} kind", kd, kind(exp["kind"]))
    if "next_run_at" in exp:
        eq(f"{what} next_run_at", nra, num(exp["next_run_at"]))
    if "occurrence" in exp:
        eq(f"{what} occurrence", occ, num(exp["occurrence"]))


MSG_FIELDS = ["id", "topic", "payload", "kind", "attempts", "max_attempts", "last_error",
              "created_at", "due_at", "failed_at", "park_reason", "token", "state", "priority",
              *cr.MSG_FIELDS]


def check_messages(run, exp, msgs):
    if "count" in exp:
        eq("count", len(msgs), num(exp["count"]))
    if "ids" in exp:
        eq("ids", [m[0] for m in msgs], [run.idnum(x) for x in exp["ids"]])
    if "payloads" in exp:
        eq("payloads", [m[2] for m in msgs], [bstr(x) for x in exp["payloads"]])
    if "messages" in exp:
        eq("messages count", len(msgs), len(exp["messages"]))
        for i, (m, e) in enumerate(zip(msgs, exp["messages"])):
            check_message(run, e, m, f"message {i}")


def check_message(run, e, m, w):
    """One message tuple against an expected message object."""
    check_members(e, MSG_FIELDS, w)
    if "id" in e:
        eq(w + " id", m[0], run.idnum(e["id"]))
    if "topic" in e:
        eq(w + " topic", m[1].encode("utf-8", "surrogateescape"), bstr(e["topic"]))
    if "payload" in e:
        eq(w + " payload", m[2], bstr(e["payload"]))
    if "kind" in e:
        eq(w + " kind", m[3], kind(e["kind"]))
    if "token" in e:
        eq(w + " token", m[4], None if e["token"] is None else run.var(e["token"]))
    for j, f in ((5, "attempts"), (6, "max_attempts"), (8, "created_at"), (9, "due_at"),
                 (10, "failed_at")):
        if f in e:
            eq(w + " " + f, m[j], num(e[f]))
    if "last_error" in e:
        eq(w + " last_error", m[7], e["last_error"])
    if "park_reason" in e:
        pr = e["park_reason"]
        eq(w + " park_reason", m[11], REASONS[pr] if isinstance(pr, str) else num(pr))
    cq.check_fields(e, m, w)
    cr.check_message(e, m, w)


def check_expect(run, op, exp, st, res, what="expect"):
    if not isinstance(exp, dict):
        raise Broken("expect must be an object")
    want = STATUS[exp.get("status", "ok")]
    if st != want:
        raise Mismatch(f"{what}: status: expected {STATUS_NAME.get(want, want)}, got "
                       f"{STATUS_NAME.get(st, st)}")
    if st < 0:
        extra = set(exp) - {"status", "note"}
        if extra:
            raise Broken(f"result fields {sorted(extra)} with an error status")
        return
    if op in ("kv.get", "kv.take"):
        e = res["entry"]
        if st == 0:
            if e is None:
                raise Mismatch("ok without an entry")
            check_entry(run, exp, e, "entry")
        elif set(exp) - {"status", "note"}:
            raise Broken("result fields with not_found on get/take")
        return
    if op in ("kv.get_many", "kv.list"):
        check_members(exp, ["status", "entries", "keys", "count", "has_cursor", "pages"], op)
        ents = res["entries"]
        if "count" in exp:
            eq("count", len(ents), num(exp["count"]))
        if "keys" in exp:
            eq("keys", [None if e is None else e[0] for e in ents],
               keylist(run, exp["keys"], allow_null=True))
        if "entries" in exp:
            eq("entries count", len(ents), len(exp["entries"]))
            for i, (e, x) in enumerate(zip(ents, exp["entries"])):
                if x is None or e is None:
                    eq(f"slot {i}", e, x)
                else:
                    check_entry(run, x, e, f"slot {i}")
        if "has_cursor" in exp:
            eq("has_cursor", res["cursor"] is not None, bool(exp["has_cursor"]))
        if "pages" in exp:
            eq("pages", res["pages"], num(exp["pages"]))
        for e in ents:
            if e is not None and e[3] < 1:
                raise Mismatch("version < 1")
        return
    if op in ("kv.set", "kv.add", "kv.increment", "txn"):
        check_members(exp, ["status", "version_eq", "version_ne", "version_gt", "version_lt",
                            "counter"], op)
        if st == 0:
            check_version(run, exp, res.get("version"))
        if "counter" in exp:
            eq("counter", res.get("counter"), num(exp["counter"]))
        return
    if op == "queue.ack_many":
        check_members(exp, ["status", "statuses", "count"], op)
        if st == 0 and "statuses" in exp:
            eq("statuses", [STATUS_NAME.get(x, x) for x in res["statuses"]], exp["statuses"])
        if st == 0 and "count" in exp:
            eq("count", res["count"], num(exp["count"]))
        return
    if op in ("queue.dequeue", "queue.dead_list", "outbox.pending", "outbox.parked"):
        check_members(exp, ["status", "count", "ids", "payloads", "messages"], op)
        check_messages(run, exp, res["messages"])
        return
    if op == "queue.get":
        cq.check_get(run, exp, st, res)
        return
    if op in ("schedule.claim", "schedule.get"):
        if st == 0:
            sched_fields(run, exp, res["schedule"], "schedule")
        return
    if op == "schedule.list":
        check_members(exp, ["status", "schedules", "keys", "count"], op)
        sc = res["schedules"]
        if "count" in exp:
            eq("count", len(sc), num(exp["count"]))
        if "keys" in exp:
            eq("keys", [t[0].encode("utf-8", "surrogateescape") for t in sc],
               [bstr(k) for k in exp["keys"]])
        if "schedules" in exp:
            eq("schedules count", len(sc), len(exp["schedules"]))
            for i, (t, x) in enumerate(zip(sc, exp["schedules"])):
                sched_fields(run, x, t, f"schedule {i}")
        return
    if op == "tuple.decode":
        check_members(exp, ["status", "tuple"], op)
        if "tuple" in exp:
            got = res["tuple"]
            want_parts = [tuple_part(p) for p in exp["tuple"]]
            eq("tuple length", len(got), len(want_parts))
            for i, (a, b) in enumerate(zip(got, want_parts)):
                if type(a) is not type(b):
                    raise Mismatch(f"part {i}: expected {b!r}, got {a!r}")
                if isinstance(a, float):
                    if struct.pack("<d", a) != struct.pack("<d", b):
                        raise Mismatch(f"part {i}: expected {b!r}, got {a!r}")
                elif a != b:
                    raise Mismatch(f"part {i}: expected {b!r}, got {a!r}")
        return
    if op == "tuple.encode":
        check_members(exp, ["status", "hex"], op)
        if "hex" in exp:
            eq("hex", res["hex"], exp["hex"].lower())
        return
    # scalar fields
    for f, v in exp.items():
        if f in ("status", "note"):
            continue
        if op == "queue.enqueue" and f == "id":
            eq("id", res["id"], run.idnum(v))
        elif op == "queue.enqueue" and f == "id_ne":
            if res["id"] == run.idnum(v):
                raise Mismatch(f"id {res['id']} equals {v}")
        elif op == "outbox.append" and f == "seq_gt":
            if not res["seq"] > run.idnum(v):
                raise Mismatch(f"seq {res['seq']} not > {v}")
        elif f == "epoch":
            eq("epoch", res.get("epoch"), run.idnum(v))
        elif f in ("owner", "payload", "channel"):
            eq(f, res.get(f), bstr(v))
        elif f in res:
            eq(f, res[f], num(v))
        else:
            raise Broken(f"{op}: unknown expect member {f}")


def do_save(run, op, save, st, res):
    for what, target in save.items():
        if what == "version":
            v = res.get("version") if op not in ("kv.get", "kv.take") else (
                res["entry"][3] if res.get("entry") else None)
            if v is None:
                raise Broken("save: no version")
            run.vars[target] = v
        elif what == "cursor":
            run.vars[target] = res["cursor"]
        elif what == "id":
            run.vars[target] = res["id"]
        elif what == "seq":
            run.vars[target] = res["seq"]
        elif what == "epoch":
            run.vars[target] = res["epoch"]
        elif what == "sub":
            run.subs[target] = res["sub"]
        elif what in ("ids", "tokens"):
            msgs = res.get("messages")
            if msgs is None:
                raise Broken("save: no messages")
            for i, t in enumerate(target):
                if t is None:
                    continue
                if i >= len(msgs):
                    raise Mismatch(f"save {what}: index {i} past the end ({len(msgs)})")
                run.vars[t] = msgs[i][0] if what == "ids" else msgs[i][4]
        else:
            raise Broken(f"unknown save {what}")


PARALLEL_OK = {"kv.get", "kv.take", "kv.get_many", "kv.set", "kv.add", "kv.delete",
               "kv.increment", "kv.list", "kv.purge", "txn", "queue.enqueue", "queue.dequeue",
               "lease.acquire", "outbox.append", "pubsub.publish", "budget.take",
               "schedule.claim"}


def do_parallel(run, s):
    inner = s["step"]
    if inner["op"] not in PARALLEL_OK or "expect" in inner or "save" in inner:
        raise Broken("parallel: bad inner step")
    check_members(inner, ["op"] + ARGS[inner["op"]], inner["op"])
    n, repeat = num(s["threads"]), num(s.get("repeat", 1))
    now = raw.bitt_clock_now(run.box)[1]
    workers = []
    for _ in range(n):
        if run.file_backed:
            w = Run.__new__(Run)
            w.__dict__.update(run.__dict__)
            w.store = bitt.open(run.url)
            w.box = w.store._box
            raw.bitt_clock_set_manual(w.box, now)
            w.tokens_seen = set()
            w.open_subs = []
        else:
            w = Run.__new__(Run)
            w.__dict__.update(run.__dict__)
            w.tokens_seen = set()
        workers.append(w)
    barrier = threading.Barrier(n)
    counts: dict = {}
    errors: list = []
    lock = threading.Lock()

    def work(w):
        try:
            barrier.wait()
            for _ in range(repeat):
                st, _ = exec_step(w, inner)
                with lock:
                    counts[st] = counts.get(st, 0) + 1
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    ts = [threading.Thread(target=work, args=(w,)) for w in workers]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if run.file_backed:
        for w in workers:
            w.store.close()
    if errors:
        raise errors[0]
    want = {STATUS[k]: num(v) for k, v in s["expect_counts"].items()}
    for code in set(want) | set(counts):
        if counts.get(code, 0) != want.get(code, 0):
            raise Mismatch(f"parallel counts: expected {s['expect_counts']}, got "
                           f"{ {STATUS_NAME[k]: v for k, v in counts.items()} }")
    return 0


def run_case(url: str, file_backed: bool, case: dict) -> None:
    check_members(case, ["name", "description", "url_options", "steps"], "case")
    opts = case.get("url_options")
    if opts:
        url += ("&" if "?" in url else "?") + "&".join(f"{k}={v}" for k, v in opts.items())
    run = Run(url, file_backed, case)
    try:
        for i, s in enumerate(case["steps"]):
            op = s.get("op")
            if op not in ARGS:
                raise Broken(f"step {i}: unknown op {op!r}")
            check_members(s, ["op", "expect", "save"] + ARGS[op], f"step {i} ({op})")
            try:
                st, res = exec_step(run, s)
                if op != "parallel":
                    check_expect(run, op, s.get("expect", {"status": "ok"}), st, res)
                elif "expect" in s:
                    raise Broken("parallel takes expect_counts")
                if "save" in s:
                    do_save(run, op, s["save"], st, res)
            except (Mismatch, pub.BrokenCase) as e:
                raise type(e)(f"step {i} ({op}): {e}") from None
    finally:
        run.close()
