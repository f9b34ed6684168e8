"""Python-specific behaviour: the idiomatic layer, threads, processes,
close while in use, argument types, asyncio."""
from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import tempfile
import threading
import time
from datetime import datetime, timezone

import pytest

import bitt
import bitt.aio
from bitt import raw


def test_values_table_round_trip():
    with bitt.open("memory:") as s:
        for v in [b"raw\x00", 0, -(2**63), 2**63 - 1, True, None, 1.5, "text", [1, "a"], {"a": [1]},
                  bitt.JSONInt(3)]:
            s.kv.set("k", v)
            e = s.kv.get("k")
            assert e.value == v and type(e.value) is type(v)
        s.kv.set("t", (1, 2))
        assert s.kv.get("t").value == [1, 2]
        assert s.kv.get("missing") is None
        assert s.kv.get("k").kind == bitt.KIND_JSON


def test_keys_and_list():
    with bitt.open("memory:") as s:
        for i in range(250):
            s.kv.set(("users", i), i)
        got = list(s.kv.list(prefix=("users",), limit=7))
        assert [bitt.decode_tuple(e.key) for e in got] == [("users", i) for i in range(250)]
        assert s.kv.get("é").__class__ is type(None)
        s.kv.set("é", b"x")
        assert s.kv.get("é".encode()).value == b"x"
        assert [e and e.value for e in s.kv.get_many([("users", 1), "nope"])] == [1, None]


def test_errors_and_atomic():
    with bitt.open("memory:") as s:
        s.kv.set("j", {"a": 1})
        with pytest.raises(bitt.NotACounter) as ei:
            s.kv.increment("j", 1)
        assert ei.value.code == -4 and ei.value.message
        v = s.kv.set("a", 1)
        with pytest.raises(bitt.ConflictError):
            with s.atomic() as tx:
                tx.check("a", v + 100).set("a", 2)
        assert s.kv.get("a").value == 1
        with s.atomic() as tx:
            tx.check("a", v).sum("a", 5).enqueue("t", {"x": 1}).outbox_append("o", b"e")
        assert s.kv.get("a").value == 6
        assert s.queue.dequeue("t")[0].value == {"x": 1}
        lease = s.lease.acquire("L", "me", 1)
        with pytest.raises(bitt.LeaseLostError):
            with s.atomic() as tx:
                tx.fence("L", "me", lease.epoch + 1).set("z", b"1")
        with pytest.raises(bitt.URLError):
            bitt.open("nope:")


def test_modules_smoke():
    with bitt.open("memory:") as s:
        s.clock.set_manual(datetime(2030, 1, 1, tzinfo=timezone.utc))
        mid = s.queue.enqueue("q", b"p", max_attempts=1)
        (m,) = s.queue.dequeue("q", lease=0.01)
        assert m.id == mid and m.token
        s.queue.nack(m, "boom")
        assert [d.id for d in s.queue.dead_list("q")] == [mid]
        assert s.queue.dead_retry("q") == 1
        assert s.queue.stats("q").pending == 1
        seq = s.outbox.append("st", {"e": 1})
        assert [e.id for e in s.outbox.pending("st")] == [seq]
        assert s.outbox.ack("st", [seq]) == 1
        assert s.outbox.counts("st") == bitt.OutboxCounts(pending=0, parked=0)
        assert s.budget.take("b", capacity=1, refill=1, period=1) == 0
        assert s.budget.take("b", capacity=1, refill=1, period=1) == 1.0
        s.schedule.upsert("job", 1, {"x": 1})
        assert s.schedule.claim() is None
        s.clock.advance(1)
        assert s.schedule.claim().value == {"x": 1}
        with s.pubsub.subscribe("ch") as sub:
            s.pubsub.publish("ch", b"hi")
            assert sub.next(0).payload == b"hi"
            assert sub.next(0) is None
        assert s.lease.get("nobody") is None


def test_queue_ack_many_takes_messages_or_pairs():
    with bitt.open("memory:") as s:
        for i in range(3):
            s.queue.enqueue("q", i)
        a, b, c = s.queue.dequeue("q", limit=3)
        assert s.queue.ack_many("q", [a, (b.id, b.token), (c.id, "stale")]) == [True, True, False]
        assert s.queue.ack_many("q", [a, c]) == [False, True]
        assert s.queue.ack_many("q", []) == []
        assert s.queue.stats("q").processing == 0
        with pytest.raises(bitt.InvalidArgument):
            s.queue.ack_many("q", [(1, None)])


