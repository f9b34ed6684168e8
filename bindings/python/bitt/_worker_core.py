"""What bitt.Worker (threads) and bitt.aio.Worker (asyncio) share: the
options and their checks, the outcome of a handler, the counters, the hooks,
the job record and the bookkeeping of what is held. Only the waiting differs
between the two (threads and conditions, tasks and futures), so each driver
keeps just that. The loop is orchestration only: attempts, backoff, dead
letters and token checks are the C core's."""
from __future__ import annotations

import logging
from collections import deque
from datetime import datetime, timedelta
from typing import (Any, Callable, Deque, Dict, Generic, List, Literal, NamedTuple, Optional,
                    Set, Tuple, TypeVar, overload)

from ._errors import (Error, InvalidArgument, StaleToken, TooLarge, Unsupported, UsageError,
                      bad_type)
from ._types import Message, Name
from ._units import Duration, ms, opt_ms
from ._values import Value, encode_value

DEQUEUE_MAX = 1000  # BITT_DEQUEUE_MAX: the most one dequeue claims (and one ack_many acks)
BACKOFF_MIN_MS = 100  # after a failed dequeue, doubled up to BACKOFF_MAX_MS
BACKOFF_MAX_MS = 5000
DEFAULT_WAIT_MS = 1000  # never 0: a loop on an empty topic would spin
# Errors a retry cannot mend (a bad topic, a closed store, a backend without
# the call): the worker stops with them instead of backing off forever.
PERMANENT = (InvalidArgument, UsageError, Unsupported)

Event = Literal["completed", "failed", "stalled", "error"]
EVENTS: Tuple[Event, ...] = ("completed", "failed", "stalled", "error")
Outcome = Literal["ok", "snooze", "fail"]

log = logging.getLogger("bitt.worker")

CompletedHook = Callable[[Message, Any], object]
"""``on_completed(message, result)``: after the ack of a handler that returned
(the ack keeps ``result`` when it is a value: ``stored_result``)."""
FailedHook = Callable[[Message, Exception], object]
"""``on_failed(message, exception)``: after the nack of a handler that raised."""
StalledHook = Callable[[Message], object]
"""``on_stalled(message)``: the delivery's lease was lost (nothing acked)."""
ErrorHook = Callable[[BaseException, Optional[Message]], object]
"""``on_error(exception, message or None)``: a store error of the worker's
own, or what a hook raised."""


class Snooze(Exception):
    """Raised (or returned) by a handler: the message goes back unseen,
    claimable again ``delay`` seconds from now (``queue.snooze``: no attempt
    used, no error recorded)."""

    def __init__(self, delay: Duration = 0) -> None:
        d = ms(delay, "Snooze: delay")
        if d < 0:
            raise InvalidArgument(-1, f"Snooze: delay: {delay!r} is negative")
        super().__init__(f"snoozed for {d} ms")
        self.delay_ms: int = d

    @property
    def delay(self) -> float:
        """The delay in seconds."""
        return self.delay_ms / 1000


class WorkerCounters(NamedTuple):
    """A snapshot of a worker: messages claimed, completed (acked), failed
    (nacked), snoozed, stalled (their lease lost), released (given back unseen
    at stop), and the handlers running now."""

    claimed: int
    completed: int
    failed: int
    snoozed: int
    stalled: int
    released: int
    running: int


def count_of(v: object, what: str, least: int, default: int) -> int:
    """An int option of at least ``least`` (``default`` for None)."""
    if v is None:
        return default
    if not isinstance(v, int) or isinstance(v, bool):
        raise bad_type(f"Worker: {what}", v, "an int")
    if v < least:
        why = "not a positive integer" if least == 1 else "negative"
        raise InvalidArgument(-1, f"Worker: {what}: {v} is {why}")
    return v


def duration_of(v: Optional[Duration], what: str, least_ms: int) -> Optional[int]:
    """A duration option (seconds) as ms, at least ``least_ms`` (None stays None)."""
    if v is None:
        return None
    d = opt_ms(v, f"Worker: {what}")
    if d < least_ms:
        why = "not positive" if least_ms == 1 else "negative"
        raise InvalidArgument(-1, f"Worker: {what}: {v!r} s is {why}")
    return d


def check_topic(topic: object) -> Name:
    if not isinstance(topic, (str, bytes)):
        raise bad_type("Worker: topic", topic, "a str or bytes")
    return topic


def error_text(e: BaseException) -> str:
    """The text a nack records for what a handler raised."""
    if isinstance(e, Error):
        return e.message or type(e).__name__
    try:
        return str(e) or type(e).__name__
    except Exception:  # noqa: BLE001 - a broken __str__ still gets a text
        return type(e).__name__


