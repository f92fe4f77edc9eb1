"""
Calico: vector indexes and a B+tree on an array-translated buffer pool.
"""

from collections.abc import Iterable, Sequence
from typing import Optional

import numpy as np
from numpy.typing import NDArray

# Vectors and queries: float32, C-contiguous (read in place; anything else is a TypeError).
Vectors = NDArray[np.float32]
# ids: a 1-D array of any integer dtype, no negative value.
Ids = NDArray[np.integer]
# labels: integers 0 .. 2^32 - 1, one per row (a 1-D integer array or a list).
Labels = NDArray[np.integer] | Sequence[int]
SearchResult = tuple[NDArray[np.uint64], NDArray[np.float32]]


def translations() -> list[str]:
    """
    The translation variants a Pool can use (every name calico_bench knows), e.g. 'array'.
    """

class Pool:
    """
    A buffer pool over a data directory: the pages of every index stored in it, cached in
    ``pool_bytes`` of memory. Opens the directory (creating it when missing); the indexes
    written earlier are reopened by name. Use as a context manager, or call close().
    """

    def __init__(self, path: str, pool_bytes: int = 268435456, page_size: int = 4096, translation: str = 'array', direct_io: bool = True, far_bytes: int = 0, far_tier: str = 'remote-numa', atomic_flush: bool = True) -> None:
        """
        Opens or creates the pool of directory ``path`` with ``pool_bytes`` of frames, pages of
        ``page_size`` bytes (4096, 8192 or 16384; a directory keeps the size it was created with)
        and the page-id translation ``translation`` (see calico.translations()).
        ``far_bytes`` > 0 adds a far frame tier of that size behind the pool (tiered translations
        only: 'array_tiered', 'vmcache_n'): ``far_tier`` is 'remote-numa' or 'cxl' (emulated in
        local memory, docs/results/tiers.md), 'local', or 'numa:<node>' (bound to that node).
        ``atomic_flush`` (default): a crash reopens exactly the state of the last flush, every
        index whole (pages written back since are rolled back through a journal); False: each
        page at that flush or later, for measuring the raw write path.
        Raises InvalidArgumentError (bad size, unknown translation, a far tier the translation
        cannot take or that is unknown), PageSizeMismatchError, CorruptCatalogError, IoError
        (e.g. a read-only directory).
        """

    def flush(self) -> None:
        """
        Writes every dirty page and syncs: the durability point (close() flushes too).
        """

    def close(self) -> None:
        """
        Flushes and closes the pool and every index opened on it; further calls raise
        ClosedError. Closing twice is a no-op.
        """

    @property
    def closed(self) -> bool:
        """Whether close() was called."""

    @property
    def path(self) -> str:
        """The data directory."""

    @property
    def translation(self) -> str:
        """The translation variant's name."""

    @property
    def page_size(self) -> int:
        """Bytes per page."""

    def stats(self) -> dict[str, int]:
        """
        The pool's counters (accesses, hits, faults, evictions, write_backs, punches,
        prefetch_issued, optimistic_fallbacks, ...), frames, resident_pages and the translation's
        memory (translation_private_bytes, translation_mincore_bytes, translation_reserved_bytes),
        and with a far tier its traffic (far_frames, far_hits, far_evictions, promotions, demotions,
        migration_bytes, migration_ns), the rollback journal's (journal_pages, journal_syncs,
        flush_generation), as a dict of ints (direct_io: 0 or 1).
        """

    def spaces(self) -> list[str]:
        """The names of the spaces (indexes) stored in the pool."""

    def prewarm(self, name: str) -> int:
        """
        Reads the pages of the index ``name`` into free frames, in page order, and returns how
        many of its pages are resident afterwards (PostgreSQL's pg_prewarm). Nothing is evicted:
        it stops when the pool is full. Raises UnknownSpaceError when there is no such index.
        """

    def __enter__(self) -> Pool:
        """Returns the pool itself."""

    def __exit__(self, exc_type: object | None, exc: object | None, tb: object | None) -> None:
        """Closes the pool."""

    def __repr__(self) -> str: ...