def _server_urls(tag):
    """The PostgreSQL and Redis of the test run (when set), each with a
    schema or prefix of its own."""
    urls = []
    for env, opt in (("BITT_TEST_POSTGRES_URL", "schema"), ("BITT_TEST_REDIS_URL", "prefix")):
        base = os.environ.get(env)
        if base:
            sep = "&" if "?" in base else "?"
            urls.append(f"{base}{sep}{opt}=py_{tag}_{os.getpid()}_{int(time.time() * 1000)}")
    return urls


def test_threads_share_a_store():
    # On PostgreSQL and Redis the threads' calls run at once, each on a
    # connection of the store's pool (the GIL is released during a call).
    with tempfile.TemporaryDirectory() as d:
        for url in ["memory:", f"sqlite:{d}/t.db"] + _server_urls("thr"):
            with bitt.open(url) as s:
                def work():
                    for _ in range(300):
                        s.kv.increment("n", 1)
                ts = [threading.Thread(target=work) for _ in range(8)]
                [t.start() for t in ts]
                [t.join() for t in ts]
                assert s.kv.get("n").value == 2400


def _proc_work(path, n):
    with bitt.open(f"sqlite:{path}") as s:
        for _ in range(n):
            s.kv.increment("n", 1)


def test_processes_share_sqlite():
    with tempfile.TemporaryDirectory() as d:
        path = f"{d}/p.db"
        bitt.open(f"sqlite:{path}").close()
        ctx = mp.get_context("spawn")
        ps = [ctx.Process(target=_proc_work, args=(path, 200)) for _ in range(4)]
        [p.start() for p in ps]
        [p.join(60) for p in ps]
        assert all(p.exitcode == 0 for p in ps)
        with bitt.open(f"sqlite:{path}") as s:
            assert s.kv.get("n").value == 800


def test_close_while_another_thread_is_in_a_call():
    s = bitt.open("memory:")
    started = threading.Event()
    outcome = []

    def waiter():
        started.set()
        try:
            outcome.append(s.queue.dequeue("t", wait=0.5))
        except bitt.Error as e:
            outcome.append(e)

    t = threading.Thread(target=waiter)
    t.start()
    started.wait()
    time.sleep(0.05)
    s.close()  # waits for the call in flight, never frees under it
    t.join()
    assert outcome and (outcome[0] == [] or isinstance(outcome[0], bitt.UsageError))
    with pytest.raises(bitt.UsageError):
        s.kv.get("x")
    s.close()  # idempotent

    # many threads hammering while close happens
    s = bitt.open("memory:")
    stop = []

    def hammer():
        while True:
            try:
                s.kv.set("k", b"v")
                s.kv.get("k")
            except bitt.UsageError:
                stop.append(1)
                return

    ts = [threading.Thread(target=hammer) for _ in range(4)]
    [t.start() for t in ts]
    time.sleep(0.05)
    s.close()
    [t.join() for t in ts]
    assert len(stop) == 4


def test_close_while_a_subscription_waits():
    for kind in ["memory", "sqlite"]:
        with tempfile.TemporaryDirectory() as d:
            s = bitt.open("memory:" if kind == "memory" else f"sqlite:{d}/s.db")
            sub = s.pubsub.subscribe("ch")
            started = threading.Event()
            outcome = []

            def waiter():
                started.set()
                try:
                    outcome.append(sub.next(timeout=2))
                except bitt.Error as e:
                    outcome.append(e)

            t = threading.Thread(target=waiter)
            t.start()
            started.wait()
            time.sleep(0.05)
            s.close()  # waits for the wait in flight, never frees under it
            t.join(10)
            assert not t.is_alive()
            assert outcome == [None] or isinstance(outcome[0], bitt.UsageError)
            with pytest.raises(bitt.UsageError):
                sub.next(0)
            sub.close()
            # a handle used through raw after close: UsageError, never a crash
            s = bitt.open("memory:")
            h = raw.bitt_pubsub_subscribe(s._box, "ch")[1]
            s.close()
            with pytest.raises(bitt.UsageError):
                raw.bitt_pubsub_next(h, 0)
            raw.bitt_pubsub_close(h)


