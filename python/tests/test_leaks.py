"""10^5 small calls keep the process's RSS flat (no per-call leak of arrays, states, leases,
exceptions or scan iterators)."""

import numpy as np
import pytest

import calico
from conftest import clustered

CALLS = 100_000


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_small_calls_keep_rss_flat(pool):
    base = clustered(1000, 16)
    h = calico.HnswIndex(pool, "h", dim=16, capacity=1000)
    h.add(base)
    t = calico.BTree(pool, "kv")
    t.put(b"k", b"v")
    q = base[3]
    bad = np.zeros(15, np.float32)

    def round_(n):
        for i in range(n):
            op = i % 5
            if op == 0:
                h.search(q, k=32)
            elif op == 1:
                t.get(b"k")
            elif op == 2:
                t.put(b"k", b"v%d" % (i % 7))
            elif op == 3:
                next(iter(t.scan()))
            else:
                try:
                    h.search(bad, k=5)
                except calico.InvalidArgumentError:
                    pass

    round_(CALLS // 10)  # warm-up: caches, heaps and allocator pools reach their size
    before = rss_bytes()
    round_(CALLS)
    grown = rss_bytes() - before
    # 10^5 calls leaking even 64 bytes each would be 6.4 MB; allow allocator noise of 4 MB.
    assert grown < 4 << 20, f"RSS grew by {grown / 1e6:.1f} MB over {CALLS} calls"
