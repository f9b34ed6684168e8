"""Queue retention and cron/topic schedules through the Python layer (bitt.h
0.6, version 7): ack with a result (the store call, an atomic commit, both
workers' handler results), purge, stats' done, a done message's fields,
schedule upsert with cron / topic / max_attempts / priority and a schedule's
cron / topic / message_id; the argument checks that are the binding's own.
The rules themselves are the contract's (queue_retention.json,
schedule_cron.json)."""
from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest

import bitt
import bitt.aio
from worker_support import BACKENDS, GUARD, LONG, T0, fresh_url, until

# Every backend the run has (all four implement retention and cron).
V7 = list(BACKENDS)
KEEP = "queue_done_retention=3600000"  # an hour


@pytest.fixture(params=V7)
def store(request, tmp_path):
    with bitt.open(fresh_url(request.param, tmp_path, KEEP)) as s:
        s.clock.set_manual(T0)
        yield s


def test_ack_with_a_result_keeps_the_message_done(store):
    q = store.queue
    ids = [q.enqueue("t", b"p%d" % i) for i in range(4)]
    a, b, c, d = q.dequeue("t", limit=4)
    q.ack(a, result={"ok": True})
    q.ack(b, result=7)
    q.ack(c, result=b"\x00raw")
    q.ack(d)  # no result: done all the same
    got = [q.get("t", i) for i in ids]
    assert all(m is not None and m.state == "done" and m.done_at == T0 for m in got)
    assert [(m.result, m.result_kind, m.result_value) for m in got if m] == [
        (b'{"ok":true}', bitt.KIND_JSON, {"ok": True}), (b"7", bitt.KIND_COUNTER, 7),
        (b"\x00raw", bitt.KIND_BYTES, b"\x00raw"), (None, None, None)]
    assert got[0] is not None and got[0].token is None and got[0].payload == b"p0"
    assert q.stats("t").done == 4 and q.stats("t").pending == 0
    with pytest.raises(bitt.StaleToken):
        q.ack(a, result="again")  # done: never acked twice
    assert q.get("t", ids[0]).result_value == {"ok": True}  # type: ignore[union-attr]


def test_result_checks_write_nothing(store):
    q = store.queue
    mid = q.enqueue("t", b"x")
    (m,) = q.dequeue("t")
    with pytest.raises(TypeError, match="value"):
        q.ack(m, result=object())  # type: ignore[arg-type]
    with pytest.raises(bitt.InvalidArgument, match="NaN"):
        q.ack(m, result=float("nan"))
    with pytest.raises(bitt.InvalidArgument):
        q.ack(m, result=2**70)  # a counter out of the int64 range
    with pytest.raises(TypeError):
        q.ack(m, results=1)  # type: ignore[call-arg]
    assert q.get("t", mid).state == "leased"  # type: ignore[union-attr]
    q.ack(m, result=None)
    assert q.get("t", mid).result is None  # type: ignore[union-attr]


def test_atomic_ack_with_a_result(store):
    q = store.queue
    mid = q.enqueue("t", b"x")
    (m,) = q.dequeue("t")
    with store.atomic() as tx:
        tx.set("k", 1).queue_ack(m, result=["a", 1])
    done = q.get("t", mid)
    assert done is not None and done.state == "done" and done.result_value == ["a", 1]
    assert store.kv.get("k") is not None


def test_purge_drops_what_outlived_retention(store):
    q = store.queue
    for t in ("a", "b"):
        q.enqueue(t, b"x")
        (m,) = q.dequeue(t)
        q.ack(m, result=t)
    assert q.purge() == 0 and q.purge("a") == 0
    store.clock.advance(timedelta(hours=1, milliseconds=1))
    assert q.purge("a") == 1 and q.purge(None) == 1 and q.purge() == 0
    with pytest.raises(bitt.InvalidArgument):
        q.purge("")
    with pytest.raises(TypeError):
        q.purge(1)  # type: ignore[arg-type]


def test_without_retention_the_result_goes_with_the_message():
    with bitt.open("memory:") as s:
        mid = s.queue.enqueue("t", b"x")
        (m,) = s.queue.dequeue("t")
        s.queue.ack(m, result="gone")
        assert s.queue.get("t", mid) is None and s.queue.stats("t").done == 0


