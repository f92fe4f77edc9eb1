"""BTree against a dict model: random puts and deletes, range scans across batch boundaries
(also with 256-byte keys, the largest), bulk_load, persistence of contents and len()."""

import random

import calico
from conftest import POOL_BYTES


def test_btree_matches_a_dict_model(pool):
    t = calico.BTree(pool, "kv")
    model = {}
    rng = random.Random(3)
    for i in range(6000):
        k = b"%06d" % rng.randrange(3000)
        if rng.random() < 0.3:
            assert t.delete(k) == (k in model)
            model.pop(k, None)
        else:
            v = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
            t.put(k, v)
            model[k] = v
    assert len(t) == len(model)
    keys = sorted(model)
    assert list(t.scan()) == [(k, model[k]) for k in keys]
    for lo, hi in ((b"000500", b"001700"), (b"", b"000010"), (b"002990", None), (b"zzz", None)):
        want = [(k, model[k]) for k in keys if k >= (lo or b"") and (hi is None or k < hi)]
        assert list(t.scan(lo or None, hi)) == want
    for k in keys[:50]:
        assert k in t and t[k] == model[k]


def test_scan_resumes_after_the_longest_keys(pool):
    t = calico.BTree(pool, "long")
    keys = [bytes([65 + i // 26, 65 + i % 26]) * 128 for i in range(600)]  # 256 bytes each
    for k in keys:
        t[k] = k[:3]
    got = list(t.scan())  # 600 entries: three batches of at most 256
    assert [k for k, _ in got] == sorted(keys)


def test_bulk_load_and_reopen(data_dir):
    pairs = [(b"k%07d" % i, b"v" * (i % 50)) for i in range(20000)]
    with calico.Pool(data_dir, pool_bytes=POOL_BYTES) as pool:
        t = calico.BTree(pool, "kv")
        t.bulk_load(iter(pairs))
        t[b"k9999999"] = b"tail"
        del t[b"k0000000"]
    with calico.Pool(data_dir, pool_bytes=POOL_BYTES) as pool:
        t = calico.BTree.open(pool, "kv")
        assert len(t) == 20000
        got = list(t.scan())
        assert got[0] == pairs[1] and got[-1] == (b"k9999999", b"tail") and got[1:-1] == pairs[2:]
