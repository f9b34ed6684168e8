"""bitt for asyncio: the same API as coroutines, each call run off the event
loop, so the loop never blocks on a database. Units as in ``bitt``: seconds
(int, float or timedelta) and aware datetimes.

    async with await bitt.aio.open("sqlite:app.db") as store:
        await store.kv.set("k", 1)
        async for entry in store.kv.list(prefix="p/"):
            ...
        async with store.queue.consume("jobs", prefetch=8) as jobs:
            async for msg in jobs:
                ...

A cancelled await (``task.cancel()``, ``asyncio.wait_for``, ``asyncio.timeout``)
ends the call: a waiting dequeue, subscription ``next`` or consume loop fires
its ``bitt.CancelToken``, waits for its thread to return (within a wait slice,
having leased nothing), and then raises ``CancelledError``; no call runs on
after it.
"""
from __future__ import annotations

import weakref
from collections import deque
from datetime import datetime
from types import TracebackType
from typing import AsyncIterator, Deque, Iterable, List, Optional, Sequence, Type, overload

import bitt as _bitt

from ._aio_run import call
from ._aio_worker import AsyncHandler, Worker
from ._aio_run import wait as _wait
from ._cancel import CancelToken
from ._errors import UsageError
from ._modules import ITER_SLICE_MS, Data
from ._queue import Consumer as _SyncConsumer
from ._queue import Delivery, topics_of
from ._types import Entry, Lease, Message, Name, OutboxCounts, Page, QueueStats, Schedule
from ._units import Duration
from ._values import Key, Value
from ._worker_core import Snooze, WorkerCounters

__all__ = ["open", "Store", "KV", "Atomic", "Queue", "Consumer", "Leases", "Outbox", "PubSub",
           "Subscription", "Budgets", "Schedules", "Clock", "Worker", "Snooze", "WorkerCounters",
           "AsyncHandler"]


class KV:
    """``bitt.KV`` as coroutines (``store.kv``)."""

    __slots__ = ("_t",)

    def __init__(self, kv: _bitt.KV) -> None:
        self._t = kv

    async def get(self, key: Key) -> Optional[Entry]:
        """The live entry of ``key``, or None."""
        return await call(self._t.get, key)

    async def set(self, key: Key, value: Value, *, ttl: Optional[Duration] = None) -> int:
        """Writes ``value``; the new versionstamp."""
        return await call(lambda: self._t.set(key, value, ttl=ttl))

    async def add(self, key: Key, value: Value, *,
                  ttl: Optional[Duration] = None) -> Optional[int]:
        """Writes only when no live value is there: the version, or None."""
        return await call(lambda: self._t.add(key, value, ttl=ttl))

    async def delete(self, key: Key) -> bool:
        """Deletes ``key``: whether it was there."""
        return await call(self._t.delete, key)

    async def take(self, key: Key) -> Optional[Entry]:
        """Reads and deletes ``key``: its entry, or None."""
        return await call(self._t.take, key)

    async def increment(self, key: Key, delta: int = 1, *,
                        ttl: Optional[Duration] = None) -> int:
        """Adds ``delta`` to a counter: the new value."""
        return await call(lambda: self._t.increment(key, delta, ttl=ttl))

    async def get_many(self, keys: Sequence[Key]) -> List[Optional[Entry]]:
        """The entries of ``keys`` in one snapshot (None for a miss)."""
        return await call(self._t.get_many, keys)

    async def list(self, prefix: Optional[Key] = None, *, start: Optional[Key] = None,
                   end: Optional[Key] = None, limit: int = 0, reverse: bool = False,
                   cursor: Optional[str] = None) -> AsyncIterator[Entry]:
        """Every entry of the selection, page by page (``async for``)."""
        while True:
            page = await self.page(prefix, start=start, end=end, limit=limit, reverse=reverse,
                                   cursor=cursor)
            for e in page.entries:
                yield e
            cursor = page.cursor
            if cursor is None:
                return

    async def page(self, prefix: Optional[Key] = None, *, start: Optional[Key] = None,
                   end: Optional[Key] = None, limit: int = 0, reverse: bool = False,
                   cursor: Optional[str] = None) -> Page:
        """One page of the selection and the next page's cursor."""
        return await call(lambda: self._t.page(prefix, start=start, end=end, limit=limit,
                                               reverse=reverse, cursor=cursor))

    async def purge_expired(self) -> int:
        """Deletes expired entries now: how many."""
        return await call(self._t.purge_expired)


