"""bitt.Worker (issue 23 item 8), on threads: ack on return, nack with the
exception's text (attempts and last_error on redelivery, dead letter after
the last attempt), snooze, the concurrency and prefetch bounds, lease
renewal while a handler runs past its lease, stall detection, graceful stop,
stop's deadline, hooks, store errors and their backoff, permanent errors.
See worker_support.py for how time is handled (a manual clock; no sleep is
a synchronisation)."""
from __future__ import annotations

import logging
import threading

import pytest

import bitt
from bitt._worker_core import next_backoff
from worker_support import BACKENDS, LONG, T0, fresh_url, until

ZERO = bitt.WorkerCounters(0, 0, 0, 0, 0, 0, 0)


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.param


@pytest.fixture
def store(backend, tmp_path):
    s = bitt.open(fresh_url(backend, tmp_path))
    s.clock.set_manual(T0)
    yield s
    s.close()


@pytest.fixture
def mem():
    s = bitt.open("memory:")
    s.clock.set_manual(T0)
    yield s
    s.close()


class Errors(list):
    """The worker's error hook, kept (none expected unless a test says so)."""

    def __call__(self, e, msg=None):
        self.append(e)


def test_options_are_checked_naming_them(mem):
    def h(m, tok):
        return None

    def mk(**o):
        return bitt.Worker(mem, "t", h, **o)
    with pytest.raises(TypeError, match="concurency"):
        mk(concurency=2)
    with pytest.raises(bitt.InvalidArgument, match="concurrency: 0 is not a positive integer"):
        mk(concurrency=0)
    with pytest.raises(bitt.InvalidArgument, match="concurrency: -2"):
        mk(concurrency=-2)
    with pytest.raises(TypeError, match="concurrency: float is not an int"):
        mk(concurrency=1.5)
    with pytest.raises(TypeError, match="concurrency: bool"):
        mk(concurrency=True)
    with pytest.raises(bitt.InvalidArgument, match="prefetch: -1 is negative"):
        mk(prefetch=-1)
    with pytest.raises(TypeError, match="prefetch: str is not an int"):
        mk(prefetch="2")
    with pytest.raises(bitt.InvalidArgument, match="lease: 0 s is not positive"):
        mk(lease=0)
    with pytest.raises(bitt.InvalidArgument, match="heartbeat"):
        mk(heartbeat=-5)
    with pytest.raises(bitt.InvalidArgument, match="wait: 0 s is not positive"):
        mk(wait=0)
    with pytest.raises(TypeError, match="lease: datetime is not a number of seconds"):
        mk(lease=T0)
    with pytest.raises(TypeError, match="on_failed: int is not callable"):
        mk(on_failed=3)
    with pytest.raises(TypeError, match="handler: str is not callable"):
        bitt.Worker(mem, "t", "h")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="topic: int is not a str or bytes"):
        bitt.Worker(mem, 5, h)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"store: str is not a bitt.Store"):
        bitt.Worker("memory:", "t", h)  # type: ignore[arg-type]
    with pytest.raises(bitt.InvalidArgument, match="Snooze: delay"):
        bitt.Snooze(-1)
    w = bitt.Worker(mem, "t", h)
    with pytest.raises(bitt.InvalidArgument, match="unknown event 'done'"):
        w.on("done", print)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        w.stop(deadline=1)  # type: ignore[call-arg]
    with pytest.raises(bitt.InvalidArgument, match="timeout"):
        w.stop(-1)
    assert w.stop() == ZERO
    assert w.stop(1) == ZERO  # again: the same stop, done


def test_a_bad_topic_is_reported_and_stops_the_worker(mem):
    errs = Errors()
    w = bitt.Worker(mem, "", lambda m, t: None, on_error=errs)
    until(lambda: len(errs) == 1, "the error")
    assert isinstance(errs[0], bitt.InvalidArgument), repr(errs[0])
    assert w.stop().claimed == 0
    assert "stopped" in repr(w)


