"""bitt for asyncio: the same API, every call run in a worker thread
(asyncio.to_thread), so the event loop never blocks on a database.

    async with await bitt.aio.open("sqlite:app.db") as store:
        await store.kv.set("k", 1)
        async for entry in store.kv.list(prefix="p/"):
            ...
"""
from __future__ import annotations

import asyncio
import functools
from typing import Any, AsyncIterator

import bitt as _bitt


class _Async:
    """Wraps a namespace (store.kv, store.queue, …): methods become coroutines."""

    def __init__(self, target: Any) -> None:
        self._t = target

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._t, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        async def call(*args: Any, **kwargs: Any) -> Any:
            return await asyncio.to_thread(attr, *args, **kwargs)

        return call


class _AsyncKV(_Async):
    async def list(self, prefix: Any = None, **kw: Any) -> AsyncIterator[_bitt.Entry]:  # type: ignore[override]
        cursor = kw.pop("cursor", None)
        while True:
            entries, cursor = await asyncio.to_thread(self._t.page, prefix, cursor=cursor, **kw)
            for e in entries:
                yield e
            if cursor is None:
                return


class _AsyncAtomic:
    def __init__(self, store: _bitt.Store) -> None:
        self._store = store
        self._tx: Any = None

    async def __aenter__(self) -> _bitt.Atomic:
        self._tx = await asyncio.to_thread(self._store.atomic)
        return self._tx  # adding actions is in-memory work: plain calls

    async def __aexit__(self, et: Any, ev: Any, tb: Any) -> None:
        await asyncio.to_thread(self._tx.__exit__, et, ev, tb)


class Store:
    def __init__(self, store: _bitt.Store) -> None:
        self.sync = store
        self.kv = _AsyncKV(store.kv)
        self.queue = _Async(store.queue)
        self.lease = _Async(store.lease)
        self.outbox = _Async(store.outbox)
        self.pubsub = _Async(store.pubsub)
        self.budget = _Async(store.budget)
        self.schedule = _Async(store.schedule)
        self.clock = _Async(store.clock)

    def atomic(self) -> _AsyncAtomic:
        return _AsyncAtomic(self.sync)

    async def close(self) -> None:
        await asyncio.to_thread(self.sync.close)

    async def __aenter__(self) -> "Store":
        return self

    async def __aexit__(self, *a: Any) -> None:
        await self.close()


async def open(url: str) -> Store:  # noqa: A001
    return Store(await asyncio.to_thread(_bitt.open, url))
