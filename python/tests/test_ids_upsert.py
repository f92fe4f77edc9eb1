"""64-bit ids and upsert (the id map, include/calico/index/mapped_index.h) for HnswIndex and
IvfIndex: a reference model (dict id -> vector, NumPy brute force) under random
interleavings of add, upsert, delete and filtered search with ids anywhere in uint64; upserts
from one thread while another searches never hide an id; bad ids and batches raise and
change nothing; ids=None never overwrites a user's id; everything survives a reopen in a new
process; an index written without a map (as before the map existed: the 'direct'
translation's binding still writes them) opens on another translation with its ids (the map
is built on first open: migration; the C++ tests cover an interrupted one, IdMapLegacy)."""

import threading

import numpy as np
import pytest

import calico
from conftest import INDEX_CLASSES, clustered, run_python, search_small, small_index

DIM, K = 8, 10
NO_ID = np.iinfo(np.uint64).max


def _exact(model, q, k, allow=None):
    """Brute force over the model (l2: squared distance), sorted by (distance, id)."""
    ids = [i for i in model if allow is None or i in allow]
    if not ids:
        return [], []
    vecs = np.stack([model[i] for i in ids])
    d = ((vecs - q) ** 2).sum(axis=1)
    order = sorted(range(len(ids)), key=lambda j: (d[j], ids[j]))[:k]
    return [ids[j] for j in order], [d[j] for j in order]


def _random_id(rng):
    r = rng.integers(3)
    if r == 0:
        return int(rng.integers(5000))
    if r == 1:
        return (1 << 32) - 50 + int(rng.integers(100))
    return int(rng.integers(0, np.iinfo(np.uint64).max - 1, dtype=np.uint64))


def _check_row(model, q, ids, dist, allow, exact, k):
    want_ids, want_d = _exact(model, q, k, allow)
    n = len(want_ids)
    assert (ids[n:] == NO_ID).all() and np.isinf(dist[n:]).all()
    got = [int(i) for i in ids[:n]]
    assert len(set(got)) == n, "an id twice in one row"
    for i, d in zip(got, dist[:n]):
        assert i in model, f"id {i} is not in the index"
        assert allow is None or i in allow
        assert np.isclose(d, ((model[i] - q) ** 2).sum(), rtol=1e-4, atol=1e-4), f"id {i}: a stale vector"
    if exact:
        assert got == want_ids
    return len(set(got) & set(want_ids)), n


