"""The public API as a typed library's users expect it (issue 22, defects 4
and 5): every public class and method documented, every parameter and
return annotated, no **kwargs, unknown keywords refused at the call,
a useful repr, and a typed example that uses all of it."""
from __future__ import annotations

import asyncio
import inspect
import re
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import bitt
import bitt.aio
from api_walk import callables, public_objects

EXAMPLE = Path(__file__).resolve().parents[2] / "bindings" / "python" / "examples" / "typed_usage.py"


def test_every_public_class_and_method_has_a_docstring():
    missing = [q for q, o in public_objects() if not (o.__doc__ or "").strip()]
    missing += [q for q, fn in callables()
                if not q.rsplit(".", 1)[1].startswith("__") and not (fn.__doc__ or "").strip()]
    assert not missing, f"no docstring: {missing}"


def test_every_parameter_and_return_is_annotated():
    bad = []
    for q, fn in callables():
        sig = inspect.signature(fn)
        if sig.return_annotation is inspect.Signature.empty:
            bad.append(f"{q} -> ?")
        for p in sig.parameters.values():
            if p.name != "self" and p.annotation is inspect.Parameter.empty:
                bad.append(f"{q}({p.name})")
        typing.get_type_hints(fn)  # every annotation resolves
    assert not bad, f"not annotated: {bad}"


def test_no_public_call_takes_kwargs():
    assert not [q for q, fn in callables()
                if any(p.kind is p.VAR_KEYWORD for p in inspect.signature(fn).parameters.values())]


def _instances(s: bitt.Store, a: bitt.aio.Store) -> dict:
    sub = s.pubsub.subscribe("c")
    asub = bitt.aio.Subscription(s.pubsub.subscribe("d"))
    objs = [s, s.kv, s.queue, s.lease, s.outbox, s.pubsub, s.budget, s.schedule, s.clock,
            s.atomic(), sub, s.queue.consume("t"), bitt.CancelToken(),
            a, a.kv, a.queue, a.lease, a.outbox, a.pubsub, a.budget, a.schedule, a.clock,
            a.atomic(), asub, a.queue.consume("t")]
    return {type(o): o for o in objs}


def test_an_unknown_keyword_is_a_type_error_naming_it_at_the_call():
    s = bitt.open("memory:")
    a = bitt.aio.Store(bitt.open("memory:"))
    inst = _instances(s, a)
    tried = 0
    for q, fn in callables():
        params = inspect.signature(fn).parameters.values()
        if not any(p.kind is p.KEYWORD_ONLY for p in params):
            continue  # takes no options
        owner = next((o for t, o in inst.items() if getattr(t, fn.__name__, None) is fn), None)
        args = () if owner is None else (owner,)
        with pytest.raises(TypeError, match="'bogus_option'"):
            fn(*args, bogus_option=1)  # raises before any coroutine is made
        tried += 1
    assert tried >= 20
    s.close()
    asyncio.run(a.close())


def test_repr_of_a_store_names_its_backend_and_state_never_the_url():
    s = bitt.open("memory:")
    assert repr(s) == "<bitt.Store backend='memory' open>"
    s.close()
    assert repr(s) == "<bitt.Store backend='memory' closed>" and s.closed
    a = asyncio.run(bitt.aio.open("sqlite::memory:"))
    assert repr(a) == "<bitt.aio.Store backend='sqlite' open>"
    asyncio.run(a.close())
    import os
    for env in ("BITT_TEST_POSTGRES_URL", "BITT_TEST_REDIS_URL"):
        url = os.environ.get(env)
        if url:
            with bitt.open(url) as srv:
                pw = re.search(r"//[^:/@]*:([^@]*)@", url)
                assert "//" not in repr(srv) and (not pw or pw.group(1) not in repr(srv))


def test_the_typed_example_uses_every_public_name_and_runs():
    text = EXAMPLE.read_text()
    unused = []
    for q, _ in callables():
        name = q.rsplit(".", 1)[1]
        if name.startswith("__"):
            continue
        if not re.search(rf"\b{re.escape(name)}\b", text):
            unused.append(q)
    for mod in (bitt, bitt.aio):
        unused += [n for n in mod.__all__ if not re.search(rf"\b{n}\b", text)]
    assert not unused, f"the typed example does not use: {sorted(set(unused))}"
    r = subprocess.run([sys.executable, str(EXAMPLE)], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
