"""CancelToken: the Python face of bitt_cancel (bitt.h, "cancellation")."""
from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Any, Iterator, List, Optional

from . import raw as _raw


class CancelToken:
    """Ends the synchronous waits it is passed to (``cancel=``): after
    ``cancel()``, from any thread, a wait using it raises ``bitt.Cancelled``
    within one wait slice (at once on memory and SQLite) and has taken
    nothing. A token stays cancelled (every later call with it raises at
    once) until ``reset()``. One token may serve many calls at once."""

    __slots__ = ("_h", "_lock", "_links", "_fired", "__weakref__")

    def __init__(self) -> None:
        self._h: Any = _raw.bitt_cancel_new()[1]
        self._lock = threading.Lock()
        self._links: List[CancelToken] = []
        self._fired = threading.Event()  # for wait(): code of one's own waiting on the token

    def cancel(self) -> None:
        """Fires the token: every wait using it ends."""
        with self._lock:
            _raw.bitt_cancel_fire(self._h)
            self._fired.set()
            links = list(self._links)
        for t in links:
            t.cancel()

    @property
    def cancelled(self) -> bool:
        """Whether the token was fired (and not reset since)."""
        return bool(_raw.bitt_cancel_fired(self._h))

    def wait(self, timeout: Optional[float] = None) -> bool:
        """Blocks until the token fires, or ``timeout`` seconds (None: no
        limit) have passed: whether it fired (as ``threading.Event.wait``)."""
        return self._fired.wait(timeout)

    def reset(self) -> None:
        """Makes the token usable again (after every call that it ended has
        returned)."""
        with self._lock:
            _raw.bitt_cancel_reset(self._h)
            self._fired.clear()

    def __repr__(self) -> str:
        return f"<bitt.CancelToken {'cancelled' if self.cancelled else 'armed'}>"

    def _link(self, other: CancelToken) -> None:
        """Fires ``other`` when this token fires (at once if it has)."""
        with self._lock:
            if not _raw.bitt_cancel_fired(self._h):
                self._links.append(other)
                return
        other.cancel()

    def _unlink(self, other: CancelToken) -> None:
        with self._lock:
            try:
                self._links.remove(other)
            except ValueError:
                pass

    def __del__(self) -> None:
        h, self._h = getattr(self, "_h", None), None
        if h is not None:
            _raw.bitt_cancel_free(h)


@contextmanager
def either(a: Optional[CancelToken], b: Optional[CancelToken]) -> Iterator[Optional[CancelToken]]:
    """One token that fires when either of two fires (a wait takes one)."""
    if a is None or b is None:
        yield a if b is None else b
        return
    both = CancelToken()
    a._link(both)
    b._link(both)
    try:
        yield both
    finally:
        a._unlink(both)
        b._unlink(both)


def check(cancel: Optional[CancelToken]) -> Any:
    """The native handle of a ``cancel=`` argument (None for none)."""
    if cancel is None:
        return None
    if not isinstance(cancel, CancelToken):
        raise TypeError(f"cancel: {type(cancel).__name__} is not a bitt.CancelToken")
    return cancel._h
