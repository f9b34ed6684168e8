"""Units (issue 22, defect 7): every duration in seconds (int, float or
timedelta), every absolute time an aware datetime (UTC when read back);
finer than a millisecond rounds up to the next one, by one rule."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import bitt
from bitt import raw

T0 = datetime(2030, 1, 1, tzinfo=timezone.utc)
T0_MS = 1893456000000


@pytest.fixture
def s():
    st = bitt.open("memory:")
    st.clock.set_manual(T0)
    yield st
    st.close()


def expiry_ms(s, key=b"k"):
    return raw.bitt_kv_get(s._box, key)[1][4] - T0_MS


@pytest.mark.parametrize("ttl,ms", [
    (60, 60_000), (1.5, 1500), (0.1, 100), (0.001, 1), (0.0004, 1), (1.2345, 1235),
    (1e-9, 1), (timedelta(minutes=2), 120_000), (timedelta(microseconds=1500), 2),
    (timedelta(milliseconds=2**40), 2**40), (2**40 / 1000, 2**40), (bitt.JSONInt(2), 2000),
])
def test_a_ttl_is_seconds_rounded_up_to_a_whole_millisecond(s, ttl, ms):
    s.kv.set("k", b"v", ttl=ttl)
    assert expiry_ms(s) == ms
    assert s.kv.get("k").expires_at == T0 + timedelta(milliseconds=ms)


def test_every_duration_is_seconds(s):
    s.queue.enqueue("q", b"x", delay=2)
    assert s.queue.dequeue("q") == []
    s.clock.advance(timedelta(seconds=2))
    (m,) = s.queue.dequeue("q", lease=0.25)
    assert m.due_at == T0 + timedelta(seconds=2.25) and m.created_at == T0
    s.queue.extend(m, 10)
    assert s.queue.dequeue("q") == []
    s.queue.nack(m, "x", delay=3)
    st = s.queue.stats("q")
    assert st.delayed == 1
    lease = s.lease.acquire("L", "o", 5)
    assert lease.expires_at == T0 + timedelta(seconds=7)
    assert s.lease.renew("L", "o", lease.epoch, 0.5) == T0 + timedelta(seconds=2.5)
    assert s.budget.take("b", capacity=1, refill=1, period=4) == 0.0
    assert s.budget.take("b", capacity=1, refill=1, period=4) == 4.0
    s.schedule.upsert("sch", 90, b"")
    sch = s.schedule.get("sch")
    assert sch.interval == 90.0 and sch.next_run_at == T0 + timedelta(seconds=92)
    with s.pubsub.subscribe("c") as sub:
        assert sub.next(timedelta(0)) is None and sub.next(0.001) is None
    s.kv.set("x", b"", ttl=None)
    assert s.kv.get("x").expires_at is None


def test_absolute_times_are_aware_datetimes(s):
    assert s.clock.now() == T0 and s.clock.now().tzinfo is not None
    s.clock.set_manual(datetime(2030, 1, 1, 1, tzinfo=timezone(timedelta(hours=1))))
    assert s.clock.now() == T0  # the same instant
    s.clock.advance(0.0005)
    assert s.clock.now() == T0 + timedelta(milliseconds=1)
    seq = s.outbox.append("o", b"e")
    assert s.outbox.fail("o", seq, next_attempt_at=T0 + timedelta(seconds=5))
    (ev,) = s.outbox.pending("o")
    assert ev.due_at == T0 + timedelta(seconds=5) and ev.failed_at is None
    s.schedule.upsert("sch", 60, first_run_at=T0 + timedelta(hours=3))
    assert s.schedule.get("sch").next_run_at == T0 + timedelta(hours=3)
    with pytest.raises(TypeError, match="naive"):
        s.clock.set_manual(datetime(2030, 1, 1))
    with pytest.raises(TypeError, match="first_run_at: int is not a timezone-aware datetime"):
        s.schedule.upsert("sch", 60, first_run_at=1893456000000)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad,exc,match", [
    (True, TypeError, "ttl: bool is not a number of seconds"),
    ("60", TypeError, "ttl: str is not a number of seconds"),
    (float("nan"), bitt.InvalidArgument, "ttl: nan seconds"),
    (float("inf"), bitt.InvalidArgument, "ttl: inf seconds"),
    (10**17, bitt.InvalidArgument, r"ttl \(ms\): integer 100000000000000000000 is outside"),
])
def test_a_duration_that_is_not_one_is_refused(s, bad, exc, match):
    with pytest.raises(exc, match=match):
        s.kv.set("k", b"v", ttl=bad)
    assert s.kv.get("k") is None


def test_a_negative_or_too_long_duration_reaches_the_core(s):
    with pytest.raises(bitt.InvalidArgument):
        s.kv.set("k", b"v", ttl=-1)
    with pytest.raises(bitt.InvalidArgument):
        s.queue.enqueue("q", b"v", delay=timedelta(milliseconds=2**40 + 1))
    assert raw.bitt_error_last_code() == -1  # the core's refusal, not the binding's
