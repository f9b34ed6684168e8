"""The result classes of the Python API (typed NamedTuples: cheap to make,
immutable, and they print their fields)."""
from __future__ import annotations

from datetime import datetime
from typing import Any, List, Literal, NamedTuple, Optional, Tuple, Union

from ._units import opt_time_of, seconds_of, time_of
from ._values import KIND_BYTES, Stored, decode_value

Name = Union[str, bytes]
"""A topic, stream, channel, lease name or owner, budget name or schedule key:
a str (UTF-8) or bytes."""

PARK_POISON = 1
"""An outbox event parked because its handler keeps failing on it."""
PARK_INVALID = 2
"""An outbox event parked because it can never be handled as it is."""


class Entry(NamedTuple):
    """A KV entry: the key's bytes, its decoded value, its versionstamp, when
    it expires (None: never) and the value's kind (``bitt.KIND_*``)."""

    key: bytes
    value: Stored
    version: int
    expires_at: Optional[datetime]
    kind: int = KIND_BYTES


def entry_of(t: Tuple[bytes, bytes, int, int, int]) -> Entry:
    """An Entry from the extension's (key, value, kind, version, expires_at) tuple."""
    return Entry(t[0], decode_value(t[1], t[2]), t[3], None if t[4] == 0 else time_of(t[4]), t[2])


class Page(NamedTuple):
    """One page of a KV list: its entries, and the cursor of the next page
    (None after the last)."""

    entries: List[Entry]
    cursor: Optional[str]


MessageState = Literal["pending", "delayed", "leased", "dead", "done"]
"""Where a queue message is (bitt.h BITT_MSG_*): claimable now (also a lease
that ran out), claimable from ``due_at``, under a live lease until
``due_at``, a dead letter since ``failed_at``, or acked at ``done_at`` and
kept by the store's ``queue_done_retention``."""

_STATES: Tuple[Optional[MessageState], ...] = (None, "pending", "delayed", "leased", "dead",
                                               "done")


def state_of(code: int) -> Optional[MessageState]:
    """The state name of a BITT_MSG_* code (None for 0: not a queue message)."""
    return _STATES[code] if 0 <= code < len(_STATES) else None


class Message(NamedTuple):
    """A queue delivery, a dead letter, an outbox event or a published message.

    ``token`` is the delivery's ack token (queue deliveries only); times are
    UTC datetimes: ``due_at`` is the end of a delivery's lease (an outbox
    event's next attempt time, None when none), ``failed_at`` when a dead
    letter died or an event was parked (else None). ``park_reason`` is
    ``bitt.PARK_POISON`` or ``bitt.PARK_INVALID`` for parked events, else 0.
    ``state`` is where a queue message is (``"leased"`` for a delivery,
    ``"dead"`` for a dead letter, as it is for ``queue.get``; None for outbox
    events and published messages) and ``priority`` its priority (higher is
    claimed first; 0 elsewhere). For ``queue.get``, ``due_at`` is when a
    pending or delayed message is claimable (from), or a leased one's lease
    ends. A ``"done"`` message (``queue_done_retention``) has ``done_at``,
    when it was acked, and the ``result`` it was acked with (bytes, None when
    none; ``result_value`` decodes it) of kind ``result_kind`` (None: none)."""

    id: int
    topic: str
    payload: bytes
    kind: int
    token: Optional[str]
    attempts: int
    max_attempts: int
    last_error: Optional[str]
    created_at: Optional[datetime]
    due_at: Optional[datetime]
    failed_at: Optional[datetime]
    park_reason: int
    state: Optional[MessageState] = None
    priority: int = 0
    done_at: Optional[datetime] = None
    result: Optional[bytes] = None
    result_kind: Optional[int] = None

    @property
    def value(self) -> Stored:
        """The payload decoded by its kind (bindings/VALUES.md)."""
        return decode_value(self.payload, self.kind)

    @property
    def result_value(self) -> Optional[Stored]:
        """The result decoded by its kind as a payload is (None when none)."""
        if self.result is None:
            return None
        return decode_value(self.result, KIND_BYTES if self.result_kind is None
                            else self.result_kind)


MessageTuple = Tuple[int, str, bytes, int, Optional[str], int, int, Optional[str], int, int, int,
                     int, int, int, int, Optional[bytes], int]


def message_of(t: MessageTuple) -> Message:
    """A Message from the extension's tuple (times in ms; a result kind of -1
    is none)."""
    return Message(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], opt_time_of(t[8]),
                   opt_time_of(t[9]), opt_time_of(t[10]), t[11], state_of(t[12]), t[13],
                   opt_time_of(t[14]), t[15], None if t[16] < 0 else t[16])


def messages_of(lst: List[Any]) -> List[Message]:
    """Messages from the extension's list of tuples."""
    return [message_of(t) for t in lst]


class Lease(NamedTuple):
    """A held lease: its name, owner, epoch (the fencing token) and end."""

    name: str
    owner: str
    epoch: int
    expires_at: datetime


class Schedule(NamedTuple):
    """A schedule: its key, interval (seconds; 0.0 for a cron schedule),
    payload and kind, the next run, and in a claim's result the time of the
    occurrence claimed (else None); its ``cron`` expression (None: an
    interval schedule), the ``topic`` each occurrence is enqueued on (None:
    none), and in a claim's result on a topic the id of that occurrence's
    message (``message_id``, else 0)."""

    key: str
    interval: float
    payload: bytes
    kind: int
    next_run_at: datetime
    occurrence: Optional[datetime]
    cron: Optional[str] = None
    topic: Optional[str] = None
    message_id: int = 0

    @property
    def value(self) -> Stored:
        """The payload decoded by its kind (bindings/VALUES.md)."""
        return decode_value(self.payload, self.kind)


def schedule_of(t: Tuple[str, int, bytes, int, int, int, Optional[str], Optional[str], int]
                ) -> Schedule:
    """A Schedule from the extension's tuple (times in ms)."""
    return Schedule(t[0], seconds_of(t[1]), t[2], t[3], time_of(t[4]), opt_time_of(t[5]), t[6],
                    t[7], t[8])


class QueueStats(NamedTuple):
    """A topic's counts, and since when its oldest claimable message waits
    (None when none does); ``done`` counts the acked messages the store keeps
    (``queue_done_retention``)."""

    pending: int
    delayed: int
    processing: int
    dead: int
    oldest_pending_at: Optional[datetime]
    done: int = 0


class OutboxCounts(NamedTuple):
    """A stream's pending and parked event counts."""

    pending: int
    parked: int