@pytest.mark.parametrize("kind", ["hnsw", "ivf", "coded"])
def test_model_of_upsert_delete_and_filtered_search(data_dir, kind):
    rng = np.random.default_rng(7)
    rows = clustered(3000, DIM, seed=3)
    model, next_row = {}, 0
    hits = wanted = upserts = 0
    # A pool of 64 pages: the index and its map are larger, so pages are evicted all along.
    with calico.Pool(data_dir, pool_bytes=64 * 4096, translation="array") as pool:
        index = small_index(pool, kind)
        for step in range(600):
            dice = rng.integers(100)
            if dice < 35 or len(model) < 2 * K:  # a batch of new ids
                batch = []
                while len(batch) < int(rng.integers(1, 6)):
                    i = _random_id(rng)
                    if i not in model and i not in batch:
                        batch.append(i)
                v = rows[next_row:next_row + len(batch)]
                index.add(v, ids=np.array(batch, dtype=np.uint64))
                model.update({i: v[j] for j, i in enumerate(batch)})
                next_row += len(batch)
            elif dice < 55:  # upserts, with a new id in the batch
                keys = list(model)
                batch = [keys[j] for j in rng.choice(len(keys), size=3, replace=False)]
                fresh = _random_id(rng)
                if fresh in model:
                    continue
                batch.append(fresh)
                v = rows[next_row:next_row + len(batch)]
                index.add(v, ids=np.array(batch, dtype=np.uint64))
                model.update({i: v[j] for j, i in enumerate(batch)})
                next_row += len(batch)
                upserts += 3
            elif dice < 65:  # delete
                keys = list(model)
                gone = [keys[j] for j in rng.choice(len(keys), size=2, replace=False)]
                index.delete(np.array(gone, dtype=np.uint64))
                for i in gone:
                    del model[i]
            else:  # search: none, a few ids (some unknown), a third of the ids (ids or a mask)
                q = rows[int(rng.integers(len(rows)))] + 0.1
                f = rng.integers(3)
                allow = None
                if f == 1:
                    keys = list(model)
                    allow = {keys[j] for j in rng.choice(len(keys), size=3, replace=False)} | {12345678901234}
                elif f == 2:
                    allow = {i for i in model if rng.random() < 0.33}
                kw = {} if allow is None else {"filter": np.array(sorted(allow), dtype=np.uint64)}
                ids, dist = search_small(index, kind, q, K, **kw)
                h, w = _check_row(model, q, ids[0], dist[0], allow, kind == "ivf", K)
                hits, wanted = hits + h, wanted + w
            assert len(index) == len(model), f"step {step}"
            if next_row > len(rows) - 10:
                break
        assert all(i in index for i in list(model)[:50])
        assert upserts > 50
        assert hits / wanted >= 0.9
        # A boolean mask allows ids below its length.
        small = sorted(i for i in model if i < 5000)[:5]
        mask = np.zeros(5000, dtype=bool)
        mask[small] = True
        ids, _ = search_small(index, kind, rows[0], K, filter=mask)
        assert set(int(i) for i in ids[0] if i != NO_ID) == set(small)
        saved = {i: v.copy() for i, v in model.items()}
    with calico.Pool(data_dir, pool_bytes=64 * 4096) as pool:
        index = INDEX_CLASSES[kind].open(pool, "v")
        assert len(index) == len(saved)
        for q in rows[:20]:
            ids, dist = search_small(index, kind, q, K)
            _check_row(saved, q, ids[0], dist[0], None, kind == "ivf", K)


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_upserts_never_hide_an_id_from_a_concurrent_search(pool, kind):
    index = small_index(pool, kind)
    ids = (np.arange(16, dtype=np.uint64) << np.uint64(40)) + np.uint64(3)
    rows = clustered(16 * 40, DIM, seed=4)
    index.add(rows[:16], ids=ids)
    stop, bad = threading.Event(), []

    def upsert():
        for r in range(1, 40):
            index.add(rows[16 * r:16 * (r + 1)], ids=ids, num_threads=2)
        stop.set()

    t = threading.Thread(target=upsert)
    t.start()
    while not stop.is_set():
        got, _ = search_small(index, kind, rows[:8], 16, filter=ids)
        if not all(sorted(int(i) for i in row) == sorted(int(i) for i in ids) for row in got):
            bad.append(got)
    t.join()
    assert not bad, "a search missed an id being upserted, or returned one twice"
    got, dist = search_small(index, kind, rows[16 * 39:], 1, filter=ids)
    assert (got[:, 0] == ids).all() and (dist[:, 0] == 0).all(), "each id has its last vector"


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_bad_ids_raise_and_change_nothing(pool, kind):
    index = small_index(pool, kind)
    rows = clustered(200, DIM, seed=5)
    ids = np.arange(100, dtype=np.uint64) * np.uint64(1 << 57)  # up to 2^64 - 2^57
    index.add(rows[:100], ids=ids)
    before = search_small(index, kind, rows[100:110], K)

    def unchanged():
        assert len(index) == 100
        after = search_small(index, kind, rows[100:110], K)
        assert (after[0] == before[0]).all() and (after[1] == before[1]).all()

    with pytest.raises(calico.InvalidArgumentError, match="2\\^64 - 1"):
        index.add(rows[100:102], ids=np.array([5, NO_ID], dtype=np.uint64))
    with pytest.raises(calico.InvalidArgumentError, match="id 5 \\(row 2\\) is given twice"):
        index.add(rows[100:103], ids=np.array([5, 6, 5], dtype=np.uint64))
    with pytest.raises(calico.InvalidArgumentError, match="negative"):
        index.add(rows[100:102], ids=np.array([5, -1]))
    with pytest.raises(calico.InvalidArgumentError, match="one id per row"):
        index.add(rows[100:103], ids=np.array([5, 6], dtype=np.uint64))
    with pytest.raises(TypeError):
        index.add(rows[100:102], ids=np.array([5.0, 6.0]))
    bad = rows[100:103].copy()
    bad[2, 0] = np.nan
    with pytest.raises(calico.InvalidArgumentError, match="NaN"):
        index.add(bad, ids=np.array([ids[0], 7, 8], dtype=np.uint64))  # an upsert before the bad row
    unchanged()
    with pytest.raises(calico.InvalidArgumentError, match="id 42 \\(element 1\\) is not in the index"):
        index.delete(np.array([ids[1], 42, ids[2]], dtype=np.uint64))
    with pytest.raises(calico.InvalidArgumentError, match="given twice"):
        index.delete(np.array([ids[1], ids[1]], dtype=np.uint64))
    with pytest.raises(calico.InvalidArgumentError, match="negative"):
        index.delete(np.array([1, -3]))
    with pytest.raises(TypeError):
        index.delete(np.array([1.5]))
    unchanged()
    assert int(ids[99]) in index and 7 not in index


