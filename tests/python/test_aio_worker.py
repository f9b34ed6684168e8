"""bitt.aio.Worker (issue 23 item 8), on asyncio: the same outcomes, bounds,
leases, stalls and stop rules as bitt.Worker (test_worker.py), with an async
handler told by its task's cancellation. See worker_support.py for how time
is handled (a manual clock; no sleep is a synchronisation)."""
from __future__ import annotations

import asyncio
import functools
import logging

import pytest

import bitt
import bitt.aio
from worker_support import BACKENDS, GUARD, LONG, T0, auntil, fresh_url

ZERO = bitt.WorkerCounters(0, 0, 0, 0, 0, 0, 0)


def aio_test(fn):
    """Runs an async test in a loop of its own, under a hang guard."""
    @functools.wraps(fn)
    def run(*a, **k):
        async def guarded():
            return await asyncio.wait_for(fn(*a, **k), GUARD * 2)
        return asyncio.run(guarded())
    return run


@pytest.fixture(params=BACKENDS)
def url(request, tmp_path):
    return fresh_url(request.param, tmp_path)


async def opened(url):
    s = await bitt.aio.open(url)
    await s.clock.set_manual(T0)
    return s


class Errors(list):
    def __call__(self, e, msg=None):
        self.append(e)


@aio_test
async def test_options_and_store_checks():
    async with await bitt.aio.open("memory:") as s:
        async def h(m):
            return None
        with pytest.raises(TypeError, match="concurency"):
            bitt.aio.Worker(s, "t", h, concurency=2)  # type: ignore[call-arg]
        with pytest.raises(bitt.InvalidArgument, match="concurrency: 0 is not a positive"):
            bitt.aio.Worker(s, "t", h, concurrency=0)
        with pytest.raises(bitt.InvalidArgument, match="wait: 0 s is not positive"):
            bitt.aio.Worker(s, "t", h, wait=0)
        with pytest.raises(TypeError, match=r"store: Store is not a bitt.aio.Store \(a bitt"):
            bitt.aio.Worker(s.sync, "t", h)  # type: ignore[arg-type]
        with bitt.open("memory:") as sync:
            with pytest.raises(TypeError, match=r"store: Store is not a bitt.Store \(bitt.aio"):
                bitt.Worker(s, "t", lambda m, t: None)  # type: ignore[arg-type]
            del sync
        assert bitt.aio.Snooze is bitt.Snooze
        w = bitt.aio.Worker(s, "t", h)
        with pytest.raises(bitt.InvalidArgument, match="timeout"):
            await w.stop(-1)
        assert await w.stop() == ZERO
        assert await w.stop(0) == ZERO


def test_outside_a_running_loop_is_refused():
    with bitt.open("memory:") as sync:
        async def h(m):
            return None
        with pytest.raises(RuntimeError):
            bitt.aio.Worker(bitt.aio.Store(sync), "t", h)


@aio_test
async def test_a_bad_topic_stops_the_worker():
    async with await bitt.aio.open("memory:") as s:
        errs = Errors()

        async def h(m):
            return None
        w = bitt.aio.Worker(s, b"", h, on_error=errs)
        await auntil(lambda: len(errs) == 1, "the error")
        assert isinstance(errs[0], bitt.InvalidArgument)
        assert (await w.stop()).claimed == 0


@aio_test
async def test_outcomes_ack_nack_snooze(url):
    s = await opened(url)
    q = s.queue
    for i in range(3):
        await q.enqueue("ok", i)
    nid = await q.enqueue("bad", "job", max_attempts=2)
    await q.enqueue("zz", "job", max_attempts=1)
    done, failed, tries, errs = [], [], [], Errors()

    async def ok(m):
        await asyncio.sleep(0)
        return m.value * 10

    async def bad(m):
        tries.append((m.attempts, m.last_error))
        raise ValueError(f"boom {m.attempts}")

    def zz(m):  # a plain function's result is taken as it is
        tries.append(("zz", m.attempts))
        if len([t for t in tries if t[0] == "zz"]) == 1:
            raise bitt.Snooze(5)
        if len([t for t in tries if t[0] == "zz"]) == 2:
            return bitt.Snooze()
        return "zz done"

    async def on_failed(m, e):  # a coroutine hook is awaited
        failed.append((m.id, str(e)))
    w1 = bitt.aio.Worker(s, "ok", ok, concurrency=2, wait=0.1, on_error=errs,
                         on_completed=lambda m, r: done.append(r))
    w2 = bitt.aio.Worker(s, "bad", bad, wait=0.1, on_error=errs, on_failed=on_failed)
    w3 = bitt.aio.Worker(s, "zz", zz, wait=0.1, on_error=errs)  # type: ignore[arg-type]
    await auntil(lambda: len(done) == 3, "three completed")
    assert sorted(done) == [0, 10, 20]
    await auntil(lambda: len(failed) == 1, "the first failure")
    st = await q.stats("bad")
    assert (st.delayed, st.processing) == (1, 0)
    await auntil(lambda: w3.counters.snoozed == 1, "the first snooze")
    await auntil(async_eq(lambda: q.stats("zz"), "delayed", 1), "delayed by 5 s")
    await s.clock.advance(400)  # past the backoff, and the snooze
    await auntil(lambda: len(failed) == 2, "the second failure")
    await auntil(async_eq(lambda: q.stats("bad"), "dead", 1), "the dead letter")
    await auntil(lambda: w3.counters.completed == 1, "zz completed")
    assert [t for t in tries if t[0] != "zz"] == [(1, None), (2, "boom 1")]
    assert [t for t in tries if t[0] == "zz"] == [("zz", 1)] * 3  # no attempt used
    assert failed == [(nid, "boom 1"), (nid, "boom 2")]
    c1, c2, c3 = await asyncio.gather(w1.stop(), w2.stop(), w3.stop())
    assert (c1.claimed, c1.completed, c2.claimed, c2.failed) == (3, 3, 2, 2)
    assert (c3.claimed, c3.snoozed, c3.completed) == (3, 2, 1)
    assert errs == []
    await s.close()


