"""Smoke test of an installed wheel (run outside the source tree)."""
import os
import tempfile

import bitt

assert "site-packages" in bitt.__file__, bitt.__file__
with tempfile.TemporaryDirectory() as d:
    with bitt.open(f"sqlite:{d}/s.db") as s:
        s.kv.set(("a", 1), {"x": 1})
        assert s.kv.get(("a", 1)).value == {"x": 1}
        assert s.kv.increment("n", 2) == 2
        s.queue.enqueue("q", b"p")
        assert s.queue.dequeue("q")[0].payload == b"p"
for env in ("BITT_TEST_POSTGRES_URL", "BITT_TEST_REDIS_URL"):
    url = os.environ.get(env)
    if url:
        opt = "schema" if "POSTGRES" in env else "prefix"
        with bitt.open(f"{url}{'&' if '?' in url else '?'}{opt}=py_smoke_{os.getpid()}") as s:
            s.kv.set("k", b"v")
            assert s.kv.get("k").value == b"v"
print("smoke ok:", bitt.__version__)
