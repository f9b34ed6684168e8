"""What test_worker.py (bitt.Worker) and test_aio_worker.py (bitt.aio.Worker)
share: the backends, fresh URLs, the manual clock's start, and waiting on a
condition. Time is the store's manual clock: the tests advance it and then
wait on a condition (a counter, a handler's start), never on elapsed time;
the bounds are hang guards only."""
from __future__ import annotations

import asyncio
import os
import time
import uuid
from datetime import datetime, timezone

T0 = datetime(2030, 1, 1, tzinfo=timezone.utc)
GUARD = 25.0  # seconds: only ever reached by a hang
LONG = 600  # a lease no test outlives


def _wanted(b: str) -> bool:
    lst = [x for x in os.environ.get("BITT_TEST_BACKENDS", "").split(",") if x]
    return not lst or any(x.split("-")[0] == b for x in lst)


BACKENDS = [b for b in ("memory", "sqlite") if _wanted(b)] + [
    b for b, env in (("postgres", "BITT_TEST_POSTGRES_URL"), ("redis", "BITT_TEST_REDIS_URL"))
    if os.environ.get(env) and _wanted(b)]


def fresh_url(backend: str, tmp_path: object, extra: str = "") -> str:
    """A URL of an empty store of the backend, its own for the test."""
    if backend == "memory":
        return "memory:" + (f"?{extra}" if extra else "")
    if backend == "sqlite":
        return f"sqlite:{tmp_path}/w_{uuid.uuid4().hex[:8]}.db?busy_timeout=600000" + (
            f"&{extra}" if extra else "")
    base = os.environ["BITT_TEST_POSTGRES_URL" if backend == "postgres" else "BITT_TEST_REDIS_URL"]
    opt = "schema" if backend == "postgres" else "prefix"
    url = f"{base}{'&' if '?' in base else '?'}{opt}=py_worker_{uuid.uuid4().hex[:12]}"
    return url + (f"&{extra}" if extra else "")


def until(pred, what: str) -> None:
    """Returns once pred() holds, checked every few ms (a condition, not a
    duration: the bound only turns a hang into a failure naming it)."""
    give = time.monotonic() + GUARD
    while not pred():
        assert time.monotonic() < give, f"never happened: {what}"
        time.sleep(0.005)


async def auntil(pred, what: str) -> None:
    """``until`` for asyncio: pred may be a coroutine function."""
    give = time.monotonic() + GUARD
    while True:
        r = pred()
        if asyncio.iscoroutine(r):
            r = await r
        if r:
            return
        assert time.monotonic() < give, f"never happened: {what}"
        await asyncio.sleep(0.005)