class HnswIndex:
    """
    An HNSW vector index stored in a Pool under ``name`` (persistent; larger than the pool's
    memory is fine). Ids are any uint64 but 2^64 - 1 (an id map translates them to the
    graph's nodes); ``add`` of a present id replaces its vector, ``delete`` removes ids,
    ``search(filter=...)`` searches among allowed ids.
    """

    def __init__(self, pool: Pool, name: str, dim: int, metric: str = 'l2', M: int = 16, ef_construction: int = 100, capacity: int = 10000, seed: int = 42) -> None:
        """
        Opens index ``name`` of ``pool``, creating it when missing with ``dim`` dimensions, metric
        'l2' (squared Euclidean), 'ip' (1 - inner product) or 'cos' (cosine distance), M links per
        node (2M on level 0), ef_construction and room for ``capacity`` vectors at first (a hint:
        the index doubles its room whenever an id past it is added, while searches go on). An
        existing index keeps its parameters; a different dim or metric raises InvalidArgumentError.
        """

    @staticmethod
    def open(pool: Pool, name: str) -> HnswIndex:
        """
        Opens the index written earlier under ``name``. Raises UnknownSpaceError when there is
        none, InvalidArgumentError when the space holds another kind of index.
        """

    def add(self, vectors: Vectors, ids: Optional[Ids] = None, labels: Optional[Labels] = None, num_threads: int = 0) -> None:
        """
        Adds float32 C-contiguous ``vectors`` [n, dim] (or one [dim]) with ``ids`` (1-D integers,
        uint64 for ids of 2^63 and up; any value but 2^64 - 1; None: the first ids from len(self)
        up that are not in the index) on ``num_threads`` C++ threads (0: one per core). An id in
        the index gets the new vector (upsert): a search meanwhile sees the old or the new one.
        ``labels``: one integer label (0 to 2^32 - 1: a tenant, a user, a category) per row, as a
        1-D integer array or a list, stored with the row for search(labels=...); None: the rows
        are unlabeled (an upsert writes the row whole, label included). The batch is checked
        first (dim, NaN/inf, ids: none twice, not 2^64 - 1, one per row; labels: one per row,
        integers in range), so a bad batch adds nothing. Raises TypeError (dtype/layout),
        InvalidArgumentError.
        """

    def search(
        self,
        queries: Vectors,
        k: int = 10,
        ef: int | None = None,
        num_threads: int = 0,
        in_flight: int = 1,
        filter: Optional[NDArray[np.integer] | NDArray[np.bool_]] = None,
        labels: Optional[int | Labels] = None,
    ) -> SearchResult:
        """
        The k approximate nearest neighbours of each float32 C-contiguous query [n, dim] (or
        one [dim]): (ids uint64 [n, k], distances float32 [n, k]), ascending by distance. ``ef``
        is the beam width (None: max(50, k); raised to k). ``in_flight`` (1 to 64): queries each
        thread searches at once, taking turns, with the same results; for an index larger than
        the pool, whose reads then overlap (8 on one thread: 1.2-1.45x QPS); in memory it is
        slower. Each query in flight holds a search state of about one byte per node of the
        capacity. ``filter``: only these ids may be returned, given as a 1-D integer array of
        ids or a boolean mask over ids (element i allows id i; ids not in the index allow
        nothing); rows with fewer than k allowed ids are padded with (2^64 - 1, inf). Each id
        appears at most once per row. A filter allowing few ids is answered by an exact
        scan of them, otherwise by a graph search that keeps only allowed ids; either way each
        row holds min(k, allowed ids in the index) results (in_flight is 1 with a filter).
        ``labels``: only rows whose label (add(labels=...)) is ``labels`` (an int) or one of
        ``labels`` (integers); with ``filter``, both must hold; the same guarantee of
        min(k, matching rows) results. Raises TypeError (dtype/layout), InvalidArgumentError
        (dim, k = 0, k > len(self), NaN/inf, in_flight, a negative filter id, a label out of
        range).
        """

    def delete(self, ids: Ids) -> None:
        """
        Removes ``ids`` (1-D integers): no search returns them again. The batch is checked first
        (each id in the index, none twice), so a bad batch removes nothing. A removed node stays
        in the graph as a tombstone that searches pass through until consolidate() frees its
        slot (the id itself may be added again at once).
        Raises TypeError (dtype), InvalidArgumentError (naming the first bad id).
        """

    def consolidate(self) -> int:
        """
        Repairs the graph around the deleted and replaced vectors (each list that named one gets
        its neighbours instead, pruned as insertion prunes: FreshDiskANN's consolidation) and
        frees their slots for later adds. Returns how many were freed. One pass over the index;
        adds and deletes wait for it, searches go on. Runs by itself too: see auto_consolidate.
        """

    @property
    def auto_consolidate(self) -> float:
        """
        An add or delete that leaves tombstones (deleted and replaced vectors not yet freed) at
        max(1000, auto_consolidate x len(self)) or more runs consolidate() before it returns, so
        searches never wade through more dead nodes than that. Default 0.2; 0 turns it off.
        Not kept in the pool: set it after each open. Raises InvalidArgumentError for a negative
        or non-finite value.
        """

    @auto_consolidate.setter
    def auto_consolidate(self, arg: float, /) -> None: ...

    @property
    def tombstones(self) -> int:
        """
        Deleted and replaced vectors whose nodes consolidate() has not freed yet (right after
        an open: an upper bound, made exact by the next consolidation).
        """

    def __len__(self) -> int:
        """The number of vectors in the index (added, not deleted)."""

    def __contains__(self, id: int) -> bool:
        """Whether ``id`` is in the index (added and not deleted)."""

    def get_label(self, id: int) -> Optional[int]:
        """The label ``id`` was added with (an int), or None when it has none or is not in the index."""

    @property
    def name(self) -> str:
        """The index's name in its pool."""

    @property
    def dim(self) -> int:
        """Dimensions per vector."""

    @property
    def metric(self) -> str:
        """'l2', 'ip' or 'cos'."""

    @property
    def capacity(self) -> int:
        """
        Nodes (slots) the graph has room for; it doubles whenever an add needs more. Each add
        (and each upsert) takes a slot; consolidate() frees deleted and replaced ones.
        """

    @property
    def M(self) -> int:
        """Links per node on levels above 0."""

    @property
    def ef_construction(self) -> int:
        """Insertion beam width."""

    @property
    def optimistic(self) -> bool:
        """
        Searches read pages optimistically (version-validated, no latch). False: every read
        pins its page shared (the ablation). Results are identical either way.
        """

    @optimistic.setter
    def optimistic(self, arg: bool, /) -> None: ...

    @property
    def prefetch(self) -> bool:
        """
        Searches group-prefetch a node's unvisited neighbours. False: no prefetch (the ablation).
        """

    @prefetch.setter
    def prefetch(self, arg: bool, /) -> None: ...

    def __repr__(self) -> str: ...

