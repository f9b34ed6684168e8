"""Cancellation (issue 22, defect 2) and asyncio parity (defect 6): a
cancelled wait ends at once, leases nothing and steals nothing; leaving a
consume loop gives back what it prefetched; subscriptions and consumers
iterate with async for. Bounds on joins and wait_for are hang guards only:
no result here depends on how long anything took."""
from __future__ import annotations

import asyncio
import gc
import os
import threading
import uuid

import pytest

import bitt
import bitt.aio

GUARD = 120  # seconds: only ever reached by a hang
LONG = 600   # a wait that must be ended by its cancellation, never by its time


BACKENDS = ["memory", "sqlite"] + [b for b, env in (("postgres", "BITT_TEST_POSTGRES_URL"),
                                                     ("redis", "BITT_TEST_REDIS_URL"))
                                   if os.environ.get(env)]


def fresh_url(backend, tmp_path):
    """A URL of an empty store of the backend, its own for the test."""
    if backend == "memory":
        return "memory:"
    if backend == "sqlite":
        return f"sqlite:{tmp_path}/c.db"
    base = os.environ["BITT_TEST_POSTGRES_URL" if backend == "postgres" else "BITT_TEST_REDIS_URL"]
    opt = "schema" if backend == "postgres" else "prefix"
    return f"{base}{'&' if '?' in base else '?'}{opt}=py_cancel_{uuid.uuid4().hex[:12]}"


@pytest.fixture(params=BACKENDS)
def url(request, tmp_path):
    return fresh_url(request.param, tmp_path)


@pytest.fixture
def store(url):
    s = bitt.open(url)
    yield s
    s.close()


def in_thread(fn):
    """Runs fn in a thread; .result() joins (hang guard) and gives its outcome."""
    out = {}

    def run():
        try:
            out["value"] = fn()
        except BaseException as e:  # noqa: BLE001
            out["error"] = e

    t = threading.Thread(target=run)
    t.start()

    class R:
        thread = t

        @staticmethod
        def result():
            t.join(GUARD)
            assert not t.is_alive(), "hung"
            if "error" in out:
                raise out["error"]
            return out["value"]
    return R


def test_a_fired_token_ends_a_dequeue_and_leases_nothing(store):
    tok = bitt.CancelToken()
    tok.cancel()
    assert tok.cancelled
    store.queue.enqueue("t", b"x")
    with pytest.raises(bitt.Cancelled) as ei:
        store.queue.dequeue("t", wait=LONG, cancel=tok)
    assert ei.value.code == -16 and ei.value.message
    assert store.queue.stats("t").processing == 0
    tok.reset()
    assert not tok.cancelled
    (m,) = store.queue.dequeue("t", cancel=tok)
    assert m.attempts == 1


def test_a_token_fired_from_another_thread_ends_a_waiting_dequeue(store):
    tok = bitt.CancelToken()
    started = threading.Event()

    def wait():
        started.set()
        return store.queue.dequeue("t", wait=LONG, cancel=tok)
    r = in_thread(wait)
    started.wait()
    tok.cancel()
    with pytest.raises(bitt.Cancelled):
        r.result()
    # the wait is over: what comes next goes to the next dequeue, first attempt
    store.queue.enqueue("t", b"next", max_attempts=1)
    (m,) = store.queue.dequeue("t")
    assert m.payload == b"next" and m.attempts == 1


def test_subscription_next_takes_a_token_and_close_ends_iteration(store):
    sub = store.pubsub.subscribe("ch")
    tok = bitt.CancelToken()
    tok.cancel()
    with pytest.raises(bitt.Cancelled):
        sub.next(LONG, cancel=tok)
    store.pubsub.publish("ch", b"kept")
    assert sub.next(LONG).payload == b"kept"  # nothing was lost to the cancel
    started = threading.Event()

    def iterate():
        started.set()
        return [m.payload for m in sub]
    r = in_thread(iterate)
    started.wait()
    sub.close()
    assert r.result() == []
    assert sub.closed


def test_leaving_a_consume_loop_gives_back_what_it_prefetched(store):
    for i in range(5):
        store.queue.enqueue("jobs", i, max_attempts=1)
    got = []
    for m in store.queue.consume("jobs", prefetch=4, lease=LONG):
        got.append(m.value)
        store.queue.ack(m)
        if len(got) == 2:
            break
    # the loop is left: the two prefetched but not handed out are back at once
    assert got == [0, 1]
    st = store.queue.stats("jobs")
    assert (st.pending, st.processing, st.dead) == (3, 0, 0)
    rest = store.queue.dequeue("jobs", limit=10)
    assert sorted(m.value for m in rest) == [2, 3, 4]  # claim order: oldest due first
    assert all(m.attempts == 1 for m in rest)  # a give-back uses no attempt


