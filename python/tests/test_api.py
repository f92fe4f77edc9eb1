"""The public surface: every translation variant works from Python, every error code has
its class, the stubs cover the module, every public call has a docstring."""

import ast
import inspect
import os

import numpy as np
import pytest

import calico
import calico._calico as ext
from conftest import POOL_BYTES, clustered

VARIANTS = ["direct", "array", "array_sparse", "array_tiered", "hash_chained", "hash_open", "hash_lockfree", "predictive",
            "vmcache", "vmcache_2m", "vmcache_n", "lipah", "array_hinted"]


def test_every_translation_of_calico_bench_is_selectable():
    assert sorted(calico.translations()) == sorted(VARIANTS)


@pytest.mark.parametrize("translation", VARIANTS)
def test_each_translation_runs_every_index_and_reopens(tmp_path, translation):
    # One pool per index: 'direct' (no translation: the ceiling) maps a single space to frames.
    base = clustered(300, 8)

    def pool(name):
        return calico.Pool(str(tmp_path / name), pool_bytes=16 << 20, translation=translation)

    with pool("h") as p:
        assert p.translation == translation
        h = calico.HnswIndex(p, "h", dim=8, capacity=300)
        h.add(base)
        want = h.search(base[:10], k=3)
        stats = p.stats()
        assert stats["accesses"] > 0 and stats["frames"] == (16 << 20) // 4096
        assert "translation_private_bytes" in stats
    with pool("ivf") as p:
        ivf = calico.IvfIndex(p, "ivf", dim=8, nlist=4)
        ivf.train(base)
        ivf.add(base)
    with pool("kv") as p:
        t = calico.BTree(p, "kv")
        for i in range(300):
            t[b"%04d" % i] = b"%d" % (i * i)
    with pool("h") as p:
        got = calico.HnswIndex.open(p, "h").search(base[:10], k=3)
        np.testing.assert_array_equal(got[0], want[0])
    with pool("ivf") as p:
        ids, dist = calico.IvfIndex.open(p, "ivf").search(base[:10], k=1, nprobe=4)
        assert ids[:, 0].tolist() == list(range(10)) and np.all(dist == 0)
    with pool("kv") as p:
        t = calico.BTree.open(p, "kv")
        assert len(t) == 300 and t[b"0012"] == b"144"


@pytest.mark.parametrize("translation", ["array_tiered", "vmcache_n"])
def test_a_far_tier_holds_pages_between_the_pool_and_disk(tmp_path, translation):
    # 2 MB of frames, a 2 MB far tier (emulated remote NUMA), about 8 MB of B+tree: pages move
    # between the tiers and on to disk while the tree is written and read.
    n = 40000
    with calico.Pool(str(tmp_path / "p"), pool_bytes=2 << 20, translation=translation, far_bytes=2 << 20) as p:
        t = calico.BTree(p, "kv")
        for i in range(n):
            t[b"%08d" % i] = b"%0150d" % i
        for i in range(0, n, 3):
            assert t[b"%08d" % i] == b"%0150d" % i
        s = p.stats()
        assert s["far_frames"] == 512
        assert s["demotions"] > 0 and s["far_hits"] > 0 and s["far_evictions"] > 0
        assert s["migration_bytes"] == (s["promotions"] + s["demotions"]) * 4096
    with calico.Pool(str(tmp_path / "p"), pool_bytes=2 << 20, translation=translation, far_bytes=2 << 20) as p:
        t = calico.BTree.open(p, "kv")
        assert len(t) == n and t[b"%08d" % (n - 1)] == b"%0150d" % (n - 1)


def test_prewarm_reads_an_index_into_the_pool_before_any_search(tmp_path):
    with calico.Pool(str(tmp_path / "p"), pool_bytes=16 << 20) as p:
        t = calico.BTree(p, "kv")
        for i in range(20000):
            t[b"%08d" % i] = b"%0100d" % i
    with calico.Pool(str(tmp_path / "p"), pool_bytes=16 << 20) as p:
        pages = p.prewarm("kv")
        s = p.stats()
        assert pages > 100 and s["resident_pages"] >= pages
        assert s["evictions"] == 0
        assert p.prewarm("kv") == pages, "resident pages are not read again"
        assert p.stats()["faults"] + p.stats()["prefetch_issued"] == s["faults"] + s["prefetch_issued"]
        assert calico.BTree.open(p, "kv")[b"00000123"] == b"%0100d" % 123
        with pytest.raises(calico.UnknownSpaceError):
            p.prewarm("missing")


