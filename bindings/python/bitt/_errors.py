"""The exception hierarchy: one class per bitt status code (bitt.h)."""
from __future__ import annotations


class Error(Exception):
    """A bitt failure: ``code`` is the negative BITT_E* status, ``message``
    is bitt_error_last() read in the same call."""

    code: int = 0

    def __init__(self, code: int, message: str = "") -> None:
        super().__init__(code, message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.message} (bitt status {self.code})"


class InvalidArgument(Error, ValueError):
    pass


class OutOfMemory(Error, MemoryError):
    pass


class TooLarge(Error, ValueError):
    pass


class NotACounter(Error):
    pass


class Overflow(Error, OverflowError):
    pass


class ConflictError(Error):
    pass


class BackendError(Error):
    pass


class BusyError(Error):
    pass


class SchemaError(Error):
    pass


class URLError(Error, ValueError):
    pass


class CursorError(Error, ValueError):
    pass


class UsageError(Error):
    pass


class Unsupported(Error):
    pass


class StaleToken(Error):
    pass


class LeaseLostError(Error):
    pass


BY_CODE = {
    -1: InvalidArgument, -2: OutOfMemory, -3: TooLarge, -4: NotACounter, -5: Overflow,
    -6: ConflictError, -7: BackendError, -8: BusyError, -9: SchemaError, -10: URLError,
    -11: CursorError, -12: UsageError, -13: Unsupported, -14: StaleToken, -15: LeaseLostError,
}


def make_error(code: int, message: str) -> Error:
    """Called by the extension to build the exception it raises."""
    return BY_CODE.get(code, Error)(code, message)
