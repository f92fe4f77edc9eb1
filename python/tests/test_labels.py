"""Labels (add(labels=...), search(labels=...), get_label; include/calico/index/mapped_index.h,
"Labels") for HnswIndex and IvfIndex: a NumPy brute-force model (id -> vector, label) under
random labeled adds, upserts that change or drop the label, deletes and searches filtered
by one label, a set of labels, and labels with an allow-list, at selectivities from ~1% to
~50%, on a pool smaller than the index; bad labels (wrong length, float, bool, negative,
past 2^32 - 1, 2-D) raise naming `labels` and add nothing; labels survive a reopen in a new
process; the 'direct' translation (no id map) refuses labels."""

import numpy as np
import pytest

import calico
from conftest import INDEX_CLASSES, clustered, run_python, search_small, small_index

DIM, K = 8, 10
NO_ID = np.iinfo(np.uint64).max


def _random_label(rng):
    """~10% None; else 0 (~45%), 1 (~22%), 2 (~11%), 3..9 (~1.6% each)."""
    r = int(rng.integers(1000))
    if r < 100:
        return None
    if r < 550:
        return 0
    if r < 775:
        return 1
    if r < 885:
        return 2
    return 3 + (r - 885) % 7


class Model:
    def __init__(self):
        self.vec, self.label = {}, {}

    def put(self, ids, vecs, labels):
        for j, i in enumerate(ids):
            self.vec[int(i)] = vecs[j]
            self.label[int(i)] = None if labels is None else int(labels[j])

    def delete(self, ids):
        for i in ids:
            del self.vec[int(i)], self.label[int(i)]

    def matching(self, labels, allow=None):
        return [i for i in self.vec if self.label[i] in labels and (allow is None or i in allow)]

    def exact(self, q, k, labels, allow=None):
        ids = self.matching(labels, allow)
        if not ids:
            return []
        d = ((np.stack([self.vec[i] for i in ids]) - q) ** 2).sum(axis=1)
        return [ids[j] for j in sorted(range(len(ids)), key=lambda j: (d[j], ids[j]))[:k]]


def _fault(model, q, labels, allow, i, d):
    """Why result (i, d) is wrong for the filter (labels, allow), or None."""
    if i not in model.vec:
        return "not in the index"
    if model.label[i] not in labels:
        return f"label {model.label[i]}, not one of {sorted(labels)}"
    if allow is not None and i not in allow:
        return "not in the allow-list"
    if not np.isclose(d, ((model.vec[i] - q) ** 2).sum(), rtol=1e-4, atol=1e-4):
        return "a stale vector"
    return None


def _check(model, q, ids, dist, labels, allow, exact):
    """One result row against the model: min(k, matching rows) results, padded, each id once
    and matching at its current distance (exact: the model's top k). Returns (hits, wanted)."""
    want = model.exact(q, K, labels, allow)
    n = len(want)
    assert (ids[:n] != NO_ID).all(), "fewer than min(k, matching rows) results"
    assert (ids[n:] == NO_ID).all() and np.isinf(dist[n:]).all()
    got = [int(i) for i in ids[:n]]
    assert len(set(got)) == n, "an id twice in one row"
    faults = {i: f for i, d in zip(got, dist[:n]) if (f := _fault(model, q, labels, allow, i, d))}
    assert not faults, faults
    assert not exact or got == want
    return len(set(got) & set(want)), n