def test_ack_and_completed(store):
    for i in range(5):
        store.queue.enqueue("ack", {"i": i})
    done, seen, errs = [], [], Errors()

    def h(m, tok):
        assert isinstance(tok, bitt.CancelToken) and not tok.cancelled
        seen.append(m.value["i"])
        return m.value["i"] * 10
    w = bitt.Worker(store, "ack", h, concurrency=2, wait=0.1, on_error=errs,
                    on_completed=lambda m, r: done.append((m.value["i"], r)))
    until(lambda: len(done) == 5, "five completed")
    c = w.stop()
    assert (c.claimed, c.completed, c.failed, c.running) == (5, 5, 0, 0)
    assert sorted(done) == [(0, 0), (1, 10), (2, 20), (3, 30), (4, 40)]
    st = store.queue.stats("ack")
    assert (st.pending, st.delayed, st.processing, st.dead) == (0, 0, 0, 0)
    assert errs == []


def test_a_raise_is_nacked_with_its_text_and_dead_after_the_last_attempt(store):
    id_ = store.queue.enqueue("nack", "job", max_attempts=2)
    tries, failed, errs = [], [], Errors()

    def h(m, tok):
        tries.append((m.attempts, m.last_error))
        raise ValueError(f"boom {m.attempts}")
    w = bitt.Worker(store, "nack", h, wait=0.1, on_error=errs,
                    on_failed=lambda m, e: failed.append((m.id, str(e))))
    until(lambda: len(failed) == 1, "the first failure")
    st = store.queue.stats("nack")
    assert (st.delayed, st.processing) == (1, 0), "retried after the backoff, not at once"
    store.clock.advance(400)  # past any backoff of the default exp:1000:300000
    until(lambda: len(failed) == 2, "the second failure")
    until(lambda: store.queue.stats("nack").dead == 1, "the dead letter")
    assert tries == [(1, None), (2, "boom 1")]
    assert failed == [(id_, "boom 1"), (id_, "boom 2")]
    (dead,) = store.queue.dead_list("nack")
    assert (dead.id, dead.attempts, dead.last_error) == (id_, 2, "boom 2")
    c = w.stop()
    assert (c.claimed, c.completed, c.failed) == (2, 0, 2)
    assert errs == []


def test_snooze_raised_or_returned_uses_no_attempt(store):
    store.queue.enqueue("snooze", "job", max_attempts=1)
    tries, errs = [], Errors()
    done = threading.Event()

    def h(m, tok):
        tries.append(m.attempts)
        if len(tries) == 1:
            raise bitt.Snooze(5)
        if len(tries) == 2:
            return bitt.Snooze()  # at once
        done.set()
        return "ok"
    w = bitt.Worker(store, "snooze", h, wait=0.1, on_error=errs)
    until(lambda: w.counters.snoozed == 1, "the first snooze")
    until(lambda: store.queue.stats("snooze").delayed == 1, "delayed by 5 s")
    store.clock.advance(5)
    until(done.is_set, "the third delivery")
    until(lambda: w.counters.completed == 1, "completed")
    # max_attempts 1: had a snooze used an attempt, the third delivery would not have come.
    assert tries == [1, 1, 1]
    c = w.stop()
    assert (c.claimed, c.snoozed, c.completed, c.failed) == (3, 2, 1, 0)
    assert errs == []


