"""Bad input gives the documented exception and leaves the stored data intact."""

import os
import shutil
import stat
import tempfile

import numpy as np
import pytest

import calico
from conftest import POOL_BYTES, clustered, run_python

DIM = 16


@pytest.fixture
def filled(pool):
    base = clustered(1000, DIM)
    queries = clustered(20, DIM, seed=9)
    h = calico.HnswIndex(pool, "h", dim=DIM, capacity=2000)
    h.add(base)
    ivf = calico.IvfIndex(pool, "ivf", dim=DIM, nlist=8)
    ivf.train(base)
    ivf.add(base)
    t = calico.BTree(pool, "kv")
    t.put(b"a", b"1")
    want = (h.search(queries, k=5), ivf.search(queries, k=5, nprobe=2))

    def intact():
        got = (h.search(queries, k=5), ivf.search(queries, k=5, nprobe=2))
        for g, w in zip(got, want):
            np.testing.assert_array_equal(g[0], w[0])
            np.testing.assert_array_equal(g[1], w[1])
        assert len(h) == 1000 and len(ivf) == 1000 and len(t) == 1 and t[b"a"] == b"1"

    return pool, h, ivf, t, queries, intact


def test_wrong_dimension(filled):
    _, h, ivf, _, q, intact = filled
    for index in (h, ivf):
        with pytest.raises(calico.InvalidArgumentError, match="dimension 15"):
            index.search(np.ascontiguousarray(q[:, :15]), k=5)
        with pytest.raises(calico.InvalidArgumentError, match="dim 16"):
            index.add(np.zeros((3, 17), np.float32))
        with pytest.raises(calico.InvalidArgumentError):
            index.search(np.zeros((2, 2, DIM), np.float32), k=5)
    intact()


def test_k_zero_and_k_larger_than_the_index(filled):
    _, h, ivf, _, q, intact = filled
    for index in (h, ivf):
        with pytest.raises(calico.InvalidArgumentError, match="k must be at least 1"):
            index.search(q, k=0)
        with pytest.raises(calico.InvalidArgumentError, match=r"k \(1001\) is larger than the index \(1000"):
            index.search(q, k=1001)
        assert isinstance(pytest.raises(ValueError, index.search, q, k=0).value, calico.Error)
    with pytest.raises(calico.InvalidArgumentError, match="nprobe"):
        ivf.search(q, k=5, nprobe=0)
    intact()


def test_in_flight_out_of_range(filled):
    pool, h, ivf, t, queries, intact = filled
    for bad in (0, 65):
        with pytest.raises(calico.InvalidArgumentError, match="in_flight"):
            h.search(queries, k=5, in_flight=bad)
    with pytest.raises((TypeError, OverflowError)):
        h.search(queries, k=5, in_flight=-1)
    intact()


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_add_nothing_and_are_refused_in_queries(filled, bad):
    _, h, ivf, _, q, intact = filled
    rows = clustered(10, DIM, seed=11)
    rows[7, 3] = bad  # a good prefix must not be added either
    for index in (h, ivf):
        with pytest.raises(calico.InvalidArgumentError, match="row 7 holds NaN or infinity"):
            index.add(rows)
        qq = q.copy()
        qq[2, 0] = bad
        with pytest.raises(calico.InvalidArgumentError, match="row 2 holds NaN or infinity"):
            index.search(qq, k=5)
    intact()


def test_non_contiguous_float64_and_other_types_are_type_errors(filled):
    _, h, ivf, _, q, intact = filled
    wide = np.zeros((20, 2 * DIM), np.float32)
    for index in (h, ivf):
        with pytest.raises(TypeError, match="C-contiguous"):
            index.search(wide[:, ::2], k=5)
        with pytest.raises(TypeError, match="C-contiguous"):
            index.search(np.asfortranarray(q), k=5)
        with pytest.raises(TypeError, match="float32"):
            index.search(q.astype(np.float64), k=5)
        with pytest.raises(TypeError, match="float32"):
            index.add(q.astype(np.float64))
        with pytest.raises(TypeError, match="float32"):
            index.add(q.astype(np.float16))
        with pytest.raises(TypeError):
            index.search(q.tolist(), k=5)
        with pytest.raises(TypeError, match="integer"):
            index.add(clustered(2, DIM, seed=12), ids=np.array([1.5, 2.5]))
    with pytest.raises(TypeError):
        filled[3].put("str key", b"v")
    intact()


