"""Concurrent calls from Python threads are correct (the GIL is released inside them; the
speed-up is measured by bench/harness/peers/python_concurrency.py, not asserted here)."""

import threading

import numpy as np

import calico
from conftest import clustered


def test_two_threads_searching_get_the_single_thread_results(pool):
    base = clustered(3000, 32)
    queries = clustered(200, 32, seed=7)
    h = calico.HnswIndex(pool, "h", dim=32, capacity=3000)
    h.add(base)
    ivf = calico.IvfIndex(pool, "ivf", dim=32, nlist=16)
    ivf.train(base)
    ivf.add(base)
    want_h = h.search(queries, k=10, num_threads=1)
    want_i = ivf.search(queries, k=10, nprobe=4, num_threads=1)
    errors = []

    def worker(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(20):
                rows = np.sort(rng.choice(len(queries), size=16, replace=False))
                q = np.ascontiguousarray(queries[rows])
                for got, want in ((h.search(q, k=10, num_threads=1), want_h),
                                  (ivf.search(q, k=10, nprobe=4, num_threads=1), want_i)):
                    np.testing.assert_array_equal(got[0], want[0][rows])
                    np.testing.assert_array_equal(got[1], want[1][rows])
                for i in rows[:4]:  # single-query calls too
                    ids, _ = h.search(queries[i], k=10)
                    np.testing.assert_array_equal(ids[0], want_h[0][i])
        except Exception as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(s,)) for s in (1, 2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


def test_adds_from_two_threads_and_a_concurrent_btree_writer(pool):
    base = clustered(2000, 16)
    h = calico.HnswIndex(pool, "h", dim=16, capacity=2000)
    t = calico.BTree(pool, "kv")

    def add_half(lo):
        h.add(base[lo:lo + 1000], ids=np.arange(lo, lo + 1000), num_threads=1)

    def write_keys():
        for i in range(2000):
            t.put(b"k%05d" % i, b"%d" % i)

    workers = [threading.Thread(target=add_half, args=(0,)), threading.Thread(target=add_half, args=(1000,)),
               threading.Thread(target=write_keys)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert len(h) == 2000 and len(t) == 2000
    ids, dist = h.search(base, k=1, ef=64)
    assert np.mean(ids[:, 0] == np.arange(2000)) >= 0.99
    assert [k for k, _ in t.scan(b"k01995")] == [b"k%05d" % i for i in range(1995, 2000)]


def test_concurrent_adds_without_ids_get_distinct_ids(pool):
    base = clustered(1200, 16)
    h = calico.HnswIndex(pool, "h", dim=16, capacity=1200)
    parts = [np.ascontiguousarray(base[i::4]) for i in range(4)]
    errors = []

    def add(part):
        try:
            for j in range(0, len(part), 50):
                h.add(np.ascontiguousarray(part[j:j + 50]), num_threads=1)
        except Exception as e:
            errors.append(e)

    workers = [threading.Thread(target=add, args=(p,)) for p in parts]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    assert len(h) == 1200 and all(i in h for i in range(1200))
    _, dist = h.search(base, k=1, ef=64)  # every row is in the index under some id
    assert np.mean(dist[:, 0] == 0) >= 0.99
