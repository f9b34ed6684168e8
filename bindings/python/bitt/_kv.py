"""store.kv and store.atomic(): keys, values, versionstamps, atomic commits."""
from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Sequence, Type

from . import raw as _raw
from ._queue import priority_of
from ._types import Entry, Message, Name, Page, entry_of
from ._units import Duration, ms, opt_ms
from ._values import Key, Value, encode_key, encode_value, opt_key

if TYPE_CHECKING:
    from . import Store


class KV:
    """The key-value store of a Store (``store.kv``). Keys: ``bitt.Key``;
    values: ``bitt.Value`` (bindings/VALUES.md); ``ttl`` in seconds (None or
    0: no expiry)."""

    __slots__ = ("_s",)

    def __init__(self, store: Store) -> None:
        self._s = store

    def get(self, key: Key) -> Optional[Entry]:
        """The live entry of ``key``, or None."""
        t = _raw.bitt_kv_get(self._s._box, encode_key(key))[1]
        return None if t is None else entry_of(t)

    def set(self, key: Key, value: Value, *, ttl: Optional[Duration] = None) -> int:
        """Writes ``value``; the new versionstamp."""
        data, kind = encode_value(value)
        return _raw.bitt_kv_set(self._s._box, encode_key(key), data, kind,
                                0 if ttl is None else opt_ms(ttl, "ttl"))[1]

    def add(self, key: Key, value: Value, *, ttl: Optional[Duration] = None) -> Optional[int]:
        """Writes ``value`` only when no live value is there: the new
        versionstamp, or None when one was."""
        data, kind = encode_value(value)
        r = _raw.bitt_kv_add(self._s._box, encode_key(key), data, kind, opt_ms(ttl, "ttl"))
        return r[1] if r[0] == 0 else None

    def delete(self, key: Key) -> bool:
        """Deletes ``key``: whether it was there."""
        return _raw.bitt_kv_delete(self._s._box, encode_key(key)) == 0

    def take(self, key: Key) -> Optional[Entry]:
        """Reads and deletes ``key`` in one step: its entry, or None."""
        t = _raw.bitt_kv_take(self._s._box, encode_key(key))[1]
        return None if t is None else entry_of(t)

    def increment(self, key: Key, delta: int = 1, *, ttl: Optional[Duration] = None) -> int:
        """Adds ``delta`` to a counter atomically: the new value. A missing key
        becomes ``delta`` with ``ttl``; a live one keeps its TTL."""
        return _raw.bitt_kv_increment(self._s._box, encode_key(key), delta,
                                      opt_ms(ttl, "ttl"))[1]

    def get_many(self, keys: Sequence[Key]) -> List[Optional[Entry]]:
        """The entries of ``keys`` in one snapshot, in order (None for a miss)."""
        r = _raw.bittw_kv_get_many(self._s._box, [encode_key(k) for k in keys])
        return [None if t is None else entry_of(t) for t in r[1]]

    def list(self, prefix: Optional[Key] = None, *, start: Optional[Key] = None,
             end: Optional[Key] = None, limit: int = 0, reverse: bool = False,
             cursor: Optional[str] = None) -> Iterator[Entry]:
        """Every entry of the selection (keys with ``prefix``, and from
        ``start`` up to ``end``, in key order or ``reverse``), reading pages of
        ``limit`` entries (0: 100) one after the other."""
        p, s, e = opt_key(prefix), opt_key(start), opt_key(end)
        rev = bool(reverse)
        return self._pages(p, s, e, limit, rev, cursor)

    def _pages(self, p: Optional[bytes], s: Optional[bytes], e: Optional[bytes], limit: int,
               rev: bool, cursor: Optional[str]) -> Iterator[Entry]:
        while True:
            r = _raw.bittw_kv_list(self._s._box, p, s, e, limit, rev, cursor)
            for t in r[1]:
                yield entry_of(t)
            cursor = r[2]
            if cursor is None:
                return

    def page(self, prefix: Optional[Key] = None, *, start: Optional[Key] = None,
             end: Optional[Key] = None, limit: int = 0, reverse: bool = False,
             cursor: Optional[str] = None) -> Page:
        """One page of the selection (as ``list``): its entries and the cursor
        of the next page (None after the last)."""
        r = _raw.bittw_kv_list(self._s._box, opt_key(prefix), opt_key(start), opt_key(end),
                               limit, bool(reverse), cursor)
        return Page([entry_of(t) for t in r[1]], r[2])

    def purge_expired(self) -> int:
        """Deletes expired entries now: how many."""
        return _raw.bitt_kv_purge_expired(self._s._box)[1]


