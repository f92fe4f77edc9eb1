"""HnswIndex growth: an index created with room for a few vectors takes many more, added in
batches with ids=None or explicit ids, while another thread searches; it keeps its room and
answers after a reopen; a batch that cannot fit adds nothing."""

import threading

import numpy as np
import pytest

import calico
from conftest import brute_force, clustered, recall

DIM = 16


def test_adds_past_the_capacity_grow_the_index(pool):
    base = clustered(4000, DIM, seed=21)
    index = calico.HnswIndex(pool, "h", dim=DIM, capacity=16)
    first = index.capacity
    assert first >= 16
    index.add(base[:1000])                                   # ids 0 .. 999
    index.add(base[1000:3000], ids=np.arange(1000, 3000))    # explicit, past the capacity
    index.add(base[3000:])                                   # ids=None again: 3000 ..
    assert len(index) == 4000
    assert index.capacity >= 4000 and index.capacity > first
    ids, dist = index.search(np.ascontiguousarray(base[::97]), k=1, ef=64)
    assert (ids[:, 0] == np.arange(0, 4000, 97)).all() and (dist[:, 0] == 0).all()
    queries = clustered(100, DIM, seed=22)
    got, _ = index.search(queries, k=10, ef=128)
    assert recall(got, brute_force(base, queries, 10, "l2")) >= 0.95


def test_searches_run_while_another_thread_grows_the_index(pool):
    base = clustered(3000, DIM, seed=23)
    index = calico.HnswIndex(pool, "h", dim=DIM, capacity=8)
    index.add(base[:100])
    stop = threading.Event()
    errors = []

    def search():
        queries = clustered(50, DIM, seed=24)
        while not stop.is_set():
            ids, dist = index.search(queries, k=5, ef=32)
            found = ids[ids != np.iinfo(np.uint64).max]
            if (found >= 3000).any() or not np.isfinite(dist[ids != np.iinfo(np.uint64).max]).all():
                errors.append((ids, dist))

    t = threading.Thread(target=search)
    t.start()
    try:
        for first in range(100, 3000, 250):
            index.add(base[first:first + 250], num_threads=2)
    finally:
        stop.set()
        t.join()
    assert not errors
    assert len(index) == 3000
    ids, dist = index.search(np.ascontiguousarray(base[::61]), k=1, ef=64)
    assert (ids[:, 0] == np.arange(0, 3000, 61)).all()


def test_a_grown_index_reopens(data_dir):
    base = clustered(1500, DIM, seed=25)
    with calico.Pool(data_dir, pool_bytes=32 << 20) as pool:
        index = calico.HnswIndex(pool, "h", dim=DIM, capacity=10)
        index.add(base)
        capacity = index.capacity
        want = index.search(base[:40], k=5)
    with calico.Pool(data_dir, pool_bytes=32 << 20) as pool:
        index = calico.HnswIndex.open(pool, "h")
        assert index.capacity == capacity and len(index) == 1500
        got = index.search(base[:40], k=5)
        assert (got[0] == want[0]).all() and (got[1] == want[1]).all()


def test_a_batch_that_cannot_fit_adds_nothing(pool):
    index = calico.HnswIndex(pool, "h", dim=4, capacity=10)
    rows = np.ones((2, 4), dtype=np.float32)
    capacity = index.capacity
    with pytest.raises(calico.InvalidArgumentError, match="the reserved id"):
        index.add(rows, ids=np.array([3, 2**64 - 1], dtype=np.uint64))
    assert len(index) == 0 and index.capacity == capacity