def async_eq(call, field, want):
    async def pred():
        return getattr(await call(), field) == want
    return pred


@aio_test
async def test_concurrency_and_prefetch_and_stop_gives_back_unseen(url):
    s = await opened(url)
    for i in range(10):
        await s.queue.enqueue("pre", i)
    gates, started, errs = [], [], Errors()
    state = {"now": 0, "most": 0}

    async def h(m):
        state["now"] += 1
        state["most"] = max(state["most"], state["now"])
        started.append(m.value)
        g = asyncio.get_running_loop().create_future()
        gates.append(g)
        try:
            return await g
        finally:
            state["now"] -= 1
    w = bitt.aio.Worker(s, "pre", h, concurrency=2, prefetch=3, lease=LONG, wait=0.1,
                        on_error=errs)
    await auntil(lambda: len(gates) == 2 and w.counters.claimed == 5, "2 running, 3 held")
    assert (await s.queue.stats("pre")).processing == 5
    gates[0].set_result("a")
    await auntil(lambda: w.counters.completed == 1 and len(gates) == 3, "the next one")
    await auntil(lambda: w.counters.claimed == 6, "one more claimed: held at n + p")
    assert w.counters.running == 2 and state["most"] == 2
    stopping = asyncio.ensure_future(w.stop())
    await auntil(async_eq(lambda: s.queue.stats("pre"), "pending", 7), "prefetched given back")
    assert (await s.queue.stats("pre")).processing == 2
    gates[1].set_result("b")
    gates[2].set_result("c")
    c = await stopping
    assert (c.claimed, c.completed, c.released, c.running) == (6, 3, 3, 0)
    assert state["most"] == 2
    rest = await s.queue.dequeue("pre", limit=10, lease=LONG)
    assert [m.attempts for m in rest] == [1] * 7
    assert not any(m.value in started for m in rest)
    assert errs == []
    await s.close()


@aio_test
async def test_heartbeat_then_stall_cancels_the_handler(url):
    s = await opened(url)
    await s.queue.enqueue("beat", "job")
    s.queue = q = CountingQueue(s.sync.queue)
    cancelled, stalled, errs = [], [], Errors()
    entered, stolen_yet = asyncio.Event(), asyncio.Event()

    async def h(m):
        entered.set()
        try:
            await asyncio.get_running_loop().create_future()  # never resolves
        except asyncio.CancelledError:
            cancelled.append(m.id)
            # Held until the test has taken the message: returning ends the job, and
            # the worker would claim the message again before the test could.
            await stolen_yet.wait()
            raise
    w = bitt.aio.Worker(s, "beat", h, lease=1, heartbeat=0.01, wait=0.1, on_error=errs,
                        on_stalled=lambda m: stalled.append(m.id))
    await entered.wait()
    # renewed past its first lease: 1.2 s later it is still the worker's
    await s.clock.advance(0.6)
    q.phase = 1
    await auntil(lambda: q.renewed[1] > 0, "a renewal after 600 ms")
    await s.clock.advance(0.6)  # 1.2 s since the claim: past the first lease
    q.phase = 2
    await auntil(lambda: q.renewed[2] > 0, "a renewal after 1200 ms")
    assert await s.queue.dequeue("beat", lease=LONG) == []
    await s.clock.advance(5)  # past the lease: the next renewal is refused
    (stolen,) = await s.queue.dequeue("beat", lease=LONG)
    stolen_yet.set()
    await auntil(lambda: len(stalled) == 1, "the stall")
    await auntil(lambda: w.counters.running == 0, "the handler cancelled")
    assert cancelled == [stolen.id] and stalled == [stolen.id]
    await s.queue.ack(stolen)  # the worker acked nothing
    c = await w.stop()
    assert (c.claimed, c.stalled, c.completed, c.failed) == (1, 1, 0, 0)
    assert errs == []
    await s.close()


