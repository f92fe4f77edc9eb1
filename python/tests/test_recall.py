"""Recall of HNSW and IVF against NumPy brute force, for every metric."""

import numpy as np
import pytest

import calico
from conftest import brute_force, clustered, recall

N, DIM, NQ, K = 4000, 32, 100, 10


def _hnsw_recall(pool, metric, build_threads, ef):
    base = clustered(N, DIM)
    queries = clustered(NQ, DIM, seed=2)
    if metric == "ip":  # a graph suits inner product on rows of similar norms (as in hnswlib)
        base /= np.linalg.norm(base, axis=1, keepdims=True)
    index = calico.HnswIndex(pool, "h", dim=DIM, metric=metric, M=16, ef_construction=100, capacity=N)
    index.add(base, num_threads=build_threads)
    assert len(index) == N
    ids, dist = index.search(queries, k=K, ef=ef, num_threads=2)
    assert ids.shape == (NQ, K) and ids.dtype == np.uint64
    assert dist.shape == (NQ, K) and dist.dtype == np.float32
    assert np.all(np.diff(dist, axis=1) >= 0)
    return recall(ids, brute_force(base, queries, K, metric))


# A build on one thread inserts in row order, so the graph and its recall are the same on
# every run: 0.959 (l2), 0.962 (ip, cos) at ef 100.
@pytest.mark.parametrize("metric", ["l2", "ip", "cos"])
def test_hnsw_recall_at_10_is_above_0_95(pool, metric):
    assert _hnsw_recall(pool, metric, build_threads=1, ef=100) >= 0.95


# A build on two threads inserts in an order that changes from run to run, and on these 20
# well-separated clusters recall at a small ef moves with the order: single-thread builds in
# 100 shuffled orders gave 0.89-0.99 at ef 100 (cos), and two-thread builds 0.938-0.963
# (200 per metric), which failed this test at ef 100 in CI. At ef 400 both gave 0.999-1.0.
@pytest.mark.parametrize("metric", ["l2", "ip", "cos"])
def test_hnsw_built_on_two_threads_finds_the_neighbours(pool, metric):
    assert _hnsw_recall(pool, metric, build_threads=2, ef=400) >= 0.95


def test_hnsw_user_ids_are_returned(pool):
    base = clustered(500, 8)
    ids_in = np.arange(500, dtype=np.int64)[::-1] * 3  # any ids below capacity, any order
    index = calico.HnswIndex(pool, "h", dim=8, capacity=1500)
    index.add(base, ids=np.ascontiguousarray(ids_in))
    got, dist = index.search(base[:20], k=1, ef=64)
    assert got[:, 0].tolist() == ids_in[:20].tolist()
    assert np.all(dist[:, 0] == 0)
    assert 3 in index and 4 not in index


@pytest.mark.parametrize("metric", ["l2", "ip", "cos"])
def test_ivf_recall_at_10_is_above_0_9_and_exact_with_every_list(pool, metric):
    base = clustered(N, DIM)
    queries = clustered(NQ, DIM, seed=2)
    index = calico.IvfIndex(pool, "ivf", dim=DIM, metric=metric, nlist=32)
    assert not index.is_trained
    index.train(base)
    assert index.is_trained and len(index) == 0
    index.add(base)
    assert len(index) == N
    want = brute_force(base, queries, K, metric)
    ids, _ = index.search(queries, k=K, nprobe=8)
    assert recall(ids, want) >= 0.9
    ids, _ = index.search(queries, k=K, nprobe=32)
    assert recall(ids, want) >= 0.999


def test_knobs_do_not_change_results(pool):
    base = clustered(2000, 16)
    queries = clustered(50, 16, seed=3)
    h = calico.HnswIndex(pool, "h", dim=16, capacity=2000)
    h.add(base)
    want = h.search(queries, k=10)
    for optimistic in (True, False):
        for prefetch in (True, False):
            h.optimistic, h.prefetch = optimistic, prefetch
            got = h.search(queries, k=10)
            np.testing.assert_array_equal(got[0], want[0])
            np.testing.assert_array_equal(got[1], want[1])


def test_in_flight_searches_return_what_single_searches_return(data_dir):
    # A pool of 64 frames under an index of ~150 pages: the searches in flight evict each
    # other's pages between a hop's reads and its scoring.
    p = calico.Pool(data_dir, pool_bytes=64 * 4096)
    try:
        base = clustered(3000, 64)
        queries = clustered(37, 64, seed=5)
        h = calico.HnswIndex(p, "h", dim=64, capacity=3000)
        h.add(base, num_threads=1)
        want = h.search(queries, k=10, num_threads=1)
        assert recall(want[0], brute_force(base, queries, 10, "l2")) > 0.9
        for in_flight in (2, 8, 64):
            for threads in (1, 2):
                got = h.search(queries, k=10, num_threads=threads, in_flight=in_flight)
                np.testing.assert_array_equal(got[0], want[0])
                np.testing.assert_array_equal(got[1], want[1])
        assert p.stats()["evictions"] > 0
    finally:
        p.close()
