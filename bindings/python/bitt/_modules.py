"""store.lease, store.outbox, store.pubsub, store.budget, store.schedule and
store.clock."""
from __future__ import annotations

import threading
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Sequence, Type, Union

from . import raw as _raw
from ._cancel import CancelToken, check, either
from ._errors import Cancelled, UsageError, bad_type
from ._queue import priority_of
from ._types import (Lease, Message, Name, OutboxCounts, Schedule, message_of, messages_of,
                     schedule_of)
from ._units import Duration, ms, opt_ms, opt_time_ms, seconds_of, time_ms, time_of
from ._values import Value, encode_value

if TYPE_CHECKING:
    from . import Store

Data = Union[bytes, bytearray, memoryview, str]
"""A published message: bytes, or a str (its UTF-8)."""

# How long one wait of a subscription's iteration lasts before it asks
# again (closing the subscription ends it at once).
ITER_SLICE_MS = 60_000


def _text(name: Name) -> str:
    return name if isinstance(name, str) else bytes(name).decode("utf-8", "surrogateescape")


class Leases:
    """Named locks with an owner, an end and an epoch (``store.lease``); the
    epoch is a fencing token (``Atomic.fence``). ``ttl`` in seconds."""

    __slots__ = ("_s",)

    def __init__(self, store: Store) -> None:
        self._s = store

    def acquire(self, name: Name, owner: Name, ttl: Duration) -> Optional[Lease]:
        """The lease (with its new epoch) when it was free or expired, else None."""
        r = _raw.bitt_lease_acquire(self._s._box, name, owner, ms(ttl, "ttl"))
        return Lease(_text(name), _text(owner), r[1], time_of(r[2])) if r[0] == 0 else None

    def renew(self, name: Name, owner: Name, epoch: int, ttl: Duration) -> datetime:
        """Extends a held lease to ``ttl`` from now: its new end
        (LeaseLostError when not held at ``epoch``)."""
        return time_of(_raw.bitt_lease_renew(self._s._box, name, owner, epoch,
                                             ms(ttl, "ttl"))[1])

    def release(self, name: Name, owner: Name, epoch: int) -> None:
        """Frees a held lease (LeaseLostError when not held at ``epoch``)."""
        _raw.bitt_lease_release(self._s._box, name, owner, epoch)

    def get(self, name: Name) -> Optional[Lease]:
        """The live holder, or None when free or expired."""
        r = _raw.bitt_lease_get(self._s._box, name)
        if r[0] != 0:
            return None
        return Lease(_text(name), r[1].decode("utf-8", "surrogateescape"), r[2], time_of(r[3]))


class Outbox:
    """Per-stream ordered event logs (``store.outbox``), appended with the
    state they belong to (``Atomic.outbox_append``). Events are Messages
    whose ``id`` is the sequence number."""

    __slots__ = ("_s",)

    def __init__(self, store: Store) -> None:
        self._s = store

    def append(self, stream: Name, event: Value) -> int:
        """Appends on its own: the sequence number."""
        data, kind = encode_value(event)
        return _raw.bitt_outbox_append(self._s._box, stream, data, kind)[1]

    def pending(self, stream: Name, limit: int = 0) -> List[Message]:
        """Pending events in sequence order, at most ``limit`` (0: 100)."""
        return messages_of(_raw.bitt_outbox_pending(self._s._box, stream, limit)[1])

    def ack(self, stream: Name, seqs: Sequence[int]) -> int:
        """Acks (deletes) pending events: how many were pending."""
        return _raw.bitt_outbox_ack(self._s._box, stream, list(seqs))[1]

    def fail(self, stream: Name, seq: int, error: Optional[str] = None,
             next_attempt_at: Optional[datetime] = None) -> bool:
        """Records a failed attempt and the next attempt time: False when the
        event is not pending."""
        return _raw.bitt_outbox_fail(self._s._box, stream, seq, error,
                                     opt_time_ms(next_attempt_at, "next_attempt_at")) == 0

    def park(self, stream: Name, seq: int, reason: int, error: Optional[str] = None) -> bool:
        """Parks a pending event (``bitt.PARK_POISON`` or ``bitt.PARK_INVALID``):
        False when it is not pending."""
        return _raw.bitt_outbox_park(self._s._box, stream, seq, reason, error) == 0

    def parked(self, stream: Name, reason: int = 0, limit: int = 0) -> List[Message]:
        """Parked events in sequence order (``reason`` 0: any)."""
        return messages_of(_raw.bitt_outbox_parked(self._s._box, stream, reason, limit)[1])

    def retry(self, stream: Name, seqs: Optional[Sequence[int]] = None) -> int:
        """Puts parked events (None: all of ``stream``) back to pending: how many."""
        return _raw.bitt_outbox_retry(self._s._box, stream,
                                      None if seqs is None else list(seqs))[1]

    def discard(self, stream: Name, seqs: Optional[Sequence[int]] = None) -> int:
        """Deletes parked events (None: all of ``stream``): how many."""
        return _raw.bitt_outbox_discard(self._s._box, stream,
                                        None if seqs is None else list(seqs))[1]

    def counts(self, stream: Name) -> OutboxCounts:
        """How many events of ``stream`` are pending and parked."""
        r = _raw.bitt_outbox_counts(self._s._box, stream)
        return OutboxCounts(r[1], r[2])