def test_bad_ids_add_nothing(filled):
    _, h, ivf, _, _, intact = filled
    rows = clustered(3, DIM, seed=13)
    with pytest.raises(calico.InvalidArgumentError, match="id 18446744073709551615 .* the reserved id"):
        h.add(rows, ids=np.array([1500, 1501, 2**64 - 1], dtype=np.uint64))
    with pytest.raises(calico.InvalidArgumentError, match="id 1600 .* is given twice"):
        h.add(rows, ids=np.array([1600, 1601, 1600]))
    with pytest.raises(calico.InvalidArgumentError, match="id 1600 .* is given twice"):
        ivf.add(rows, ids=np.array([1600, 1601, 1600]))
    with pytest.raises(calico.InvalidArgumentError, match="negative"):
        h.add(rows, ids=np.array([1, -2, 3]))
    with pytest.raises(calico.InvalidArgumentError, match="one id per row"):
        ivf.add(rows, ids=np.array([1, 2]))
    assert 1500 not in h and 1600 not in h
    intact()


def test_btree_key_limits_and_missing_keys(filled):
    _, _, _, t, _, intact = filled
    with pytest.raises(calico.InvalidArgumentError):
        t.put(b"", b"v")
    with pytest.raises(calico.InvalidArgumentError):
        t.put(b"k" * 257, b"v")
    with pytest.raises(calico.InvalidArgumentError):
        t.put(b"k", b"v" * 513)
    with pytest.raises(KeyError):
        t[b"missing"]
    with pytest.raises(KeyError):
        del t[b"missing"]
    with pytest.raises(calico.InvalidArgumentError, match="not empty"):
        t.bulk_load([(b"b", b"2")])
    assert t.get(b"missing") is None and t.get(b"missing", b"d") == b"d"
    intact()


def test_bad_far_tier(tmp_path):
    d = str(tmp_path / "p")
    with pytest.raises(calico.InvalidArgumentError, match="far tier 'nvme' is not remote-numa"):
        calico.Pool(d, translation="array_tiered", far_bytes=1 << 20, far_tier="nvme")
    with pytest.raises(calico.InvalidArgumentError, match="translation 'array' takes no far tier"):
        calico.Pool(d, translation="array", far_bytes=1 << 20)
    with pytest.raises(calico.InvalidArgumentError, match="far_bytes 100 is less than one page"):
        calico.Pool(d, translation="array_tiered", far_bytes=100)
    # None of them wrote anything: the directory opens as a new, empty pool.
    with calico.Pool(d, translation="array_tiered", far_bytes=1 << 20) as p:
        assert p.spaces() == [] and p.stats()["far_frames"] == 256


def test_closed_pool(data_dir):
    pool = calico.Pool(data_dir, pool_bytes=POOL_BYTES)
    h = calico.HnswIndex(pool, "h", dim=4, capacity=10)
    h.add(np.eye(4, dtype=np.float32))
    ivf = calico.IvfIndex(pool, "ivf", dim=4, nlist=2)
    t = calico.BTree(pool, "kv")
    t.put(b"k", b"v")
    pool.close()
    pool.close()  # a no-op
    assert pool.closed
    q = np.ones(4, np.float32)
    for call in (lambda: h.search(q, k=1), lambda: h.add(q), lambda: len(h), lambda: ivf.train(np.eye(4, dtype=np.float32)),
                 lambda: t.get(b"k"), lambda: t.put(b"k", b"w"), lambda: list(t.scan()), pool.flush, pool.stats,
                 lambda: calico.BTree(pool, "kv"), lambda: calico.HnswIndex.open(pool, "h")):
        with pytest.raises(calico.ClosedError, match="closed"):
            call()
    with calico.Pool(data_dir, pool_bytes=POOL_BYTES) as again:  # intact
        assert calico.BTree.open(again, "kv")[b"k"] == b"v"
        assert calico.HnswIndex.open(again, "h").search(q, k=1)[0][0, 0] in range(4)