def test_close_while_threads_commit_txns():
    for n in range(3):
        s = bitt.open("memory:")
        outcome = []

        def committer():
            try:
                while True:
                    with s.atomic() as tx:
                        tx.sum("n", 1).set(("k", 1), b"v").enqueue("t", b"p")
            except bitt.UsageError as e:
                outcome.append(e)
            except BaseException as e:  # anything else fails the test
                outcome.append(e)

        ts = [threading.Thread(target=committer) for _ in range(3)]
        [t.start() for t in ts]
        time.sleep(0.02 * (n + 1))
        s.close()
        [t.join(10) for t in ts]
        assert not any(t.is_alive() for t in ts)
        assert len(outcome) == 3 and all(isinstance(e, bitt.UsageError) for e in outcome)

    # a txn begun before close: every call after it raises UsageError
    s = bitt.open("memory:")
    tx = s.atomic()
    tx.set("a", b"1")
    s.close()
    for call in (lambda: tx.set("b", b"2"), lambda: tx.check("a", 0), lambda: tx.sum("c", 1),
                 lambda: tx.enqueue("t", b"x"), lambda: tx.fence("L", "o", 1),
                 lambda: tx.outbox_append("o", b"e"), tx.commit):
        with pytest.raises(bitt.UsageError):
            call()
    tx.close()
    del s  # the box outlives the store object while a handle holds it
    s = bitt.open("memory:")
    h = raw.bitt_txn_begin(s._box)[1]
    del s
    import gc
    gc.collect()
    with pytest.raises(bitt.UsageError):
        raw.bitt_txn_commit(h)
    raw.bitt_txn_free(h)


def test_gil_released_during_subscription_wait():
    # memory calls keep the GIL, but a wait (timeout > 0) releases it
    with bitt.open("memory:") as s:
        with s.pubsub.subscribe("c") as sub:
            assert sub.next(0) is None
            t = threading.Thread(target=lambda: sub.next(0.3))
            t.start()
            n = 0
            t0 = time.monotonic()
            while t.is_alive():
                n += 1
            assert time.monotonic() - t0 > 0.2 and n > 1000


def test_gil_released_during_wait():
    with bitt.open("memory:") as s:
        t = threading.Thread(target=lambda: s.queue.dequeue("t", wait=0.3))
        t.start()
        n = 0
        t0 = time.monotonic()
        while t.is_alive():
            n += 1
        assert time.monotonic() - t0 > 0.2 and n > 1000


@pytest.mark.parametrize("call", [
    lambda s: s.kv.get(5),
    lambda s: s.kv.get(object()),
    lambda s: s.kv.set("k", object()),
    lambda s: s.kv.set("k", 1, ttl="x"),
    lambda s: s.kv.set("k", 1, ttl=True),
    lambda s: s.kv.set("k", 1, ttl=[1]),
    lambda s: s.kv.increment("k", "x"),
    lambda s: s.kv.get_many(5),
    lambda s: s.kv.get_many([b"a", 3]),
    lambda s: s.queue.enqueue(5, b"x"),
    lambda s: s.queue.dequeue("t", limit="x"),
    lambda s: s.queue.dequeue("t", wait="x"),
    lambda s: s.outbox.ack("s", ["x"]),
    lambda s: s.queue.ack_many("t", [("x", "tok")]),
    lambda s: s.queue.ack_many("t", [(1, 2)]),
    lambda s: s.queue.ack_many("t", 5),
    lambda s: s.lease.acquire(5, "o", 10),
    lambda s: s.budget.take("b", capacity="1", refill=1, period=1),
    lambda s: s.kv.set(("a", object()), b"x"),
    lambda s: raw.bitt_kv_get(None, b"k"),
    lambda s: raw.bitt_kv_get(s._box, None),
    lambda s: raw.bitt_txn_commit("not a txn"),
])
def test_bad_argument_types_raise_type_error(call):
    with bitt.open("memory:") as s:
        with pytest.raises(TypeError):
            call(s)


def test_bad_open_argument():
    with pytest.raises(TypeError):
        bitt.open(5)


def test_asyncio_flavour():
    async def main():
        async with await bitt.aio.open("memory:") as s:
            await s.kv.set("a", 1)
            assert (await s.kv.get("a")).value == 1
            for i in range(5):
                await s.kv.set(("p", i), i)
            got = [e.value async for e in s.kv.list(prefix=("p",), limit=2)]
            assert got == [0, 1, 2, 3, 4]
            async with s.atomic() as tx:
                tx.sum("a", 2)
            assert (await s.kv.get("a")).value == 3
            # a wait does not block the loop
            ticks = 0

            async def ticker():
                nonlocal ticks
                while True:
                    await asyncio.sleep(0.01)
                    ticks += 1

            tk = asyncio.create_task(ticker())
            await s.queue.dequeue("t", wait=0.2)
            tk.cancel()
            assert ticks >= 5

    asyncio.run(main())
