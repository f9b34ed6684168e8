"""bitt.aio.Worker: bitt.Worker for asyncio. An async handler per message,
``concurrency`` tasks at once, on the store's coroutines; a stalled or
released handler is told by its task's cancellation. The rules shared with
the thread worker are in _worker_core.py."""
from __future__ import annotations

import asyncio
import inspect
from collections import deque
from datetime import timedelta
from types import TracebackType
from typing import (TYPE_CHECKING, Any, Awaitable, Callable, Deque, Dict, List, Optional, Tuple,
                    Type)

from ._errors import StaleToken, UsageError, bad_type
from ._types import Message, Name
from ._units import Duration
from ._worker_core import (CompletedHook, Core, ErrorHook, Event, FailedHook, Hooks,
                           StalledHook, Job, Outcome, RESULT_REFUSED, Snooze, WorkerCounters,
                           duration_of, error_text, is_permanent, next_backoff, outcome_of,
                           stored_result, take_acks)

if TYPE_CHECKING:
    from .aio import Store

AsyncHandler = Callable[[Message], Awaitable[object]]
"""An asyncio worker's handler: ``await handler(message)``."""
_stale = "ack: the delivery's lease ended or moved on (stale token)"


class _Acks:
    """Group commit of acks: those asked for in one loop turn, or while an
    ack_many is in flight, go in the next one (each told its own outcome)."""

    def __init__(self, store: Store, topic: Name) -> None:
        self._q = store.queue
        self._topic = topic
        self._pending: Deque[Tuple[Message, asyncio.Future[None]]] = deque()
        self._busy = False
        self._drainer: Optional[asyncio.Task[None]] = None

    async def ack(self, msg: Message) -> None:
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((msg, fut))
        if not self._busy:
            self._busy = True
            self._drainer = asyncio.ensure_future(self._drain())  # kept: tasks are held weakly
        await fut

    async def _drain(self) -> None:
        try:
            while self._pending:
                batch = take_acks(self._pending)
                try:
                    oks = await self._q.ack_many(self._topic, [m for m, _ in batch])
                except BaseException as e:  # noqa: BLE001 - each ack it carried fails with it
                    for _, f in batch:
                        if not f.done():
                            f.set_exception(e if isinstance(e, Exception) else UsageError(
                                -12, "the worker's acks were cancelled"))
                    if not isinstance(e, Exception):
                        raise
                    continue
                for (_, f), ok in zip(batch, oks):
                    if not f.done():
                        if ok:
                            f.set_result(None)
                        else:
                            f.set_exception(StaleToken(-14, _stale))
        finally:
            self._busy = False


