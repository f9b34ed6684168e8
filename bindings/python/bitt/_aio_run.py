"""How bitt.aio runs the synchronous calls: off the event loop, and never
leaving one running after a cancelled await has returned."""
from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
from typing import Any, Callable, Optional, TypeVar

from ._cancel import CancelToken

T = TypeVar("T")


async def _settled(fut: asyncio.Future[Any]) -> None:
    """Waits until fut is done, whatever cancellations come meanwhile."""
    while not fut.done():
        try:
            await asyncio.shield(fut)
        except asyncio.CancelledError:
            continue
        except BaseException:
            return


async def call(fn: Callable[..., T], *args: Any) -> T:
    """fn(*args) on the loop's default executor. Cancelled, the await waits
    for the call to end (a short one: no wait) before CancelledError."""
    loop = asyncio.get_running_loop()
    ctx = contextvars.copy_context()
    fut = loop.run_in_executor(None, functools.partial(ctx.run, fn, *args))
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        await _settled(fut)
        raise


def _settle(fut: asyncio.Future[T], res: Optional[T], exc: Optional[BaseException]) -> None:
    if fut.done():
        return
    if exc is not None:
        fut.set_exception(exc)
    else:
        fut.set_result(res)  # type: ignore[arg-type]


async def wait(fn: Callable[[CancelToken], T],
               give_back: Optional[Callable[[T], None]] = None) -> T:
    """A waiting call, fn(token), on a thread of its own (a wait may last: it
    must not hold one of the default executor's few threads). When the
    awaiting task is cancelled, the token fires, the call ends within a wait
    slice (bitt.Cancelled, having taken nothing), and only then does
    CancelledError go on; a result that came in just before the token fired
    goes to give_back (in a thread) instead of being lost."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[T] = loop.create_future()
    token = CancelToken()
    ctx = contextvars.copy_context()

    def run() -> None:
        res: Optional[T] = None
        exc: Optional[BaseException] = None
        try:
            res = ctx.run(fn, token)
        except BaseException as e:  # noqa: BLE001 - handed to the awaiting task
            exc = e
        try:
            loop.call_soon_threadsafe(_settle, fut, res, exc)
        except RuntimeError:  # the loop is closed: nobody awaits any more
            pass

    thread = threading.Thread(target=run, name="bitt-aio-wait", daemon=True)
    thread.start()
    try:
        return await asyncio.shield(fut)
    except asyncio.CancelledError:
        token.cancel()
        await _settled(fut)
        thread.join()  # it has handed its outcome over: only its exit is left
        if give_back is not None and not fut.cancelled() and fut.exception() is None:
            back = loop.run_in_executor(None, give_back, fut.result())
            await _settled(back)
        raise