class Atomic:
    """Checks and mutations committed all or none: ``with store.atomic() as
    tx: tx.check(...).set(...)`` commits when the block ends without an
    exception. A refused action fails the whole commit."""

    def __init__(self, store: Store) -> None:
        self._s = store
        self._txn: Any = _raw.bitt_txn_begin(store._box)[1]
        self.version: Optional[int] = None
        """The commit's versionstamp, once committed."""

    def check(self, key: Key, version: Optional[int]) -> Atomic:
        """Requires ``key`` to be at ``version`` (None or 0: absent)."""
        _raw.bitt_txn_check(self._txn, encode_key(key), version or 0)
        return self

    def set(self, key: Key, value: Value, *, ttl: Optional[Duration] = None) -> Atomic:
        """Writes ``value`` (``ttl`` in seconds)."""
        data, kind = encode_value(value)
        _raw.bitt_txn_set(self._txn, encode_key(key), data, kind, opt_ms(ttl, "ttl"))
        return self

    def delete(self, key: Key) -> Atomic:
        """Deletes ``key``."""
        _raw.bitt_txn_delete(self._txn, encode_key(key))
        return self

    def sum(self, key: Key, delta: int) -> Atomic:
        """Adds ``delta`` to a counter (a created key has no TTL)."""
        _raw.bitt_txn_sum(self._txn, encode_key(key), delta)
        return self

    def enqueue(self, topic: Name, payload: Value, *, delay: Optional[Duration] = None,
                max_attempts: int = 0, dedup: Optional[Key] = None, priority: int = 0) -> Atomic:
        """Enqueues with the commit (a live ``dedup`` key makes it a no-op)."""
        data, kind = encode_value(payload)
        _raw.bittw_txn_enqueue2(self._txn, topic, data, kind, opt_ms(delay, "delay"),
                                max_attempts, opt_key(dedup), priority_of(priority))
        return self

    # The queue ops of store.queue, applied with the commit. A delivery op
    # (ack, nack, snooze, extend) needs its lease live and its token current
    # when the commit runs, else the commit fails (StaleToken) and writes
    # nothing; cancel and reschedule of a message they do not apply to do
    # nothing. At most one of these per message id in a commit.

    def queue_ack(self, msg: Message, *, result: Optional[Value] = None) -> Atomic:
        """Finishes the delivery ``msg`` with the commit, kept ``"done"`` with
        ``result`` under ``queue_done_retention`` (as ``store.queue.ack``)."""
        if result is None:
            _raw.bitt_txn_queue_ack(self._txn, msg.topic, msg.id, msg.token)
        else:
            data, kind = encode_value(result)
            _raw.bitt_txn_queue_ack_result(self._txn, msg.topic, msg.id, msg.token, data, kind)
        return self

    def queue_nack(self, msg: Message, error: Optional[str] = None, *,
                   delay: Optional[Duration] = None) -> Atomic:
        """Gives ``msg`` back with the commit, recording ``error``: retried
        after ``delay`` (None: the backoff), dead-lettered on its last attempt."""
        _raw.bitt_txn_queue_nack(self._txn, msg.topic, msg.id, msg.token, error,
                                 opt_ms(delay, "delay", -1))
        return self

    def queue_snooze(self, topic: Name, id: int, token: str, delay: Duration = 0) -> Atomic:
        """Gives a delivery back unseen with the commit (no attempt used),
        claimable after ``delay``."""
        _raw.bitt_txn_queue_snooze(self._txn, topic, id, token, ms(delay, "delay"))
        return self

    def queue_extend(self, msg: Message, lease: Duration) -> Atomic:
        """The delivery's lease ends ``lease`` from the commit."""
        _raw.bitt_txn_queue_extend(self._txn, msg.topic, msg.id, msg.token, ms(lease, "lease"))
        return self

    def queue_cancel(self, topic: Name, id: int) -> Atomic:
        """Cancels message ``id`` with the commit (nothing when it is not
        pending, delayed or leased)."""
        _raw.bitt_txn_queue_cancel(self._txn, topic, id)
        return self

    def queue_reschedule(self, topic: Name, id: int, delay: Duration = 0) -> Atomic:
        """Makes message ``id`` claimable ``delay`` after the commit (nothing
        when it is not pending or delayed)."""
        _raw.bitt_txn_queue_reschedule(self._txn, topic, id, ms(delay, "delay"))
        return self

    def fence(self, name: Name, owner: Name, epoch: int) -> Atomic:
        """Commits only while ``owner`` holds lease ``name`` at ``epoch``."""
        _raw.bitt_txn_fence(self._txn, name, owner, epoch)
        return self

    def outbox_append(self, stream: Name, event: Value) -> Atomic:
        """Appends ``event`` to ``stream`` with the commit."""
        data, kind = encode_value(event)
        _raw.bitt_txn_outbox_append(self._txn, stream, data, kind)
        return self

    def commit(self) -> int:
        """Commits: the versionstamp (ConflictError when a check failed)."""
        self.version = _raw.bitt_txn_commit(self._txn)[1]
        return self.version

    def close(self) -> None:
        """Frees the transaction (uncommitted actions are dropped). Idempotent."""
        if self._txn is not None:
            _raw.bitt_txn_free(self._txn)
            self._txn = None

    def __enter__(self) -> Atomic:
        return self

    def __exit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
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
