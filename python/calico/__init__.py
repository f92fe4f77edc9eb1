"""Calico from Python: vector indexes (HNSW, the coded HNSW for data larger than memory,
IVF-Flat) and a bytes -> bytes B+tree stored in
a buffer pool, persistent and larger than memory.

    import numpy as np, calico
    with calico.Pool("/tmp/db", pool_bytes=256 << 20) as pool:
        index = calico.HnswIndex(pool, "vectors", dim=128, metric="l2", capacity=100_000)
        index.add(np.random.rand(1000, 128).astype(np.float32))
        ids, dist = index.search(np.random.rand(5, 128).astype(np.float32), k=10)

Input rule: vectors and queries are float32, C-contiguous NumPy arrays, read in place
(never copied); anything else raises TypeError (use np.ascontiguousarray(x,
dtype=np.float32)). Every call that reaches the index releases the GIL; batches run on
C++ threads. Errors are calico.Error subclasses (calico._errors).
"""

from ._calico import BTree, BTreeScan, CodedHnswIndex, HnswIndex, IvfIndex, Pool, translations
from ._errors import (ChecksumMismatchError, ClosedError, CorruptCatalogError, CorruptPageError,
                      Error, InvalidArgumentError, IoError, OutOfRangeError, PageOutOfRangeError,
                      PageSizeMismatchError, PoolFullError, RestartLimitError, ShortReadError,
                      SpaceExistsError, UnknownSpaceError)

__version__ = "0.1.0"

__all__ = [
    "Pool", "HnswIndex", "CodedHnswIndex", "IvfIndex", "BTree", "BTreeScan", "translations",
    "Error", "InvalidArgumentError", "UnknownSpaceError", "OutOfRangeError",
    "PageOutOfRangeError", "PoolFullError", "IoError", "ShortReadError",
    "ChecksumMismatchError", "CorruptCatalogError", "PageSizeMismatchError",
    "SpaceExistsError", "RestartLimitError", "CorruptPageError", "ClosedError",
]
