"""Every public call of bitt and bitt.aio, typed: `pyright --strict` and
`mypy --strict` check this file with no error (scripts/test-python runs
both), and it runs (on memory:, with a manual clock)."""
from __future__ import annotations

import asyncio
import threading
from datetime import datetime, timedelta, timezone
from typing import List, Optional, Tuple, assert_type

import bitt
import bitt.aio
from bitt import (JSON, KIND_BYTES, KIND_COUNTER, KIND_JSON, PARK_INVALID, PARK_POISON, Atomic,
                  BackendError, Budgets, BusyError, CancelToken, Cancelled, Clock, ConflictError,
                  Consumer, CursorError, Data, Delivery, Duration, Entry, Error, InvalidArgument,
                  JSONIn, JSONInt, Key, KV, Lease, LeaseLostError, Leases, Message,
                  MessageState, Name,
                  NotACounter, Outbox, OutboxCounts, OutOfMemory, Overflow, Page, PubSub, Queue,
                  QueueStats, Schedule, Schedules, SchemaError, StaleToken, Store, Stored,
                  Subscription, TooLarge, TuplePart, Unsupported, URLError, UsageError, Value)

T0 = datetime(2030, 1, 1, tzinfo=timezone.utc)
ERRORS: Tuple[type[Error], ...] = (
    InvalidArgument, OutOfMemory, TooLarge, NotACounter, Overflow, ConflictError, BackendError,
    BusyError, SchemaError, URLError, CursorError, UsageError, Unsupported, StaleToken,
    LeaseLostError, Cancelled)


def kv_and_values(store: Store) -> None:
    kv: KV = store.kv
    key: Key = ("users", "alice")
    part: TuplePart = "alice"
    version: int = kv.set(key, {"name": part, "tags": ["a", "b"]}, ttl=60)
    entry = kv.get(key)
    assert_type(entry, Optional[Entry])
    assert entry is not None and entry.version == version and entry.kind == KIND_JSON
    assert entry.expires_at == T0 + timedelta(seconds=60)
    value: Stored = entry.value
    assert isinstance(value, dict) and value["name"] == "alice"
    assert bitt.decode_tuple(entry.key) == ("users", "alice")
    assert bitt.encode_key(key) == entry.key
    data, kind = bitt.encode_value(JSONInt(3))
    assert (bytes(data), kind) == (b"3", KIND_JSON) and bitt.decode_value(b"3", kind) == 3
    assert kv.add("n", 0, ttl=timedelta(minutes=1)) is not None and kv.add("n", 1) is None
    assert kv.increment("n", 2) == 2 and kv.get("n") is not None
    number: JSONIn = 2.5
    doc: JSON = [1, None]
    stored: Value = b"raw"
    kv.set("f", number)
    kv.set("d", doc)
    kv.set("b", stored)
    many: List[Optional[Entry]] = kv.get_many(["f", "nope", "b"])
    assert [e.kind if e else None for e in many] == [KIND_JSON, None, KIND_BYTES]
    for i in range(3):
        kv.set(("p", i), i)
    listed: List[Entry] = list(kv.list(("p",), limit=2))
    assert [e.value for e in listed] == [0, 1, 2] and listed[0].kind == KIND_COUNTER
    page: Page = kv.page(("p",), limit=2)
    assert len(page.entries) == 2 and page.cursor is not None
    rest = kv.page(("p",), limit=2, cursor=page.cursor, start=None, end=None, reverse=False)
    assert len(rest.entries) == 1
    taken = kv.take("f")
    assert taken is not None and taken.value == 2.5 and kv.delete("d") and not kv.delete("d")
    assert kv.purge_expired() == 0
    tx: Atomic
    with store.atomic() as tx:
        tx.check(key, version).set(key, b"new", ttl=None).sum("n", 1).delete("b")
        tx.enqueue("emails", b"hi", delay=0, max_attempts=3, dedup="once")
        tx.outbox_append("events", {"user": "alice"})
    assert tx.version is not None
    lease = store.lease.acquire("L", "me", 30)
    assert lease is not None
    tx2 = store.atomic().fence("L", "me", lease.epoch).set("fenced", True)
    assert tx2.commit() > 0
    tx2.close()
    try:
        with store.atomic() as tx3:
            tx3.check(key, 1)
    except ConflictError as e:
        assert e.code == -6 and isinstance(e, ERRORS)
    try:
        kv.set("bad", float("nan"))
    except InvalidArgument as e:
        assert e.message == "value: NaN and infinities are not JSON"


