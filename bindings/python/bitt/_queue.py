"""store.queue: enqueue, dequeue under a lease (one topic or several),
ack/nack/extend/snooze, messages by id (get, cancel, reschedule), dead
letters, and the consume iterator."""
from __future__ import annotations

import threading
from collections import deque
from types import TracebackType
from typing import (TYPE_CHECKING, Deque, Iterable, List, Optional, Sequence, Tuple, Type, Union,
                    overload)

from . import raw as _raw
from ._cancel import CancelToken, check, either
from ._errors import Cancelled, Error, bad_type
from ._types import Message, Name, QueueStats, message_of, messages_of
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
                max_attempts: int = 0, dedup: Optional[Key] = None, priority: int = 0) -> int:
        """Enqueues ``payload``, claimable after ``delay``, dead-lettered after
        ``max_attempts`` deliveries (0: 3), claimed before every message of a
        lower ``priority`` (an int32): the new id, or the id of the live
        message that holds ``dedup``."""
        data, kind = encode_value(payload)
        return _raw.bittw_queue_enqueue2(self._s._box, topic, data, kind, opt_ms(delay, "delay"),
                                         max_attempts, opt_key(dedup), priority_of(priority))[1]

    @overload
    def dequeue(self, topic: Name, *, limit: int = 1, lease: Optional[Duration] = None,
                wait: Duration = 0, cancel: Optional[CancelToken] = None) -> List[Message]: ...

    @overload
    def dequeue(self, *, topics: Sequence[Name], limit: int = 1,
                lease: Optional[Duration] = None, wait: Duration = 0,
                cancel: Optional[CancelToken] = None) -> List[Message]: ...

    def dequeue(self, topic: Optional[Name] = None, *, topics: Optional[Sequence[Name]] = None,
                limit: int = 1, lease: Optional[Duration] = None, wait: Duration = 0,
                cancel: Optional[CancelToken] = None) -> List[Message]:
        """Leases up to ``limit`` messages of ``topic`` (or of any of
        ``topics``, 1 to 64 distinct names: each message names its own) for
        ``lease`` (None: the store's ``queue_lease``), waiting up to ``wait``
        for a first one; a higher priority first, then what has been
        claimable longest. ``cancel`` ends the wait (``bitt.Cancelled``,
        nothing leased)."""
        names = topics_of(topic, topics)
        lease_ms, wait_ms = opt_ms(lease, "lease"), ms(wait, "wait")
        if names is not None or topic is None:  # (topics_of refused no topic at all)
            r = _raw.bittw_queue_dequeue_topics(self._s._box, names or [], limit, lease_ms,
                                                wait_ms, check(cancel))
        elif cancel is None:
            r = _raw.bittw_queue_dequeue(self._s._box, topic, limit, lease_ms, wait_ms)
        else:
            r = _raw.bittw_queue_dequeue_cancel(self._s._box, topic, limit, lease_ms, wait_ms,
                                                check(cancel))
        return messages_of(r[1])

    def get(self, topic: Name, id: int) -> Optional[Message]:
        """Message ``id`` of ``topic`` as it is now (its ``state``, attempts,
        ``due_at``, last error, priority; never a token), or None when the
        topic holds no such message (acked, cancelled, deleted, never there)."""
        t = _raw.bitt_queue_get(self._s._box, topic, id)[1]
        return None if t is None else message_of(t)

    def cancel(self, topic: Name, id: int) -> bool:
        """Deletes a pending, delayed or leased message (its dedup key is free
        again; its delivery's ack, nack, extend or snooze are StaleToken):
        whether it was there (a dead letter is not: ``dead_delete`` it)."""
        return _raw.bitt_queue_cancel(self._s._box, topic, id) == 0

    def reschedule(self, topic: Name, id: int, delay: Duration = 0) -> bool:
        """Makes a pending or delayed message claimable ``delay`` from now (0:
        at once, waking a waiting dequeue), its attempts and error kept:
        whether it applied (not to a live lease: its consumer nacks or
        snoozes it)."""
        return _raw.bitt_queue_reschedule(self._s._box, topic, id, ms(delay, "delay")) == 0

    def consume(self, topic: Name, *, prefetch: int = 1, lease: Optional[Duration] = None,
                cancel: Optional[CancelToken] = None) -> Consumer:
        """The messages of ``topic`` as they come (an iterator that waits):
        each dequeue leases up to ``prefetch`` (for ``lease``), handed out one
        by one; ack or nack each. Leaving the loop (``break``, ``close()``,
        the end of a ``with``) ends it at once and gives back the prefetched
        messages not handed out; ``cancel`` ends it with ``bitt.Cancelled``."""
        return Consumer(self._s, topic, prefetch, opt_ms(lease, "lease"), cancel)

    def ack(self, msg: Message, *, result: Optional[Value] = None) -> None:
        """Finishes a delivery (StaleToken when its lease ended). With the
        store's ``queue_done_retention`` the message is kept ``"done"`` with
        ``result`` (a value as a payload is, bindings/VALUES.md; None: no
        result); without it the result goes with the message."""
        if result is None:
            _raw.bitt_queue_ack(self._s._box, msg.topic, msg.id, msg.token)
            return
        data, kind = encode_value(result)
        _raw.bitt_queue_ack_result(self._s._box, msg.topic, msg.id, msg.token, data, kind)

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

    def purge(self, topic: Optional[Name] = None) -> int:
        """Drops the done messages and dead letters of ``topic`` (None: of
        every topic) that outlived the store's ``queue_done_retention`` /
        ``queue_dead_retention``: how many (queue calls and the store do it
        too, now and then)."""
        return _raw.bitt_queue_purge(self._s._box, topic)[1]

    def stats(self, topic: Name) -> QueueStats:
        """The counts of ``topic``."""
        p, d, pr, dead, oldest, done = _raw.bittw_queue_stats(self._s._box, topic)[1]
        return QueueStats(p, d, pr, dead, opt_time_of(oldest), done)


def priority_of(p: int) -> int:
    """A priority: an int (the extension checks the int32 range)."""
    if not isinstance(p, int) or isinstance(p, bool):
        raise bad_type("priority", p, "an int")
    return p


def topics_of(topic: Optional[Name], topics: Optional[Sequence[Name]]) -> Optional[List[Name]]:
    """A dequeue's ``topics`` as a list (None when it names one ``topic``)."""
    if topics is None:
        if topic is None:
            raise TypeError("dequeue: a topic or topics= is needed")
        return None
    if topic is not None:
        raise TypeError("dequeue: give a topic or topics=, not both")
    if isinstance(topics, (str, bytes, bytearray, memoryview)):
        raise bad_type("topics", topics, "a sequence of names")
    return list(topics)


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