def test_concurrency_n_runs_n_at_once_never_more(store):
    for i in range(8):
        store.queue.enqueue("conc", i)
    lock = threading.Lock()
    gates = []
    state = {"now": 0, "most": 0}

    def h(m, tok):
        g = threading.Event()
        with lock:
            state["now"] += 1
            state["most"] = max(state["most"], state["now"])
            gates.append(g)
        g.wait()
        with lock:
            state["now"] -= 1
    errs = Errors()
    w = bitt.Worker(store, "conc", h, concurrency=3, lease=LONG, wait=0.1, on_error=errs)
    until(lambda: len(gates) == 3, "three handlers running")
    assert w.counters.running == 3
    assert w.counters.claimed == 3, "no prefetch: nothing claimed beyond the handlers"
    assert store.queue.stats("conc").processing == 3
    for k in range(8):
        gates[k].set()
        until(lambda: w.counters.completed == k + 1, f"completion {k + 1}")
        until(lambda: len(gates) == min(8, k + 4), "the next handler")
        assert w.counters.running <= 3
    assert state["most"] == 3
    c = w.stop()
    assert (c.claimed, c.completed, c.running) == (8, 8, 0)
    assert errs == []


def test_prefetch_is_held_and_given_back_unseen_at_stop(store):
    for i in range(10):
        store.queue.enqueue("pre", i)
    gates, started, errs = [], [], Errors()

    def h(m, tok):
        started.append(m.value)
        g = threading.Event()
        gates.append(g)
        g.wait()
        return "done"
    w = bitt.Worker(store, "pre", h, concurrency=2, prefetch=3, lease=LONG, wait=0.1,
                    on_error=errs)
    until(lambda: len(gates) == 2 and w.counters.claimed == 5, "two running, three prefetched")
    assert store.queue.stats("pre").processing == 5
    assert w.counters.running == 2
    stopped = {}
    stopper = threading.Thread(target=lambda: stopped.update(c=w.stop()))
    stopper.start()
    # The prefetched ones go back while the two handlers still run.
    until(lambda: store.queue.stats("pre").pending == 8, "the prefetched given back")
    assert store.queue.stats("pre").processing == 2
    gates[0].set()
    gates[1].set()
    stopper.join(30)
    c = stopped["c"]
    assert (c.claimed, c.completed, c.released, c.running) == (5, 2, 3, 0)
    assert len(started) == 2
    # None of the eight left used an attempt: each comes at its first.
    rest = store.queue.dequeue("pre", limit=10, lease=LONG)
    assert [m.attempts for m in rest] == [1] * 8
    assert not any(m.value in started for m in rest)
    assert errs == []


class CountingQueue(bitt.Queue):
    """store.queue, with its successful extends counted by a phase."""

    def __init__(self, store):
        super().__init__(store)
        self.phase = 0
        self.renewed = [0, 0, 0]
        self.leases = []

    def extend(self, msg, lease):
        p = self.phase
        self.leases.append(lease)
        super().extend(msg, lease)
        self.renewed[p] += 1


def test_the_heartbeat_keeps_the_lease_of_a_long_handler(store):
    store.queue.enqueue("beat", "long job")
    q = store.queue = CountingQueue(store)
    g = threading.Event()
    running = threading.Event()

    def h(m, tok):
        running.set()
        g.wait()
        return "done"
    errs = Errors()
    w = bitt.Worker(store, "beat", h, lease=1, heartbeat=0.01, wait=0.1, on_error=errs)
    until(running.is_set, "the handler")
    store.clock.advance(0.6)
    q.phase = 1
    until(lambda: q.renewed[1] > 0, "a renewal after 600 ms")
    store.clock.advance(0.6)  # 1200 ms since the claim: past the first lease
    q.phase = 2
    until(lambda: q.renewed[2] > 0, "a renewal after 1200 ms")
    assert store.queue.dequeue("beat", lease=LONG) == [], "still leased to the worker"
    g.set()
    until(lambda: w.counters.completed == 1, "completed")
    c = w.stop()
    assert (c.completed, c.stalled, c.failed) == (1, 0, 0)
    assert store.queue.stats("beat").processing == 0
    assert errs == []