class Atomic:
    """``async with store.atomic() as tx``: ``tx`` is a ``bitt.Atomic`` (adding
    actions is in-memory work: plain calls); the commit runs off the loop."""

    def __init__(self, store: _bitt.Store) -> None:
        self._store = store
        self._tx: Optional[_bitt.Atomic] = None

    async def __aenter__(self) -> _bitt.Atomic:
        self._tx = await call(self._store.atomic)
        return self._tx

    async def __aexit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        tx = self._tx
        if tx is not None:
            await call(tx.__exit__, et, ev, tb)


class Consumer:
    """``bitt.Consumer`` for ``async for`` (``store.queue.consume``). Leaving
    the loop ends it: ``aclose()`` (or the end of ``async with``) gives the
    prefetched messages not handed out back off the loop; a plain ``break``
    gives them back at once when the consumer is dropped."""

    def __init__(self, c: _SyncConsumer) -> None:
        self._c = c

    def __aiter__(self) -> Consumer:
        return self

    async def __anext__(self) -> Message:
        c = self._c
        while True:
            try:
                m = c._held()
            except StopIteration:
                raise StopAsyncIteration from None
            if m is not None:
                return m
            batch = await _wait(c._fetch, lambda b: c._give_back(b or []))
            if batch is None:
                raise StopAsyncIteration
            c._keep(batch)

    async def aclose(self) -> None:
        """Ends the loop and gives back the messages not handed out."""
        await call(self._c.close)

    async def __aenter__(self) -> Consumer:
        return self

    async def __aexit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await self.aclose()


