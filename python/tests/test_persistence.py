"""Identical results after close and reopen in a new Python process."""

import json

import numpy as np

import calico
from conftest import POOL_BYTES, clustered, run_python


def test_vector_indexes_and_btree_reopen_in_a_new_process(data_dir, tmp_path):
    base = clustered(3000, 24)
    queries = clustered(40, 24, seed=5)
    with calico.Pool(data_dir, pool_bytes=POOL_BYTES) as pool:
        h = calico.HnswIndex(pool, "hnsw", dim=24, metric="cos", capacity=4000)
        h.add(base)
        ivf = calico.IvfIndex(pool, "ivf", dim=24, metric="l2", nlist=16)
        ivf.train(base)
        ivf.add(base, ids=np.arange(10_000, 13_000))
        t = calico.BTree(pool, "kv")
        t.bulk_load((b"key%06d" % i, b"value%d" % i) for i in range(5000))
        t.put(b"zz", b"last")
        t.delete(b"key000007")
        h_want = h.search(queries, k=10, ef=80)
        ivf_want = ivf.search(queries, k=10, nprobe=4)
    np.save(tmp_path / "q.npy", queries)
    out = run_python(f"""
        import json, numpy as np, calico
        q = np.load({str(tmp_path / "q.npy")!r})
        with calico.Pool({data_dir!r}, pool_bytes={POOL_BYTES}) as pool:
            h = calico.HnswIndex.open(pool, "hnsw")
            ivf = calico.IvfIndex.open(pool, "ivf")
            t = calico.BTree.open(pool, "kv")
            hi, hd = h.search(q, k=10, ef=80)
            ii, idist = ivf.search(q, k=10, nprobe=4)
            np.save({str(tmp_path / "h.npy")!r}, np.stack([hi.astype(np.float64), hd.astype(np.float64)]))
            np.save({str(tmp_path / "i.npy")!r}, np.stack([ii.astype(np.float64), idist.astype(np.float64)]))
            items = list(t.scan())
            print(json.dumps(dict(hlen=len(h), metric=h.metric, ilen=len(ivf), nlist=ivf.nlist, tlen=len(t),
                                  n=len(items), first=items[0][0].decode(), last=items[-1][1].decode(),
                                  has7=b"key000007" in t)))
    """)
    got = json.loads(out)
    assert got == dict(hlen=3000, metric="cos", ilen=3000, nlist=16, tlen=5000, n=5000, first="key000000",
                       last="last", has7=False)
    h_got = np.load(tmp_path / "h.npy")
    np.testing.assert_array_equal(h_got[0], h_want[0])
    np.testing.assert_array_equal(h_got[1], h_want[1])
    i_got = np.load(tmp_path / "i.npy")
    np.testing.assert_array_equal(i_got[0], ivf_want[0])
    np.testing.assert_array_equal(i_got[1], ivf_want[1])
