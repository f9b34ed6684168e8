"""bitt from Python against the usual Python clients, in one run:
  - bitt get/set on SQLite vs the standard library's sqlite3 doing the same SQL
    work (set: BEGIN IMMEDIATE, take a versionstamp, upsert, COMMIT; get: select
    by key; WAL, synchronous=NORMAL), plus a bare autocommit upsert for reference;
  - bitt on Redis vs redis-py GET/SET (needs BITT_TEST_REDIS_URL or --redis).
Prints ops/s and the ratios (bitt / reference; > 1 means bitt is faster).

    python bench/python_bench.py [--n 20000] [--redis redis://127.0.0.1:6379/0]
"""
from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time

import bitt


def rate(fn, n):
    t0 = time.perf_counter()
    fn(n)
    return n / (time.perf_counter() - t0)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--redis", default=os.environ.get("BITT_TEST_REDIS_URL"))
    a = ap.parse_args()
    n = a.n
    val = b"x" * 16
    keys = [f"key:{i}".encode() for i in range(1000)]
    rows = []
    with tempfile.TemporaryDirectory() as d:
        # --- bitt on SQLite
        with bitt.open(f"sqlite:{d}/bitt.db") as s:
            kv = s.kv

            def bset(n):
                for i in range(n):
                    kv.set(keys[i % 1000], val)

            def bget(n):
                for i in range(n):
                    kv.get(keys[i % 1000])
            bs, bg = rate(bset, n), rate(bget, n)
        # --- sqlite3, same SQL work
        c = sqlite3.connect(f"{d}/ref.db", isolation_level=None)
        c.execute("PRAGMA journal_mode=WAL")
        c.execute("PRAGMA synchronous=NORMAL")
        c.execute("CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB NOT NULL, kind INTEGER NOT NULL,"
                  " version INTEGER NOT NULL, expires_at INTEGER NOT NULL) WITHOUT ROWID")
        c.execute("CREATE TABLE meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID")
        c.execute("INSERT INTO meta VALUES ('versionstamp', 0)")
        upsert = ("INSERT INTO kv VALUES (?,?,0,?,0) ON CONFLICT(key) DO UPDATE SET "
                  "value=excluded.value, kind=excluded.kind, version=excluded.version, "
                  "expires_at=excluded.expires_at")
        ver = [0]

        def sset(n):
            # What bitt's set does: one write transaction that takes a
            # store-wide versionstamp and upserts the row under it.
            for i in range(n):
                c.execute("BEGIN IMMEDIATE")
                v = c.execute("UPDATE meta SET value = value + 1 WHERE name = 'versionstamp' "
                              "RETURNING value").fetchone()[0]
                c.execute(upsert, (keys[i % 1000], val, v))
                c.execute("COMMIT")

        def sset_bare(n):
            # Less than bitt does (no versionstamp, no explicit transaction),
            # shown for reference only.
            for i in range(n):
                ver[0] += 1
                c.execute(upsert, (keys[i % 1000], val, ver[0]))

        def sget(n):
            for i in range(n):
                c.execute("SELECT value, kind, version, expires_at FROM kv WHERE key=?",
                          (keys[i % 1000],)).fetchone()
        ss, sg, sb = rate(sset, n), rate(sget, n), rate(sset_bare, n)
        c.close()
    rows += [("sqlite set", bs, "sqlite3", ss), ("sqlite get", bg, "sqlite3", sg),
             ("sqlite set", bs, "sqlite3 bare upsert", sb)]

    if a.redis:
        try:
            import redis  # type: ignore
        except ImportError:
            redis = None
        if redis is None:
            print("redis-py is not installed: pip install redis")
        else:
            pre = f"bench_{os.getpid()}"
            with bitt.open(f"{a.redis}{'&' if '?' in a.redis else '?'}prefix={pre}") as s:
                kv = s.kv

                def rbset(n):
                    for i in range(n):
                        kv.set(keys[i % 1000], val)

                def rbget(n):
                    for i in range(n):
                        kv.get(keys[i % 1000])
                rbs, rbg = rate(rbset, n), rate(rbget, n)
            r = redis.Redis.from_url(a.redis)

            def rset(n):
                for i in range(n):
                    r.set(b"ref:" + keys[i % 1000], val)

            def rget(n):
                for i in range(n):
                    r.get(b"ref:" + keys[i % 1000])
            rs, rg = rate(rset, n), rate(rget, n)
            rows += [("redis set", rbs, "redis-py", rs), ("redis get", rbg, "redis-py", rg)]
    print(f"{'op':<12} {'bitt ops/s':>12} {'reference':>10} {'ref ops/s':>12} {'ratio':>7}")
    for op, b, ref, r in rows:
        print(f"{op:<12} {b:>12,.0f} {ref:>10} {r:>12,.0f} {b / r:>7.2f}")


if __name__ == "__main__":
    main()