def test_every_error_code_has_a_class():
    header = open(os.path.join(os.path.dirname(__file__), "../../include/calico/error.h")).read()
    codes = [line.split()[0].rstrip(",") for line in header.split("enum class ErrorCode {")[1].split("};")[0].splitlines()
             if line.strip().startswith("k")]
    assert len(codes) == 12
    names = {"kInvalidArgument": "InvalidArgumentError", "kUnknownSpace": "UnknownSpaceError",
             "kPageOutOfRange": "OutOfRangeError", "kPoolFull": "PoolFullError", "kIoError": "IoError",
             "kShortRead": "ShortReadError", "kChecksumMismatch": "ChecksumMismatchError",
             "kCorruptCatalog": "CorruptCatalogError", "kPageSizeMismatch": "PageSizeMismatchError",
             "kSpaceExists": "SpaceExistsError", "kRestartLimit": "RestartLimitError",
             "kCorruptPage": "CorruptPageError"}
    assert sorted(codes) == sorted(names)
    for cls in names.values():
        assert issubclass(getattr(calico, cls), calico.Error)
    errors_cc = open(os.path.join(os.path.dirname(__file__), "../src/errors.cc")).read()
    for code, cls in names.items():
        assert f'case ErrorCode::{code}: return "{cls}";' in errors_cc
    assert issubclass(calico.InvalidArgumentError, ValueError)
    assert issubclass(calico.IoError, OSError)
    assert issubclass(calico.UnknownSpaceError, LookupError)
    assert calico.PageOutOfRangeError is calico.OutOfRangeError


def _public(obj):
    return sorted(n for n in dir(obj) if not n.startswith("_") or n in
                  ("__init__", "__len__", "__contains__", "__getitem__", "__setitem__", "__delitem__",
                   "__enter__", "__exit__", "__iter__", "__next__"))


def test_stubs_cover_the_module_and_every_call_has_a_docstring():
    stub = ast.parse(open(os.path.join(os.path.dirname(calico.__file__), "_calico.pyi")).read())
    classes = {n.name: {m.name for m in n.body if isinstance(m, ast.FunctionDef)} for n in stub.body
               if isinstance(n, ast.ClassDef)}
    functions = {n.name for n in stub.body if isinstance(n, ast.FunctionDef)}
    for name in dir(ext):
        if name.startswith("_"):
            continue
        obj = getattr(ext, name)
        if inspect.isclass(obj):
            assert name in classes, f"{name} missing from _calico.pyi"
            for member in _public(obj):
                if member not in vars(obj) or (member == "__init__" and obj.__init__.__doc__.startswith("Initialize self")):
                    continue  # inherited, or no constructor (BTreeScan)
                assert member in classes[name], f"{name}.{member} missing from _calico.pyi"
                doc = getattr(obj, member).__doc__
                if member not in ("__iter__",):
                    assert doc and len(doc.strip()) > 10, f"{name}.{member} has no docstring"
        else:
            assert name in functions and obj.__doc__
    assert os.path.exists(os.path.join(os.path.dirname(calico.__file__), "py.typed"))


SCALAR_CHILD = """
import sys
import numpy as np
import calico
rng = np.random.default_rng(11)
base = rng.random((500, 24), dtype=np.float32)
with calico.Pool(sys.argv[1], pool_bytes=16 << 20) as pool:
    h = calico.HnswIndex(pool, "h", dim=24, capacity=500)
    h.add(base, num_threads=1)
    ids, dist = h.search(base[:50], k=5, ef=64, num_threads=1)
np.save(sys.argv[2], np.concatenate([ids.astype(np.float64), dist.astype(np.float64)], axis=1))
"""


def test_a_cpu_without_avx2_runs_the_module_with_the_same_results(tmp_path):
    """The module is built for the x86-64 baseline and picks its distance kernels at run time
    (src/vector/distance.cc; CALICO_SIMD=scalar caps the choice as a CPU without AVX2 would):
    importing never fails on an older x86-64 CPU, and its answers are the same rows with
    distances equal to rounding."""
    import subprocess
    import sys
    out = {}
    for level in ("scalar", "best"):
        env = dict(os.environ)
        env.pop("CALICO_SIMD", None)
        if level == "scalar":
            env["CALICO_SIMD"] = "scalar"
        path = tmp_path / f"{level}.npy"
        subprocess.run([sys.executable, "-c", SCALAR_CHILD, str(tmp_path / level), str(path)], env=env, check=True,
                       timeout=300)
        out[level] = np.load(path)
    np.testing.assert_array_equal(out["scalar"][:, :5], out["best"][:, :5])
    np.testing.assert_allclose(out["scalar"][:, 5:], out["best"][:, 5:], rtol=1e-5, atol=1e-5)