class CodedHnswIndex:
    """
    An HNSW for vectors larger than memory, stored in a Pool under ``name``: a compressed code
    of every vector (RaBitQ, ``bits`` per dimension, or PQ of ``pq_bytes``) stays in memory and the search walks the
    graph (level 0) on code distances. A node's row in pool pages holds its links and its
    full vector, so each node the search expands costs one row read and is ranked exactly:
    larger than memory a query reads about as many pages as it expands nodes (DiskANN's
    layout), not one per visited neighbour. The calls are HnswIndex's (ids, upsert, delete,
    consolidate, filter, labels); the
    code model is fitted by ``train`` or, when not called, on the first ``add``'s rows.
    """

    def __init__(self, pool: Pool, name: str, dim: int, metric: str = 'l2', M: int = 16, ef_construction: int = 100, capacity: int = 10000, bits: int = 2, clusters: int | None = None, memory_budget: int | None = None, seed: int = 42, pq_bytes: int | None = None) -> None:
        """
        Opens index ``name`` of ``pool``, or makes a new, untrained one: ``dim``, ``metric``, ``M``,
        ``ef_construction`` and ``capacity`` as for HnswIndex; ``bits`` per dimension of the codes
        (1, 2 or 4: more bits steer the beam better at more memory); ``pq_bytes``: product-
        quantization codes of this many bytes a vector instead (at most ``dim``; ``bits`` and
        ``clusters`` unused: at budgets that leave RaBitQ 1 bit a dimension PQ spends every byte
        on the vector; its codebooks do not follow data added after training); ``clusters``: codes
        are residuals to the nearest of this many k-means centroids of the training rows (None:
        about the square root of the training rows, at most 256; data of well-separated clusters
        estimates better with about as many). Training uses at most 65,536 rows, evenly spaced.
        ``memory_budget``: the bytes
        the index may hold resident (its codes + model + the pool's frames + translation); a
        growth past it raises InvalidArgumentError (None: no limit). An existing index keeps its
        parameters (budget: the one given now).
        """

    @staticmethod
    def open(pool: Pool, name: str, memory_budget: int | None = None) -> CodedHnswIndex:
        """
        Opens the index written earlier under ``name`` (its codes are read into memory). Raises
        UnknownSpaceError when there is none, CorruptPageError when a code page fails its check.
        """

    def train(self, vectors: Vectors) -> None:
        """
        Fits the code model on ``vectors`` (float32 [n, dim]; none is stored) and writes the empty
        index. Optional: the first add() trains on its own rows; call train() with a sample when
        the first batch is small or unrepresentative. Raises InvalidArgumentError (trained
        already, dim, NaN/inf, a budget below the codes of ``capacity`` plus the pool's frames).
        """

    @property
    def is_trained(self) -> bool:
        """Whether the code model is fitted."""

    def add(self, vectors: Vectors, ids: Optional[Ids] = None, labels: Optional[Labels] = None, num_threads: int = 0) -> None:
        """As HnswIndex.add (the first call trains the codes when train() was not called)."""

    def search(
        self,
        queries: Vectors,
        k: int = 10,
        ef: int | None = None,
        rerank: int = 50,
        num_threads: int = 0,
        filter: Optional[NDArray[np.integer] | NDArray[np.bool_]] = None,
        labels: Optional[int | Labels] = None,
    ) -> SearchResult:
        """
        The k approximate nearest neighbours of each query, as HnswIndex.search: (ids uint64 [n, k],
        distances float32 [n, k], exact). ``ef``: the beam width on codes (None: max(64, k));
        every node it expands is ranked by its full vector. A filter allowing few ids is
        answered by scanning their codes (no graph page read); then the ``rerank`` best
        (at least 1; raised to k) are read as one group and ranked exactly. Raises as HnswIndex.search,
        and InvalidArgumentError for rerank 0 or an index with no rows yet.
        """

    def delete(self, ids: Ids) -> None:
        """As HnswIndex.delete."""

    def consolidate(self) -> int:
        """As HnswIndex.consolidate (on level 0, the only level)."""

    @property
    def auto_consolidate(self) -> float:
        """As HnswIndex.auto_consolidate (default 0.2)."""

    @auto_consolidate.setter
    def auto_consolidate(self, arg: float, /) -> None: ...

    @property
    def tombstones(self) -> int:
        """Deleted and replaced vectors not yet freed by consolidate()."""

    def memory(self) -> dict[str, int]:
        """
        Resident bytes as a dict: 'codes' (codes and slot states of the capacity, the entry sample), 'model',
        'pool_frames' (the whole pool's, shared with its other structures), 'translation',
        'pinned_rows' (pin_rows' copies), 'total' (their sum), and 'budget' (the memory_budget;
        2^64 - 1: none).
        """

    def pin_rows(self, bytes: int, sample: int = 1000) -> int:
        """
        Keeps in memory copies of the node rows searches expand most, up to ``bytes`` (about
        4 x (1 + 2M + dim) + 18 bytes a row), so that expanding one reads no page: the rows
        ``sample`` searches (for vectors of the index) expanded most often. Returns the rows
        pinned. Larger than memory, give it part of the memory the pool would have had: rows
        are several to a page and few of a page's rows are hot. Adds, deletes that consolidate
        and consolidate() drop the copies (searches then read pages) until it is called again;
        ``bytes`` 0 drops them. Raises ValueError when untrained, for ``sample`` 0, or when
        ``bytes`` do not fit memory_budget beside the rest of memory().
        """

    def __len__(self) -> int:
        """The number of vectors (added, not deleted)."""

    def __contains__(self, id: int) -> bool:
        """Whether ``id`` is in the index (added and not deleted)."""

    def get_label(self, id: int) -> int | None:
        """As HnswIndex.get_label."""

    @property
    def name(self) -> str:
        """The index's name in its pool."""

    @property
    def dim(self) -> int:
        """Dimensions per vector."""

    @property
    def metric(self) -> str:
        """'l2', 'ip' or 'cos'."""

    @property
    def bits(self) -> int:
        """Code bits per dimension (0 with PQ codes)."""

    @property
    def pq_bytes(self) -> int:
        """Bytes of a PQ code (0: RaBitQ codes of ``bits`` per dimension)."""

    @property
    def capacity(self) -> int:
        """Slots the index has room for (0 before training); doubles as needed within the budget."""

    @property
    def M(self) -> int:
        """Links chosen per node (lists hold 2M)."""

    @property
    def ef_construction(self) -> int:
        """Insertion beam width."""

    @property
    def prefetch(self) -> bool:
        """Searches prefetch the link pages of candidates entering the beam (group reads)."""

    @prefetch.setter
    def prefetch(self, arg: bool, /) -> None: ...

    def __repr__(self) -> str: ...

