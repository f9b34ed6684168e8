"""bitt: one durable state core (KV, queue, leases, outbox, pubsub, budgets,
schedules) over memory, SQLite, PostgreSQL and Redis.

A thin layer over the SWIG extension ``bitt.raw``: every rule is the C
core's. Units: every duration is in seconds (an int, a float or a
``datetime.timedelta``), every absolute time a timezone-aware ``datetime``
(read back in UTC); finer than a millisecond rounds up to the next one.
"""
from __future__ import annotations

import weakref
from types import TracebackType
from typing import Any, Optional, Protocol, Type

from . import raw as _raw
from ._cancel import CancelToken
from ._errors import (BackendError, BusyError, Cancelled, ConflictError, CursorError, Error,
                      InvalidArgument, LeaseLostError, NotACounter, OutOfMemory, Overflow,
                      SchemaError, StaleToken, TooLarge, Unsupported, URLError, UsageError,
                      make_error)
from ._kv import KV, Atomic
from ._modules import Budgets, Clock, Data, Leases, Outbox, PubSub, Schedules, Subscription
from ._queue import Consumer, Delivery, Queue
from ._types import (PARK_INVALID, PARK_POISON, Entry, Lease, Message, MessageState, Name,
                     OutboxCounts, Page, QueueStats, Schedule)
from ._units import Duration
from ._worker import Handler, Worker
from ._worker_core import Snooze, WorkerCounters
from ._values import (JSON, KIND_BYTES, KIND_COUNTER, KIND_JSON, JSONIn, JSONInt, Key, Stored,
                      TuplePart, Value, decode_tuple, decode_value, encode_key, encode_value)

_raw.bittw_set_error_class(make_error)

__version__: str = _raw.bitt_version()
NOTFOUND, EXISTS, DENIED = 1, 2, 3

__all__ = [
    "open", "Store", "KV", "Atomic", "Queue", "Consumer", "Leases", "Outbox", "PubSub",
    "Subscription", "Budgets", "Schedules", "Clock", "CancelToken",
    "Entry", "Page", "Message", "Lease", "Schedule", "QueueStats", "OutboxCounts", "JSONInt",
    "Key", "TuplePart", "Value", "JSONIn", "JSON", "Stored", "Name", "Data", "Duration",
    "Delivery", "MessageState", "Worker", "Snooze", "WorkerCounters", "Handler",
    "Error", "InvalidArgument", "OutOfMemory", "TooLarge", "NotACounter", "Overflow",
    "ConflictError", "BackendError", "BusyError", "SchemaError", "URLError", "CursorError",
    "UsageError", "Unsupported", "StaleToken", "LeaseLostError", "Cancelled", "make_error",
    "encode_key", "decode_tuple", "encode_value", "decode_value",
    "KIND_BYTES", "KIND_JSON", "KIND_COUNTER", "PARK_POISON", "PARK_INVALID",
]


class _Loop(Protocol):
    """What a store ends at close(): its consume loops and workers."""

    def close(self) -> None: ...


class Store:
    """A store handle; share it between threads. Close it (or use ``with``).
    Its modules: ``kv``, ``queue``, ``lease``, ``outbox``, ``pubsub``,
    ``budget``, ``schedule``, ``clock``."""

    def __init__(self, url: str) -> None:
        if not isinstance(url, str):
            raise TypeError(f"url: {type(url).__name__} is not a str")
        self._box: Any = None
        self._subs: weakref.WeakSet[Subscription] = weakref.WeakSet()
        self._consumers: weakref.WeakSet[_Loop] = weakref.WeakSet()
        self._box = _raw.bittw_open(url)[1]
        self._backend: str = _raw.bitt_store_backend(self._box)
        self._closed = False
        self.kv: KV = KV(self)
        self.queue: Queue = Queue(self)
        self.lease: Leases = Leases(self)
        self.outbox: Outbox = Outbox(self)
        self.pubsub: PubSub = PubSub(self)
        self.budget: Budgets = Budgets(self)
        self.schedule: Schedules = Schedules(self)
        self.clock: Clock = Clock(self)

    @property
    def backend(self) -> str:
        """``"memory"``, ``"sqlite"``, ``"postgres"`` or ``"redis"``."""
        return self._backend

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._closed

    def migrate(self) -> None:
        """Creates or upgrades the schema (idempotent)."""
        _raw.bitt_store_migrate(self._box)

    def atomic(self) -> Atomic:
        """A new atomic commit (``with store.atomic() as tx: ...``)."""
        return Atomic(self)

    def close(self) -> None:
        """Closes the store: ends its subscriptions, consume loops and workers
        (``Worker.close()``: their running handlers given back), waits
        for calls in flight; later calls raise UsageError. Idempotent."""
        self._closed = True
        for c in list(self._consumers):
            c.close()
        for sub in list(self._subs):
            sub.close()
        if self._box is not None:
            _raw.bittw_close(self._box)

    def __enter__(self) -> Store:
        return self

    def __exit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    def __repr__(self) -> str:
        # The URL is not shown: it may hold a password (the core never echoes it).
        return f"<bitt.Store backend={self._backend!r} {'closed' if self._closed else 'open'}>"

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
    """Opens a store: ``memory:``, ``sqlite:PATH``, ``postgres://...``,
    ``redis://...`` (options as a query string; see bitt.h)."""
    return Store(url)
