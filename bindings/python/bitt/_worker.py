"""bitt.Worker: runs a handler on the messages of a topic on ``concurrency``
threads. Orchestration only over the queue calls the store already has
(dequeue with a wait and a CancelToken, ack_many, nack, extend, snooze);
the rules shared with bitt.aio.Worker are in _worker_core.py."""
from __future__ import annotations

import threading
import time
from collections import deque
from datetime import timedelta
from types import TracebackType
from typing import TYPE_CHECKING, Callable, Deque, List, Optional, Tuple, Type

from ._cancel import CancelToken
from ._errors import Cancelled, StaleToken, UsageError, bad_type
from ._types import Message, Name
from ._units import Duration
from ._worker_core import (CompletedHook, Core, ErrorHook, Event, FailedHook, Hooks,
                           StalledHook, Job, Outcome, RESULT_REFUSED, Snooze, WorkerCounters,
                           duration_of, error_text, is_permanent, next_backoff, outcome_of,
                           stored_result, take_acks)

if TYPE_CHECKING:
    from . import Store

Handler = Callable[[Message, CancelToken], object]
"""A thread worker's handler: ``handler(message, cancel)``; ``cancel`` (a
``bitt.CancelToken``) fires when the delivery is no longer the worker's."""
_stale = "ack: the delivery's lease ended or moved on (stale token)"


class _Slot:
    __slots__ = ("done", "error")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.error: Optional[BaseException] = None


class _Acks:
    """Group commit of acks: the threads asking while an ack_many is in
    flight go together in the next one (each still told its own outcome)."""

    def __init__(self, store: Store, topic: Name) -> None:
        self._q = store.queue
        self._topic = topic
        self._lock = threading.Lock()
        self._pending: Deque[Tuple[Message, _Slot]] = deque()
        self._busy = False

    def ack(self, msg: Message) -> None:
        slot = _Slot()
        with self._lock:
            self._pending.append((msg, slot))
            lead = not self._busy
            self._busy = True
        if lead:  # this thread writes batches until none is left
            while True:
                with self._lock:
                    batch = take_acks(self._pending)
                    if not batch:
                        self._busy = False
                        break
                self._write(batch)
        slot.done.wait()
        if slot.error is not None:
            raise slot.error

    def _write(self, batch: List[Tuple[Message, _Slot]]) -> None:
        try:
            oks = self._q.ack_many(self._topic, [m for m, _ in batch])
            errs: List[Optional[BaseException]] = [
                None if ok else StaleToken(-14, _stale) for ok in oks]
        except Exception as e:  # noqa: BLE001 - each ack it carried fails with it
            errs = [e] * len(batch)
        for (_, slot), err in zip(batch, errs):
            slot.error = err
            slot.done.set()