class IvfIndex:
    """
    An IVF-Flat vector index stored in a Pool under ``name``: nlist centroids trained by
    k-means (train), rows appended to their nearest centroid's list (add), the nprobe
    nearest lists scanned (search). Ids are any uint64 but 2^64 - 1, one row each (an id
    map translates them): ``add`` of a present id replaces its row, ``delete`` removes
    ids, ``search(filter=...)`` searches among allowed ids.
    """

    def __init__(self, pool: Pool, name: str, dim: int, metric: str = 'l2', nlist: int = 1024) -> None:
        """
        Opens index ``name`` of ``pool``; when missing, an untrained index of ``dim`` dimensions,
        metric 'l2', 'ip' or 'cos' and ``nlist`` lists (nothing is stored until train()). An
        existing index with another dim, metric or nlist raises InvalidArgumentError.
        """

    @staticmethod
    def open(pool: Pool, name: str) -> IvfIndex:
        """Opens the index written earlier under ``name`` (UnknownSpaceError when missing)."""

    def train(self, vectors: Vectors, iters: int = 10, seed: int = 42, num_threads: int = 0) -> None:
        """
        Trains the nlist centroids by k-means on a sample of ``vectors`` (float32 C-contiguous, at
        least nlist rows; none of them is stored) and writes the empty index. Raises
        InvalidArgumentError (trained already, too few rows, NaN/inf), SpaceExistsError.
        """

    @property
    def is_trained(self) -> bool:
        """Whether train() ran."""

    def add(self, vectors: Vectors, ids: Optional[Ids] = None, labels: Optional[Labels] = None, num_threads: int = 0) -> None:
        """
        Adds float32 C-contiguous ``vectors`` [n, dim] with ``ids`` (1-D integers, uint64 for ids
        of 2^63 and up; any value but 2^64 - 1; None: the first ids from len(self) up that are
        not in the index) on ``num_threads`` C++ threads. An id in the index gets the new
        vector (upsert; a search meanwhile sees the old or the new one). ``labels``: one
        integer label (0 to 2^32 - 1) per row, as for HnswIndex.add. The batch is checked
        first; a bad batch adds nothing. Upserts remove the replaced rows in one pass over the
        index per call: upsert in batches.
        """

    def search(
        self,
        queries: Vectors,
        k: int = 10,
        nprobe: int = 8,
        num_threads: int = 0,
        filter: Optional[NDArray[np.integer] | NDArray[np.bool_]] = None,
        labels: Optional[int | Labels] = None,
    ) -> SearchResult:
        """
        The k nearest rows among the ``nprobe`` nearest lists of each query: (ids uint64 [n, k],
        distances float32 [n, k]); rows with fewer than k candidates are padded with
        (2^64 - 1, inf). ``filter``: only rows with these ids may be returned, given as a 1-D
        integer array of ids or a boolean mask over ids (element i allows id i). A filtered
        search scans the nprobe nearest lists, then further lists (nearest first) while it has
        fewer than k allowed rows, so each row holds min(k, allowed rows in the index) results;
        a filter allowing few rows may scan the whole index. ``labels``: only rows whose label
        is ``labels`` (an int) or one of ``labels`` (integers), with ``filter`` both; searched
        the same way. Raises TypeError, InvalidArgumentError (dim, k = 0, k > len(self),
        nprobe = 0, NaN/inf, not trained, a negative filter id, a label out of range).
        """

    def delete(self, ids: Ids) -> None:
        """
        Removes ``ids`` (1-D integers): no search returns them again. The batch is checked
        first (each id in the index, none twice), so a bad batch removes nothing. One call
        reads every posting page once (the id map finds each id's slot, not its list), however
        few ids it names: delete in batches. The rows' space in their pages is reused by
        compaction; pages are not freed.
        Raises TypeError (dtype), InvalidArgumentError (naming the first bad id).
        """

    def __len__(self) -> int:
        """The number of rows (added, not deleted)."""

    def __contains__(self, id: int) -> bool:
        """Whether ``id`` is in the index (added and not deleted)."""

    def get_label(self, id: int) -> Optional[int]:
        """The label ``id`` was added with (an int), or None when it has none or is not in the index."""

    @property
    def name(self) -> str:
        """The index's name in its pool."""

    @property
    def dim(self) -> int:
        """Dimensions per vector."""

    @property
    def metric(self) -> str:
        """'l2', 'ip' or 'cos'."""

    @property
    def nlist(self) -> int:
        """The number of lists."""

    @property
    def optimistic(self) -> bool:
        """Searches read posting pages optimistically. False: under a shared pin (the ablation)."""

    @optimistic.setter
    def optimistic(self, arg: bool, /) -> None: ...

    @property
    def prefetch(self) -> bool:
        """Searches group-prefetch the probed lists' pages."""

    @prefetch.setter
    def prefetch(self, arg: bool, /) -> None: ...

    def __repr__(self) -> str: ...

