"""The public API of bitt and bitt.aio, walked: every class, function,
method and property a user can reach by a public name."""
from __future__ import annotations

import inspect
import typing

import bitt
import bitt.aio

MODULES = [bitt, bitt.aio]
# NamedTuple's and Exception's own members are theirs, not bitt's.
FOREIGN = set(dir(tuple)) | set(dir(Exception)) | {"_make", "_replace", "_asdict", "_fields",
                                                   "_field_defaults"}


def public_objects():
    """(qualified name, object) for every public class and function."""
    for mod in MODULES:
        for name in mod.__all__:
            obj = getattr(mod, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                yield f"{mod.__name__}.{name}", obj


def is_alias(obj) -> bool:
    return typing.get_origin(obj) is not None


def members(cls):
    """(name, function or property) defined by bitt for a class: public ones
    and the dunders a user calls through syntax."""
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] != "bitt":
            continue
        for name, attr in vars(klass).items():
            if name.startswith("_") and name not in ("__iter__", "__next__", "__aiter__",
                                                     "__anext__", "__enter__", "__exit__",
                                                     "__aenter__", "__aexit__"):
                continue
            if name in FOREIGN and not name.startswith("__"):
                continue
            if inspect.isfunction(attr) or isinstance(attr, property):
                yield name, attr


def callables():
    """(qualified name, function) for every public function and method."""
    seen = set()
    for qual, obj in public_objects():
        if inspect.isfunction(obj):
            yield qual, obj
            continue
        for name, attr in members(obj):
            fn = attr.fget if isinstance(attr, property) else attr
            if id(fn) in seen or fn is None:
                continue
            seen.add(id(fn))
            yield f"{qual}.{name}", fn
