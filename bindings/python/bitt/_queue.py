"""store.queue: enqueue, dequeue under a lease, ack/nack/extend/snooze, dead
letters, and the consume iterator."""
from __future__ import annotations

import threading
from collections import deque
from types import TracebackType
from typing import TYPE_CHECKING, Deque, Iterable, List, Optional, Tuple, Type, Union

from . import raw as _raw
from ._cancel import CancelToken, check, either
from ._errors import Cancelled, Error, bad_type
from ._types import Message, Name, QueueStats, messages_of
from ._units import Duration, ms, opt_ms, opt_time_of
from ._values import Key, Value, encode_value, opt_key

if TYPE_CHECKING:
    from . import Store

Delivery = Union[Message, Tuple[int, str]]
"""A delivery to ack: a Message from dequeue, or an (id, token) pair."""

# How long one dequeue of a consume loop waits before it asks again (its
# token ends it at once when the loop is left or cancelled).
CONSUME_SLICE_MS = 60_000


class Queue:
    """The work queue of a Store (``store.queue``). Durations in seconds."""

    __slots__ = ("_s",)

    def __init__(self, store: Store) -> None:
        self._s = store

    def enqueue(self, topic: Name, payload: Value, *, delay: Optional[Duration] = None,
                max_attempts: int = 0, dedup: Optional[Key] = None) -> int:
        """Enqueues ``payload``, claimable after ``delay``, dead-lettered after
        ``max_attempts`` deliveries (0: 3): the new id, or the id of the live
        message that holds ``dedup``."""
        data, kind = encode_value(payload)
        return _raw.bittw_queue_enqueue(self._s._box, topic, data, kind, opt_ms(delay, "delay"),
                                        max_attempts, opt_key(dedup))[1]

    def dequeue(self, topic: Name, *, limit: int = 1, lease: Optional[Duration] = None,
                wait: Duration = 0, cancel: Optional[CancelToken] = None) -> List[Message]:
        """Leases up to ``limit`` messages for ``lease`` (None: the store's
        ``queue_lease``), waiting up to ``wait`` for a first one. ``cancel``
        ends the wait (``bitt.Cancelled``, nothing leased)."""
        lease_ms, wait_ms = opt_ms(lease, "lease"), ms(wait, "wait")
        if cancel is None:
            r = _raw.bittw_queue_dequeue(self._s._box, topic, limit, lease_ms, wait_ms)
        else:
            r = _raw.bittw_queue_dequeue_cancel(self._s._box, topic, limit, lease_ms, wait_ms,
                                                check(cancel))
        return messages_of(r[1])

    def consume(self, topic: Name, *, prefetch: int = 1, lease: Optional[Duration] = None,
                cancel: Optional[CancelToken] = None) -> Consumer:
        """The messages of ``topic`` as they come (an iterator that waits):
        each dequeue leases up to ``prefetch`` (for ``lease``), handed out one
        by one; ack or nack each. Leaving the loop (``break``, ``close()``,
        the end of a ``with``) ends it at once and gives back the prefetched
        messages not handed out; ``cancel`` ends it with ``bitt.Cancelled``."""
        return Consumer(self._s, topic, prefetch, opt_ms(lease, "lease"), cancel)

    def ack(self, msg: Message) -> None:
        """Finishes a delivery (StaleToken when its lease ended)."""
        _raw.bitt_queue_ack(self._s._box, msg.topic, msg.id, msg.token)

    def ack_many(self, topic: Name, deliveries: Iterable[Delivery]) -> List[bool]:
        """Acks up to 1000 deliveries of ``topic`` in one transaction: one bool
        each, False when its token was stale (that message is left alone)."""
        pairs = [(d.id, d.token) if isinstance(d, Message) else d for d in deliveries]
        return [s == 0 for s in _raw.bitt_queue_ack_many(self._s._box, topic, pairs)[1]]

    def nack(self, msg: Message, error: Optional[str] = None, *,
             delay: Optional[Duration] = None) -> None:
        """Gives a delivery back after a failure, recording ``error``: retried
        after ``delay`` (None: the backoff), dead-lettered on its last attempt."""
        _raw.bitt_queue_nack(self._s._box, msg.topic, msg.id, msg.token, error,
                             opt_ms(delay, "delay", -1))

    def extend(self, msg: Message, lease: Duration) -> None:
        """The delivery's lease now ends ``lease`` from now (0: hands it back now)."""
        _raw.bitt_queue_extend(self._s._box, msg.topic, msg.id, msg.token, ms(lease, "lease"))

    def snooze(self, topic: Name, id: int, token: str, delay: Duration = 0) -> None:
        """Gives a delivery back unseen, claimable again after ``delay``: unlike
        nack it uses no attempt and records no error."""
        _raw.bitt_queue_snooze(self._s._box, topic, id, token, ms(delay, "delay"))

    def dead_list(self, topic: Name, *, after: int = 0, limit: int = 0) -> List[Message]:
        """Dead letters of ``topic`` in id order, after id ``after``, at most
        ``limit`` (0: 100)."""
        return messages_of(_raw.bitt_queue_dead_list(self._s._box, topic, after, limit)[1])

    def dead_retry(self, topic: Name, id: int = 0) -> int:
        """Puts dead message ``id`` (0: all of ``topic``) back with its attempts
        reset: how many."""
        return _raw.bitt_queue_dead_retry(self._s._box, topic, id)[1]

    def dead_delete(self, topic: Name, id: int = 0) -> int:
        """Deletes dead message ``id`` (0: all of ``topic``): how many."""
        return _raw.bitt_queue_dead_delete(self._s._box, topic, id)[1]

    def stats(self, topic: Name) -> QueueStats:
        """The counts of ``topic``."""
        p, d, pr, dead, oldest = _raw.bittw_queue_stats(self._s._box, topic)[1]
        return QueueStats(p, d, pr, dead, opt_time_of(oldest))