def test_cron_schedule_with_a_topic(store):
    sch = store.schedule
    sch.upsert("every5", cron="*/5 * * * *", payload={"n": 1}, topic="jobs", max_attempts=2,
               priority=3)
    s = sch.get("every5")
    assert s is not None and (s.cron, s.topic, s.interval, s.message_id) == (
        "*/5 * * * *", "jobs", 0.0, 0)
    assert s.next_run_at == T0 + timedelta(minutes=5)
    store.clock.advance(timedelta(minutes=5))
    c = sch.claim()
    assert c is not None and c.occurrence == T0 + timedelta(minutes=5) and c.message_id > 0
    m = store.queue.get("jobs", c.message_id)
    assert m is not None and (m.value, m.max_attempts, m.priority) == ({"n": 1}, 2, 3)
    sch.upsert("plain", 60)  # an interval schedule: no cron, no topic
    p = sch.get("plain")
    assert p is not None and (p.cron, p.topic, p.message_id, p.interval) == (None, None, 0, 60.0)


def test_schedule_option_checks(store):
    sch = store.schedule
    with pytest.raises(bitt.InvalidArgument, match="interval must be 0 with a cron"):
        sch.upsert("k", 60, cron="* * * * *")
    with pytest.raises(bitt.InvalidArgument, match="interval"):
        sch.upsert("k")  # neither an interval nor a cron expression
    with pytest.raises(bitt.InvalidArgument):
        sch.upsert("k", cron="0 0 30 2 *")  # never occurs
    with pytest.raises(TypeError, match="cron"):
        sch.upsert("k", cron=5)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        sch.upsert("k", 60, every=5)  # type: ignore[call-arg]
    with pytest.raises(bitt.InvalidArgument, match="int32"):
        sch.upsert("k", 60, topic="t", priority=2**31)
    with pytest.raises(bitt.InvalidArgument, match="uint32"):
        sch.upsert("k", 60, topic="t", max_attempts=-1)
    assert sch.list() == []  # nothing was written


def test_worker_returns_become_results(store):
    q = store.queue
    vals = {b"j": {"done": 1}, b"s": "text", b"n": None, b"o": object(), b"b": b"raw"}
    ids = {k: q.enqueue("w", k) for k in vals}
    seen = []
    w = bitt.Worker(store, "w", lambda m, t: vals[m.payload], lease=LONG, wait=0.05,
                    on_completed=lambda m, r: seen.append(m.payload))
    until(lambda: len(seen) == len(vals), "every message completed")
    w.stop()
    got = {k: q.get("w", i) for k, i in ids.items()}
    assert all(m is not None and m.state == "done" for m in got.values())
    assert {k: m.result_value for k, m in got.items() if m} == {
        b"j": {"done": 1}, b"s": "text", b"n": None, b"o": None, b"b": b"raw"}


def test_worker_result_the_store_refuses_fails_the_job(store):
    q = store.queue
    mid = q.enqueue("w", b"x", max_attempts=1)
    failed = []
    w = bitt.Worker(store, "w", lambda m, t: 2**70, lease=LONG, wait=0.05,
                    on_failed=lambda m, e: failed.append(e))
    until(lambda: failed, "the job failed")
    c = w.stop()
    assert isinstance(failed[0], bitt.InvalidArgument) and c.failed == 1 and c.completed == 0
    m = q.get("w", mid)
    assert m is not None and m.state == "dead" and m.last_error == failed[0].message


def test_aio_ack_purge_schedule_and_worker(tmp_path):
    async def run() -> None:
        async with await bitt.aio.open(f"memory:?{KEEP}") as s:
            await s.clock.set_manual(T0)
            q = s.queue
            mid = await q.enqueue("t", b"x")
            (m,) = await q.dequeue("t")
            await q.ack(m, result={"a": 1})
            got = await q.get("t", mid)
            assert got is not None and got.result_value == {"a": 1}
            assert (await q.stats("t")).done == 1 and await q.purge() == 0
            await s.schedule.upsert("c", cron="@hourly", topic="t", priority=1)
            sc = await s.schedule.get("c")
            assert sc is not None and sc.cron == "@hourly" and sc.topic == "t"
            wid = await q.enqueue("aw", b"y")

            async def handle(msg: bitt.Message) -> object:
                return ["r", msg.payload.decode()]
            async def completed() -> None:
                while w.counters.completed < 1:
                    await asyncio.sleep(0.005)
            async with bitt.aio.Worker(s, "aw", handle, wait=0.05) as w:
                await asyncio.wait_for(completed(), GUARD)  # a hang guard only
            done = await q.get("aw", wid)
            assert done is not None and done.result_value == ["r", "y"]
    asyncio.run(run())