class BTreeScan:
    """An iterator of (key, value) pairs of a BTree.scan()."""

    def __iter__(self) -> BTreeScan: ...

    def __next__(self) -> tuple[bytes, bytes]:
        """The next (key, value) in key order."""

class BTree:
    """
    A persistent map of bytes keys (1..256 bytes) to bytes values (0..512 bytes), a B+tree
    stored in a Pool under ``name``. len() is made durable by Pool.flush() and close().
    """

    def __init__(self, pool: Pool, name: str) -> None:
        """Opens tree ``name`` of ``pool``, creating it when missing."""

    @staticmethod
    def open(pool: Pool, name: str) -> BTree:
        """
        Opens the tree written earlier under ``name`` (UnknownSpaceError when missing).
        """

    def put(self, key: bytes, value: bytes) -> None:
        """
        Sets ``key`` to ``value`` (inserting or replacing). InvalidArgumentError on sizes.
        """

    def get(self, key: bytes, default: Optional[bytes] = None) -> Optional[bytes]:
        """The value of ``key``, or ``default`` when absent."""

    def delete(self, key: bytes) -> bool:
        """Removes ``key``; returns whether it was present."""

    def __contains__(self, key: bytes) -> bool:
        """Whether ``key`` is present."""

    def __getitem__(self, key: bytes) -> bytes:
        """The value of ``key``; KeyError when absent."""

    def __setitem__(self, key: bytes, value: bytes) -> None:
        """Same as put()."""

    def __delitem__(self, key: bytes) -> None:
        """Removes ``key``; KeyError when absent."""

    def __len__(self) -> int:
        """The number of keys."""

    def scan(self, start: bytes | None = None, end: bytes | None = None) -> BTreeScan:
        """
        An iterator of (key, value) for start <= key < end in key order (None: unbounded). It reads
        batches of 256 entries with the GIL released; each batch is a consistent snapshot of its
        leaves, writes between batches may or may not be seen.
        """

    def bulk_load(self, pairs: Iterable[tuple[bytes, bytes]]) -> None:
        """
        Loads (key, value) pairs of bytes with strictly increasing keys into an EMPTY tree, bottom-up
        (much faster than put). It must be the only operation on the tree while it runs. Raises
        InvalidArgumentError (not empty, unsorted, sizes) before writing anything.
        """

    @property
    def name(self) -> str:
        """The tree's name in its pool."""

    def __repr__(self) -> str: ...