def queue(store: Store) -> None:
    q: Queue = store.queue
    first: int = q.enqueue("jobs", {"n": 1}, delay=None, max_attempts=5, dedup=None)
    q.enqueue("jobs", {"n": 2})
    msgs = q.dequeue("jobs", limit=2, lease=timedelta(seconds=30), wait=0.5)
    assert_type(msgs, List[Message])
    m: Message = msgs[0]
    assert m.id == first and m.value == {"n": 1} and m.token is not None
    assert m.created_at == T0 and m.due_at == T0 + timedelta(seconds=30)
    q.extend(m, 60)
    q.ack(m)
    q.nack(msgs[1], "boom", delay=0.25)
    store.clock.advance(0.25)
    (again,) = q.dequeue("jobs")
    pairs: List[Delivery] = [(again.id, again.token or "")]
    assert q.ack_many("jobs", pairs) == [True]
    q.enqueue("jobs", b"snoozed")
    (s,) = q.dequeue("jobs")
    q.snooze("jobs", s.id, s.token or "", delay=0)
    st: QueueStats = q.stats("jobs")
    assert st.pending == 1 and st.oldest_pending_at == T0 + timedelta(seconds=0.25)
    q.enqueue("mortal", b"x", max_attempts=1)
    (d,) = q.dequeue("mortal")
    q.nack(d)
    dead = q.dead_list("mortal", after=0, limit=10)
    assert [x.id for x in dead] == [d.id] and dead[0].failed_at is not None
    assert q.dead_retry("mortal", d.id) == 1
    (d2,) = q.dequeue("mortal")
    q.nack(d2)
    assert q.dead_delete("mortal") == 1
    token = CancelToken()
    consumer: Consumer
    with q.consume("jobs", prefetch=4, lease=30, cancel=token) as consumer:
        for job in consumer:
            q.ack(job)
            break
    token.cancel()
    assert token.cancelled
    try:
        q.dequeue("jobs", wait=30, cancel=token)
    except Cancelled:
        token.reset()
    threading.Timer(0.01, token.cancel).start()
    try:
        for _ in q.consume("idle", cancel=token):
            pass
    except Cancelled:
        pass


def queue_control(store: Store) -> None:
    q: Queue = store.queue
    low = q.enqueue("runs", b"low")
    high = q.enqueue("steps", b"high", priority=5)
    later = q.enqueue("runs", b"later", delay=60)
    got = q.get("runs", later)
    assert_type(got, Optional[Message])
    state: Optional[MessageState] = got.state if got else None
    assert state == "delayed" and got is not None and got.due_at == T0 + timedelta(seconds=60)
    assert q.reschedule("runs", later, 0) and q.get("runs", later) is not None
    assert q.cancel("runs", later) and q.get("runs", later) is None
    assert not q.cancel("runs", later) and not q.reschedule("runs", later)
    a, b = q.dequeue(topics=["runs", "steps"], limit=2)
    assert (a.id, a.topic, a.priority, a.state) == (high, "steps", 5, "leased")
    assert (b.id, b.topic) == (low, "runs")
    with store.atomic() as tx:
        tx.set("result", 42).queue_ack(a).queue_snooze(b.topic, b.id, b.token or "", 1)
    assert q.get("steps", high) is None
    step = q.enqueue("steps", b"s", max_attempts=3)
    (c,) = q.dequeue("steps")
    store.atomic().queue_extend(c, 30).commit()
    store.atomic().queue_nack(c, "boom", delay=None).commit()
    assert (m := q.get("steps", step)) is not None and m.last_error == "boom"
    tx2 = store.atomic().queue_reschedule("steps", step, 0).queue_cancel("runs", low)
    tx2.enqueue("steps", b"t", priority=-1)
    tx2.commit()
    assert q.get("runs", low) is None