@pytest.mark.parametrize("kind", ["hnsw", "ivf", "coded"])
def test_model_of_labeled_upserts_deletes_and_label_filtered_search(data_dir, kind):
    rng = np.random.default_rng(11)
    rows = clustered(2400, DIM, seed=5)
    queries = clustered(60, DIM, seed=6)
    model, next_row = Model(), 0
    hits = wanted = relabels = 0
    searched = {"{0}": 0, "{1, 2}": 0, "rare": 0, "absent": 0, "ids and {0, 1}": 0}
    # 64 pages: the HNSW index, its map and its label tree are larger, so pages are evicted.
    with calico.Pool(data_dir, pool_bytes=64 * 4096, translation="array") as pool:
        index = small_index(pool, kind)
        for step in range(700):
            dice = rng.integers(100)
            if dice < 35 or len(model.vec) < 40:  # a batch of new ids, labeled or not
                n = int(rng.integers(1, 6))
                ids = np.array([int(rng.integers(0, 2**63)) for _ in range(n)], dtype=np.uint64)
                ids = ids[~np.isin(ids, list(model.vec))]
                labels = [_random_label(rng) for _ in ids]
                if rng.integers(4) == 0 or None in labels:
                    index.add(rows[next_row:next_row + len(ids)], ids=ids)  # unlabeled
                    model.put(ids, rows[next_row:], None)
                else:
                    lab = np.array(labels, dtype=[np.uint32, np.int64, np.uint8][step % 3])
                    index.add(rows[next_row:next_row + len(ids)], ids=ids, labels=lab)
                    model.put(ids, rows[next_row:], lab)
                next_row += len(ids)
            elif dice < 55:  # upsert present ids: new vectors, new labels (a list here)
                ids = rng.choice(np.array(list(model.vec), dtype=np.uint64), size=min(3, len(model.vec)), replace=False)
                labels = [_random_label(rng) or 0 for _ in ids]
                relabels += sum(model.label[int(i)] != l for i, l in zip(ids, labels))
                index.add(rows[next_row:next_row + len(ids)], ids=ids, labels=labels)
                model.put(ids, rows[next_row:], labels)
                next_row += len(ids)
            elif dice < 65:
                ids = rng.choice(np.array(list(model.vec), dtype=np.uint64), size=2, replace=False)
                index.delete(ids)
                model.delete(ids)
            else:
                q = queries[rng.integers(len(queries))]
                f = int(rng.integers(5))
                allow = None
                if f == 0:
                    labels, name, arg = {0}, "{0}", 0
                elif f == 1:
                    labels, name, arg = {1, 2}, "{1, 2}", [2, 1, 2]
                elif f == 2:
                    r = int(rng.integers(3, 10))
                    labels, name, arg = {r}, "rare", np.array([r], dtype=np.uint16)
                elif f == 3:
                    labels, name, arg = {1000, 2**32 - 1}, "absent", np.array([1000, 2**32 - 1], dtype=np.uint64)
                else:
                    labels, name, arg = {0, 1}, "ids and {0, 1}", (0, 1)
                    allow = {i for i in model.vec if rng.integers(3) == 0}
                kw = {"labels": arg}
                if allow is not None:  # with an id that is not in the index (ids are below 2^63)
                    kw["filter"] = np.array(sorted(allow) + [2**63 + 5], dtype=np.uint64)
                ids, dist = search_small(index, kind, q, K, **kw)
                h, w = _check(model, q, ids[0], dist[0], labels, allow, exact=kind == "ivf")
                hits, wanted = hits + h, wanted + w
                searched[name] += 1
            if step % 175 == 174:
                assert len(index) == len(model.vec)
                for i in list(model.vec)[:200]:
                    assert index.get_label(i) == model.label[i], f"the label of id {i}"
        assert next_row < len(rows)
        assert relabels > 20
        assert all(n > 10 for n in searched.values()), searched
        assert hits / wanted >= 0.9, "recall"
        if kind == "hnsw":  # ~1,000 IVF rows fit in 64 pages; the graph does not
            assert pool.stats()["evictions"] > 0, "the pool is smaller than the index"
    with calico.Pool(data_dir, pool_bytes=64 * 4096, translation="array") as pool:
        index = INDEX_CLASSES[kind].open(pool, "v")
        assert len(index) == len(model.vec)
        for i in model.vec:
            assert index.get_label(i) == model.label[i]
        for q in queries[:10]:
            ids, dist = search_small(index, kind, q, K, labels=[1, 2])
            _check(model, q, ids[0], dist[0], {1, 2}, None, exact=kind == "ivf")