class Subscription:
    """The messages of a channel published from now on: ``next(timeout)``, or
    iterate (``for msg in sub``: waits until the subscription is closed).
    Close it (or use ``with``); ``close()`` from another thread ends a wait
    at once."""

    def __init__(self, store: Store, channel: Name) -> None:
        self._s = store
        self._lock = threading.Lock()
        self._closer = CancelToken()
        self.channel: str = _text(channel)
        self._sub: Any = _raw.bitt_pubsub_subscribe(store._box, channel)[1]
        store._subs.add(self)

    def next(self, timeout: Duration = 0, *,
             cancel: Optional[CancelToken] = None) -> Optional[Message]:
        """The next message, waiting up to ``timeout`` (seconds; 0: do not
        wait); None when none came. ``cancel`` ends the wait (bitt.Cancelled)."""
        t = ms(timeout, "timeout")
        check(cancel)
        with either(cancel, self._closer) as tok:
            with self._lock:
                if self._sub is None:
                    raise UsageError(-12, "the subscription is closed")
                try:
                    r = _raw.bitt_pubsub_next_cancel(self._sub, t, check(tok))
                except Cancelled:
                    if self._closer.cancelled:
                        raise UsageError(-12, "the subscription is closed") from None
                    raise
        return None if r[1] is None else message_of(r[1])

    def __iter__(self) -> Iterator[Message]:
        while True:
            try:
                m = self.next(ITER_SLICE_MS / 1000)
            except UsageError:
                if self._closer.cancelled:
                    return
                raise
            if m is not None:
                yield m

    @property
    def closed(self) -> bool:
        """Whether the subscription is closed."""
        return self._closer.cancelled

    def close(self) -> None:
        """Closes the subscription (a wait in another thread ends). Idempotent."""
        self._closer.cancel()
        with self._lock:
            if self._sub is not None:
                _raw.bitt_pubsub_close(self._sub)
                self._sub = None
        self._s._subs.discard(self)

    def __enter__(self) -> Subscription:
        return self

    def __exit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    def __del__(self) -> None:
        sub, self._sub = getattr(self, "_sub", None), None
        if sub is not None:
            try:
                _raw.bitt_pubsub_close(sub)
            except Exception:
                pass

    def __repr__(self) -> str:
        return f"<bitt.Subscription {self.channel!r} {'closed' if self.closed else 'open'}>"


class PubSub:
    """Publish/subscribe (``store.pubsub``): a message reaches every
    subscription of its channel open when it was published, at most once."""

    __slots__ = ("_s",)

    def __init__(self, store: Store) -> None:
        self._s = store

    def publish(self, channel: Name, data: Data) -> None:
        """Publishes ``data`` (bytes, or a str as its UTF-8) on ``channel``."""
        if isinstance(data, str):
            data = data.encode("utf-8")
        _raw.bitt_pubsub_publish(self._s._box, channel, data)

    def subscribe(self, channel: Name) -> Subscription:
        """A new subscription of ``channel``."""
        return Subscription(self._s, channel)