def test_missing_index_name_and_wrong_kind(filled):
    pool, _, _, _, _, intact = filled
    for open_ in (calico.HnswIndex.open, calico.IvfIndex.open, calico.BTree.open):
        with pytest.raises(calico.UnknownSpaceError, match="no space named 'nope'") as e:
            open_(pool, "nope")
        assert isinstance(e.value, LookupError) and e.value.code == "unknown space"
    with pytest.raises(calico.InvalidArgumentError, match="another kind"):
        calico.HnswIndex.open(pool, "kv")
    with pytest.raises(calico.InvalidArgumentError, match="exists with dim"):
        calico.HnswIndex(pool, "h", dim=DIM + 1)
    assert "nope" not in pool.spaces()
    intact()


def test_unknown_translation_and_bad_pool_parameters(data_dir):
    with pytest.raises(calico.InvalidArgumentError, match="unknown translation 'nope'.*array"):
        calico.Pool(data_dir, translation="nope")
    with pytest.raises(calico.InvalidArgumentError):
        calico.Pool(data_dir, page_size=1000)
    with pytest.raises(calico.InvalidArgumentError, match="metric 'l3'"):
        with calico.Pool(data_dir, pool_bytes=POOL_BYTES) as p:
            calico.HnswIndex(p, "h", dim=4, metric="l3")


def test_read_only_directory():
    """Opening a directory the process may not write is IoError (an OSError); the data in it
    is intact afterwards. As root, the opening process runs as user nobody."""
    base = tempfile.mkdtemp(prefix="calico-ro-")
    os.chmod(base, 0o755)
    try:
        _read_only_directory(os.path.join(base, "db"))
    finally:
        shutil.rmtree(base)


def _read_only_directory(data_dir):
    with calico.Pool(data_dir, pool_bytes=POOL_BYTES) as pool:
        calico.BTree(pool, "kv").put(b"k", b"v")
    parent = os.path.dirname(data_dir)
    modes = {p: stat.S_IMODE(os.stat(p).st_mode) for p in [parent, data_dir] + [os.path.join(data_dir, f) for f in os.listdir(data_dir)]}
    try:
        for p in modes:
            os.chmod(p, 0o555 if os.path.isdir(p) else 0o444)
        code = f"""
            import calico
            try:
                calico.Pool({data_dir!r}, pool_bytes={POOL_BYTES})
                print("opened")
            except calico.IoError as e:
                assert isinstance(e, OSError)
                print("IoError", e)
        """
        if os.geteuid() == 0:
            for p in _ancestors(parent):  # nobody must reach the directory and the package
                if stat.S_IMODE(os.stat(p).st_mode) & 0o005 != 0o005:
                    pytest.fail(f"{p} is not world-readable: cannot test as user nobody")
            out = run_python(code, user=65534)
        else:
            out = run_python(code)
        assert out.startswith("IoError"), out
    finally:
        for p, m in modes.items():
            os.chmod(p, m)
    with calico.Pool(data_dir, pool_bytes=POOL_BYTES) as pool:
        assert calico.BTree.open(pool, "kv")[b"k"] == b"v"


def _ancestors(path):
    path = os.path.abspath(path)
    while True:
        yield path
        up = os.path.dirname(path)
        if up == path:
            return
        path = up


def test_a_damaged_page_names_itself_and_the_pool_stays_usable(data_dir):
    with calico.Pool(data_dir, pool_bytes=POOL_BYTES) as pool:
        t = calico.BTree(pool, "kv")
        t.bulk_load((b"k%05d" % i, b"v" * 100) for i in range(3000))
        calico.BTree(pool, "other").put(b"x", b"y")
    files = sorted(f for f in os.listdir(data_dir) if f.startswith("space_"))
    path = os.path.join(data_dir, files[0])
    with open(path, "r+b") as f:  # flip bytes in block 5 of the tree
        f.seek(5 * 4096 + 200)
        f.write(b"\xff" * 16)
    with calico.Pool(data_dir, pool_bytes=POOL_BYTES) as pool:
        t = calico.BTree.open(pool, "kv")
        with pytest.raises(calico.ChecksumMismatchError) as e:
            list(t.scan())
        assert e.value.page is not None and e.value.page[1] == 5
        assert "checksum" in str(e.value)
        assert calico.BTree.open(pool, "other")[b"x"] == b"y"