@pytest.mark.parametrize("kind", ["hnsw", "ivf", "coded"])
def test_ids_none_skips_user_ids(pool, kind):
    index = small_index(pool, kind)
    rows = clustered(20, DIM, seed=6)
    index.add(rows[:2], ids=np.array([2, 3], dtype=np.uint64))
    index.add(rows[2:5])  # len() is 2: ids 2 and 3 are taken, so 4, 5, 6
    assert [i in index for i in range(8)] == [False, False, True, True, True, True, True, False]
    got, dist = search_small(index, kind, rows[0], 1, filter=np.array([2], dtype=np.uint64))
    assert got[0, 0] == 2 and dist[0, 0] == 0, "id 2 keeps the user's vector"


def test_hnsw_consolidate_frees_replaced_slots(pool):
    index = small_index(pool, "hnsw")
    rows = clustered(600, DIM, seed=8)
    ids = np.arange(200, dtype=np.uint64) + np.uint64(1 << 63)
    index.add(rows[:200], ids=ids)
    index.add(rows[200:400], ids=ids)  # 200 upserts: 200 replaced slots
    assert len(index) == 200
    assert index.consolidate() == 200
    cap = index.capacity
    index.add(rows[400:600], ids=ids)
    assert index.capacity == cap and len(index) == 200


def test_reopen_in_a_new_process(data_dir):
    rows = clustered(300, DIM, seed=10)
    ids = np.arange(300, dtype=np.uint64) * np.uint64(61_000_000_000_000_001)
    with calico.Pool(data_dir, pool_bytes=1 << 22) as pool:
        for kind in ("hnsw", "ivf"):
            index = small_index(pool, kind, name=kind)
            index.add(rows, ids=ids)
            index.add(rows[:10] + 1, ids=ids[:10])  # upserts
            index.delete(ids[10:20])
    out = run_python(f"""
        import numpy as np, calico
        with calico.Pool({data_dir!r}, pool_bytes=1 << 22) as pool:
            for kind, cls in (("hnsw", calico.HnswIndex), ("ivf", calico.IvfIndex)):
                index = cls.open(pool, kind)
                ids = np.arange(300, dtype=np.uint64) * np.uint64(61_000_000_000_000_001)
                assert len(index) == 290, len(index)
                assert int(ids[5]) in index and int(ids[15]) not in index
                print(kind, "ok")
    """)
    assert "hnsw ok" in out and "ivf ok" in out


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_an_index_without_a_map_opens_with_its_ids(data_dir, kind):
    rows = clustered(300, DIM, seed=12)
    with calico.Pool(data_dir, pool_bytes=16 << 20, translation="direct") as pool:
        index = small_index(pool, kind)
        index.add(rows)  # ids 0 .. 299, slots = ids
        index.delete(np.arange(0, 300, 10))
        assert pool.spaces() == ["v"], "no map on 'direct'"
        before = search_small(index, kind, rows[:20], K)
    with calico.Pool(data_dir, pool_bytes=16 << 20) as pool:
        index = INDEX_CLASSES[kind].open(pool, "v")
        assert sorted(pool.spaces()) == ["v", "v.ids", "v.slots"]
        assert len(index) == 270 and 5 in index and 10 not in index
        after = search_small(index, kind, rows[:20], K)
        assert (after[0] == before[0]).all() and (after[1] == before[1]).all(), "the ids the index had"
        index.add(rows[:2] + 1, ids=np.array([5, 2**63], dtype=np.uint64))  # an upsert, a 64-bit id
        assert len(index) == 271
    with calico.Pool(data_dir, pool_bytes=16 << 20) as pool:  # the map is kept, not built again
        index = INDEX_CLASSES[kind].open(pool, "v")
        got, dist = search_small(index, kind, rows[:2] + 1, 1)
        assert got[:, 0].tolist() == [5, 2**63] and (dist[:, 0] == 0).all()
