"""bitt: one durable state core (KV, queue, leases, outbox, pubsub, budgets,
schedules) over memory, SQLite, PostgreSQL and Redis.

A thin layer over the SWIG extension ``bitt.raw``: every rule is the C
core's. Durations are milliseconds (ints) except the blocking waits
(``dequeue(wait=)``, ``Subscription.next(timeout=)``), which are seconds.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, Iterator, Optional, Sequence

from . import raw as _raw
from ._errors import (BackendError, BusyError, ConflictError, CursorError, Error,
                      InvalidArgument, LeaseLostError, NotACounter, OutOfMemory, Overflow,
                      SchemaError, StaleToken, TooLarge, Unsupported, URLError, UsageError,
                      make_error)
from ._values import (KIND_BYTES, KIND_COUNTER, KIND_JSON, decode_tuple, decode_value,
                      encode_key, encode_value)

_raw.bittw_set_error_class(make_error)

__version__ = _raw.bitt_version()
NOTFOUND, EXISTS, DENIED = 1, 2, 3

__all__ = [
    "open", "Store", "Entry", "Message", "Schedule", "Lease", "Error", "InvalidArgument",
    "OutOfMemory", "TooLarge", "NotACounter", "Overflow", "ConflictError", "BackendError",
    "BusyError", "SchemaError", "URLError", "CursorError", "UsageError", "Unsupported",
    "StaleToken", "LeaseLostError", "encode_key", "decode_tuple", "encode_value",
    "decode_value", "KIND_BYTES", "KIND_JSON", "KIND_COUNTER",
]


@dataclass(frozen=True)
class Entry:
    key: bytes
    value: Any
    version: int
    expires_at: int
    kind: int = KIND_BYTES


def _entry(t) -> Entry:
    return Entry(t[0], decode_value(t[1], t[2]), t[3], t[4], t[2])


@dataclass(frozen=True)
class Message:
    """A queue message, outbox event or published message."""
    id: int
    topic: str
    payload: bytes
    kind: int
    token: Optional[str]
    attempts: int
    max_attempts: int
    last_error: Optional[str]
    created_at: int
    due_at: int
    failed_at: int
    park_reason: int

    @property
    def value(self) -> Any:
        return decode_value(self.payload, self.kind)


@dataclass(frozen=True)
class Schedule:
    key: str
    interval: int
    payload: bytes
    kind: int
    next_run_at: int
    occurrence: int

    @property
    def value(self) -> Any:
        return decode_value(self.payload, self.kind)


@dataclass(frozen=True)
class Lease:
    name: str
    owner: str
    epoch: int
    expires_at: int


def _msgs(lst) -> list:
    return [Message(*t) for t in lst]


class KV:
    __slots__ = ("_s",)

    def __init__(self, store: "Store") -> None:
        self._s = store

    def get(self, key) -> Optional[Entry]:
        r = _raw.bitt_kv_get(self._s._box, encode_key(key))
        return _entry(r[1]) if r[0] == 0 else None

    def set(self, key, value, *, ttl: int = 0) -> int:
        data, kind = encode_value(value)
        return _raw.bitt_kv_set(self._s._box, encode_key(key), data, kind, ttl)[1]

    def add(self, key, value, *, ttl: int = 0) -> Optional[int]:
        """The new version, or None when a live value was there."""
        data, kind = encode_value(value)
        r = _raw.bitt_kv_add(self._s._box, encode_key(key), data, kind, ttl)
        return r[1] if r[0] == 0 else None

    def delete(self, key) -> bool:
        return _raw.bitt_kv_delete(self._s._box, encode_key(key)) == 0

    def take(self, key) -> Optional[Entry]:
        r = _raw.bitt_kv_take(self._s._box, encode_key(key))
        return _entry(r[1]) if r[0] == 0 else None

    def increment(self, key, delta: int = 1, *, ttl: int = 0) -> int:
        return _raw.bitt_kv_increment(self._s._box, encode_key(key), delta, ttl)[1]

    def get_many(self, keys: Sequence) -> list:
        r = _raw.bittw_kv_get_many(self._s._box, [encode_key(k) for k in keys])
        return [None if t is None else _entry(t) for t in r[1]]

    def list(self, prefix=None, *, start=None, end=None, limit: int = 0,
             reverse: bool = False, cursor: Optional[str] = None) -> Iterator[Entry]:
        """Every entry of the selection, following cursors page by page."""
        p = None if prefix is None else encode_key(prefix)
        s = None if start is None else encode_key(start)
        e = None if end is None else encode_key(end)
        while True:
            r = _raw.bittw_kv_list(self._s._box, p, s, e, limit, bool(reverse), cursor)
            for t in r[1]:
                yield _entry(t)
            cursor = r[2]
            if cursor is None:
                return

    def page(self, prefix=None, *, start=None, end=None, limit: int = 0,
             reverse: bool = False, cursor: Optional[str] = None):
        """One page: (entries, cursor or None)."""
        p = None if prefix is None else encode_key(prefix)
        s = None if start is None else encode_key(start)
        e = None if end is None else encode_key(end)
        r = _raw.bittw_kv_list(self._s._box, p, s, e, limit, bool(reverse), cursor)
        return [_entry(t) for t in r[1]], r[2]

    def purge_expired(self) -> int:
        return _raw.bitt_kv_purge_expired(self._s._box)[1]


class Atomic:
    """Checks and mutations committed all or none (``with store.atomic() as tx``)."""

    def __init__(self, store: "Store") -> None:
        self._s = store
        self._txn = _raw.bitt_txn_begin(store._box)[1]
        self.version: Optional[int] = None

    def check(self, key, version: Optional[int]) -> "Atomic":
        _raw.bitt_txn_check(self._txn, encode_key(key), version or 0)
        return self

    def set(self, key, value, *, ttl: int = 0) -> "Atomic":
        data, kind = encode_value(value)
        _raw.bitt_txn_set(self._txn, encode_key(key), data, kind, ttl)
        return self

    def delete(self, key) -> "Atomic":
        _raw.bitt_txn_delete(self._txn, encode_key(key))
        return self

    def sum(self, key, delta: int) -> "Atomic":
        _raw.bitt_txn_sum(self._txn, encode_key(key), delta)
        return self

    def enqueue(self, topic, payload, *, delay: int = 0, max_attempts: int = 0,
                dedup=None) -> "Atomic":
        data, kind = encode_value(payload)
        _raw.bittw_txn_enqueue(self._txn, topic, data, kind, delay, max_attempts,
                               None if dedup is None else encode_key(dedup))
        return self

    def fence(self, name, owner, epoch: int) -> "Atomic":
        _raw.bitt_txn_fence(self._txn, name, owner, epoch)
        return self

    def outbox_append(self, stream, event) -> "Atomic":
        data, kind = encode_value(event)
        _raw.bitt_txn_outbox_append(self._txn, stream, data, kind)
        return self

    def commit(self) -> int:
        self.version = _raw.bitt_txn_commit(self._txn)[1]
        return self.version

    def close(self) -> None:
        if self._txn is not None:
            _raw.bitt_txn_free(self._txn)
            self._txn = None

    def __enter__(self) -> "Atomic":
        return self

    def __exit__(self, et, ev, tb) -> None:
        try:
            if et is None:
                self.commit()
        finally:
            self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass


class Queue:
    def __init__(self, store: "Store") -> None:
        self._s = store

    def enqueue(self, topic, payload, *, delay: int = 0, max_attempts: int = 0,
                dedup=None) -> int:
        """The new id (or the id of the live message holding ``dedup``)."""
        data, kind = encode_value(payload)
        return _raw.bittw_queue_enqueue(self._s._box, topic, data, kind, delay, max_attempts,
                                        None if dedup is None else encode_key(dedup))[1]

    def dequeue(self, topic, *, limit: int = 1, lease: int = 0, wait: float = 0) -> list:
        """Up to ``limit`` messages, waiting up to ``wait`` seconds for a first one."""
        if not isinstance(wait, (int, float)) or isinstance(wait, bool):
            raise TypeError("wait must be a number of seconds")
        r = _raw.bittw_queue_dequeue(self._s._box, topic, limit, lease, int(wait * 1000))
        return _msgs(r[1])

    def ack(self, msg: Message) -> None:
        _raw.bitt_queue_ack(self._s._box, msg.topic, msg.id, msg.token)

    def ack_many(self, topic, deliveries) -> list:
        """Acks many deliveries of ``topic`` in one transaction (one round trip on
        the servers). ``deliveries``: messages from dequeue or ``(id, token)``
        pairs, at most 1000. One bool per delivery: True when acked, False
        when its token was stale (that message is left alone)."""
        pairs = [d if isinstance(d, tuple) else (d.id, d.token) for d in deliveries]
        return [s == 0 for s in _raw.bitt_queue_ack_many(self._s._box, topic, pairs)[1]]

    def nack(self, msg: Message, error: Optional[str] = None, *, delay: int = -1) -> None:
        _raw.bitt_queue_nack(self._s._box, msg.topic, msg.id, msg.token, error, delay)

    def extend(self, msg: Message, lease: int) -> None:
        _raw.bitt_queue_extend(self._s._box, msg.topic, msg.id, msg.token, lease)

    def dead_list(self, topic, *, after: int = 0, limit: int = 0) -> list:
        return _msgs(_raw.bitt_queue_dead_list(self._s._box, topic, after, limit)[1])

    def dead_retry(self, topic, id: int = 0) -> int:
        return _raw.bitt_queue_dead_retry(self._s._box, topic, id)[1]

    def dead_delete(self, topic, id: int = 0) -> int:
        return _raw.bitt_queue_dead_delete(self._s._box, topic, id)[1]

    def stats(self, topic) -> dict:
        t = _raw.bittw_queue_stats(self._s._box, topic)[1]
        return dict(zip(("pending", "delayed", "processing", "dead", "oldest_pending_at"), t))


class Leases:
    def __init__(self, store: "Store") -> None:
        self._s = store

    def acquire(self, name, owner, ttl: int) -> Optional[Lease]:
        """The lease (with its epoch), or None while another holds it."""
        r = _raw.bitt_lease_acquire(self._s._box, name, owner, ttl)
        return Lease(str(name), str(owner), r[1], r[2]) if r[0] == 0 else None

    def renew(self, name, owner, epoch: int, ttl: int) -> int:
        return _raw.bitt_lease_renew(self._s._box, name, owner, epoch, ttl)[1]

    def release(self, name, owner, epoch: int) -> None:
        _raw.bitt_lease_release(self._s._box, name, owner, epoch)

    def get(self, name) -> Optional[Lease]:
        r = _raw.bitt_lease_get(self._s._box, name)
        if r[0] != 0:
            return None
        return Lease(str(name), r[1].decode("utf-8", "surrogateescape"), r[2], r[3])


class Outbox:
    def __init__(self, store: "Store") -> None:
        self._s = store

    def append(self, stream, event) -> int:
        data, kind = encode_value(event)
        return _raw.bitt_outbox_append(self._s._box, stream, data, kind)[1]

    def pending(self, stream, limit: int = 0) -> list:
        return _msgs(_raw.bitt_outbox_pending(self._s._box, stream, limit)[1])

    def ack(self, stream, seqs: Sequence[int]) -> int:
        return _raw.bitt_outbox_ack(self._s._box, stream, list(seqs))[1]

    def fail(self, stream, seq: int, error: Optional[str] = None,
             next_attempt_at: int = 0) -> bool:
        return _raw.bitt_outbox_fail(self._s._box, stream, seq, error, next_attempt_at) == 0

    def park(self, stream, seq: int, reason: int, error: Optional[str] = None) -> bool:
        return _raw.bitt_outbox_park(self._s._box, stream, seq, reason, error) == 0

    def parked(self, stream, reason: int = 0, limit: int = 0) -> list:
        return _msgs(_raw.bitt_outbox_parked(self._s._box, stream, reason, limit)[1])

    def retry(self, stream, seqs: Optional[Sequence[int]] = None) -> int:
        return _raw.bitt_outbox_retry(self._s._box, stream,
                                      None if seqs is None else list(seqs))[1]

    def discard(self, stream, seqs: Optional[Sequence[int]] = None) -> int:
        return _raw.bitt_outbox_discard(self._s._box, stream,
                                        None if seqs is None else list(seqs))[1]

    def counts(self, stream) -> dict:
        r = _raw.bitt_outbox_counts(self._s._box, stream)
        return {"pending": r[1], "parked": r[2]}


class Subscription:
    """Iterate to receive messages (blocks); ``next(timeout)`` waits at most
    ``timeout`` seconds and gives None when nothing came."""

    def __init__(self, store: "Store", channel) -> None:
        self._s = store
        self._lock = threading.Lock()
        self._sub = _raw.bitt_pubsub_subscribe(store._box, channel)[1]
        store._subs.add(self)

    def next(self, timeout: float = 0) -> Optional[Message]:
        with self._lock:
            if self._sub is None:
                raise UsageError(-12, "the subscription is closed")
            r = _raw.bitt_pubsub_next(self._sub, int(timeout * 1000))
        return Message(*r[1]) if r[0] == 0 else None

    def __iter__(self) -> Iterator[Message]:
        while True:
            m = self.next(1.0)
            if m is not None:
                yield m
            elif self._sub is None:
                return

    def close(self) -> None:
        with self._lock:
            if self._sub is not None:
                _raw.bitt_pubsub_close(self._sub)
                self._sub = None
        self._s._subs.discard(self)

    def __enter__(self) -> "Subscription":
        return self

    def __exit__(self, *a) -> None:
        self.close()


class PubSub:
    def __init__(self, store: "Store") -> None:
        self._s = store

    def publish(self, channel, data) -> None:
        if isinstance(data, str):
            data = data.encode("utf-8")
        _raw.bitt_pubsub_publish(self._s._box, channel, data)

    def subscribe(self, channel) -> Subscription:
        return Subscription(self._s, channel)


class Budgets:
    def __init__(self, store: "Store") -> None:
        self._s = store

    def take(self, name, *, capacity: int, refill: int, period: int, n: int = 1) -> int:
        """0 when taken, else the ms to wait until ``n`` tokens are there."""
        r = _raw.bitt_budget_take(self._s._box, name, capacity, refill, period, n)
        return 0 if r[0] == 0 else r[1]


class Schedules:
    def __init__(self, store: "Store") -> None:
        self._s = store

    def upsert(self, key, interval: int, payload=b"", *, first_run_at: int = 0) -> None:
        data, kind = encode_value(payload)
        _raw.bitt_schedule_upsert(self._s._box, key, interval, data, kind, first_run_at)

    def claim(self, prefix=None) -> Optional[Schedule]:
        r = _raw.bitt_schedule_claim(self._s._box, prefix)
        return Schedule(*r[1]) if r[0] == 0 else None

    def get(self, key) -> Optional[Schedule]:
        r = _raw.bitt_schedule_get(self._s._box, key)
        return Schedule(*r[1]) if r[0] == 0 else None

    def list(self) -> list:
        return [Schedule(*t) for t in _raw.bittw_schedule_list(self._s._box)[1]]

    def delete(self, key) -> bool:
        return _raw.bitt_schedule_delete(self._s._box, key) == 0


class Clock:
    def __init__(self, store: "Store") -> None:
        self._s = store

    def set_manual(self, now_ms: int) -> None:
        _raw.bitt_clock_set_manual(self._s._box, now_ms)

    def advance(self, ms: int) -> None:
        _raw.bitt_clock_advance(self._s._box, ms)

    def use_system(self) -> None:
        _raw.bitt_clock_use_system(self._s._box)

    def now(self) -> int:
        return _raw.bitt_clock_now(self._s._box)[1]


class Store:
    """A store handle; share it between threads. Close it (or use ``with``)."""

    def __init__(self, url: str) -> None:
        if not isinstance(url, str):
            raise TypeError("url must be a str")
        self._box = None
        self._subs: set = set()
        self._box = _raw.bittw_open(url)[1]
        self.kv = KV(self)
        self.queue = Queue(self)
        self.lease = Leases(self)
        self.outbox = Outbox(self)
        self.pubsub = PubSub(self)
        self.budget = Budgets(self)
        self.schedule = Schedules(self)
        self.clock = Clock(self)

    @property
    def backend(self) -> str:
        return _raw.bitt_store_backend(self._box)

    def migrate(self) -> None:
        _raw.bitt_store_migrate(self._box)

    def atomic(self) -> Atomic:
        return Atomic(self)

    def close(self) -> None:
        """Closes the store; waits for calls in flight; later calls raise
        UsageError. Idempotent."""
        for sub in list(self._subs):
            sub.close()
        if self._box is not None:
            _raw.bittw_close(self._box)

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *a) -> None:
        self.close()

    def __del__(self) -> None:
        box, self._box = getattr(self, "_box", None), None
        if box is not None:
            try:
                for sub in list(self._subs):
                    sub.close()
                _raw.bittw_free(box)
            except Exception:
                pass


def open(url: str) -> Store:  # noqa: A001 - the module's verb
    """Opens a store: ``memory:``, ``sqlite:PATH``, ``postgres://…``, ``redis://…``."""
    return Store(url)
