"""Keys and values: the one table of bindings/VALUES.md, with its rule that a
value read and written back keeps its kind and its bytes."""
from __future__ import annotations

import json
import re
from typing import (TYPE_CHECKING, Any, Callable, Dict, ForwardRef, List, Mapping,
                    Optional, Sequence, Tuple, Union)

from . import raw as _raw
from ._errors import bad_type, not_json

KIND_BYTES = 0
KIND_JSON = 1
KIND_COUNTER = 2


class JSONInt(int):
    """A JSON integer read from the store (``bitt.JSONInt(3)`` is the int 3).

    A plain ``int`` is written as a counter; a ``JSONInt`` is written back as
    the JSON number it was read as, so reading a value another runtime wrote
    and writing it back keeps its kind. Arithmetic gives plain ints."""

    __slots__ = ()


TuplePart = Union[bytes, bytearray, memoryview, str, int, float, bool]
"""One part of a tuple key."""
Key = Union[bytes, bytearray, memoryview, str, Tuple[TuplePart, ...], List[TuplePart]]
"""A key: bytes as is, a str as its UTF-8, a tuple or list through the tuple codec."""
if TYPE_CHECKING:
    JSONIn = Union[None, bool, int, float, str, Sequence["JSONIn"], Mapping[str, "JSONIn"]]
    JSON = Union[None, bool, int, float, str, List["JSON"], Dict[str, "JSON"]]
else:  # the same, with forward references that resolve from any module
    def _here(name: str) -> Any:
        try:
            return ForwardRef(name, module=__name__)
        except TypeError:  # Python < 3.9.7
            return name
    JSONIn = Union[None, bool, int, float, str, Sequence[_here("JSONIn")],
                   Mapping[str, _here("JSONIn")]]
    JSON = Union[None, bool, int, float, str, List[_here("JSON")], Dict[str, _here("JSON")]]
"""JSONIn: a JSON value to write (lists, tuples and dicts of JSON values).
JSON: a JSON value as read back (a top-level integer is a ``JSONInt``)."""
Value = Union[bytes, bytearray, memoryview, JSONIn]
"""A value to write: bytes (BYTES), int (COUNTER; ``JSONInt``: JSON), else JSON."""
Stored = Union[bytes, JSON]
"""A value as read back: bytes (BYTES or an unknown kind), int (COUNTER), or JSON."""

_dumps: Callable[[Any], str] = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_loads = json.loads
_BYTES_LIKE = (bytes, bytearray, memoryview)
_KEY_TYPES = "bytes, str or a tuple"
_VALUE_TYPES = "bytes, int or a JSON value (None, bool, float, str, list, tuple, dict)"


def encode_key(key: Key) -> bytes:
    """The bytes of a key: bytes-like as is; str its UTF-8; tuple or list the
    tuple codec."""
    t = type(key)
    if t is bytes:
        return key  # type: ignore[return-value]
    if t is str:
        return key.encode("utf-8")  # type: ignore[union-attr]
    if t is tuple or t is list:
        return _raw.bittw_tuple_encode(key)
    if isinstance(key, _BYTES_LIKE):
        return bytes(key)
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (tuple, list)):
        return _raw.bittw_tuple_encode(key)
    raise bad_type("key", key, _KEY_TYPES)


def opt_key(key: Optional[Key]) -> Optional[bytes]:
    """``encode_key``, with None as None."""
    return None if key is None else encode_key(key)


def decode_tuple(key: bytes) -> Tuple[TuplePart, ...]:
    """The parts of a tuple-encoded key."""
    return _raw.bittw_tuple_decode(key)


# ---- floats as JSON writes them (ES2015 Number::toString) -----------------------
# Python's repr and ES2015 agree on the digits (both shortest round trip) and
# differ in three spellings: an exponent's leading zero (1e-07 / 1e-7), the
# decimal form ES uses down to 1e-6 where Python goes exponential below 1e-4
# (1e-05 / 0.00001), and a negative zero (-0.0 / -0). Integral floats keep
# Python's spelling (2.0, 1e+16) so that they read back as floats here.
_NUMBER_OR_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:e[-+]\d+)?')


def _es_number(m: re.Match[str]) -> str:
    t = m.group()
    if t == "-0.0":
        return "-0"
    e = t.find("e-")
    if t[0] == '"' or e < 0:
        return t
    sign = "-" if t[0] == "-" else ""
    digits = t[len(sign):e].replace(".", "")
    exp = int(t[e + 1:])  # the exponent of the first digit
    if exp >= -6:  # ES writes 0.000001 .. 0.0001 in decimal
        return f"{sign}0.{'0' * (-exp - 1)}{digits}"
    mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    return f"{sign}{mant}e{exp}"


def _json_text(value: Any) -> str:
    text = _dumps(value)
    # A cheap look first: only an exponent with a leading zero or a -0.0
    # needs respelling (the regex skips strings, where these may appear).
    if "e-0" in text or "-0.0" in text:
        text = _NUMBER_OR_STRING.sub(_es_number, text)
    return text


def _unmapped(value: Any, depth: int = 0) -> Any:
    """The first part of value that JSON does not map (the value itself if none)."""
    if value is None or isinstance(value, (bool, int, float, str)) or depth > 600:
        return None
    if isinstance(value, (list, tuple)):
        for v in value:
            bad = _unmapped(v, depth + 1)
            if bad is not None:
                return bad
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            if not (k is None or isinstance(k, (str, int, float, bool))):
                return k
            bad = _unmapped(v, depth + 1)
            if bad is not None:
                return bad
        return None
    return value


def _json(value: Any) -> Tuple[bytes, int]:
    try:
        return _json_text(value).encode("utf-8", "surrogatepass"), KIND_JSON
    except ValueError as e:
        if "Out of range float" in str(e):
            raise not_json() from None
        raise  # a circular reference
    except TypeError:
        bad = _unmapped(value)
        raise bad_type("value", value if bad is None else bad, _VALUE_TYPES) from None


def encode_value(value: Value) -> Tuple[Union[bytes, bytearray, memoryview], int]:
    """(bytes, kind) for a value, by bindings/VALUES.md."""
    t = type(value)
    if t is bytes:
        return value, KIND_BYTES  # type: ignore[return-value]
    if t is int:
        return str(value).encode("ascii"), KIND_COUNTER
    if isinstance(value, _BYTES_LIKE):
        return value, KIND_BYTES
    if t is JSONInt or t is bool or value is None or isinstance(value, (float, str, list, tuple, dict)):
        return _json(value)
    if isinstance(value, int):
        return str(int(value)).encode("ascii"), KIND_COUNTER
    raise bad_type("value", value, _VALUE_TYPES)


def _int_or_neg_zero(text: str) -> Union[int, float]:
    return -0.0 if text == "-0" else int(text)


def decode_value(data: bytes, kind: int) -> Stored:
    """The value for stored (bytes, kind): bytes, an int (counter), or the JSON
    value (a top-level JSON integer as ``JSONInt``, ``-0`` as ``-0.0``)."""
    if kind == KIND_BYTES:
        return data
    if kind == KIND_COUNTER:
        return int(data)
    if kind == KIND_JSON:
        v = _loads(data) if b"-0" not in data else _loads(data, parse_int=_int_or_neg_zero)
        return JSONInt(v) if type(v) is int else v
    return data
