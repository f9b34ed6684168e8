"""The exception hierarchy of bindings/ERRORS.md: one class per bitt status,
and the argument errors the binding raises before it calls the core."""
from __future__ import annotations

from typing import Dict, Iterable, Type


class Error(Exception):
    """A bitt failure: ``code`` is the negative ``BITT_E*`` status, ``message``
    the core's message (``bitt_error_last()``, read in the failing call), or
    for an argument the binding refuses, the text of bindings/ERRORS.md."""

    code: int = 0
    message: str = ""

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.message} (bitt status {self.code})"


class InvalidArgument(Error, ValueError):
    """BITT_EINVAL (-1): an argument the core (or the binding) refuses."""


class OutOfMemory(Error, MemoryError):
    """BITT_ENOMEM (-2)."""


class TooLarge(Error, ValueError):
    """BITT_ETOOLARGE (-3): a key, value, name or batch over its limit."""


class NotACounter(Error):
    """BITT_ENOTCOUNTER (-4): increment or sum on a value that is not a counter."""


class Overflow(Error, OverflowError):
    """BITT_EOVERFLOW (-5): a counter would leave the int64 range."""


class ConflictError(Error):
    """BITT_ECONFLICT (-6): a check of an atomic commit failed."""


class BackendError(Error):
    """BITT_EBACKEND (-7): the database or server failed."""


class BusyError(Error):
    """BITT_EBUSY (-8): the database stayed locked."""


class SchemaError(Error):
    """BITT_ESCHEMA (-9): the schema is missing, newer, or not bitt's."""


class URLError(Error, ValueError):
    """BITT_EURL (-10): the store URL is malformed or has an unknown option."""


class CursorError(Error, ValueError):
    """BITT_ECURSOR (-11): a list cursor that is not this selection's."""


class UsageError(Error):
    """BITT_EUSAGE (-12): a call out of order (a closed store, no manual clock, ...)."""


class Unsupported(Error):
    """BITT_EUNSUPPORTED (-13): the backend does not do this."""


class StaleToken(Error):
    """BITT_ETOKEN (-14): a delivery token whose lease ended or was acked."""


class LeaseLostError(Error):
    """BITT_ELEASELOST (-15): the lease is held by another owner or epoch."""


class Cancelled(Error):
    """BITT_ECANCELED (-16): a synchronous wait ended by its ``bitt.CancelToken``.
    (In ``bitt.aio`` a cancelled task gets asyncio's own ``CancelledError``.)"""


BY_CODE: Dict[int, Type[Error]] = {
    -1: InvalidArgument, -2: OutOfMemory, -3: TooLarge, -4: NotACounter, -5: Overflow,
    -6: ConflictError, -7: BackendError, -8: BusyError, -9: SchemaError, -10: URLError,
    -11: CursorError, -12: UsageError, -13: Unsupported, -14: StaleToken, -15: LeaseLostError,
    -16: Cancelled,
}


def make_error(code: int, message: str) -> Error:
    """The exception for a status and its message (the extension calls this
    to build what it raises)."""
    return BY_CODE.get(code, Error)(code, message)


# ---- the argument errors of bindings/ERRORS.md (messages exactly as there) ----
def int_range(what: str, n: int, rng: str = "int64") -> InvalidArgument:
    """An integer that cannot reach the C call."""
    return InvalidArgument(-1, f"{what}: integer {n} is outside the {rng} range")


def not_json() -> InvalidArgument:
    """NaN or an infinity inside a JSON value."""
    return InvalidArgument(-1, "value: NaN and infinities are not JSON")


def unknown_option(call: str, name: str, names: Iterable[str]) -> TypeError:
    """An option name the call does not have."""
    return TypeError(f"{call}: unknown option '{name}' (options: {', '.join(names)})")


def bad_type(what: str, obj: object, accepted: str) -> TypeError:
    """A value, key or part of a type the value table does not map."""
    return TypeError(f"{what}: {type(obj).__name__} is not {accepted}")
