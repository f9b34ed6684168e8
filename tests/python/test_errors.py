"""bindings/ERRORS.md, read from the file: every row of both tables holds for
the Python binding (issue 22, defect 3). A row this test does not know
fails it, so the table and the binding cannot drift apart."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

import bitt
from bitt import raw

TABLE = Path(__file__).resolve().parents[2] / "bindings" / "ERRORS.md"


def rows(after: str):
    """The rows (lists of cells, backticks dropped) of the table after a heading."""
    text = TABLE.read_text()
    part = text[text.index(after):]
    out = []
    for line in part.splitlines()[1:]:
        if line.startswith("#"):
            break
        if line.startswith("|") and not re.match(r"\|\s*-", line):
            out.append([c.strip().strip("`") for c in line.strip("|").split("|")])
    return out[1:]  # without the header


STATUS_ROWS = rows("## Statuses")
ARG_ROWS = rows("## Arguments refused by a binding")


def test_the_tables_were_read():
    assert len(STATUS_ROWS) >= 16 and len(ARG_ROWS) >= 4


@pytest.mark.parametrize("row", STATUS_ROWS, ids=[r[0] for r in STATUS_ROWS])
def test_every_status_maps_to_its_class(row):
    _, number, py_name = row[0], int(row[1]), row[2]
    cls = getattr(bitt, py_name)
    assert issubclass(cls, bitt.Error) and py_name in bitt.__all__
    e = bitt.make_error(number, "the core's words")
    assert type(e) is cls and e.code == number and e.message == "the core's words"
    assert "the core's words" in str(e)


def _closed():
    s = bitt.open("memory:")
    s.close()
    return s


def _cursor(s):
    s.kv.page(cursor="garbage")


def _stale(s):
    s.queue.enqueue("t", b"x")
    (m,) = s.queue.dequeue("t")
    s.queue.ack(m)
    s.queue.ack(m)


def _fired(s):
    tok = bitt.CancelToken()
    tok.cancel()
    s.queue.dequeue("t", cancel=tok)


def _conflict(s):
    with s.atomic() as tx:
        tx.check("nope", 99).set("nope", b"x")


def _lease_lost(s):
    s.lease.release("L", "me", 7)


# The statuses a call on memory: can give, through the raising path of the
# extension (bittw_raise -> make_error), with the core's own message.
REAL = {
    -1: lambda s: raw.bitt_kv_set(s._box, b"k", b"v", 7, 0),
    -3: lambda s: s.kv.set(b"k" * 5000, b"v"),
    -4: lambda s: (s.kv.set("j", "x"), s.kv.increment("j")),
    -5: lambda s: (s.kv.set("c", 2**63 - 1), s.kv.increment("c")),
    -6: _conflict,
    -10: lambda s: bitt.open("nope:"),
    -11: _cursor,
    -12: lambda s: _closed().kv.get("k"),
    -14: _stale,
    -15: _lease_lost,
    -16: _fired,
}


@pytest.mark.parametrize("code", sorted(REAL), ids=str)
def test_a_real_failure_raises_the_class_of_the_table_with_the_core_message(code):
    want = next(getattr(bitt, r[2]) for r in STATUS_ROWS if int(r[1]) == code)
    with bitt.open("memory:") as s:
        with pytest.raises(bitt.Error) as ei:
            REAL[code](s)
    assert type(ei.value) is want and ei.value.code == code and ei.value.message


# ---- the argument rows: real calls, the exact message of the table ---------------
def _filled(template: str, **kw: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: kw[m.group(1)], template)


def _int_range(row):
    msg = row[4]
    with bitt.open("memory:") as s:
        for call, what, n in [
            (lambda: s.kv.increment("c", 2**63), "delta", 2**63),
            (lambda: s.atomic().sum("c", -(2**63) - 1), "delta", -(2**63) - 1),
            (lambda: s.kv.set(("a", 2**63), b"x"), "tuple part 1", 2**63),
            (lambda: s.kv.get((2**64,)), "tuple part 0", 2**64),
        ]:
            with pytest.raises(bitt.InvalidArgument) as ei:
                call()
            assert ei.value.message == _filled(msg, what=what, n=str(n)) and ei.value.code == -1
        # a counter value is text to the core, which checks it (not the binding)
        with pytest.raises(bitt.InvalidArgument) as ei:
            s.kv.set("c", 2**63)
        assert "int64" in ei.value.message and raw.bitt_error_last_code() == -1


def _nan(row):
    msg = row[4]
    with bitt.open("memory:") as s:
        for call in [lambda: s.kv.set("k", float("nan")), lambda: s.kv.set("k", [float("inf")]),
                     lambda: s.queue.enqueue("t", {"x": -float("inf")}),
                     lambda: s.outbox.append("o", float("nan"))]:
            with pytest.raises(bitt.InvalidArgument) as ei:
                call()
            assert ei.value.message == msg and ei.value.code == -1


def _option(row):
    # Python takes options as keyword arguments: Python's own TypeError names
    # the keyword (test_options.py checks every public call that takes one).
    with bitt.open("memory:") as s:
        with pytest.raises(TypeError, match="'TTL'"):
            s.kv.set("k", 1, TTL=5)  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="'dedupe'"):
            s.queue.enqueue("t", b"x", dedupe="k")  # type: ignore[call-arg]


def _type(row):
    pattern = re.escape(row[4]).replace(r"\{what\}", "(?P<what>.+)").replace(
        r"\{type\}", "(?P<type>\\w+)").replace(r"\{accepted\}", "(?P<accepted>.+)")
    with bitt.open("memory:") as s:
        for call, what, typ in [
            (lambda: s.kv.set("k", object()), "value", "object"),
            (lambda: s.kv.set("k", [1, {2, 3}]), "value", "set"),
            (lambda: s.kv.get(5.5), "key", "float"),
            (lambda: s.kv.get(("a", None)), "tuple part 1", "NoneType"),
            (lambda: s.kv.set("k", 1, ttl="60"), "ttl", "str"),
            (lambda: s.queue.enqueue(5, b"x"), "topic", "int"),
            (lambda: s.queue.dequeue("t", cancel=1), "cancel", "int"),  # type: ignore[arg-type]
        ]:
            with pytest.raises(TypeError) as ei:
                call()
            m = re.fullmatch(pattern, str(ei.value))
            assert m, str(ei.value)
            assert (m.group("what"), m.group("type")) == (what, typ)


ARG_CHECKS = {"beyond int64": _int_range, "NaN": _nan, "option name": _option,
              "of a type": _type}


@pytest.mark.parametrize("row", ARG_ROWS, ids=[r[0][:30] for r in ARG_ROWS])
def test_every_argument_row(row):
    checks = [f for k, f in ARG_CHECKS.items() if k in row[0]]
    assert len(checks) == 1, f"a row this test does not know: {row[0]!r}"
    py = row[1]
    assert py in ("InvalidArgument", "TypeError")
    checks[0](row)
