"""IvfIndex.delete and search(filter=...): against NumPy brute force on the remaining,
allowed rows (nprobe = nlist is exact); every row of a repeated id goes; a small nprobe
still returns min(k, allowed rows); bad input raises and changes nothing; deletes persist
across a pool close and reopen."""

import numpy as np
import pytest

import calico
from conftest import clustered

N, DIM, K, NLIST = 2000, 16, 10, 16
NONE = np.iinfo(np.uint64).max


def _exact(base, ids, live, queries, k):
    """(ids, distances) of the exact k nearest rows among base[live] (row i has id ids[i]),
    by (distance, id) as the index orders them, padded as the index pads."""
    rows = np.flatnonzero(live)
    d = ((queries[:, None, :].astype(np.float64) - base[rows][None, :, :]) ** 2).sum(-1)
    out_ids = np.full((len(queries), k), NONE, dtype=np.uint64)
    out_d = np.full((len(queries), k), np.inf, dtype=np.float32)
    for q in range(len(queries)):
        order = np.lexsort((ids[rows], d[q]))[:k]
        out_ids[q, :len(order)] = ids[rows][order]
        out_d[q, :len(order)] = d[q, order]
    return out_ids, out_d


@pytest.fixture
def built(pool):
    base = clustered(N, DIM)
    index = calico.IvfIndex(pool, "ivf", dim=DIM, nlist=NLIST)
    index.train(base)
    index.add(base)  # ids 0 .. N - 1
    return index, base


