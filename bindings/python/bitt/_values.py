"""Keys and values: the one table of bindings/VALUES.md."""
from __future__ import annotations

import json
from typing import Any

from . import raw as _raw

KIND_BYTES = 0
KIND_JSON = 1
KIND_COUNTER = 2

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode
_BYTES_LIKE = (bytes, bytearray, memoryview)


def encode_key(key: Any) -> bytes:
    """bytes-like: as is; str: its UTF-8; tuple or list: the tuple codec."""
    t = type(key)
    if t is bytes:
        return key
    if t is str:
        return key.encode("utf-8")
    if t is tuple or t is list:
        return _raw.bittw_tuple_encode(key)
    if isinstance(key, _BYTES_LIKE):
        return bytes(key)
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (tuple, list)):
        return _raw.bittw_tuple_encode(key)
    raise TypeError(f"a key must be bytes, str or a tuple, not {t.__name__}")


def decode_tuple(key: bytes) -> tuple:
    """The parts of a tuple-encoded key."""
    return _raw.bittw_tuple_decode(key)


def encode_value(value: Any) -> tuple[Any, int]:
    """(bytes, kind) for a Python value."""
    t = type(value)
    if t is bytes:
        return value, KIND_BYTES
    if t is int:
        return str(value).encode("ascii"), KIND_COUNTER
    if isinstance(value, _BYTES_LIKE):
        return value, KIND_BYTES
    if t is bool or value is None or isinstance(value, (float, str, list, tuple, dict)):
        try:
            return _dumps(value).encode("utf-8"), KIND_JSON
        except (TypeError, ValueError) as e:
            raise TypeError(f"value is not JSON-serialisable: {e}") from None
    if isinstance(value, int):
        return str(int(value)).encode("ascii"), KIND_COUNTER
    raise TypeError(f"a value must be bytes, int, or a JSON value, not {t.__name__}")


def decode_value(data: bytes, kind: int) -> Any:
    if kind == KIND_BYTES:
        return data
    if kind == KIND_COUNTER:
        return int(data)
    if kind == KIND_JSON:
        return json.loads(data)
    return data