@pytest.mark.parametrize("kind", ["hnsw", "ivf", "coded"])
def test_bad_labels_raise_naming_labels_and_add_nothing(pool, kind):
    index = small_index(pool, kind)
    rows = clustered(50, DIM, seed=7)
    index.add(rows[:20], ids=np.arange(20), labels=np.full(20, 3))
    before = index.search(rows[:5], k=5, labels=3)
    bad = [
        (np.array([1, 2]), calico.InvalidArgumentError),                 # wrong length
        (np.arange(5).reshape(5, 1), calico.InvalidArgumentError),       # 2-D
        (np.array([1, 2, -1, 4, 5]), calico.InvalidArgumentError),       # negative
        (np.array([1, 2, 2**32, 4, 5], dtype=np.int64), calico.InvalidArgumentError),  # > 2^32 - 1
        ([1, 2, 2**32 + 7, 4, 5], calico.InvalidArgumentError),          # a list, too large
        (np.ones(5, dtype=np.float64), TypeError),                       # float
        ([1.0, 2.0, 3.0, 4.0, 5.0], TypeError),                          # a list of floats
        (np.ones(5, dtype=bool), TypeError),                             # bool
        ("abcde", TypeError),                                            # not integers
    ]
    for labels, err in bad:
        with pytest.raises(err, match="labels"):
            index.add(rows[20:25], ids=np.array([0, 1, 100, 101, 102]), labels=labels)
        assert len(index) == 20 and 100 not in index
        assert index.get_label(0) == 3, "a rejected batch relabeled an id"
    after = index.search(rows[:5], k=5, labels=3)
    assert (after[0] == before[0]).all() and (after[1] == before[1]).all()
    for labels, err in [(-1, calico.InvalidArgumentError), (2**32, calico.InvalidArgumentError),
                        ([0, -3], calico.InvalidArgumentError), (1.5, TypeError), (True, TypeError)]:
        with pytest.raises(err, match="labels"):
            index.search(rows[:1], k=5, labels=labels)
    # Unlabeled rows never match a label; an upsert without labels drops the label.
    index.add(rows[25:30], ids=np.arange(100, 105))
    assert index.get_label(100) is None and index.get_label(12345) is None
    index.add(rows[30:31], ids=np.array([0]))
    assert index.get_label(0) is None
    ids, _ = index.search(rows[30], k=20, labels=[3])
    assert sorted(ids[0][ids[0] != NO_ID].tolist()) == list(range(1, 20))
    ids, _ = index.search(rows[30], k=5, labels=[])  # the empty set allows nothing
    assert (ids == NO_ID).all()
    # ids=None: numbered rows (the first free ids from len() up), labeled
    n = len(index)
    index.add(rows[31:33], labels=[7, 8])
    assert sorted(int(i) for i in index.search(rows[31], k=2, labels=(7, 8))[0][0]) == [n, n + 1]
    assert index.get_label(n + 1) == 8


def test_labels_survive_a_reopen_in_a_new_process(data_dir):
    rows = clustered(300, DIM, seed=8)
    labels = np.arange(300) % 5
    with calico.Pool(data_dir, pool_bytes=8 << 20) as pool:
        index = calico.HnswIndex(pool, "h", dim=DIM, capacity=400)
        index.add(rows, ids=np.arange(300) * 1000, labels=labels)
        index.add(rows[:10], ids=np.arange(10) * 1000, labels=np.full(10, 9))  # relabel by upsert
        want, _ = index.search(rows[:20], k=K, labels=[9, 2])
    np.save(data_dir + "-rows.npy", rows)
    out = run_python(f"""
        import numpy as np, calico
        with calico.Pool({data_dir!r}, pool_bytes=8 << 20) as pool:
            index = calico.HnswIndex.open(pool, "h")
            print(index.get_label(0), index.get_label(12000), index.get_label(11000), index.get_label(7))
            rows = np.load({data_dir!r} + "-rows.npy")
            ids, _ = index.search(rows[:20], k={K}, labels=[9, 2])
            np.save({data_dir!r} + "-got.npy", ids)
    """)
    assert out.split() == ["9", "2", "1", "None"]
    got = np.load(data_dir + "-got.npy")
    assert (got == want).all()
    assert all(int(i) // 1000 < 10 or int(i) // 1000 % 5 == 2 for i in got.ravel())


def test_direct_translation_refuses_labels(data_dir):
    with calico.Pool(data_dir, pool_bytes=8 << 20, translation="direct") as pool:
        index = calico.HnswIndex(pool, "h", dim=DIM, capacity=64)
        rows = clustered(10, DIM, seed=1)
        with pytest.raises(calico.InvalidArgumentError, match="labels need the id map"):
            index.add(rows, ids=np.arange(10), labels=np.zeros(10, dtype=np.uint32))
        assert len(index) == 0
        index.add(rows, ids=np.arange(10))
        assert index.get_label(3) is None
        with pytest.raises(calico.InvalidArgumentError, match="labels need the id map"):
            index.search(rows[:1], k=3, labels=0)
