"""A process killed between flushes: the reopened index is exactly the last flush's.

The child adds, updates and deletes in an index larger than its pool (so eviction writes
pages back between flushes), flushes, changes the index again, and is killed with SIGKILL
before the next flush. The parent reopens the directory: the index holds the flushed ids,
labels and vectors, and nothing of the changes after the flush (the pool's rollback
journal, src/pool/journal.h). The child reports that pages did reach the disk in place after
the flush, and that their flushed images were journaled first.
"""
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import calico

CHILD = """
import os, signal, sys
import numpy as np
import calico

path, kind = sys.argv[1], sys.argv[2]
rng = np.random.default_rng(7)
base = rng.random((3000, 16), dtype=np.float32)
with calico.Pool(path, pool_bytes=64 * 4096) as pool:
    index = (calico.HnswIndex(pool, "v", dim=16, M=8, ef_construction=32) if kind == "hnsw"
             else calico.CodedHnswIndex(pool, "v", dim=16, M=8, ef_construction=32) if kind == "coded"
             else calico.IvfIndex(pool, "v", dim=16, nlist=8))
    if kind != "hnsw":
        index.train(base[:500])
    index.add(base[:2000], ids=np.arange(2000, dtype=np.uint64) * 7, labels=np.arange(2000, dtype=np.uint32) % 3)
    index.delete(np.arange(0, 300, dtype=np.uint64) * 7)
    pool.flush()
    before = pool.stats()
    # After the flush: updates, new rows, deletes, none flushed.
    index.add(base[2000:3000], ids=np.arange(1000, dtype=np.uint64) * 7 + 300 * 7)
    index.delete(np.arange(1500, 1600, dtype=np.uint64) * 7)
    after = pool.stats()
    print(after["write_backs"] - before["write_backs"], after["journal_pages"] - before["journal_pages"], flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("kind", ["hnsw", "ivf", "coded"])
def test_a_kill_after_a_flush_reopens_the_flushed_index(tmp_path, kind):
    path = str(tmp_path / "pool")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD), path, kind], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == -signal.SIGKILL, r.stderr
    written_back, journaled = map(int, r.stdout.split())
    assert written_back > 0, "the changes after the flush must reach the disk in place"
    assert journaled > 0, "and the flushed images must be saved first"

    rng = np.random.default_rng(7)
    base = rng.random((3000, 16), dtype=np.float32)
    with calico.Pool(path, pool_bytes=64 * 4096) as pool:
        index = {"hnsw": calico.HnswIndex, "ivf": calico.IvfIndex, "coded": calico.CodedHnswIndex}[kind].open(pool, "v")
        assert len(index) == 1700
        for i in [300, 301, 999, 1500, 1599, 1999]:  # flushed rows, some changed after the flush
            ids, dist = index.search(base[i], k=1, filter=np.array([i * 7], dtype=np.uint64))
            assert ids[0, 0] == i * 7 and dist[0, 0] == 0.0, i
            assert index.get_label(i * 7) == i % 3
        for i in [0, 299]:  # deleted before the flush
            ids, _ = index.search(base[i], k=1, filter=np.array([i * 7], dtype=np.uint64))
            assert ids[0, 0] == 2**64 - 1


NEW_CHILD = """
import os, signal, sys
import numpy as np
import calico

path = sys.argv[1]
rng = np.random.default_rng(3)
with calico.Pool(path, pool_bytes=64 * 4096) as pool:
    kept = calico.BTree(pool, "kept")
    kept.put(b"k", b"flushed")
    pool.flush()
    # Created after the last flush, never flushed: the kill must leave no trace of them.
    hnsw = calico.HnswIndex(pool, "h", dim=8)
    hnsw.add(rng.random((50, 8), dtype=np.float32))
    ivf = calico.IvfIndex(pool, "i", dim=8, nlist=4)
    ivf.train(rng.random((100, 8), dtype=np.float32))
    ivf.add(rng.random((50, 8), dtype=np.float32))
    tree = calico.BTree(pool, "t")
    tree.put(b"a", b"b")
    coded = calico.CodedHnswIndex(pool, "c", dim=8)
    coded.add(rng.random((50, 8), dtype=np.float32))
    print(" ".join(sorted(pool.spaces())), flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_structures_created_after_the_last_flush_are_gone_after_a_kill(tmp_path):
    """The pool's contract: the state of the last completed flush, which held no "h", "i" or
    "t". Their spaces exist without a block after the kill (create_space names them in the
    catalog at once); they open as absent and are created anew, not refused as corrupt."""
    path = str(tmp_path / "pool")
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(NEW_CHILD), path], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == -signal.SIGKILL, r.stderr
    assert "h.slots" in r.stdout.split() and "t" in r.stdout.split() and "c.codes" in r.stdout.split()

    rng = np.random.default_rng(5)
    rows = rng.random((40, 8), dtype=np.float32)
    with calico.Pool(path, pool_bytes=64 * 4096) as pool:
        assert calico.BTree.open(pool, "kept")[b"k"] == b"flushed"
        for name in ["h", "i", "t", "c"]:
            with pytest.raises(calico.UnknownSpaceError, match=f"'{name}"):
                {"h": calico.HnswIndex, "i": calico.IvfIndex, "t": calico.BTree,
                 "c": calico.CodedHnswIndex}[name].open(pool, name)
        hnsw = calico.HnswIndex(pool, "h", dim=8)
        assert len(hnsw) == 0
        hnsw.add(rows, ids=np.arange(40, dtype=np.uint64) + 100)
        ivf = calico.IvfIndex(pool, "i", dim=8, nlist=4)
        assert not ivf.is_trained
        ivf.train(rows)
        ivf.add(rows)
        tree = calico.BTree(pool, "t")
        assert len(tree) == 0
        tree.put(b"x", b"y")
        coded = calico.CodedHnswIndex(pool, "c", dim=8)
        assert len(coded) == 0 and not coded.is_trained
        coded.add(rows)
        assert hnsw.search(rows[7], k=1)[0][0, 0] == 107
        assert ivf.search(rows[7], k=1)[0][0, 0] == 7
        assert coded.search(rows[7], k=1)[0][0, 0] == 7
    with calico.Pool(path, pool_bytes=64 * 4096) as pool:
        assert len(calico.HnswIndex.open(pool, "h")) == 40
        assert len(calico.IvfIndex.open(pool, "i")) == 40
        assert len(calico.CodedHnswIndex.open(pool, "c")) == 40
        assert calico.BTree.open(pool, "t")[b"x"] == b"y"