class Worker(Hooks):
    """Runs ``handler(message, cancel)`` on the messages of ``topic``,
    ``concurrency`` at a time on threads of its own; starts at once. See the
    README's "Worker" section. Options: ``concurrency`` (>= 1, default 1),
    ``prefetch`` (>= 0, default 0), ``lease`` and ``heartbeat`` (seconds;
    default the store's lease, and lease / 3), ``wait`` (seconds, default 1);
    hooks ``on_completed``, ``on_failed``, ``on_stalled``, ``on_error`` (as
    ``on()``, but none can miss the first messages)."""

    def __init__(self, store: Store, topic: Name, handler: Handler, *,
                 concurrency: Optional[int] = None, prefetch: Optional[int] = None,
                 lease: Optional[Duration] = None, heartbeat: Optional[Duration] = None,
                 wait: Optional[Duration] = None,
                 on_completed: Optional[CompletedHook] = None,
                 on_failed: Optional[FailedHook] = None,
                 on_stalled: Optional[StalledHook] = None,
                 on_error: Optional[ErrorHook] = None) -> None:
        from . import Store as _Store
        if not isinstance(store, _Store):
            hint = (" (bitt.aio.Worker runs on bitt.aio.open()'s store)"
                    if type(store).__module__ == "bitt.aio" else "")
            raise bad_type("Worker: store", store, "a bitt.Store" + hint)
        self._core: Core[CancelToken] = Core(
            topic, handler, concurrency, prefetch, lease, heartbeat, wait,
            {"completed": on_completed, "failed": on_failed, "stalled": on_stalled,
             "error": on_error})
        self.topic: Name = self._core.topic
        self._store = store
        self._handler = handler
        self._acks = _Acks(store, self.topic)
        self._cv = threading.Condition()
        self._stop_token = CancelToken()  # ends the dequeue in flight
        self._deadline: Optional[float] = None
        self._stopper: Optional[threading.Thread] = None
        self._finished = threading.Event()
        store._consumers.add(self)  # store.close() stops it (close())
        name = f"bitt-worker-{self.topic!r}"
        self._loop = threading.Thread(target=self._run, name=name + "-loop", daemon=True)
        threads = [self._loop, threading.Thread(target=self._beats, name=name + "-beat",
                                                daemon=True)]
        threads += [threading.Thread(target=self._handlers, name=f"{name}-{i}", daemon=True)
                    for i in range(self._core.n)]
        self._threads = frozenset(threads)
        for t in threads:
            t.start()

    # ---- the public face ----
    @property
    def counters(self) -> WorkerCounters:
        """A snapshot: claimed, completed, failed, snoozed, stalled, released, running."""
        with self._cv:
            return self._core.counters()

    def stop(self, timeout: Optional[Duration] = None) -> WorkerCounters:
        """Stops claiming (the waiting dequeue is cancelled), gives back the
        prefetched messages not started (snooze 0: no attempt used), waits
        for the running handlers; after ``timeout`` seconds (None: no limit)
        those still running are given back the same way, their tokens fired
        and their results ignored (counted as released). Gives the counters.
        Any thread may call it, more than once (the earliest timeout holds)."""
        limit = duration_of(timeout, "timeout", 0)
        with self._cv:
            if limit is not None and not self._core.done:
                at = time.monotonic() + limit / 1000
                self._deadline = at if self._deadline is None else min(self._deadline, at)
                self._cv.notify_all()
        self._begin_stop()
        me = threading.current_thread()
        if me not in self._threads and me is not self._stopper:  # a hook or handler: no waiting on itself
            self._finished.wait()
        return self.counters

    def close(self) -> None:
        """Stops at once (``stop(timeout=0)``); ``store.close()`` calls it."""
        self.stop(0)

    def __enter__(self) -> Worker:
        return self

    def __exit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = "stopped" if self._core.done else "stopping" if self._core.halted else "running"
        return f"<bitt.Worker topic={self.topic!r} {state} {self.counters}>"

    # ---- the claim loop ----
    def _run(self) -> None:
        core, q = self._core, self._store.queue
        backoff = 0
        while True:
            with self._cv:
                while not core.halted and core.room() <= 0:
                    self._cv.wait()
                if core.halted:
                    return
                room = core.room()
                lease = None if core.lease_ms is None else timedelta(milliseconds=core.lease_ms)
            try:
                batch = q.dequeue(self.topic, limit=room, lease=lease,
                                  wait=timedelta(milliseconds=core.wait_ms),
                                  cancel=self._stop_token)
            except Cancelled:
                return  # stop() fired the token
            except Exception as e:  # noqa: BLE001 - every failure is reported
                if core.halted:
                    return
                if not (isinstance(e, UsageError) and self._store.closed):
                    self._report(e, None)
                if is_permanent(e):
                    self._begin_stop()
                    return
                backoff = next_backoff(backoff)
                with self._cv:
                    self._cv.wait_for(lambda: core.halted, backoff / 1000)
                continue
            backoff = 0
            if not batch:
                continue
            if core.lease_ms is None:  # before any starts: its heartbeat needs it
                self._measure(batch[0])
            with self._cv:
                core.claimed(batch)
                self._cv.notify_all()  # the handler threads take them

    def _measure(self, msg: Message) -> None:
        try:
            now = self._store.clock.now()
        except Exception as e:  # noqa: BLE001 - measured again with the next batch
            self._report(e, None)
            return
        with self._cv:
            self._core.measured(msg, now)

    # ---- handlers ----
    def _handlers(self) -> None:
        core = self._core
        while True:
            with self._cv:
                while not core.startable():
                    if core.halted:
                        return
                    self._cv.wait()
                job = core.start(CancelToken(), time.monotonic())
                self._cv.notify_all()  # the heartbeat thread has a new job
            self._work(job)

    def _work(self, job: Job[CancelToken]) -> None:
        value: object = None
        exc: Optional[BaseException] = None
        try:
            value = self._handler(job.msg, job.cancel)
        except BaseException as e:  # noqa: BLE001 - the handler's failure (sys.exit too): a nack
            exc = e
        kind, result = outcome_of(value, exc)
        with self._cv:
            self._core.returned(job)
            while job.extending:  # its answer may be the stall
                self._cv.wait()
            if job.released:  # given back at stop's deadline, which ended it
                return
            stalled = job.stalled
        if not stalled:
            self._finish(job, kind, result)
        with self._cv:
            self._core.end(job)
            self._cv.notify_all()

    def _finish(self, job: Job[CancelToken], kind: Outcome, result: object) -> None:
        msg = job.msg
        try:
            keep = stored_result(result) if kind == "ok" else None
            if keep is not None:
                try:  # one ack of its own: ack_many carries no results
                    self._store.queue.ack(msg, result=keep)
                except RESULT_REFUSED as e:
                    kind, result = "fail", e
                    self._store.queue.nack(msg, error_text(e))
            elif kind == "ok":
                self._acks.ack(msg)
            elif kind == "snooze":
                assert isinstance(result, Snooze)
                self._store.queue.snooze(msg.topic, msg.id, msg.token or "",
                                         timedelta(milliseconds=result.delay_ms))
            else:
                assert isinstance(result, BaseException)
                self._store.queue.nack(msg, error_text(result))  # the store's backoff
        except StaleToken as e:
            self._stall(job, e)
            return
        except Exception as e:  # noqa: BLE001 - left leased: it comes back when its lease ends
            self._report(e, msg)
            return
        with self._cv:
            self._core.finished(kind)
        if kind == "ok":
            self._emit("completed", msg, result)
        elif kind == "fail":
            self._emit("failed", msg, result)

    def _stall(self, job: Job[CancelToken], e: StaleToken) -> None:
        with self._cv:
            first = self._core.stall(job)
        if first:
            job.cancel.cancel()
            self._emit("stalled", job.msg)

    # ---- leases ----
    def _beats(self) -> None:
        """Renews the leases of the running handlers, each one heartbeat after
        its last renewal."""
        core = self._core
        while True:
            with self._cv:
                if core.done:
                    return
                now = time.monotonic()
                live = [j for j in core.running
                        if j.beating and not j.extending and j.next_beat is not None]
                due = [j for j in live if j.next_beat is not None and j.next_beat <= now]
                if not due:
                    nxt = min((j.next_beat for j in live if j.next_beat is not None), default=None)
                    self._cv.wait(None if nxt is None else nxt - now)
                    continue
                for j in due:
                    j.extending = True
                lease = timedelta(milliseconds=core.lease_ms or 1)
            for j in due:
                self._extend(j, lease)

    def _extend(self, job: Job[CancelToken], lease: timedelta) -> None:
        try:
            self._store.queue.extend(job.msg, lease)
        except StaleToken as e:
            self._stall(job, e)
        except Exception as e:  # noqa: BLE001 - tried again at the next heartbeat
            self._report(e, job.msg)
        with self._cv:
            job.extending = False
            beat = self._core.beat_s()
            job.next_beat = None if beat is None else time.monotonic() + beat
            self._cv.notify_all()

    # ---- stopping ----
    def _begin_stop(self) -> None:
        with self._cv:
            self._core.halted = True
            self._cv.notify_all()
            if self._stopper is None:
                self._stopper = threading.Thread(target=self._stop_run, daemon=True,
                                                 name=f"bitt-worker-{self.topic!r}-stop")
                self._stopper.start()
        self._stop_token.cancel()

    def _stop_run(self) -> None:
        core = self._core
        self._loop.join()
        with self._cv:
            left = list(core.buf)
            core.buf.clear()
        for m in left:
            self._hand_back(m)
        with self._cv:
            core.held -= len(left)
        while True:
            with self._cv:
                if not core.jobs:
                    break
                release: List[Job[CancelToken]] = []
                if self._deadline is None or not core.running:
                    self._cv.wait()
                elif time.monotonic() < self._deadline:
                    self._cv.wait(self._deadline - time.monotonic())
                else:
                    release = core.to_release()
            for job in release:
                job.cancel.cancel()
                with self._cv:
                    while job.extending:
                        self._cv.wait()
                self._hand_back(job.msg)
                with self._cv:
                    core.end(job)
        with self._cv:
            core.done = True
            self._cv.notify_all()
        self._store._consumers.discard(self)
        self._finished.set()

    def _hand_back(self, msg: Message) -> None:
        """A claimed message not finished, given back unseen (snooze 0)."""
        err: Optional[BaseException] = None
        try:
            self._store.queue.snooze(msg.topic, msg.id, msg.token or "", 0)
        except Exception as e:  # noqa: BLE001 - counted below
            err = e
        with self._cv:
            what = self._core.handed_back(err)
        if what == "stalled":
            self._emit("stalled", msg)
        elif what == "error" and err is not None:
            self._report(err, msg)

    # ---- hooks ----
    def _emit(self, event: Event, *args: object) -> None:
        """A hook's exception goes to the error hooks; it never ends the loop."""
        with self._cv:
            fns = list(self._core.hooks[event])
        for fn in fns:
            try:
                fn(*args)
            except Exception as e:  # noqa: BLE001
                self._report(e, None)

    def _report(self, e: BaseException, msg: Optional[Message]) -> None:
        """The worker's own errors: the error hooks, else the log."""
        with self._cv:
            fns = list(self._core.hooks["error"])
        if not fns:
            self._core.log_error(e, msg)
        for fn in fns:
            try:
                fn(e, msg)
            except Exception as e2:  # noqa: BLE001 - an error hook's own error: logged
                self._core.log_error(e2, msg)