class Worker(Hooks):
    """Runs ``await handler(message)`` on the messages of ``topic``,
    ``concurrency`` at a time, on a ``bitt.aio`` store; starts at once (in a
    running event loop). Options and hooks as ``bitt.Worker``'s (a hook may
    be a coroutine function). ``await worker.stop(timeout)``, or ``async
    with``."""

    def __init__(self, store: Store, topic: Name, handler: AsyncHandler, *,
                 concurrency: Optional[int] = None, prefetch: Optional[int] = None,
                 lease: Optional[Duration] = None, heartbeat: Optional[Duration] = None,
                 wait: Optional[Duration] = None,
                 on_completed: Optional[CompletedHook] = None,
                 on_failed: Optional[FailedHook] = None,
                 on_stalled: Optional[StalledHook] = None,
                 on_error: Optional[ErrorHook] = None) -> None:
        from .aio import Store as _Store
        if not isinstance(store, _Store):
            hint = (" (a bitt.Store's worker is bitt.Worker)"
                    if type(store).__module__ == "bitt" else "")
            raise bad_type("Worker: store", store, "a bitt.aio.Store" + hint)
        self._core: Core[asyncio.Task[object]] = Core(
            topic, handler, concurrency, prefetch, lease, heartbeat, wait,
            {"completed": on_completed, "failed": on_failed, "stalled": on_stalled,
             "error": on_error})
        self.topic: Name = self._core.topic
        self._store = store
        self._handler = handler
        self._acks = _Acks(store, self.topic)
        self._lp = asyncio.get_running_loop()  # RuntimeError outside a running loop
        self._changed = asyncio.Event()  # room, a job's end, halting
        self._deq: Optional[asyncio.Future[List[Message]]] = None
        self._beats: Dict[Job[asyncio.Task[object]], asyncio.Task[None]] = {}
        self._tasks: "set[asyncio.Task[Any]]" = set()  # kept: the loop holds tasks weakly
        self._deadlines: List[asyncio.TimerHandle] = []
        self._stopping: Optional[asyncio.Task[WorkerCounters]] = None
        store._workers.add(self)  # store.close() stops it (at once)
        self._loop_task = self._spawn(self._run())

    # ---- the public face ----
    @property
    def counters(self) -> WorkerCounters:
        """A snapshot: claimed, completed, failed, snoozed, stalled, released, running."""
        return self._core.counters()

    async def stop(self, timeout: Optional[Duration] = None) -> WorkerCounters:
        """As ``bitt.Worker.stop``: stops claiming, gives back the prefetched
        messages, waits for the running handlers; after ``timeout`` seconds
        those still running are given back and their tasks cancelled. Gives
        the counters; every call awaits the same stop."""
        limit = duration_of(timeout, "timeout", 0)
        self._begin_stop()
        if limit is not None and not self._core.done:
            self._deadlines.append(self._lp.call_later(limit / 1000, self._release_running))
        assert self._stopping is not None
        me = asyncio.current_task()
        if me in self._tasks or me is self._stopping or any(
                me is j.cancel for j in self._core.running):
            return self._core.counters()  # a handler or hook: no waiting on itself
        return await asyncio.shield(self._stopping)

    async def __aenter__(self) -> Worker:
        return self

    async def __aexit__(self, et: Optional[Type[BaseException]], ev: Optional[BaseException],
                        tb: Optional[TracebackType]) -> None:
        await self.stop()

    def __repr__(self) -> str:
        state = "stopped" if self._core.done else "stopping" if self._core.halted else "running"
        return f"<bitt.aio.Worker topic={self.topic!r} {state} {self.counters}>"

    def _spawn(self, coro: Awaitable[Any]) -> asyncio.Task[Any]:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)
        return t

    def _wake(self) -> None:
        self._changed.set()

    async def _changes(self) -> None:
        self._changed.clear()
        await self._changed.wait()

    # ---- the claim loop ----
    async def _run(self) -> None:
        core, q = self._core, self._store.queue
        backoff = 0
        while not core.halted:
            room = core.room()
            if room <= 0:
                await self._changes()
                continue
            lease = None if core.lease_ms is None else timedelta(milliseconds=core.lease_ms)
            self._deq = asyncio.ensure_future(
                q.dequeue(self.topic, limit=room, lease=lease,
                          wait=timedelta(milliseconds=core.wait_ms)))
            try:
                batch = await self._deq
            except asyncio.CancelledError:
                if core.halted:  # stop() cancelled the dequeue: it leased nothing
                    return
                raise
            except Exception as e:  # noqa: BLE001 - every failure is reported
                if core.halted:
                    return
                if not (isinstance(e, UsageError) and self._store.sync.closed):
                    await self._report(e, None)
                if is_permanent(e):
                    self._begin_stop()
                    return
                backoff = next_backoff(backoff)
                try:
                    await asyncio.wait_for(self._changes(), backoff / 1000)
                except asyncio.TimeoutError:
                    pass
                continue
            finally:
                self._deq = None
            backoff = 0
            if not batch:
                continue
            if core.lease_ms is None:  # before any starts: its heartbeat needs it
                await self._measure(batch[0])  # (stop cancels only the dequeue, not this)
            core.claimed(batch)
            self._pump()

    async def _measure(self, msg: Message) -> None:
        try:
            self._core.measured(msg, await self._store.clock.now())
        except Exception as e:  # noqa: BLE001 - measured again with the next batch
            await self._report(e, None)

    # ---- handlers ----
    def _pump(self) -> None:
        core = self._core
        while core.startable():
            task = asyncio.ensure_future(self._call(core.buf[0]))
            job = core.start(task, self._lp.time())
            self._spawn(self._work(job))
            self._beats[job] = self._spawn(self._beat(job))

    async def _call(self, msg: Message) -> object:
        r = self._handler(msg)
        return await r if inspect.isawaitable(r) else r

    async def _work(self, job: Job[asyncio.Task[object]]) -> None:
        value: object = None
        exc: Optional[BaseException] = None
        try:
            value = await job.cancel
        except asyncio.CancelledError:
            if not (job.stalled or job.released):
                raise  # not the worker's doing: the loop is going away
        except Exception as e:  # noqa: BLE001 - the handler's failure: a nack
            exc = e
        kind, result = outcome_of(value, exc)
        self._core.returned(job)
        await self._quiet(job)  # a renewal in flight: its answer may be the stall
        self._pump()  # the next handler starts while this result is written
        if job.released:  # given back at stop's deadline, which ends it
            return
        if not job.stalled:
            await self._finish(job, kind, result)
        self._beats.pop(job, None)
        self._core.end(job)
        self._wake()

    async def _finish(self, job: Job[asyncio.Task[object]], kind: Outcome, result: object) -> None:
        msg, q = job.msg, self._store.queue
        try:
            keep = stored_result(result) if kind == "ok" else None
            if keep is not None:
                try:  # one ack of its own: ack_many carries no results
                    await q.ack(msg, result=keep)
                except RESULT_REFUSED as e:
                    kind, result = "fail", e
                    await q.nack(msg, error_text(e))
            elif kind == "ok":
                await self._acks.ack(msg)
            elif kind == "snooze":
                assert isinstance(result, Snooze)
                await q.snooze(msg.topic, msg.id, msg.token or "",
                               timedelta(milliseconds=result.delay_ms))
            else:
                assert isinstance(result, BaseException)
                await q.nack(msg, error_text(result))  # the store's backoff
        except StaleToken as e:
            await self._stall(job, e)
            return
        except Exception as e:  # noqa: BLE001 - left leased: it comes back when its lease ends
            await self._report(e, msg)
            return
        self._core.finished(kind)
        if kind == "ok":
            await self._emit("completed", msg, result)
        elif kind == "fail":
            await self._emit("failed", msg, result)

    async def _stall(self, job: Job[asyncio.Task[object]], e: StaleToken) -> None:
        if self._core.stall(job):
            job.cancel.cancel()
            await self._emit("stalled", job.msg)

    # ---- leases ----
    async def _quiet(self, job: Job[asyncio.Task[object]]) -> None:
        """The job's heartbeat ended: at once while it sleeps, else once the
        renewal in flight has answered (a beat only renews a beating job)."""
        beat = self._beats.get(job)
        if beat is None:
            return
        if job.extending:
            await asyncio.shield(beat)
        else:
            beat.cancel()

    async def _beat(self, job: Job[asyncio.Task[object]]) -> None:
        """Renews the job's lease every heartbeat while its handler runs."""
        core = self._core
        while True:
            every = core.beat_s()
            if every is None:
                return
            await asyncio.sleep(every)
            if not job.beating:
                return
            job.extending = True
            try:
                await self._store.queue.extend(job.msg,
                                               timedelta(milliseconds=core.lease_ms or 1))
            except StaleToken as e:
                await self._stall(job, e)
            except Exception as e:  # noqa: BLE001 - tried again at the next heartbeat
                await self._report(e, job.msg)
            finally:
                job.extending = False
            if not job.beating:
                return

    # ---- stopping ----
    def _begin_stop(self) -> None:
        self._core.halted = True
        if self._deq is not None:
            self._deq.cancel()  # its token fires: the wait ends, nothing leased
        self._wake()
        if self._stopping is None:
            self._stopping = asyncio.ensure_future(self._stop_run())

    async def _stop_run(self) -> WorkerCounters:
        core = self._core
        try:
            await self._loop_task
        except BaseException:  # noqa: BLE001 - its errors were reported
            pass
        left = list(core.buf)
        core.buf.clear()
        await asyncio.gather(*(self._hand_back(m) for m in left))
        core.held -= len(left)
        while core.jobs:
            await self._changes()
        core.done = True
        for t in self._deadlines:
            t.cancel()
        self._store._workers.discard(self)
        return core.counters()

    def _release_running(self) -> None:
        """stop()'s deadline: the handlers still running are given back."""
        for job in self._core.to_release():
            job.cancel.cancel()
            self._spawn(self._release(job))
        self._wake()

    async def _release(self, job: Job[asyncio.Task[object]]) -> None:
        await self._quiet(job)
        await self._hand_back(job.msg)
        self._beats.pop(job, None)
        self._core.end(job)
        self._wake()

    async def _hand_back(self, msg: Message) -> None:
        err: Optional[BaseException] = None
        try:
            await self._store.queue.snooze(msg.topic, msg.id, msg.token or "", 0)
        except Exception as e:  # noqa: BLE001 - counted below
            err = e
        what = self._core.handed_back(err)
        if what == "stalled":
            await self._emit("stalled", msg)
        elif what == "error" and err is not None:
            await self._report(err, msg)

    # ---- hooks ----
    async def _emit(self, event: Event, *args: object) -> None:
        for fn in list(self._core.hooks[event]):
            try:
                r = fn(*args)
                if inspect.isawaitable(r):
                    await r
            except Exception as e:  # noqa: BLE001 - never ends the loop
                await self._report(e, None)

    async def _report(self, e: BaseException, msg: Optional[Message]) -> None:
        fns = list(self._core.hooks["error"])
        if not fns:
            self._core.log_error(e, msg)
        for fn in fns:
            try:
                r = fn(e, msg)
                if inspect.isawaitable(r):
                    await r
            except Exception as e2:  # noqa: BLE001 - an error hook's own error: logged
                self._core.log_error(e2, msg)
