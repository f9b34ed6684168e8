"""Every case of tests/contract/*.json on every backend, through Python."""
from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid

import pytest

from contract import load_cases, run_case

BACKENDS = ["memory", "sqlite-file", "sqlite-memory", "postgres", "redis"]


def wanted(b: str) -> bool:
    lst = os.environ.get("BITT_TEST_BACKENDS", "")
    if not lst:
        return True
    base = b.split("-")[0]
    return base in lst.split(",") or b in lst.split(",")


CASES = load_cases()
_tmp = tempfile.mkdtemp(prefix="bitt-py-contract-")
atexit.register(shutil.rmtree, _tmp, ignore_errors=True)  # a run leaves nothing behind
_run = uuid.uuid4().hex[:8]


def case_url(backend: str, stem: str, idx: int) -> tuple[str, bool]:
    if backend == "memory":
        return "memory:", False
    if backend == "sqlite-memory":
        return "sqlite::memory:", False
    if backend == "sqlite-file":
        # a lock is waited for however slow the machine (no case is about the wait)
        return f"sqlite:{_tmp}/{stem}_{idx}.db?busy_timeout=600000", True
    env = "BITT_TEST_POSTGRES_URL" if backend == "postgres" else "BITT_TEST_REDIS_URL"
    base = os.environ.get(env)
    if not base:
        pytest.fail(f"{env} is not set (exclude {backend} with BITT_TEST_BACKENDS)")
    opt = "schema" if backend == "postgres" else "prefix"
    sep = "&" if "?" in base else "?"
    return f"{base}{sep}{opt}=py_{_run}_{stem}_{idx}", True


PARAMS = [pytest.param(b, stem, i, case, id=f"{stem}/{case['name']} [{b}]")
          for b in BACKENDS if wanted(b)
          for i, (stem, case) in enumerate(CASES)]


@pytest.mark.parametrize("backend,stem,idx,case", PARAMS)
def test_contract(backend, stem, idx, case):
    url, file_backed = case_url(backend, stem, idx)
    run_case(url, file_backed, case)
