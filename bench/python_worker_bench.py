"""bitt.Worker (threads) against the plain loop it replaces, in one run:
N jobs enqueued (100 per commit), then drained either by `concurrency`
threads each looping dequeue(limit=1) + ack, or by one bitt.Worker of the
same concurrency with a handler that returns at once. Each side runs twice,
interleaved; the better run of each is printed with the ratio (worker /
loop; > 1 means the worker is faster).

    python bench/python_worker_bench.py STORE_URL [N]
"""
from __future__ import annotations

import sys
import threading
import time

import bitt


def fill(s: bitt.Store, topic: str, n: int) -> None:
    for _ in range(0, n, 100):
        a = s.atomic()
        for _ in range(100):
            a.enqueue(topic, b"job")
        a.commit()


def loops(s: bitt.Store, topic: str, n: int, concurrency: int) -> float:
    def loop() -> None:
        while True:
            got = s.queue.dequeue(topic, limit=1)
            if not got:
                return
            for m in got:
                s.queue.ack(m)

    threads = [threading.Thread(target=loop) for _ in range(concurrency)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return n / (time.perf_counter() - t0)


def worker(s: bitt.Store, topic: str, n: int, concurrency: int) -> float:
    all_done = threading.Event()
    count = [0]
    lock = threading.Lock()

    def completed(_m: object, _r: object = None) -> None:
        with lock:
            count[0] += 1
            if count[0] == n:
                all_done.set()

    t0 = time.perf_counter()
    w = bitt.Worker(s, topic, lambda m, cancel: None, concurrency=concurrency,
                    on_completed=completed, wait=0.05)
    all_done.wait(600)
    t1 = time.perf_counter()
    w.stop(10)
    return n / (t1 - t0)


def main() -> None:
    url = sys.argv[1]
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 2000
    for concurrency in (1, 4):
        best = {"loop": 0.0, "worker": 0.0}
        for side in ("loop", "worker", "loop", "worker"):
            with bitt.open(url) as s:
                topic = f"{side}{concurrency}_{time.time_ns()}"
                fill(s, topic, n)
                run = loops if side == "loop" else worker
                best[side] = max(best[side], run(s, topic, n, concurrency))
        print(f"{url.split(':')[0]} concurrency {concurrency}: worker {best['worker']:.0f} jobs/s, "
              f"plain loop {best['loop']:.0f} jobs/s, ratio {best['worker'] / best['loop']:.2f}")


if __name__ == "__main__":
    main()