def test_a_lost_lease_is_stalled_the_token_fired_nothing_acked(store):
    id_ = store.queue.enqueue("stall", "job")
    started, stolen_yet = threading.Event(), threading.Event()
    out = {}

    def h(m, tok):
        started.set()
        out["fired"] = tok.wait(30)
        # Held until the test has taken the message: returning ends the job, and
        # the worker would claim the message again before the test could.
        stolen_yet.wait(30)
        return "late"
    stalled, errs = [], Errors()
    w = bitt.Worker(store, "stall", h, lease=1, heartbeat=0.01, wait=0.1, on_error=errs,
                    on_stalled=lambda m: stalled.append(m.id))
    until(started.is_set, "the handler")
    store.clock.advance(2)  # past the lease: every renewal from now on is refused
    (stolen,) = store.queue.dequeue("stall", lease=LONG)
    assert (stolen.id, stolen.attempts) == (id_, 2)
    stolen_yet.set()
    until(lambda: len(stalled) == 1, "the stall")
    until(lambda: "fired" in out and w.counters.running == 0, "the handler returned")
    assert out["fired"] is True
    store.queue.ack(stolen)  # the worker acked nothing: the thief's delivery is intact
    c = w.stop()
    assert (c.claimed, c.stalled, c.completed, c.failed) == (1, 1, 0, 0)
    assert stalled == [id_]
    assert errs == []


def test_stops_deadline_gives_back_a_stuck_handler_its_late_result_ignored(store):
    store.queue.enqueue("deadline", "job")
    started, g, returned = threading.Event(), threading.Event(), threading.Event()
    toks = []

    def h(m, tok):
        toks.append(tok)
        started.set()
        g.wait()  # ignores its token
        returned.set()
        raise RuntimeError("too late to count")
    errs = Errors()
    w = bitt.Worker(store, "deadline", h, lease=LONG, wait=0.1, on_error=errs)
    until(started.is_set, "the handler")
    c = w.stop(timeout=0.001)
    assert (c.claimed, c.released, c.completed, c.failed, c.running) == (1, 1, 0, 0, 0)
    assert toks[0].cancelled
    # Given back unseen: the next delivery is at its first attempt.
    (again,) = store.queue.dequeue("deadline", lease=LONG)
    assert (again.attempts, again.last_error) == (1, None)
    g.set()
    until(returned.is_set, "the late handler")
    store.queue.ack(again)
    assert w.counters == bitt.WorkerCounters(1, 0, 0, 0, 0, 1, 0)
    assert errs == []


def test_hooks_that_raise_go_to_the_error_hook_then_the_log(mem, caplog):
    for i in range(4):
        mem.queue.enqueue("hooks", i)
    errs = []

    def h(m, tok):
        if m.value % 2:
            raise ValueError(f"odd {m.value}")
        return m.value

    def completed(m, r):
        raise RuntimeError(f"completed hook {m.value}")

    def failed(m, e):
        raise RuntimeError(f"failed hook {m.value}")
    def on_error(e, m):
        errs.append(str(e))
    w = bitt.Worker(mem, "hooks", h, wait=0.1, on_completed=completed, on_failed=failed,
                    on_error=on_error)
    until(lambda: w.counters.completed == 2 and w.counters.failed == 2, "all four handled")
    assert sorted(errs) == ["completed hook 0", "completed hook 2", "failed hook 1",
                            "failed hook 3"]
    # An error hook that raises, or none at all: the "bitt.worker" log instead.
    w.off("error", on_error)

    def bad(e, m):
        raise RuntimeError("error hook")
    w.on("error", bad)
    with caplog.at_level(logging.ERROR, logger="bitt.worker"):
        mem.queue.enqueue("hooks", 4)
        until(lambda: any("error hook" in r.getMessage() for r in caplog.records), "the log")
        w.off("error", bad)
        mem.queue.enqueue("hooks", 6)
        until(lambda: any("completed hook 6" in r.getMessage() for r in caplog.records),
              "the log, with no error hook")
    assert all(r.name == "bitt.worker" for r in caplog.records)
    c = w.stop()
    assert (c.completed, c.failed) == (4, 2)


