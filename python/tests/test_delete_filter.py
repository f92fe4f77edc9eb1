"""HnswIndex.delete and search(filter=...): against NumPy brute force on the live, allowed
rows; bad input leaves the index as it was; deletes persist across a reopen; the small
retrieval application of a new user (add, delete, search within one user's rows)."""

import numpy as np
import pytest

import calico
from conftest import brute_force, clustered, recall

N, DIM, K = 3000, 16, 10


def _exact(base, live, queries, k):
    """Brute force among the rows where `live` is True; ids are row numbers."""
    rows = np.flatnonzero(live)
    got = brute_force(base[rows], queries, min(k, len(rows)), "l2")
    return rows[got]


@pytest.fixture
def built(pool):
    base = clustered(N, DIM)
    index = calico.HnswIndex(pool, "h", dim=DIM, capacity=N + 500)
    index.add(base)
    return index, base


def test_deleted_ids_are_never_returned_and_recall_holds(built):
    index, base = built
    rng = np.random.default_rng(5)
    gone = rng.choice(N, size=N // 3, replace=False)
    index.delete(gone)
    assert len(index) == N - len(gone)
    assert all(int(i) not in index for i in gone[:50])
    live = np.ones(N, dtype=bool)
    live[gone] = False
    queries = clustered(200, DIM, seed=2)
    ids, dist = index.search(queries, k=K, ef=64)
    assert not np.isin(ids, gone).any()
    assert recall(ids, _exact(base, live, queries, K)) >= 0.9


@pytest.mark.parametrize("fraction", [0.005, 0.05, 0.3])
def test_filtered_search_returns_only_allowed_ids_and_k_of_them(built, fraction):
    index, base = built
    rng = np.random.default_rng(int(fraction * 1000))
    allowed = np.flatnonzero(rng.random(N) < fraction)
    index.delete(allowed[::4].copy())  # some allowed ids are deleted too
    live = np.zeros(N, dtype=bool)
    live[allowed] = True
    live[allowed[::4]] = False
    queries = clustered(100, DIM, seed=3)
    for f in (allowed, np.isin(np.arange(N), allowed)):  # ids, and the same as a mask
        ids, dist = index.search(queries, k=K, ef=64, filter=f)
        want = min(K, int(live.sum()))
        assert (ids[:, :want] != np.iinfo(np.uint64).max).all()
        assert (ids[:, want:] == np.iinfo(np.uint64).max).all()
        assert live[ids[:, :want].astype(np.int64)].all(), "a result is deleted or not allowed"
        assert recall(ids[:, :want], _exact(base, live, queries, K)) >= 0.9


def test_auto_ids_after_deletes_take_free_ids_only(pool):
    base = clustered(200, DIM)
    index = calico.HnswIndex(pool, "h", dim=DIM, capacity=400)
    index.add(base[:100])
    index.delete(np.arange(40, 90))  # len() = 50: ids 50 .. 89 are free, 90 .. 99 taken
    index.add(base[100:150])  # the first 50 free ids from len() up: 50 .. 89, 100 .. 109
    assert len(index) == 100
    got, _ = index.search(base[100:150], k=1, ef=64)
    assert got[:, 0].tolist() == list(range(50, 90)) + list(range(100, 110))
    got, _ = index.search(base[90:100], k=1, ef=64)
    assert got[:, 0].tolist() == list(range(90, 100)), "ids in the index keep their vectors"


def test_bad_input_changes_nothing(built):
    index, base = built
    index.delete(np.array([7]))
    before = len(index)
    for bad, err in [
        (np.array([5, 7]), calico.InvalidArgumentError),          # 7 is deleted already
        (np.array([5, 5]), calico.InvalidArgumentError),          # twice
        (np.array([5, N + 100]), calico.InvalidArgumentError),    # never added
        (np.array([5, -1]), calico.InvalidArgumentError),         # negative
        (np.array([5.0]), TypeError),                             # not integers
        ([5], TypeError),                                         # not an array
    ]:
        with pytest.raises(err):
            index.delete(bad)
        assert len(index) == before and 5 in index
    with pytest.raises(TypeError):
        index.search(base[:1], k=5, filter=np.array([1.0, 2.0]))
    with pytest.raises(calico.InvalidArgumentError):
        index.search(base[:1], k=5, filter=np.array([1, -2]))
    ids, _ = index.search(base[:1], k=5, filter=np.array([7], dtype=np.uint32))  # only a deleted id
    assert (ids == np.iinfo(np.uint64).max).all()
    index.add(base[7], ids=np.array([7]))  # a deleted id may be added again at once
    assert 7 in index and len(index) == before + 1


def test_deletes_persist_across_a_reopen(data_dir):
    base = clustered(500, DIM)
    with calico.Pool(data_dir, pool_bytes=16 << 20) as pool:
        index = calico.HnswIndex(pool, "h", dim=DIM, capacity=600)
        index.add(base)
        index.delete(np.arange(0, 500, 2))
    with calico.Pool(data_dir, pool_bytes=16 << 20) as pool:
        index = calico.HnswIndex.open(pool, "h")
        assert len(index) == 250 and 2 not in index and 3 in index
        ids, _ = index.search(base[:50], k=5, ef=64)
        assert (ids % 2 == 1).all()


def test_a_users_documents_app(pool):
    """A new user's first day: documents of several users, edited by delete + add under a new
    id, searched within one user's documents."""
    rng = np.random.default_rng(0)
    docs = clustered(1000, DIM, seed=4)
    owner = rng.integers(0, 20, size=1000)
    index = calico.HnswIndex(pool, "docs", dim=DIM, capacity=2000)
    index.add(docs)
    # user 3 edits two documents: the old versions go, the new ones get new ids
    edited = np.flatnonzero(owner == 3)[:2]
    index.delete(edited)
    new_ids = np.array([1000, 1001])
    index.add(docs[edited] + 0.01, ids=new_ids)
    owner = np.concatenate([owner, [3, 3]])
    mine = np.flatnonzero(owner == 3)
    mine = mine[~np.isin(mine, edited)]
    ids, _ = index.search(docs[edited[0]], k=10, filter=mine)
    assert set(ids[0].tolist()) <= set(mine.tolist())
    assert ids[0, 0] == 1000  # the edited version of that document is nearest


def test_consolidate_frees_deleted_ids_for_new_vectors(built):
    """delete, consolidate (the slots are freed), add the same ids with new vectors (in the
    freed slots): the old vectors are gone, the new ones found, recall against brute force on
    the current rows holds."""
    index, base = built
    rng = np.random.default_rng(9)
    gone = np.sort(rng.choice(N, size=N // 4, replace=False))
    index.delete(gone)
    assert index.consolidate() == len(gone)
    assert index.consolidate() == 0
    assert len(index) == N - len(gone)
    fresh = clustered(len(gone), DIM, seed=11)
    index.add(fresh, ids=gone)
    current = base.copy()
    current[gone] = fresh
    assert len(index) == N
    queries = clustered(200, DIM, seed=12)
    ids, _ = index.search(queries, k=K, ef=64)
    assert recall(ids, brute_force(current, queries, K)) >= 0.9
    got, dist = index.search(fresh[:20], k=1, ef=64)
    assert got[:, 0].tolist() == gone[:20].tolist() and np.all(dist[:, 0] == 0)


def test_auto_consolidate_bounds_tombstones_and_reuses_slots(pool):
    """By default an add or delete that leaves max(1000, 0.2 x len) tombstones consolidates:
    rounds of upserts keep the capacity where it was and recall where a fresh build has it;
    off (0), every replaced vector stays a tombstone. Bad values raise and change nothing."""
    n = 3000
    base = clustered(n, DIM, seed=21)
    index = calico.HnswIndex(pool, "auto", dim=DIM, capacity=n)
    assert index.auto_consolidate == pytest.approx(0.2)
    ids = np.arange(n, dtype=np.uint64) * 1000 + 7
    index.add(base, ids=ids)
    capacity = index.capacity
    current = base.copy()
    rng = np.random.default_rng(22)
    for r in range(6):
        pick = np.sort(rng.choice(n, size=600, replace=False))
        current[pick] = clustered(600, DIM, seed=100 + r)
        index.add(current[pick], ids=ids[pick])  # upserts: the old vectors become tombstones
        assert index.tombstones < max(1000, 0.2 * len(index)), r
    assert index.capacity == capacity, "freed slots were reused"
    queries = clustered(200, DIM, seed=23)
    got, _ = index.search(queries, k=K, ef=64)
    want = ids[brute_force(current, queries, K)]
    assert recall(got, want) >= 0.9
    # A big delete is due at once.
    gone = ids[: n // 2]
    index.delete(gone)
    assert index.tombstones == 0 and len(index) == n - len(gone)

    for bad in (-0.5, float("nan"), float("inf")):
        with pytest.raises(calico.InvalidArgumentError, match="fraction"):
            index.auto_consolidate = bad
    assert index.auto_consolidate == pytest.approx(0.2)
    index.auto_consolidate = 0
    index.add(current[n // 2:], ids=ids[n // 2:])
    index.add(current[n // 2:], ids=ids[n // 2:])
    assert index.tombstones == n  # two rounds of n / 2 replaced, none freed
    assert index.consolidate() == n and index.tombstones == 0