class Consumer:
    """An iterator over the messages of a topic (``store.queue.consume``):
    see there. Also a context manager; ``close()`` may come from any thread."""

    def __init__(self, store: Store, topic: Name, prefetch: int, lease_ms: int,
                 cancel: Optional[CancelToken]) -> None:
        check(cancel)
        if not isinstance(prefetch, int) or isinstance(prefetch, bool):
            raise bad_type("prefetch", prefetch, "an int")
        self._s = store
        self._topic = topic
        self._prefetch = prefetch
        self._lease_ms = lease_ms
        self._user = cancel
        self._stop = CancelToken()  # fired by close()
        self._lock = threading.Lock()
        self._buf: Deque[Message] = deque()
        self._closed = False
        store._consumers.add(self)

    def __iter__(self) -> Consumer:
        return self

    def __next__(self) -> Message:
        while True:
            m = self._held()
            if m is not None:
                return m
            batch = self._fetch(None)
            if batch is None:
                raise StopIteration
            self._keep(batch)

    def _held(self) -> Optional[Message]:
        """The next prefetched message; None when there is none (fetch more);
        StopIteration once closed."""
        with self._lock:
            if self._buf:
                return self._buf.popleft()
            if self._closed:
                raise StopIteration
        return None

    def _fetch(self, extra: Optional[CancelToken]) -> Optional[List[Message]]:
        """One dequeue (a batch, maybe empty); None once the consumer is closed.
        ``extra`` (the aio layer's token) also ends it, with Cancelled."""
        with either(self._user, extra) as outer, either(outer, self._stop) as tok:
            try:
                r = _raw.bittw_queue_dequeue_cancel(self._s._box, self._topic, self._prefetch,
                                                    self._lease_ms, CONSUME_SLICE_MS, check(tok))
            except Cancelled:
                if self._stop.cancelled:
                    return None
                raise
        return messages_of(r[1])

    def _keep(self, batch: List[Message]) -> None:
        """Holds a fetched batch for handing out (given back if closed meanwhile)."""
        with self._lock:
            if not self._closed:
                self._buf.extend(batch)
                return
        self._give_back(batch)

    def _give_back(self, msgs: Iterable[Message]) -> None:
        # Best effort: a message whose snooze fails (its lease already ended,
        # the store closed) comes back when its lease ends, as it would have.
        for m in msgs:
            try:
                _raw.bitt_queue_snooze(self._s._box, m.topic, m.id, m.token, 0)
            except Error:
                pass

    def close(self) -> None:
        """Ends the loop at once (a waiting dequeue too) and gives back the
        messages prefetched and not handed out. Idempotent."""
        with self._lock:
            self._closed = True
            held = list(self._buf)
            self._buf.clear()
        self._stop.cancel()
        self._give_back(held)

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._closed:
                self.close()
        except Exception:
            pass

