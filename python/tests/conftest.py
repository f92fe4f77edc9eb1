"""Shared fixtures of the calico tests: a fresh data directory, seeded clustered vectors,
NumPy brute force, and a way to run code in a new Python process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import calico

# scripts/wheel.sh runs this suite against the wheel installed in a fresh virtualenv and
# names that virtualenv here: calico must then be imported from it, not from the source tree.
_installed_in = os.environ.get("CALICO_TEST_INSTALLED_IN")
if _installed_in:
    assert os.path.realpath(calico.__file__).startswith(os.path.realpath(_installed_in) + os.sep), (
        f"calico was imported from {calico.__file__}, not from the wheel installed in {_installed_in}")

# Small pools keep the tests fast (the pool prefaults its frames).
POOL_BYTES = 32 << 20


@pytest.fixture
def data_dir(tmp_path):
    return str(tmp_path / "db")


@pytest.fixture
def pool(data_dir):
    p = calico.Pool(data_dir, pool_bytes=POOL_BYTES)
    yield p
    p.close()


def clustered(n: int, dim: int, clusters: int = 20, seed: int = 1) -> np.ndarray:
    """n float32 rows around `clusters` Gaussian centres (C-contiguous)."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 4, size=(clusters, dim)).astype(np.float32)
    rows = centres[rng.integers(0, clusters, size=n)] + rng.normal(0, 1, size=(n, dim)).astype(np.float32)
    return np.ascontiguousarray(rows, dtype=np.float32)


def brute_force(base: np.ndarray, queries: np.ndarray, k: int, metric: str = "l2") -> np.ndarray:
    """The ids of the exact k nearest rows of every query (ties by id)."""
    if metric == "l2":
        d = ((queries[:, None, :].astype(np.float64) - base[None, :, :]) ** 2).sum(-1)
    else:
        b, q = base.astype(np.float64), queries.astype(np.float64)
        if metric == "cos":
            b = b / np.linalg.norm(b, axis=1, keepdims=True)
            q = q / np.linalg.norm(q, axis=1, keepdims=True)
        d = 1.0 - q @ b.T
    return np.argsort(d, axis=1, kind="stable")[:, :k]


# The vector index classes by the kind names the parametrized tests use.
INDEX_CLASSES = {"hnsw": calico.HnswIndex, "ivf": calico.IvfIndex, "coded": calico.CodedHnswIndex}


def small_index(pool, kind: str, name: str = "v", dim: int = 8, nlist: int = 8):
    """A small index of `kind` ('hnsw': M 8, ef_construction 64, capacity 256; 'coded': the
    same, its codes trained on 400 clustered rows; 'ivf': `nlist` lists trained on them), for
    the model tests of ids and labels."""
    if kind == "hnsw":
        return calico.HnswIndex(pool, name, dim=dim, M=8, ef_construction=64, capacity=256)
    if kind == "coded":
        index = calico.CodedHnswIndex(pool, name, dim=dim, M=8, ef_construction=64, capacity=256)
    else:
        index = calico.IvfIndex(pool, name, dim=dim, nlist=nlist)
    index.train(clustered(400, dim, seed=9))
    return index


def search_small(index, kind: str, q, k: int, **kw):
    """search() of a small_index: HNSW with ef 128, the coded HNSW with ef and rerank 128 (its
    1-bit codes of 8 dimensions rank coarsely), IVF exact (every list probed)."""
    if kind == "hnsw":
        return index.search(q, k=k, ef=128, **kw)
    if kind == "coded":
        return index.search(q, k=k, ef=128, rerank=128, **kw)
    return index.search(q, k=k, nprobe=index.nlist, **kw)


def recall(got: np.ndarray, want: np.ndarray) -> float:
    hits = sum(len(set(g.tolist()) & set(w.tolist())) for g, w in zip(got, want))
    return hits / want.size


def run_python(code: str, *, user: int | None = None) -> str:
    """Runs `code` in a new Python process (the same interpreter); returns its stdout.
    Fails the test with the child's stderr when it exits non-zero."""
    kwargs = {}
    if user is not None:
        kwargs["preexec_fn"] = lambda: (os.setgid(user), os.setuid(user))
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                       timeout=300, **kwargs)
    assert r.returncode == 0, f"child failed ({r.returncode}):\n{r.stderr}"
    return r.stdout
