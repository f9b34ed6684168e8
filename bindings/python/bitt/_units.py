"""Units: every duration of the Python API is in seconds (an int, a float or
a ``datetime.timedelta``), every absolute time a timezone-aware ``datetime``
(read back in UTC); the core counts milliseconds.

The one rounding rule: a duration or time finer than a millisecond is
rounded up to the next whole millisecond, a float being first taken to the
nearest microsecond as ``timedelta(seconds=x)`` does (a positive one never
to 0). So 0.1 s is 100 ms, 0.0004 s and 1e-9 s are 1 ms (a positive TTL or
wait never becomes "none" or "no wait"), and 1.2345 s is 1235 ms; ints and
timedeltas in whole milliseconds pass exactly, with no float in between.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Optional, Union

from ._errors import InvalidArgument, bad_type, int_range

Duration = Union[int, float, timedelta]
"""Seconds: an int, a float or a ``datetime.timedelta``."""

UTC = timezone.utc
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_INT64 = 1 << 63
# datetime's own range, in ms since the epoch: later core times (the end of
# time, INT64_MAX) read as datetime.max, earlier ones as datetime.min.
_DT_MAX = datetime.max.replace(tzinfo=UTC)
_DT_MIN = datetime.min.replace(tzinfo=UTC)
_MS_MAX = (_DT_MAX - EPOCH) // timedelta(milliseconds=1)
_MS_MIN = -((EPOCH - _DT_MIN) // timedelta(milliseconds=1))
_DURATION = "a number of seconds or a timedelta"


def _us_to_ms(us: int, what: str) -> int:
    ms = -(-us // 1000)
    if not -_INT64 <= ms < _INT64:
        raise int_range(f"{what} (ms)", ms)
    return ms


def ms(d: Duration, what: str) -> int:
    """Seconds (int, float, timedelta) as whole ms, by the rule above."""
    if type(d) is int:
        m: int = d * 1000
        if not -_INT64 <= m < _INT64:
            raise int_range(f"{what} (ms)", m)
        return m
    if isinstance(d, float):
        try:
            td = timedelta(seconds=d)
        except (OverflowError, ValueError):
            raise InvalidArgument(-1, f"{what}: {d!r} seconds is not a duration bitt can "
                                      f"hold (finite, within the int64 range of ms)") from None
        if d > 0 and not td:  # below half a microsecond: still more than none
            return 1
        d = td
    elif isinstance(d, int) and not isinstance(d, bool):
        return ms(int(d), what)
    if isinstance(d, timedelta):
        return _us_to_ms((d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds, what)
    raise bad_type(what, d, _DURATION)


def opt_ms(d: Optional[Duration], what: str, none: int = 0) -> int:
    """``ms``, with None as ``none``."""
    return none if d is None else ms(d, what)


def time_ms(t: datetime, what: str) -> int:
    """An aware datetime as ms since the epoch (rounded up to a whole ms)."""
    if not isinstance(t, datetime):
        raise bad_type(what, t, "a timezone-aware datetime")
    if t.tzinfo is None or t.utcoffset() is None:
        raise TypeError(f"{what}: a naive datetime is not a time bitt can place; give a "
                        "timezone-aware one (datetime.now(timezone.utc))")
    d = t - EPOCH
    return _us_to_ms((d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds, what)


def opt_time_ms(t: Optional[datetime], what: str) -> int:
    """``time_ms``, with None as 0 (none)."""
    return 0 if t is None else time_ms(t, what)


def time_of(m: int) -> datetime:
    """ms since the epoch as an aware UTC datetime (exact; saturated at
    datetime's range)."""
    if _MS_MIN <= m <= _MS_MAX:
        return EPOCH + timedelta(0, 0, 0, m)
    return _DT_MAX if m > 0 else _DT_MIN


def opt_time_of(m: int) -> Optional[datetime]:
    """``time_of``, with 0 (none) as None."""
    return None if m == 0 else time_of(m)


def seconds_of(m: int) -> float:
    """ms as float seconds."""
    return m / 1000