def test_deleted_rows_are_gone_and_exact_search_matches_brute_force(built):
    index, base = built
    ids = np.arange(N, dtype=np.uint64)
    rng = np.random.default_rng(5)
    gone = rng.choice(N, size=N // 3, replace=False)
    index.delete(gone)
    assert len(index) == N - len(gone)
    live = np.ones(N, dtype=bool)
    live[gone] = False
    queries = clustered(50, DIM, seed=2)
    got, dist = index.search(queries, k=K, nprobe=NLIST)
    assert not np.isin(got, gone).any()
    want, want_d = _exact(base, ids, live, queries, K)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_allclose(dist, want_d, rtol=1e-4, atol=1e-4)
    small, _ = index.search(queries, k=K, nprobe=2)
    assert not np.isin(small, gone).any()


def test_a_repeated_id_replaces_its_row(built):
    """An id is one row: adding it again replaces its vector (upsert); delete removes it."""
    index, base = built
    extra = clustered(3, DIM, seed=9) + 40.0  # far from everything: their own nearest rows
    index.add(extra[:2], ids=np.array([7, 8]))  # 7 and 8 get new vectors
    assert len(index) == N
    got, dist = index.search(extra[:2], k=1, nprobe=NLIST)
    assert got[:, 0].tolist() == [7, 8] and (dist[:, 0] == 0).all()
    got, _ = index.search(base[7:9], k=K, nprobe=NLIST)
    assert not np.isin(got[:, 0], [7, 8]).any(), "the old vectors are gone"
    with pytest.raises(calico.InvalidArgumentError, match="given twice"):
        index.add(extra, ids=np.array([7, 7, 8]))
    index.delete(np.array([7, 8]))
    assert len(index) == N - 2
    got, _ = index.search(np.concatenate([extra, base[7:9]]), k=K, nprobe=NLIST)
    assert not np.isin(got, [7, 8]).any()


@pytest.mark.parametrize("fraction", [0.0005, 0.005, 0.05, 0.5, 1.0])
def test_filtered_search_returns_min_of_k_and_allowed_rows(built, fraction):
    index, base = built
    ids = np.arange(N, dtype=np.uint64)
    rng = np.random.default_rng(int(fraction * 10000))
    allowed = np.flatnonzero(rng.random(N) < fraction)
    if len(allowed) == 0:
        allowed = np.array([1234])
    index.delete(allowed[::4].copy())  # some allowed ids are deleted too
    live = np.zeros(N, dtype=bool)
    live[allowed] = True
    live[allowed[::4]] = False
    queries = clustered(40, DIM, seed=3)
    want, _ = _exact(base, ids, live, queries, K)
    n_want = min(K, int(live.sum()))
    for f in (allowed, np.isin(np.arange(N), allowed)):  # ids, and the same as a mask
        got, dist = index.search(queries, k=K, nprobe=NLIST, filter=f)
        np.testing.assert_array_equal(got, want)
        assert np.isinf(dist[:, n_want:]).all()
        got, _ = index.search(queries, k=K, nprobe=1, filter=f)  # goes on past nprobe while short
        assert (got[:, :n_want] != NONE).all() and (got[:, n_want:] == NONE).all()
        assert live[got[:, :n_want].astype(np.int64)].all(), "a result is deleted or not allowed"


def test_filter_with_large_ids(pool):
    base = clustered(300, DIM, seed=6)
    index = calico.IvfIndex(pool, "big", dim=DIM, nlist=4)
    index.train(base)
    big = np.arange(300, dtype=np.uint64) + np.uint64(4_000_000_000)
    index.add(base, ids=big)
    got, _ = index.search(base[:5], k=3, nprobe=1, filter=big[100:102])
    assert set(got[:, :2].ravel().tolist()) == {4_000_000_100, 4_000_000_101}
    assert (got[:, 2] == NONE).all()
    index.delete(big[100:101])
    got, _ = index.search(base[:5], k=3, nprobe=4, filter=big[100:102])
    assert (got[:, 0] == 4_000_000_101).all() and (got[:, 1:] == NONE).all()


def test_bad_input_changes_nothing(built, pool):
    index, base = built
    index.delete(np.array([7]))
    before = len(index)
    queries = base[:20]
    want = index.search(queries, k=K, nprobe=4)
    for bad, err, says in [
        (np.array([5, 7]), calico.InvalidArgumentError, "id 7 (element 1) is not in the index"),  # deleted
        (np.array([5, 6, 5]), calico.InvalidArgumentError, "id 5 (element 2) is given twice"),
        (np.array([5, N + 100]), calico.InvalidArgumentError, f"id {N + 100} (element 1)"),  # never added
        (np.array([5, 2**40]), calico.InvalidArgumentError, f"id {2**40} (element 1)"),
        (np.array([5, -1]), calico.InvalidArgumentError, "negative"),
        (np.array([[5, 6]]), calico.InvalidArgumentError, "1-D"),
        (np.array([5.0]), TypeError, None),
        ([5], TypeError, None),
    ]:
        with pytest.raises(err, match=None if says is None else says.replace("(", r"\(").replace(")", r"\)")):
            index.delete(bad)
        assert len(index) == before
        got = index.search(queries, k=K, nprobe=4)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    index.delete(np.array([], dtype=np.int64))
    assert len(index) == before
    with pytest.raises(TypeError):
        index.search(base[:1], k=5, filter=np.array([1.0, 2.0]))
    with pytest.raises(calico.InvalidArgumentError):
        index.search(base[:1], k=5, filter=np.array([1, -2]))
    with pytest.raises(calico.InvalidArgumentError):
        index.search(base[:1], k=5, filter=np.ones((2, 3), dtype=bool))
    ids, _ = index.search(base[:1], k=5, filter=np.array([7], dtype=np.uint32))  # only a deleted id
    assert (ids == NONE).all()
    untrained = calico.IvfIndex(pool, "untrained", dim=DIM, nlist=4)
    with pytest.raises(calico.InvalidArgumentError, match="not trained"):
        untrained.delete(np.array([1]))


def test_deletes_persist_across_a_reopen(data_dir):
    base = clustered(800, DIM)
    with calico.Pool(data_dir, pool_bytes=16 << 20) as pool:
        index = calico.IvfIndex(pool, "ivf", dim=DIM, nlist=8)
        index.train(base)
        index.add(base)
        index.delete(np.arange(0, 800, 2))
        assert len(index) == 400
    with calico.Pool(data_dir, pool_bytes=16 << 20) as pool:
        index = calico.IvfIndex.open(pool, "ivf")
        assert len(index) == 400
        ids, _ = index.search(base[:50], k=5, nprobe=8)
        assert (ids % 2 == 1).all()
        ids, _ = index.search(base[:50], k=5, nprobe=8, filter=np.arange(0, 20))
        assert set(ids[ids != NONE].tolist()) <= set(range(1, 20, 2))
        with pytest.raises(calico.InvalidArgumentError, match="not in the index"):
            index.delete(np.array([0]))


def test_auto_ids_after_a_delete_take_free_ids_only(pool):
    """ids=None numbers from len(self), skipping ids in the index: after deleting low ids the
    next rows take the first free ids from there, never an id still in the index."""
    base = clustered(100, DIM, seed=8)
    index = calico.IvfIndex(pool, "auto", dim=DIM, nlist=4)
    index.train(base)
    index.add(base[:50])  # ids 0 .. 49
    index.delete(np.arange(0, 10))
    index.add(base[50:51])  # len(self) = 40, 40 .. 49 are taken: id 50
    got, _ = index.search(np.concatenate([base[40:41], base[50:51]]), k=1, nprobe=4)
    assert got[:, 0].tolist() == [40, 50]
    index.delete(np.array([40]))
    assert len(index) == 40