class Queue:
    """``bitt.Queue`` as coroutines (``store.queue``)."""

    __slots__ = ("_t",)

    def __init__(self, q: _bitt.Queue) -> None:
        self._t = q

    async def enqueue(self, topic: Name, payload: Value, *, delay: Optional[Duration] = None,
                      max_attempts: int = 0, dedup: Optional[Key] = None,
                      priority: int = 0) -> int:
        """Enqueues ``payload``: the new id (or the live one holding ``dedup``)."""
        return await call(lambda: self._t.enqueue(topic, payload, delay=delay,
                                                  max_attempts=max_attempts, dedup=dedup,
                                                  priority=priority))

    @overload
    async def dequeue(self, topic: Name, *, limit: int = 1, lease: Optional[Duration] = None,
                      wait: Duration = 0) -> List[Message]: ...

    @overload
    async def dequeue(self, *, topics: Sequence[Name], limit: int = 1,
                      lease: Optional[Duration] = None, wait: Duration = 0) -> List[Message]: ...

    async def dequeue(self, topic: Optional[Name] = None, *,
                      topics: Optional[Sequence[Name]] = None, limit: int = 1,
                      lease: Optional[Duration] = None, wait: Duration = 0) -> List[Message]:
        """Leases up to ``limit`` messages of ``topic`` (or of ``topics``),
        waiting up to ``wait`` for a first one; cancelled, it leases nothing."""
        names = topics_of(topic, topics)

        def run(tok: CancelToken) -> List[Message]:
            if names is not None:
                return self._t.dequeue(topics=names, limit=limit, lease=lease, wait=wait,
                                       cancel=tok)
            assert topic is not None
            return self._t.dequeue(topic, limit=limit, lease=lease, wait=wait, cancel=tok)
        return await _wait(run, self._give_back)

    async def get(self, topic: Name, id: int) -> Optional[Message]:
        """Message ``id`` of ``topic`` as it is now, or None."""
        return await call(self._t.get, topic, id)

    async def cancel(self, topic: Name, id: int) -> bool:
        """Deletes a pending, delayed or leased message: whether it was there."""
        return await call(self._t.cancel, topic, id)

    async def reschedule(self, topic: Name, id: int, delay: Duration = 0) -> bool:
        """Makes a pending or delayed message claimable ``delay`` from now:
        whether it applied."""
        return await call(self._t.reschedule, topic, id, delay)

    def _give_back(self, msgs: List[Message]) -> None:
        for m in msgs:
            try:
                self._t.snooze(m.topic, m.id, m.token or "")
            except _bitt.Error:
                pass

    def consume(self, topic: Name, *, prefetch: int = 1,
                lease: Optional[Duration] = None) -> Consumer:
        """The messages of ``topic`` as they come (``async for``); see
        ``bitt.Queue.consume``. Cancel the task or ``aclose()`` to end it."""
        return Consumer(self._t.consume(topic, prefetch=prefetch, lease=lease))

    async def ack(self, msg: Message, *, result: Optional[Value] = None) -> None:
        """Finishes a delivery (kept ``"done"`` with ``result`` under
        ``queue_done_retention``; see ``bitt.Queue.ack``)."""
        await call(lambda: self._t.ack(msg, result=result))

    async def ack_many(self, topic: Name, deliveries: Iterable[Delivery]) -> List[bool]:
        """Acks many deliveries in one transaction: a bool each."""
        return await call(self._t.ack_many, topic, list(deliveries))

    async def nack(self, msg: Message, error: Optional[str] = None, *,
                   delay: Optional[Duration] = None) -> None:
        """Gives a delivery back after a failure (retried after ``delay``)."""
        await call(lambda: self._t.nack(msg, error, delay=delay))

    async def extend(self, msg: Message, lease: Duration) -> None:
        """The delivery's lease now ends ``lease`` from now."""
        await call(self._t.extend, msg, lease)

    async def snooze(self, topic: Name, id: int, token: str, delay: Duration = 0) -> None:
        """Gives a delivery back unseen (no attempt used), after ``delay``."""
        await call(self._t.snooze, topic, id, token, delay)

    async def dead_list(self, topic: Name, *, after: int = 0, limit: int = 0) -> List[Message]:
        """Dead letters of ``topic`` in id order."""
        return await call(lambda: self._t.dead_list(topic, after=after, limit=limit))

    async def dead_retry(self, topic: Name, id: int = 0) -> int:
        """Puts dead messages back: how many."""
        return await call(self._t.dead_retry, topic, id)

    async def dead_delete(self, topic: Name, id: int = 0) -> int:
        """Deletes dead messages: how many."""
        return await call(self._t.dead_delete, topic, id)

    async def purge(self, topic: Optional[Name] = None) -> int:
        """Drops what outlived its retention (None: on every topic): how many."""
        return await call(self._t.purge, topic)

    async def stats(self, topic: Name) -> QueueStats:
        """The counts of ``topic``."""
        return await call(self._t.stats, topic)


class Leases:
    """``bitt.Leases`` as coroutines (``store.lease``)."""

    __slots__ = ("_t",)

    def __init__(self, t: _bitt.Leases) -> None:
        self._t = t

    async def acquire(self, name: Name, owner: Name, ttl: Duration) -> Optional[Lease]:
        """The lease when free or expired, else None."""
        return await call(self._t.acquire, name, owner, ttl)

    async def renew(self, name: Name, owner: Name, epoch: int, ttl: Duration) -> datetime:
        """Extends a held lease: its new end."""
        return await call(self._t.renew, name, owner, epoch, ttl)

    async def release(self, name: Name, owner: Name, epoch: int) -> None:
        """Frees a held lease."""
        await call(self._t.release, name, owner, epoch)

    async def get(self, name: Name) -> Optional[Lease]:
        """The live holder, or None."""
        return await call(self._t.get, name)