class FlakyQueue(bitt.Queue):
    """store.queue, whose first dequeues and the ack of 'first' fail."""

    def __init__(self, store, fails):
        super().__init__(store)
        self.fails = list(fails)
        self.dequeues = 0

    def dequeue(self, *a, **k):
        self.dequeues += 1
        if self.fails:
            raise self.fails.pop(0)
        return super().dequeue(*a, **k)

    def ack_many(self, topic, deliveries):
        ds = list(deliveries)
        if any(d.value == "first" for d in ds):
            raise bitt.BusyError(-8, "busy")
        return super().ack_many(topic, ds)


def test_store_errors_are_reported_a_failed_dequeue_is_retried(mem):
    mem.queue = FlakyQueue(mem, [bitt.BackendError(-7, "connection lost"),
                                 bitt.BusyError(-8, "locked")])
    mem.queue.enqueue("errors", "first")
    seen = []
    w = bitt.Worker(mem, "errors", lambda m, t: None, lease=LONG, wait=0.1,
                    on_error=lambda e, m: seen.append((e.message, m.value if m else None)))
    until(lambda: len(seen) == 3, "three errors")
    assert seen == [("connection lost", None), ("locked", None), ("busy", "first")]
    assert mem.queue.stats("errors").processing == 1, "not acked: it comes back after its lease"
    mem.queue.enqueue("errors", "second")
    until(lambda: w.counters.completed == 1, "the second completed")
    c = w.stop()
    assert (c.claimed, c.completed, c.failed) == (2, 1, 0)


def test_the_backoff_doubles_from_100_ms_to_5_s():
    seq, b = [], 0
    for _ in range(9):
        b = next_backoff(b)
        seq.append(b)
    assert seq == [100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]


@pytest.mark.parametrize("err", [bitt.Unsupported(-13, "no queue here"),
                                 bitt.UsageError(-12, "closed"), KeyError("a bug")])
def test_a_permanent_error_stops_the_worker(mem, err):
    mem.queue = q = FlakyQueue(mem, [err])
    seen = []
    w = bitt.Worker(mem, "p", lambda m, t: None, on_error=lambda e, m: seen.append(e))
    until(lambda: "stopped" in repr(w), "the worker stopped")
    assert seen == [err] and q.dequeues == 1
    assert w.stop() == ZERO


def test_the_stores_lease_by_default_and_store_close_stops_the_worker(tmp_path):
    path = f"{tmp_path}/default-lease.db"
    a = bitt.open(f"sqlite:{path}?queue_lease=900")
    a.clock.set_manual(T0)
    a.queue.enqueue("d", "job")
    q = a.queue = CountingQueue(a)
    toks, errs = [], Errors()

    def h(m, tok):
        toks.append(tok)
        tok.wait()  # ends only when the worker gives the delivery back
    w = bitt.Worker(a, "d", h, heartbeat=0.01, wait=0.1, on_error=errs)
    until(lambda: q.renewed[0] > 0, "a renewal")
    assert q.leases[0].total_seconds() == 0.9
    a.close()  # the worker stops at once: the running delivery given back
    assert toks[0].cancelled
    assert w.counters == bitt.WorkerCounters(1, 0, 0, 0, 0, 1, 0)
    assert errs == []
    with bitt.open(f"sqlite:{path}") as b:
        b.clock.set_manual(T0)  # given back at T0 of the manual clock
        (m,) = b.queue.dequeue("d", lease=LONG)
        assert m.attempts == 1


def test_with_stops_and_a_handler_may_stop_its_own_worker(mem):
    holder = {}

    def h(m, tok):
        holder["c"] = holder["w"].stop()  # from its own thread: does not wait on itself
        return "ok"
    with bitt.Worker(mem, "self", h, wait=0.1) as w:
        holder["w"] = w
        mem.queue.enqueue("self", 1)
        until(lambda: "stopped" in repr(w), "stopped by its handler")
    assert holder["c"].claimed == 1 and w.counters.completed == 1