class Budgets:
    """Token buckets shared by every process of the store (``store.budget``)."""

    __slots__ = ("_s",)

    def __init__(self, store: Store) -> None:
        self._s = store

    def take(self, name: Name, *, capacity: int, refill: int, period: Duration,
             n: int = 1) -> float:
        """Takes ``n`` tokens from a bucket of ``capacity`` that gains
        ``refill`` tokens every ``period``: 0.0 when taken, else the seconds to
        wait until ``n`` are there (nothing taken)."""
        r = _raw.bitt_budget_take(self._s._box, name, capacity, refill, ms(period, "period"), n)
        return 0.0 if r[0] == 0 else seconds_of(r[1])


class Schedules:
    """Schedules whose occurrences exactly one claimer gets, every interval or
    at the minutes of a cron expression (``store.schedule``)."""

    __slots__ = ("_s",)

    def __init__(self, store: Store) -> None:
        self._s = store

    def upsert(self, key: Name, interval: Optional[Duration] = None, payload: Value = b"", *,
               first_run_at: Optional[datetime] = None, cron: Optional[str] = None,
               topic: Optional[Name] = None, max_attempts: int = 0, priority: int = 0) -> None:
        """Creates or changes a schedule running every ``interval``, or at the
        minutes of ``cron`` (a 5-field UTC expression, README: not both),
        first at ``first_run_at`` (None: one interval from now, or the first
        cron minute after now). A changed cadence restarts there; an unchanged
        one keeps its next run. With ``topic``, each occurrence's claim also
        enqueues ``payload`` there (dedup key ``"<key>@<occurrence ms>"``,
        ``max_attempts`` (0: 3) and ``priority`` (an int32))."""
        data, kind = encode_value(payload)
        if cron is not None and not isinstance(cron, str):
            raise bad_type("cron", cron, "a str")
        _raw.bittw_schedule_set(self._s._box, key, opt_ms(interval, "interval", 0), data, kind,
                                cron, opt_time_ms(first_run_at, "first_run_at"), topic,
                                max_attempts, priority_of(priority))

    def claim(self, prefix: Optional[Name] = None) -> Optional[Schedule]:
        """Claims the next due occurrence (of schedules whose key starts with
        ``prefix``), or None when none is due."""
        t = _raw.bitt_schedule_claim(self._s._box, prefix)[1]
        return None if t is None else schedule_of(t)

    def get(self, key: Name) -> Optional[Schedule]:
        """The schedule ``key``, or None."""
        t = _raw.bitt_schedule_get(self._s._box, key)[1]
        return None if t is None else schedule_of(t)

    def list(self) -> List[Schedule]:
        """Every schedule, in key order."""
        return [schedule_of(t) for t in _raw.bittw_schedule_list(self._s._box)[1]]

    def delete(self, key: Name) -> bool:
        """Deletes a schedule: whether it was there."""
        return _raw.bitt_schedule_delete(self._s._box, key) == 0


class Clock:
    """The store's clock (``store.clock``): the system clock, or a manual one
    for tests, on this handle."""

    __slots__ = ("_s",)

    def __init__(self, store: Store) -> None:
        self._s = store

    def set_manual(self, now: datetime) -> None:
        """Installs a manual clock at ``now`` (it moves only by ``advance``)."""
        _raw.bitt_clock_set_manual(self._s._box, time_ms(now, "now"))

    def advance(self, by: Duration) -> None:
        """Moves the manual clock forward (UsageError without one)."""
        _raw.bitt_clock_advance(self._s._box, ms(by, "by"))

    def use_system(self) -> None:
        """Goes back to the system clock."""
        _raw.bitt_clock_use_system(self._s._box)

    def now(self) -> datetime:
        """The store's current time."""
        return time_of(_raw.bitt_clock_now(self._s._box)[1])