def test_consume_ends_on_close_from_another_thread_and_on_its_token(store):
    c = store.queue.consume("idle")
    started = threading.Event()

    def loop():
        started.set()
        return list(c)
    r = in_thread(loop)
    started.wait()
    c.close()
    assert r.result() == []
    tok = bitt.CancelToken()
    with store.queue.consume("idle", cancel=tok) as c2:
        r = in_thread(lambda: list(c2))
        tok.cancel()
        with pytest.raises(bitt.Cancelled):
            r.result()
    # store.close ends a loop that waits
    c3 = store.queue.consume("idle")
    started.clear()
    r = in_thread(lambda: (started.set(), list(c3))[1])
    started.wait()
    store.close()
    assert r.result() == []


def test_cancel_must_be_a_token(store):
    with pytest.raises(TypeError, match="cancel: str is not a bitt.CancelToken"):
        store.queue.dequeue("t", cancel="now")
    assert "armed" in repr(bitt.CancelToken())


# ---- asyncio ------------------------------------------------------------------------
def arun(coro):
    async def guarded():
        return await asyncio.wait_for(coro, GUARD)
    return asyncio.run(guarded())


def test_aio_wait_for_a_dequeue_cancels_it_and_steals_nothing(url):
    async def main():
        s = await bitt.aio.open(url)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(s.queue.dequeue("t", wait=LONG, lease=0.5), 0.2)
        # the wait is over: nothing waits on to lease the next message
        await s.queue.enqueue("t", b"m", max_attempts=1)
        (m,) = await s.queue.dequeue("t")
        assert m.attempts == 1 and m.payload == b"m"
        assert (await s.queue.stats("t")).dead == 0
        # and close() has no call in flight to wait for (it would wait LONG)
        await asyncio.wait_for(s.close(), GUARD)
    arun(main())


def test_aio_cancelled_task_gives_back_and_reraises(url):
    async def main():
        async with await bitt.aio.open(url) as s:
            before = set(threading.enumerate())
            task = asyncio.ensure_future(s.queue.dequeue("t", wait=LONG))
            await asyncio.sleep(0)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # the wait's thread is gone once the cancelled await returned
            assert not [t for t in set(threading.enumerate()) - before
                        if t.name == "bitt-aio-wait"]
            await s.queue.enqueue("t", b"x")
            assert (await s.queue.stats("t")).pending == 1
    arun(main())


def test_aio_subscription_next_cancelled_loses_nothing_and_async_for_works(url):
    async def main():
        async with await bitt.aio.open(url) as s:
            sub = await s.pubsub.subscribe("ch")
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(sub.next(LONG), 0.05)
            await s.pubsub.publish("ch", b"one")
            await s.pubsub.publish("ch", "two")
            got = []
            async for m in sub:
                got.append(m.payload)
                if len(got) == 2:
                    break
            assert got == [b"one", b"two"]
            waiting = asyncio.ensure_future(sub.__anext__())
            await asyncio.sleep(0)
            await sub.aclose()  # ends the iteration that waits
            with pytest.raises(StopAsyncIteration):
                await waiting
    arun(main())


def test_aio_consume_iterates_and_gives_back_on_exit(url):
    async def main():
        async with await bitt.aio.open(url) as s:
            for i in range(4):
                await s.queue.enqueue("jobs", i)
            got = []
            async with s.queue.consume("jobs", prefetch=3, lease=LONG) as jobs:
                async for m in jobs:
                    got.append(m.value)
                    await s.queue.ack(m)
                    if len(got) == 2:
                        break
            st = await s.queue.stats("jobs")
            assert got == [0, 1] and (st.pending, st.processing) == (2, 0)
            # a plain break: the dropped consumer gives back at once
            async for m in s.queue.consume("jobs", prefetch=2):
                await s.queue.ack(m)
                break
            gc.collect()
            st = await s.queue.stats("jobs")
            assert (st.pending, st.processing) == (1, 0)
            # a consume loop whose task is cancelled leases nothing
            async def drain(c):
                async for m in c:
                    await s.queue.ack(m)
            c = s.queue.consume("empty", prefetch=5)
            task = asyncio.ensure_future(drain(c))
            await asyncio.sleep(0.01)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            await s.queue.enqueue("empty", b"x")
            assert (await s.queue.stats("empty")).pending == 1
            await c.aclose()
    arun(main())


def test_a_token_can_be_waited_on():
    tok = bitt.CancelToken()
    assert tok.wait(0) is False
    r = in_thread(lambda: tok.wait(GUARD))
    tok.cancel()
    assert r.result() is True and tok.wait() is True
    tok.reset()
    assert tok.wait(0) is False and not tok.cancelled