class Outbox:
    """``bitt.Outbox`` as coroutines (``store.outbox``)."""

    __slots__ = ("_t",)

    def __init__(self, t: _bitt.Outbox) -> None:
        self._t = t

    async def append(self, stream: Name, event: Value) -> int:
        """Appends on its own: the sequence number."""
        return await call(self._t.append, stream, event)

    async def pending(self, stream: Name, limit: int = 0) -> List[Message]:
        """Pending events in sequence order."""
        return await call(self._t.pending, stream, limit)

    async def ack(self, stream: Name, seqs: Sequence[int]) -> int:
        """Acks pending events: how many were pending."""
        return await call(self._t.ack, stream, seqs)

    async def fail(self, stream: Name, seq: int, error: Optional[str] = None,
                   next_attempt_at: Optional[datetime] = None) -> bool:
        """Records a failed attempt: False when not pending."""
        return await call(self._t.fail, stream, seq, error, next_attempt_at)

    async def park(self, stream: Name, seq: int, reason: int,
                   error: Optional[str] = None) -> bool:
        """Parks a pending event: False when not pending."""
        return await call(self._t.park, stream, seq, reason, error)

    async def parked(self, stream: Name, reason: int = 0, limit: int = 0) -> List[Message]:
        """Parked events in sequence order."""
        return await call(self._t.parked, stream, reason, limit)

    async def retry(self, stream: Name, seqs: Optional[Sequence[int]] = None) -> int:
        """Puts parked events back to pending: how many."""
        return await call(self._t.retry, stream, seqs)

    async def discard(self, stream: Name, seqs: Optional[Sequence[int]] = None) -> int:
        """Deletes parked events: how many."""
        return await call(self._t.discard, stream, seqs)

    async def counts(self, stream: Name) -> OutboxCounts:
        """How many events are pending and parked."""
        return await call(self._t.counts, stream)


class Subscription:
    """A subscription for ``async for msg in sub`` (until closed) or
    ``await sub.next(timeout)``. Close it with ``aclose()`` or ``async with``."""

    def __init__(self, sub: _bitt.Subscription) -> None:
        self._t = sub
        self._held: Deque[Message] = deque()  # came in as a next was cancelled
        self.channel: str = sub.channel

    async def next(self, timeout: Duration = 0) -> Optional[Message]:
        """The next message, waiting up to ``timeout``; None when none came."""
        if self._held:
            return self._held.popleft()
        sub = self._t

        def run(tok: CancelToken) -> Optional[Message]:
            return sub.next(timeout, cancel=tok)
        return await _wait(run, self._keep)

    def _keep(self, m: Optional[Message]) -> None:
        if m is not None:
            self._held.append(m)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Message:
        while True:
            try:
                m = await self.next(ITER_SLICE_MS / 1000)
            except UsageError:
                if self._t.closed:
                    raise StopAsyncIteration from None
                raise
            if m is not None:
                return m

    @property
    def closed(self) -> bool:
        """Whether the subscription is closed."""
        return self._t.closed

    async def aclose(self) -> None:
        """Closes the subscription (a wait in progress ends)."""
        self._t._closer.cancel()
        await call(self._t.close)

    async def __aenter__(self) -> Subscription:
        return self

    async def __aexit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await self.aclose()


class PubSub:
    """``bitt.PubSub`` as coroutines (``store.pubsub``)."""

    __slots__ = ("_t",)

    def __init__(self, t: _bitt.PubSub) -> None:
        self._t = t

    async def publish(self, channel: Name, data: Data) -> None:
        """Publishes ``data`` on ``channel``."""
        await call(self._t.publish, channel, data)

    async def subscribe(self, channel: Name) -> Subscription:
        """A new subscription of ``channel``."""
        return Subscription(await call(self._t.subscribe, channel))


