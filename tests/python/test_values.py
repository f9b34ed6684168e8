"""bindings/VALUES.md, "Read, then write back": a value read and written back
keeps its kind and its bytes, whichever runtime wrote it (issue 22, defect 1)."""
from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

import pytest

import bitt
from bitt import raw

J, C, B = bitt.KIND_JSON, bitt.KIND_COUNTER, bitt.KIND_BYTES

# (bytes, kind) as another runtime (Node, Go, the CLI) writes them.
FOREIGN = [
    (b"3", J), (b"2", J), (b"-12", J), (b"0", J), (b"-0", J), (b"2.5", J), (b"0.1", J),
    (b"0.00001", J), (b"0.000015", J), (b"1e-7", J), (b"-1.5e-300", J), (b"1e+21", J),
    (b"[1,2]", J), (b'{"a":-0}', J), (b"[[[-0,0.5]]]", J), (b'{"a":1e-7,"b":"1e-07 -0.0"}', J),
    (b"12345678901234567890", J), (b'"text"', J), (b"true", J), (b"null", J),
    (b"3", C), (b"-9223372036854775808", C), (b"9223372036854775807", C),
    (b"3", B), (b"\x00\xff", B), (b'{"a":1}', B),
]


@pytest.mark.parametrize("data,kind", FOREIGN, ids=[f"{k}:{d!r}" for d, k in FOREIGN])
def test_a_value_another_runtime_wrote_keeps_kind_and_bytes(data, kind):
    with bitt.open("memory:") as s:
        raw.bitt_kv_set(s._box, b"k", data, kind, 0)
        e = s.kv.get("k")
        assert e is not None
        s.kv.set("k", e.value)
        got = raw.bitt_kv_get(s._box, b"k")[1]
        assert (got[1], got[2]) == (data, kind)
        # the same through a queue payload and an outbox event
        mid = raw.bittw_queue_enqueue(s._box, "q", data, kind, 0, 0, None)[1]
        (m,) = s.queue.dequeue("q")
        assert m.id == mid
        s.queue.enqueue("q2", m.value)
        (m2,) = s.queue.dequeue("q2")
        assert (m2.payload, m2.kind) == (data, kind)


def test_a_json_integer_reads_as_jsonint_and_arithmetic_gives_plain_ints():
    with bitt.open("memory:") as s:
        raw.bitt_kv_set(s._box, b"n", b"3", J, 0)
        v = s.kv.get("n").value
        assert type(v) is bitt.JSONInt and isinstance(v, int) and v == 3
        assert type(v + 1) is int
        s.kv.set("m", v + 1)  # a new value: a plain int is a counter
        assert s.kv.get("m").kind == C
        s.kv.set("j", bitt.JSONInt(7))
        assert raw.bitt_kv_get(s._box, b"j")[1][1:3] == (b"7", J)
        with pytest.raises(bitt.NotACounter):
            s.kv.increment("n")


def test_json_minus_zero_reads_as_negative_zero_float():
    with bitt.open("memory:") as s:
        raw.bitt_kv_set(s._box, b"z", b"-0", J, 0)
        v = s.kv.get("z").value
        assert isinstance(v, float) and v == 0 and math.copysign(1, v) == -1
        raw.bitt_kv_set(s._box, b"l", b'[-0,0,"-0"]', J, 0)
        lst = s.kv.get("l").value
        assert math.copysign(1, lst[0]) == -1 and type(lst[1]) is int and lst[2] == "-0"


@pytest.mark.parametrize("value,text", [
    (1e-5, b"0.00001"), (1.5e-5, b"0.000015"), (1e-6, b"0.000001"), (1e-7, b"1e-7"),
    (-2.5e-8, b"-2.5e-8"), (1e-100, b"1e-100"), (1e21, b"1e+21"), (0.1, b"0.1"),
    (-0.0, b"-0"), (2.0, b"2.0"), (1e16, b"1e+16"), (0.0001, b"0.0001"),
    ([1e-5, {"x": -0.0}, "1e-05 -0.0"], b'[0.00001,{"x":-0},"1e-05 -0.0"]'),
])
def test_floats_are_written_as_other_runtimes_write_them(value, text):
    with bitt.open("memory:") as s:
        s.kv.set("f", value)
        assert raw.bitt_kv_get(s._box, b"f")[1][1:3] == (text, J)
        back = s.kv.get("f").value
        assert back == value and repr(back) == repr(value)  # floats stay floats


def test_the_rate_limiter_pattern_counts_and_keeps_its_ttl():
    with bitt.open("memory:") as s:
        t0 = datetime(2030, 1, 1, tzinfo=timezone.utc)
        s.clock.set_manual(t0)
        s.kv.set("hits", 0, ttl=60)
        assert s.kv.increment("hits") == 1
        s.clock.advance(30)
        assert s.kv.increment("hits") == 2
        e = s.kv.get("hits")
        assert e.kind == C and e.value == 2 and e.expires_at == t0 + timedelta(seconds=60)
        s.clock.advance(30)
        assert s.kv.get("hits") is None
        assert s.kv.increment("hits") == 1
