"""The contract ops the Python runner makes through the public API (the rest
go through bitt.raw): a value read and written back as a user holds it
(kv.roundtrip), waits ended by the binding's own cancellation (a fired
bitt.CancelToken), and subscriptions.

Contract numbers are whole milliseconds; they reach the public API as
``timedelta(milliseconds=n)``, which holds them exactly (no float between),
and its times come back as datetimes, turned back into ms exactly."""
from __future__ import annotations

from datetime import datetime, timedelta

import bitt

EPOCH = datetime(1970, 1, 1, tzinfo=bitt._units.UTC)
MS = timedelta(milliseconds=1)


class BrokenCase(Exception):
    """A case the public API cannot carry as written."""


def duration(n: int, what: str) -> timedelta:
    try:
        return timedelta(milliseconds=n)
    except OverflowError:
        raise BrokenCase(f"{what} {n} ms is beyond what a timedelta holds") from None


def ms_of(t):
    return 0 if t is None else (t - EPOCH) // MS


STATE_CODES = {None: 0, "pending": 1, "delayed": 2, "leased": 3, "dead": 4}


def msg_tuple(m: bitt.Message) -> tuple:
    """A public Message as the raw layer's tuple (times in ms)."""
    return (m.id, m.topic, m.payload, m.kind, m.token, m.attempts, m.max_attempts, m.last_error,
            ms_of(m.created_at), ms_of(m.due_at), ms_of(m.failed_at), m.park_reason,
            STATE_CODES[m.state], m.priority)


def fired() -> bitt.CancelToken:
    tok = bitt.CancelToken()
    tok.cancel()
    return tok


def cancel_of(step) -> bitt.CancelToken | None:
    c = step.get("cancel")
    if c is None:
        return None
    if c != "fired":
        raise BrokenCase(f"cancel must be \"fired\", not {c!r}")
    return fired()


def roundtrip(store: bitt.Store, key: bytes) -> int:
    """kv.roundtrip: get as the user gets it, set that value back (no TTL)."""
    e = store.kv.get(key)
    if e is None:
        return bitt.NOTFOUND
    store.kv.set(key, e.value)
    return 0


def dequeue(store: bitt.Store, topic: bytes | list, limit: int, lease: int, wait: int,
            cancel: bitt.CancelToken | None) -> list:
    """A dequeue of one topic (bytes) or of several (a list)."""
    kw = {"topics": topic} if isinstance(topic, list) else {"topic": topic}
    msgs = store.queue.dequeue(**kw, limit=limit, lease=duration(lease, "lease"),
                               wait=duration(wait, "wait"), cancel=cancel)
    return [msg_tuple(m) for m in msgs]


def sub_next(sub: bitt.Subscription, timeout: int, cancel: bitt.CancelToken | None):
    m = sub.next(duration(timeout, "timeout"), cancel=cancel)
    return None if m is None else msg_tuple(m)