def retention(store: Store) -> None:
    """Opened with queue_done_retention: acked messages stay done, with a result."""
    q: Queue = store.queue
    mid = q.enqueue("jobs", b"j")
    (m,) = q.dequeue("jobs")
    q.ack(m, result={"ok": True})
    done = q.get("jobs", mid)
    assert done is not None and done.state == "done" and done.done_at == T0
    assert done.result == b'{"ok":true}' and done.result_kind == KIND_JSON
    res: Optional[Stored] = done.result_value
    assert res == {"ok": True} and q.stats("jobs").done == 1
    q.enqueue("jobs", b"k")
    (n,) = q.dequeue("jobs")
    store.atomic().queue_ack(n, result=b"raw").commit()
    store.clock.advance(3600)
    assert q.purge("jobs") == 2 and q.purge() == 0 and q.stats("jobs").done == 0
    sched: Schedules = store.schedule
    sched.upsert("nightly", cron="0 3 * * *", payload={"run": 1}, topic="jobs", max_attempts=2,
                 priority=4)
    s = sched.get("nightly")
    assert s is not None and s.cron == "0 3 * * *" and s.topic == "jobs" and s.message_id == 0
    assert s.interval == 0.0
    try:
        sched.upsert("both", 60, cron="* * * * *")
    except InvalidArgument as e:
        assert "cron" in e.message


def modules(store: Store) -> None:
    leases: Leases = store.lease
    held: Optional[Lease] = leases.acquire("lock", "worker-1", ttl=10)
    assert held is not None and held.expires_at == T0 + timedelta(seconds=10)
    new_end: datetime = leases.renew("lock", "worker-1", held.epoch, 20)
    assert new_end == T0 + timedelta(seconds=20)
    got = leases.get("lock")
    assert got is not None and got.owner == "worker-1"
    leases.release("lock", "worker-1", held.epoch)
    try:
        leases.release("lock", "worker-1", held.epoch)
    except LeaseLostError:
        pass
    outbox: Outbox = store.outbox
    seq: int = outbox.append("events", b"e1")
    events: List[Message] = outbox.pending("events", limit=10)
    assert seq in [e.id for e in events]
    assert outbox.fail("events", seq, "later", next_attempt_at=T0 + timedelta(seconds=5))
    assert outbox.park("events", seq, PARK_POISON, "poison")
    parked = outbox.parked("events", reason=PARK_POISON, limit=5)
    assert parked[0].park_reason == PARK_POISON != PARK_INVALID
    assert outbox.retry("events", [seq]) == 1
    assert outbox.park("events", seq, PARK_INVALID) and outbox.discard("events") == 1
    counts: OutboxCounts = outbox.counts("events")
    assert outbox.ack("events", [e.id for e in outbox.pending("events")]) == counts.pending
    pubsub: PubSub = store.pubsub
    sub: Subscription
    with pubsub.subscribe("news") as sub:
        payload: Data = "hello"
        pubsub.publish("news", payload)
        msg = sub.next(timeout=1, cancel=None)
        assert msg is not None and msg.payload == b"hello" and not sub.closed
        pubsub.publish("news", b"x")
        for m in sub:
            assert m.value == b"x"
            break
    budgets: Budgets = store.budget
    assert budgets.take("api", capacity=1, refill=1, period=2, n=1) == 0.0
    wait: float = budgets.take("api", capacity=1, refill=1, period=2)
    assert wait == 2.0
    schedules: Schedules = store.schedule
    schedules.upsert("report", timedelta(hours=1), {"kind": "daily"}, first_run_at=T0)
    claimed: Optional[Schedule] = schedules.claim("rep")
    assert claimed is not None and claimed.interval == 3600.0 and claimed.value == {"kind": "daily"}
    assert claimed.next_run_at == T0 + timedelta(hours=1) and claimed.occurrence == T0
    assert schedules.get("report") is not None and len(schedules.list()) == 1
    assert schedules.delete("report")
    clock: Clock = store.clock
    assert clock.now() == T0
    clock.use_system()
    clock.set_manual(T0)
    name: Name = b"bytes-name"
    duration: Duration = 1.5
    store.kv.set(name, b"", ttl=duration)
    store.migrate()
    assert store.backend == "memory" and not store.closed
    assert bitt.make_error(-16, "cancelled").code == -16