def outcome_of(value: object, exc: Optional[BaseException]) -> Tuple[Outcome, object]:
    """What a handler's return value or exception means."""
    if exc is not None:
        return ("snooze" if isinstance(exc, Snooze) else "fail"), exc
    return ("snooze" if isinstance(value, Snooze) else "ok"), value


def stored_result(value: object) -> Optional[Value]:
    """The result an ack keeps for a handler's return value: the value when
    bindings/VALUES.md maps it (bytes, int, JSON); None (no result) for None
    and for what it does not map (an object of another type, NaN), which
    only ``on_completed`` gets."""
    if value is None or isinstance(value, Snooze):
        return None
    try:
        encode_value(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return value  # type: ignore[return-value]


# What the store answers to a result it cannot keep (too large, a counter
# out of range): the job fails with it (a nack), as a handler's error would.
RESULT_REFUSED = (InvalidArgument, TooLarge)


def is_permanent(e: BaseException) -> bool:
    """Whether a failed dequeue stops the worker (not a store's blip: a bug,
    a closed store, an unsupported call, or not a bitt error at all)."""
    return not isinstance(e, Error) or isinstance(e, PERMANENT)


def next_backoff(prev_ms: int) -> int:
    return min(max(prev_ms * 2, BACKOFF_MIN_MS), BACKOFF_MAX_MS)


T = TypeVar("T")  # the driver's cancellation handle of a job


class Job(Generic[T]):
    """One claimed message from the start of its handler to its end."""

    __slots__ = ("msg", "cancel", "over", "stalled", "released", "ended", "extending", "next_beat")

    def __init__(self, msg: Message, cancel: T) -> None:
        self.msg = msg
        self.cancel = cancel  # how the handler is told (a CancelToken, a Task)
        self.over = False  # the handler returned
        self.stalled = False  # the delivery is no longer ours (StaleToken)
        self.released = False  # given back at stop's deadline
        self.ended = False  # its claim no longer counts
        self.extending = False  # a renewal in flight
        self.next_beat: Optional[float] = None  # monotonic seconds: the next renewal (None: none)

    @property
    def beating(self) -> bool:
        return not (self.over or self.stalled or self.released)


class Core(Generic[T]):
    """The state of a worker without its waits: options, counters, hooks, the
    prefetched messages, the jobs. The drivers call these under their own
    mutual exclusion (a lock, or the event loop's single thread)."""

    def __init__(self, topic: object, handler: object, concurrency: Optional[int],
                 prefetch: Optional[int], lease: Optional[Duration],
                 heartbeat: Optional[Duration], wait: Optional[Duration],
                 hooks: Dict[Event, Optional[Callable[..., Any]]]) -> None:
        self.topic: Name = check_topic(topic)
        if not callable(handler):
            raise bad_type("Worker: handler", handler, "callable")
        self.n = count_of(concurrency, "concurrency", 1, 1)
        self.p = count_of(prefetch, "prefetch", 0, 0)
        self.lease_ms = duration_of(lease, "lease", 1)  # None: the store's, off the first delivery
        self.heartbeat_ms = duration_of(heartbeat, "heartbeat", 1)  # None: lease / 3
        self.wait_ms = duration_of(wait, "wait", 1) or DEFAULT_WAIT_MS
        self.c: Dict[str, int] = dict.fromkeys(WorkerCounters._fields[:-1], 0)
        self.buf: Deque[Message] = deque()  # claimed, not started
        self.running: Set[Job[T]] = set()  # handler not returned
        self.jobs: Set[Job[T]] = set()  # not ended (running, or writing its result)
        self.held = 0  # claimed, not ended: never above n + p
        self.halted = False
        self.done = False
        self.hooks: Dict[str, List[Callable[..., Any]]] = {e: [] for e in EVENTS}
        for event, fn in hooks.items():  # given to the constructor: none missed at the start
            if fn is not None:
                self.on(event, fn)

    # ---- hooks ----
    def on(self, event: str, fn: Callable[..., object]) -> None:
        if event not in self.hooks:
            raise InvalidArgument(-1, f"Worker.on: unknown event {event!r} "
                                      f"(events: {', '.join(EVENTS)})")
        if not callable(fn):
            raise bad_type(f"Worker: on_{event}", fn, "callable")
        self.hooks[event].append(fn)

    def off(self, event: str, fn: Callable[..., object]) -> None:
        try:
            self.hooks.get(event, []).remove(fn)
        except ValueError:
            pass

    def log_error(self, e: BaseException, msg: Optional[Message]) -> None:
        """With no error hook (or one that raised): the log, not a lost error."""
        where = "" if msg is None else f" (message {msg.id})"
        log.error("bitt Worker on topic %r%s: %s", self.topic, where, error_text(e),
                  exc_info=(type(e), e, e.__traceback__))

    # ---- bookkeeping ----
    def counters(self) -> WorkerCounters:
        return WorkerCounters(running=len(self.running), **self.c)

    def room(self) -> int:
        """How many one dequeue may claim now."""
        return min(self.n + self.p - self.held, DEQUEUE_MAX)

    def claimed(self, batch: List[Message]) -> None:
        self.c["claimed"] += len(batch)
        self.held += len(batch)
        self.buf.extend(batch)

    def measured(self, msg: Message, now: datetime) -> None:
        """The store's lease, read off a first delivery: its end less now."""
        if msg.due_at is not None:
            self.lease_ms = max(1, (msg.due_at - now) // timedelta(milliseconds=1))

    def beat_s(self) -> Optional[float]:
        """Seconds between renewals (None while the lease is unknown)."""
        if self.heartbeat_ms is not None:
            return self.heartbeat_ms / 1000
        return None if self.lease_ms is None else max(1, self.lease_ms // 3) / 1000

    def startable(self) -> bool:
        return not self.halted and len(self.running) < self.n and bool(self.buf)

    def start(self, cancel: T, now: float) -> Job[T]:
        job: Job[T] = Job(self.buf.popleft(), cancel)
        beat = self.beat_s()
        job.next_beat = None if beat is None else now + beat
        self.running.add(job)
        self.jobs.add(job)
        return job

    def returned(self, job: Job[T]) -> None:
        job.over = True
        self.running.discard(job)

    def end(self, job: Job[T]) -> bool:
        """Once per job: its claim no longer counts (True the first time)."""
        if job.ended:
            return False
        job.ended = True
        self.jobs.discard(job)
        self.held -= 1
        return True

    def stall(self, job: Job[T]) -> bool:
        """The delivery is no longer ours: True the first time (count it,
        tell the handler, emit 'stalled')."""
        if job.stalled:
            return False
        job.stalled = True
        self.c["stalled"] += 1
        return True

    def to_release(self) -> List[Job[T]]:
        """Stop's deadline: the jobs whose handlers still run, taken out of
        ``running`` (a stalled one ends here: nothing to give back)."""
        out: List[Job[T]] = []
        for job in list(self.running):
            self.running.discard(job)
            if job.stalled:
                self.end(job)
            else:
                job.released = True
                out.append(job)
        return out

    def handed_back(self, e: Optional[BaseException]) -> Optional[str]:
        """Counts a give-back's answer: None (released), 'stalled' (its lease
        ran out meanwhile) or 'error' (reported)."""
        if e is None:
            self.c["released"] += 1
            return None
        if isinstance(e, StaleToken):
            self.c["stalled"] += 1
            return "stalled"
        return "error"

    def finished(self, outcome: Outcome) -> None:
        self.c[{"ok": "completed", "snooze": "snoozed", "fail": "failed"}[outcome]] += 1


class Hooks:
    """``on`` and ``off`` of both workers (a hook list is copied before it is
    called, so adding or removing one from any thread is safe)."""

    _core: Core[Any]

    @overload
    def on(self, event: Literal["completed"], callback: CompletedHook) -> CompletedHook: ...

    @overload
    def on(self, event: Literal["failed"], callback: FailedHook) -> FailedHook: ...

    @overload
    def on(self, event: Literal["stalled"], callback: StalledHook) -> StalledHook: ...

    @overload
    def on(self, event: Literal["error"], callback: ErrorHook) -> ErrorHook: ...

    def on(self, event: Event, callback: Callable[..., object]) -> Callable[..., object]:
        """Calls ``callback`` on ``event``: ``"completed"(msg, result)``,
        ``"failed"(msg, exc)``, ``"stalled"(msg)``, ``"error"(exc, msg or
        None)`` (on the worker's threads; in bitt.aio on the loop, a
        coroutine function awaited). Returns ``callback``."""
        self._core.on(event, callback)
        return callback

    def off(self, event: Event, callback: Callable[..., object]) -> None:
        """Removes a callback ``on`` (or the constructor) added; nothing when
        it is not there."""
        self._core.off(event, callback)


def take_acks(pending: "Deque[Tuple[Message, T]]") -> List[Tuple[Message, T]]:
    """The next ack_many's share of the acks waiting (at most DEQUEUE_MAX)."""
    out: List[Tuple[Message, T]] = []
    while pending and len(out) < DEQUEUE_MAX:
        out.append(pending.popleft())
    return out