class Budgets:
    """``bitt.Budgets`` as coroutines (``store.budget``)."""

    __slots__ = ("_t",)

    def __init__(self, t: _bitt.Budgets) -> None:
        self._t = t

    async def take(self, name: Name, *, capacity: int, refill: int, period: Duration,
                   n: int = 1) -> float:
        """0.0 when taken, else the seconds to wait until ``n`` tokens are there."""
        return await call(lambda: self._t.take(name, capacity=capacity, refill=refill,
                                               period=period, n=n))


class Schedules:
    """``bitt.Schedules`` as coroutines (``store.schedule``)."""

    __slots__ = ("_t",)

    def __init__(self, t: _bitt.Schedules) -> None:
        self._t = t

    async def upsert(self, key: Name, interval: Optional[Duration] = None, payload: Value = b"",
                     *, first_run_at: Optional[datetime] = None, cron: Optional[str] = None,
                     topic: Optional[Name] = None, max_attempts: int = 0,
                     priority: int = 0) -> None:
        """Creates or changes a schedule (see ``bitt.Schedules.upsert``)."""
        await call(lambda: self._t.upsert(key, interval, payload, first_run_at=first_run_at,
                                          cron=cron, topic=topic, max_attempts=max_attempts,
                                          priority=priority))

    async def claim(self, prefix: Optional[Name] = None) -> Optional[Schedule]:
        """Claims the next due occurrence, or None."""
        return await call(self._t.claim, prefix)

    async def get(self, key: Name) -> Optional[Schedule]:
        """The schedule ``key``, or None."""
        return await call(self._t.get, key)

    async def list(self) -> List[Schedule]:
        """Every schedule, in key order."""
        return await call(self._t.list)

    async def delete(self, key: Name) -> bool:
        """Deletes a schedule: whether it was there."""
        return await call(self._t.delete, key)


class Clock:
    """``bitt.Clock`` as coroutines (``store.clock``)."""

    __slots__ = ("_t",)

    def __init__(self, t: _bitt.Clock) -> None:
        self._t = t

    async def set_manual(self, now: datetime) -> None:
        """Installs a manual clock at ``now``."""
        await call(self._t.set_manual, now)

    async def advance(self, by: Duration) -> None:
        """Moves the manual clock forward."""
        await call(self._t.advance, by)

    async def use_system(self) -> None:
        """Goes back to the system clock."""
        await call(self._t.use_system)

    async def now(self) -> datetime:
        """The store's current time."""
        return await call(self._t.now)


class Store:
    """A ``bitt.Store`` for asyncio (``await bitt.aio.open(url)``); ``sync`` is
    the synchronous store underneath."""

    def __init__(self, store: _bitt.Store) -> None:
        self.sync: _bitt.Store = store
        self._workers: weakref.WeakSet[Worker] = weakref.WeakSet()
        self.kv: KV = KV(store.kv)
        self.queue: Queue = Queue(store.queue)
        self.lease: Leases = Leases(store.lease)
        self.outbox: Outbox = Outbox(store.outbox)
        self.pubsub: PubSub = PubSub(store.pubsub)
        self.budget: Budgets = Budgets(store.budget)
        self.schedule: Schedules = Schedules(store.schedule)
        self.clock: Clock = Clock(store.clock)

    @property
    def backend(self) -> str:
        """The backend's name."""
        return self.sync.backend

    async def migrate(self) -> None:
        """Creates or upgrades the schema."""
        await call(self.sync.migrate)

    def atomic(self) -> Atomic:
        """``async with store.atomic() as tx``: commits when the block ends."""
        return Atomic(self.sync)

    async def close(self) -> None:
        """Closes the store: its workers stop at once (``stop(timeout=0)``:
        their running handlers given back), its subscriptions and consume
        loops end."""
        for w in list(self._workers):
            await w.stop(0)
        await call(self.sync.close)

    async def __aenter__(self) -> Store:
        return self

    async def __aexit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await self.close()

    def __repr__(self) -> str:
        return "<bitt.aio" + repr(self.sync)[5:]


async def open(url: str) -> Store:  # noqa: A001 - the module's verb
    """Opens a store (as ``bitt.open``) off the event loop."""
    return Store(await call(_bitt.open, url))