async def aio(url: str) -> None:
    async with await bitt.aio.open(url) as store:
        assert isinstance(store, bitt.aio.Store) and store.backend == "memory"
        await store.clock.set_manual(T0)
        kv: bitt.aio.KV = store.kv
        await kv.set("a", 1, ttl=60)
        entry = await kv.get("a")
        assert_type(entry, Optional[Entry])
        assert entry is not None and entry.value == 1
        assert await kv.add("b", b"x") is not None and await kv.increment("a", 1, ttl=None) == 2
        assert len(await kv.get_many(["a", "b"])) == 2
        assert [e.key async for e in kv.list(prefix="", limit=1)] == [b"a", b"b"]
        page = await kv.page(start="a", end="z", limit=1, reverse=True, cursor=None)
        assert page.entries[0].key == b"b"
        assert (await kv.take("b")) is not None and await kv.delete("a")
        assert await kv.purge_expired() == 0
        tx: bitt.aio.Atomic = store.atomic()
        async with tx as t:
            t.set("c", 1)
        q: bitt.aio.Queue = store.queue
        try:
            await asyncio.wait_for(q.dequeue("jobs", wait=3, lease=0.5), 0.05)
        except asyncio.TimeoutError:
            pass
        await q.enqueue("jobs", b"j", delay=0, max_attempts=1, dedup="d")
        msgs = await q.dequeue("jobs", limit=1, lease=30, wait=0)
        assert_type(msgs, List[Message])
        assert msgs[0].attempts == 1
        await q.extend(msgs[0], 10)
        await q.snooze("jobs", msgs[0].id, msgs[0].token or "", 0)
        consumer: bitt.aio.Consumer
        async with q.consume("jobs", prefetch=2, lease=30) as consumer:
            async for m in consumer:
                await q.nack(m, "failed", delay=None)
                break
        await consumer.aclose()
        assert (await q.stats("jobs")).dead == 1
        assert len(await q.dead_list("jobs", after=0, limit=5)) == 1
        assert await q.dead_retry("jobs") == 1
        (m2,) = await q.dequeue("jobs")
        assert await q.ack_many("jobs", [m2]) == [True]
        await q.enqueue("jobs", b"k")
        (m3,) = await q.dequeue("jobs")
        await q.ack(m3, result=None)
        assert await q.purge(None) == 0
        assert await q.dead_delete("jobs") == 0
        pid = await q.enqueue("jobs", b"p", priority=2, delay=5)
        assert (await q.get("jobs", pid)) is not None and await q.reschedule("jobs", pid, 0)
        (m4,) = await q.dequeue(topics=["jobs", "other"])
        assert m4.priority == 2 and await q.cancel("jobs", pid)
        leases: bitt.aio.Leases = store.lease
        lease = await leases.acquire("L", "me", 5)
        assert lease is not None and await leases.get("L") is not None
        assert await leases.renew("L", "me", lease.epoch, 5) == T0 + timedelta(seconds=5)
        await leases.release("L", "me", lease.epoch)
        outbox: bitt.aio.Outbox = store.outbox
        seq = await outbox.append("s", b"e")
        assert len(await outbox.pending("s", 10)) == 1
        assert await outbox.fail("s", seq, None, None)
        assert await outbox.park("s", seq, PARK_POISON, None)
        assert len(await outbox.parked("s", 0, 10)) == 1
        assert await outbox.retry("s", None) == 1 and await outbox.park("s", seq, PARK_INVALID)
        assert await outbox.discard("s", [seq]) == 1 and await outbox.ack("s", []) == 0
        assert (await outbox.counts("s")).parked == 0
        pubsub: bitt.aio.PubSub = store.pubsub
        sub: bitt.aio.Subscription
        async with await pubsub.subscribe("ch") as sub:
            await pubsub.publish("ch", b"1")
            first = await sub.next(1)
            assert first is not None and first.payload == b"1" and sub.channel == "ch"
            await pubsub.publish("ch", b"2")
            async for m in sub:
                assert m.payload == b"2"
                break
        assert sub.closed
        budget: bitt.aio.Budgets = store.budget
        assert await budget.take("b", capacity=1, refill=1, period=1, n=1) == 0.0
        sched: bitt.aio.Schedules = store.schedule
        await sched.upsert("s", 60, b"", first_run_at=None, cron=None, topic=None,
                           max_attempts=0, priority=0)
        assert await sched.claim() is None and await sched.get("s") is not None
        assert len(await sched.list()) == 1 and await sched.delete("s")
        clock: bitt.aio.Clock = store.clock
        await clock.advance(1)
        assert await clock.now() == T0 + timedelta(seconds=1)
        await clock.use_system()
        await store.migrate()
        assert store.sync.backend == "memory"