class CountingQueue(bitt.aio.Queue):
    """store.queue, with its successful extends counted by a phase."""

    def __init__(self, q):
        super().__init__(q)
        self.phase = 0
        self.renewed = [0, 0, 0]

    async def extend(self, msg, lease):
        p = self.phase
        await super().extend(msg, lease)
        self.renewed[p] += 1


@aio_test
async def test_stops_deadline_releases_a_stuck_handler(url):
    s = await opened(url)
    await s.queue.enqueue("deadline", "job")
    entered = asyncio.Event()
    seen = []

    async def h(m):
        entered.set()
        try:
            await asyncio.get_running_loop().create_future()
        except asyncio.CancelledError:
            seen.append("cancelled")
            return "ignored"  # swallowed: the result is ignored all the same
    errs = Errors()
    async with bitt.aio.Worker(s, "deadline", h, lease=LONG, wait=0.1, on_error=errs) as w:
        await entered.wait()
        c = await w.stop(timeout=0.001)
    assert (c.claimed, c.released, c.completed, c.failed, c.running) == (1, 1, 0, 0, 0)
    assert seen == ["cancelled"]
    (again,) = await s.queue.dequeue("deadline", lease=LONG)
    assert (again.attempts, again.last_error) == (1, None)
    await s.queue.ack(again)
    assert w.counters == bitt.WorkerCounters(1, 0, 0, 0, 0, 1, 0)
    assert errs == []
    await s.close()


class FlakyQueue(bitt.aio.Queue):
    def __init__(self, q, fails):
        super().__init__(q)
        self.fails = list(fails)

    async def dequeue(self, *a, **k):
        if self.fails:
            raise self.fails.pop(0)
        return await super().dequeue(*a, **k)


@aio_test
async def test_store_errors_backoff_and_permanent_stop():
    s = await opened("memory:")
    s.queue = FlakyQueue(s.sync.queue, [bitt.BackendError(-7, "connection lost")])
    await s.queue.enqueue("e", "x")
    seen = []

    async def h(m):
        return "ok"

    async def on_error(e, m):
        seen.append(e.message)
    w = bitt.aio.Worker(s, "e", h, wait=0.1, on_error=on_error)
    await auntil(lambda: w.counters.completed == 1, "completed after the retry")
    assert seen == ["connection lost"]
    await w.stop()
    s.queue = FlakyQueue(s.sync.queue, [bitt.Unsupported(-13, "nope")])
    w = bitt.aio.Worker(s, "e", h, wait=0.1, on_error=on_error)
    await auntil(lambda: "stopped" in repr(w), "stopped by a permanent error")
    assert seen == ["connection lost", "nope"]
    assert await w.stop() == ZERO
    await s.close()


@aio_test
async def test_the_error_log_and_store_close_stops_at_once(tmp_path, caplog):
    s = await opened(f"sqlite:{tmp_path}/c.db")
    s.queue = FlakyQueue(s.sync.queue, [bitt.Unsupported(-13, "nope")])
    with caplog.at_level(logging.ERROR, logger="bitt.worker"):
        w = bitt.aio.Worker(s, "c", lambda m: asyncio.sleep(0))
        await auntil(lambda: "stopped" in repr(w), "stopped by a permanent error")
    assert any("nope" in r.getMessage() for r in caplog.records)
    s.queue = bitt.aio.Queue(s.sync.queue)
    await s.queue.enqueue("c", "job")
    entered = asyncio.Event()

    async def stuck(m):
        entered.set()
        await asyncio.get_running_loop().create_future()
    w = bitt.aio.Worker(s, "c", stuck, heartbeat=0.01, wait=0.1)
    await entered.wait()
    await s.close()  # the worker stops at once: the running delivery given back
    assert w.counters == bitt.WorkerCounters(1, 0, 0, 0, 0, 1, 0)
    async with await bitt.aio.open(f"sqlite:{tmp_path}/c.db") as b:
        await b.clock.set_manual(T0)
        (m,) = await b.queue.dequeue("c", lease=LONG)
        assert m.attempts == 1


@aio_test
async def test_a_handler_may_stop_its_own_worker():
    async with await bitt.aio.open("memory:") as s:
        holder = {}

        async def h(m):
            holder["c"] = await holder["w"].stop()  # does not wait on itself
            return "ok"
        holder["w"] = w = bitt.aio.Worker(s, "self", h, wait=0.1)
        await s.queue.enqueue("self", 1)
        await auntil(lambda: "stopped" in repr(w), "stopped by its handler")
        assert holder["c"].claimed == 1 and w.counters.completed == 1
