"""The queue-control API of the Python layer (bitt.h 0.6): priorities, a
dequeue over several topics, messages by id, the queue ops of an atomic
commit, and a message's state and priority; the argument checks that are the
binding's own. The rules themselves are the contract's (queue_control.json)."""
from __future__ import annotations

import asyncio
from datetime import datetime, timedelta, timezone

import pytest

import bitt
import bitt.aio

T0 = datetime(2030, 1, 1, tzinfo=timezone.utc)


@pytest.fixture
def store():
    with bitt.open("memory:") as s:
        s.clock.set_manual(T0)
        yield s


def test_priority_orders_claims_and_is_kept(store):
    q = store.queue
    low = q.enqueue("t", b"low")
    top = q.enqueue("t", b"top", priority=2**31 - 1)
    neg = q.enqueue("t", b"neg", priority=-(2**31))
    got = q.dequeue("t", limit=3)
    assert [(m.id, m.priority, m.state) for m in got] == [
        (top, 2**31 - 1, "leased"), (low, 0, "leased"), (neg, -(2**31), "leased")]


def test_priority_refusals(store):
    for bad in (2**31, -(2**31) - 1):
        msg = rf"priority: integer {bad} is outside the int32 range"
        with pytest.raises(bitt.InvalidArgument, match=msg):
            store.queue.enqueue("t", b"x", priority=bad)
        with pytest.raises(bitt.InvalidArgument, match="int32"):
            store.atomic().enqueue("t", b"x", priority=bad)
    for bad in (1.0, "1", True, None):
        with pytest.raises(TypeError, match="priority"):
            store.queue.enqueue("t", b"x", priority=bad)
    with pytest.raises(TypeError):
        store.queue.enqueue("t", b"x", prio=1)  # an option the call does not have
    assert store.queue.stats("t").pending == 0  # nothing was written


def test_dequeue_over_topics(store):
    q = store.queue
    a = q.enqueue("a", b"1")
    store.clock.advance(0.001)
    b = q.enqueue(b"b", b"2")
    got = q.dequeue(topics=["a", b"b", "c"], limit=5)
    assert [(m.id, m.topic) for m in got] == [(a, "a"), (b, "b")]
    q.ack(got[1])
    with pytest.raises(bitt.InvalidArgument):
        q.dequeue(topics=["a", "a"])
    with pytest.raises(bitt.InvalidArgument):
        q.dequeue(topics=[])
    with pytest.raises(bitt.TooLarge):
        q.dequeue(topics=[f"t{i}" for i in range(65)])
    with pytest.raises(TypeError, match="topics"):
        q.dequeue(topics="ab")  # a str is not a list of names
    with pytest.raises(TypeError, match="not both"):
        q.dequeue("a", topics=["a"])
    with pytest.raises(TypeError, match="needed"):
        q.dequeue()
    with pytest.raises(TypeError):
        q.dequeue(topics=["a", 1])
    tok = bitt.CancelToken()
    tok.cancel()
    q.enqueue("c", b"3")
    with pytest.raises(bitt.Cancelled):
        q.dequeue(topics=("a", "c"), wait=5, cancel=tok)
    assert q.stats("c").pending == 1


def test_get_cancel_reschedule(store):
    q = store.queue
    mid = q.enqueue("t", {"job": 1}, delay=60, max_attempts=4, priority=3)
    m = q.get("t", mid)
    assert m is not None and m.state == "delayed" and m.token is None and m.priority == 3
    assert m.due_at == T0 + timedelta(seconds=60) and m.attempts == 0 and m.max_attempts == 4
    assert m.value == {"job": 1} and m.topic == "t" and m.id == mid
    assert q.get("u", mid) is None and q.get("t", 0) is None
    assert q.reschedule("t", mid, timedelta(seconds=5))
    assert q.get("t", mid).due_at == T0 + timedelta(seconds=5)
    assert q.reschedule("t", mid)  # default: now
    assert q.get("t", mid).state == "pending"
    (d,) = q.dequeue("t", lease=10)
    assert q.get("t", mid).state == "leased" and not q.reschedule("t", mid, 0)
    assert q.cancel("t", mid) and not q.cancel("t", mid)
    with pytest.raises(bitt.StaleToken):
        q.ack(d)
    with pytest.raises(bitt.InvalidArgument):
        q.reschedule("t", mid, -1)
    with pytest.raises(TypeError):
        q.get("t", "1")


def test_dead_letter_state(store):
    q = store.queue
    mid = q.enqueue("t", b"x", max_attempts=1)
    (d,) = q.dequeue("t")
    q.nack(d, "boom")
    m = q.get("t", mid)
    assert m.state == "dead" and m.last_error == "boom" and m.failed_at == T0
    assert [x.state for x in q.dead_list("t")] == ["dead"]
    assert not q.cancel("t", mid)
    store.outbox.append("s", b"e")
    assert store.outbox.pending("s")[0].state is None


def test_txn_queue_ops(store):
    q = store.queue
    a = q.enqueue("t", b"a")
    b = q.enqueue("t", b"b", max_attempts=3)
    c = q.enqueue("t", b"c")
    ma, mb, mc = q.dequeue("t", limit=3, lease=10)
    with store.atomic() as tx:
        tx.set("result", 1).queue_ack(ma).queue_nack(mb, "e1", delay=2).queue_extend(mc, 30)
    assert q.get("t", a) is None and store.kv.get("result").value == 1
    got_b = q.get("t", b)
    assert got_b.state == "delayed" and got_b.last_error == "e1"
    assert got_b.due_at == T0 + timedelta(seconds=2)
    assert q.get("t", c).due_at == T0 + timedelta(seconds=30)
    store.atomic().queue_snooze("t", c, mc.token, 1).queue_reschedule("t", b, 0).commit()
    assert q.get("t", c).state == "delayed" and q.get("t", b).state == "pending"
    store.atomic().queue_cancel("t", b).queue_cancel("t", 999).commit()
    assert q.get("t", b) is None
    # a stale token fails the whole commit, which writes nothing
    tx = store.atomic().set("k", 1).queue_ack(ma)
    with pytest.raises(bitt.StaleToken):
        tx.commit()
    tx.close()
    assert store.kv.get("k") is None
    # one queue op per message id
    with pytest.raises(bitt.InvalidArgument):
        store.atomic().queue_cancel("t", c).queue_reschedule("t", c, 0)
    with pytest.raises(bitt.InvalidArgument):
        store.atomic().queue_extend(mc, -1)
    with pytest.raises(TypeError):
        store.atomic().queue_snooze("t", c, mc.token, delay="1")


def test_aio_queue_control():
    async def main():
        async with await bitt.aio.open("memory:") as s:
            q = s.queue
            mid = await q.enqueue("t", b"x", priority=1, delay=5)
            assert (await q.get("t", mid)).state == "delayed"
            assert await q.reschedule("t", mid)
            (m,) = await q.dequeue(topics=["t", "u"])
            assert m.priority == 1 and m.topic == "t"
            assert await q.cancel("t", mid) and await q.get("t", mid) is None
            async with s.atomic() as tx:
                tx.enqueue("u", b"y", priority=-1)
            (n,) = await q.dequeue(topics=["u"])
            assert n.priority == -1
    asyncio.run(main())