def workers(store: Store) -> None:
    store.queue.enqueue("w", {"n": 1})
    store.queue.enqueue("w", {"n": 2})
    done = threading.Event()
    results: List[object] = []

    def handle(msg: Message, cancel: CancelToken) -> object:
        assert not cancel.cancelled and not cancel.wait(0)
        if msg.value == {"n": 2}:
            raise bitt.Snooze(timedelta(seconds=0))
        return msg.value

    def completed(msg: Message, result: object) -> None:
        results.append(result)
        done.set()

    handler: bitt.Handler = handle
    w: bitt.Worker = bitt.Worker(store, "w", handler, concurrency=2, prefetch=1, lease=30,
                                 heartbeat=10, wait=0.05, on_completed=completed,
                                 on_failed=lambda m, e: None, on_stalled=lambda m: None,
                                 on_error=lambda e, m: None)
    assert done.wait(30) and w.topic == "w"

    def on_err(e: BaseException, m: Optional[Message]) -> None:
        pass
    assert w.on("error", on_err) is on_err
    w.off("error", on_err)
    with w:
        c: bitt.WorkerCounters = w.counters
        assert c.claimed >= 1 and c.failed == 0 and c.stalled == 0 and c.released >= 0
    assert w.stop(timeout=1).running == 0
    w.close()
    s = bitt.Snooze(1.5)
    assert s.delay == 1.5 and s.delay_ms == 1500 and results == [{"n": 1}]


async def aio_workers(store: bitt.aio.Store) -> None:
    await store.queue.enqueue("aw", b"x")
    got: "asyncio.Future[Message]" = asyncio.get_running_loop().create_future()

    async def handle(msg: Message) -> str:
        if not got.done():
            got.set_result(msg)
        return "ok"
    handler: bitt.aio.AsyncHandler = handle
    async with bitt.aio.Worker(store, "aw", handler, concurrency=1, wait=0.05,
                               on_completed=lambda m, r: None) as w:
        assert (await got).payload == b"x" and w.topic == "aw"
        w.off("failed", w.on("failed", lambda m, e: None))
    c: bitt.aio.WorkerCounters = await w.stop(timeout=0)
    assert c.claimed == 1 and c.completed + c.snoozed <= 1
    assert isinstance(bitt.aio.Snooze(0), bitt.Snooze)


def main() -> None:
    with bitt.open("memory:") as store:
        store.clock.set_manual(T0)
        kv_and_values(store)
    with bitt.open("memory:") as store:
        store.clock.set_manual(T0)
        queue(store)
    with bitt.open("memory:") as store:
        store.clock.set_manual(T0)
        queue_control(store)
    with bitt.open("memory:?queue_done_retention=60000") as store:
        store.clock.set_manual(T0)
        retention(store)
    with bitt.open("memory:") as store:
        store.clock.set_manual(T0)
        modules(store)
    asyncio.run(aio("memory:"))
    with bitt.open("memory:") as store:
        workers(store)

    async def run_aio_workers() -> None:
        async with await bitt.aio.open("memory:") as store:
            await aio_workers(store)
    asyncio.run(run_aio_workers())
    print("typed usage: ok")


if __name__ == "__main__":
    main()
