// calico.HnswIndex and calico.IvfIndex: vector indexes on a Pool. Input rules in arrays.h;
// the GIL is released around every call into the index (searches and adds run on C++
// threads, num_threads = 0: one per core).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>

#include <limits>
#include <optional>

#include "api.h"
#include "arrays.h"
#include "bindings.h"
#include "pool_handle.h"

namespace calico::py {

namespace nb = nanobind;
using namespace nb::literals;

MetricName parse_metric(const std::string& name) {
  if (name == "l2") return MetricName::kL2;
  if (name == "ip") return MetricName::kIp;
  if (name == "cos") return MetricName::kCos;
  throw Error(ErrorCode::kInvalidArgument, "metric '" + name + "': use 'l2', 'ip' or 'cos'");
}

const char* metric_name(MetricName m) {
  switch (m) {
    case MetricName::kL2: return "l2";
    case MetricName::kIp: return "ip";
    case MetricName::kCos: return "cos";
  }
  return "l2";
}

namespace {

// HnswIndex.search's in_flight: at most this many queries in flight per thread.
constexpr uint32_t kMaxInFlight = 64;

// The Python object: the shared index plus this handle's search knobs.
template <class Api>
struct VectorHandle {
  std::shared_ptr<Api> api;
  std::string name;
  bool optimistic = true;
  bool prefetch = true;
};
using HnswHandle = VectorHandle<HnswApi>;
using IvfHandle = VectorHandle<IvfApi>;
using CodedHandle = VectorHandle<CodedHnswApi>;

template <class Api>
void add_rows(VectorHandle<Api>& h, nb::handle vectors, const nb::object& ids, const nb::object& labels,
              unsigned threads) {
  FloatRows rows(vectors, h.api->dim(), "vectors");
  const VectorBatch& v = rows.batch();
  const std::vector<uint64_t> id = ids_of(ids, v.rows);
  const std::vector<uint32_t> label = row_labels_of(labels, v.rows);
  nb::gil_scoped_release release;
  h.api->add(v, id.empty() ? nullptr : id.data(), threads, labels.is_none() ? nullptr : label.data());
}

// get_label(id): the id's label, None when it has none or is not in the index.
template <class Api>
std::optional<uint32_t> label_of_id(VectorHandle<Api>& h, uint64_t id) {
  nb::gil_scoped_release release;
  return h.api->label(id);
}

// The label filter of search(labels=...): None, an int (==) or integers (in).
inline std::optional<std::vector<uint32_t>> label_filter_of(const nb::object& labels) {
  if (labels.is_none()) return std::nullopt;
  return labels_of(labels, "labels");
}

// delete(ids): a 1-D integer array, converted whole before the GIL is released.
template <class Api>
void delete_ids(VectorHandle<Api>& h, const nb::object& ids) {
  AnyArray a;
  if (!nb::try_cast(ids, a, false)) throw nb::type_error("ids must be a 1-D NumPy integer array");
  const std::vector<uint64_t> id = integers_of(a, "ids");
  nb::gil_scoped_release release;
  h.api->remove(id.data(), id.size());
}

// k checked against the index's size: k above it is an error (results would be padded).
template <class Api>
nb::tuple search_rows(VectorHandle<Api>& h, nb::handle queries, uint32_t k, uint32_t param, unsigned threads,
                      uint32_t in_flight = 1, const std::vector<uint64_t>* allowed = nullptr,
                      const std::vector<uint32_t>* labels = nullptr, uint32_t rerank = 50) {
  FloatRows rows(queries, h.api->dim(), "queries");
  const VectorBatch& q = rows.batch();
  // allowed: user ids; labels: a label filter (both: both hold)
  SearchKnobs knobs{k, param, h.optimistic, h.prefetch, threads, in_flight, allowed, labels, rerank};
  if (k == 0) throw Error(ErrorCode::kInvalidArgument, "search: k must be at least 1");
  OutArray<uint64_t> ids(q.rows, k);
  OutArray<float> dist(q.rows, k);
  {
    nb::gil_scoped_release release;
    const uint64_t size = h.api->size();
    if (k > size) {
      throw Error(ErrorCode::kInvalidArgument, "search: k (" + std::to_string(k) + ") is larger than the index (" +
                                                   std::to_string(size) + " vectors)");
    }
    h.api->search(q, knobs, ids.data, dist.data);
  }
  return nb::make_tuple(ids.release(), dist.release());
}


}  // namespace

void bind_vectors(nb::module_& m) {
  nb::class_<HnswHandle>(m, "HnswIndex",
                         "An HNSW vector index stored in a Pool under ``name`` (persistent; larger than the pool's\n"
                         "memory is fine). Ids are any uint64 but 2^64 - 1 (an id map translates them to the\n"
                         "graph's nodes); ``add`` of a present id replaces its vector, ``delete`` removes ids,\n"
                         "``search(filter=...)`` searches among allowed ids.")
      .def(
          "__init__",
          [](HnswHandle* self, PoolHandle& pool, const std::string& name, uint32_t dim, const std::string& metric,
             uint32_t M, uint32_t ef_construction, uint32_t capacity, uint64_t seed) {
            HnswConfig c{dim, parse_metric(metric), M, ef_construction, capacity, seed};
            std::shared_ptr<HnswApi> api;
            {
              nb::gil_scoped_release release;
              api = pool.api->hnsw(name, true, c);
            }
            new (self) HnswHandle{std::move(api), name};
          },
          "pool"_a, "name"_a, "dim"_a, "metric"_a = "l2", "M"_a = 16, "ef_construction"_a = 100,
          "capacity"_a = 10000, "seed"_a = 42,
          "Opens index ``name`` of ``pool``, creating it when missing with ``dim`` dimensions, metric\n"
          "'l2' (squared Euclidean), 'ip' (1 - inner product) or 'cos' (cosine distance), M links per\n"
          "node (2M on level 0), ef_construction and room for ``capacity`` vectors at first (a hint:\n"
          "the index doubles its room whenever an id past it is added, while searches go on). An\n"
          "existing index keeps its parameters; a different dim or metric raises InvalidArgumentError.")
      .def_static(
          "open",
          [](PoolHandle& pool, const std::string& name) {
            std::shared_ptr<HnswApi> api;
            {
              nb::gil_scoped_release release;
              api = pool.api->hnsw(name, false, HnswConfig{});
            }
            return HnswHandle{std::move(api), name};
          },
          "pool"_a, "name"_a,
          "Opens the index written earlier under ``name``. Raises UnknownSpaceError when there is\n"
          "none, InvalidArgumentError when the space holds another kind of index.")
      .def("add", &add_rows<HnswApi>, "vectors"_a, "ids"_a = nb::none(), "labels"_a = nb::none(),
           "num_threads"_a = 0,
           "Adds float32 C-contiguous ``vectors`` [n, dim] (or one [dim]) with ``ids`` (1-D integers,\n"
           "uint64 for ids of 2^63 and up; any value but 2^64 - 1; None: the first ids from len(self)\n"
           "up that are not in the index) on ``num_threads`` C++ threads (0: one per core). An id in\n"
           "the index gets the new vector (upsert): a search meanwhile sees the old or the new one.\n"
           "``labels``: one integer label (0 to 2^32 - 1: a tenant, a user, a category) per row, as a\n"
           "1-D integer array or a list, stored with the row for search(labels=...); None: the rows\n"
           "are unlabeled (an upsert writes the row whole, label included). The batch is checked\n"
           "first (dim, NaN/inf, ids: none twice, not 2^64 - 1, one per row; labels: one per row,\n"
           "integers in range), so a bad batch adds nothing. Raises TypeError (dtype/layout),\n"
           "InvalidArgumentError.")
      .def(
          "search",
          [](HnswHandle& h, nb::handle q, uint32_t k, std::optional<uint32_t> ef, unsigned threads, uint32_t in_flight,
             const nb::object& filter, const nb::object& labels) {
            if (in_flight < 1 || in_flight > kMaxInFlight) {
              throw Error(ErrorCode::kInvalidArgument, "search: in_flight must be 1 to " + std::to_string(kMaxInFlight) +
                                                           " (got " + std::to_string(in_flight) + ")");
            }
            std::optional<std::vector<uint64_t>> allowed;
            if (!filter.is_none()) allowed = allowed_ids_of(filter);
            const std::optional<std::vector<uint32_t>> wanted = label_filter_of(labels);
            return search_rows(h, q, k, ef.value_or(std::max<uint32_t>(50, k)), threads, in_flight,
                               allowed ? &*allowed : nullptr, wanted ? &*wanted : nullptr);
          },
          "queries"_a, "k"_a = 10, "ef"_a = nb::none(), "num_threads"_a = 0, "in_flight"_a = 1,
          "filter"_a = nb::none(), "labels"_a = nb::none(),
          "The k approximate nearest neighbours of each float32 C-contiguous query [n, dim] (or\n"
          "one [dim]): (ids uint64 [n, k], distances float32 [n, k]), ascending by distance. ``ef``\n"
          "is the beam width (None: max(50, k); raised to k). ``in_flight`` (1 to 64): queries each\n"
          "thread searches at once, taking turns, with the same results; for an index larger than\n"
          "the pool, whose reads then overlap (8 on one thread: 1.2-1.45x QPS); in memory it is\n"
          "slower. Each query in flight holds a search state of about one byte per node of the\n"
          "capacity. ``filter``: only these ids may be returned, given as a 1-D integer array of\n"
          "ids or a boolean mask over ids (element i allows id i; ids not in the index allow\n"
          "nothing); rows with fewer than k allowed ids are padded with (2^64 - 1, inf). Each id\n"
          "appears at most once per row. A filter allowing few ids is answered by an exact\n"
          "scan of them, otherwise by a graph search that keeps only allowed ids; either way each\n"
          "row holds min(k, allowed ids in the index) results (in_flight is 1 with a filter).\n"
          "``labels``: only rows whose label (add(labels=...)) is ``labels`` (an int) or one of\n"
          "``labels`` (integers); with ``filter``, both must hold; the same guarantee of\n"
          "min(k, matching rows) results. Raises TypeError (dtype/layout), InvalidArgumentError\n"
          "(dim, k = 0, k > len(self), NaN/inf, in_flight, a negative filter id, a label out of\n"
          "range).")
      .def(
          "delete", &delete_ids<HnswApi>, "ids"_a,
          "Removes ``ids`` (1-D integers): no search returns them again. The batch is checked first\n"
          "(each id in the index, none twice), so a bad batch removes nothing. A removed node stays\n"
          "in the graph as a tombstone that searches pass through until consolidate() frees its\n"
          "slot (the id itself may be added again at once).\n"
          "Raises TypeError (dtype), InvalidArgumentError (naming the first bad id).")
      .def(
          "consolidate",
          [](HnswHandle& h) {
            nb::gil_scoped_release release;
            return h.api->consolidate();
          },
          "Repairs the graph around the deleted and replaced vectors (each list that named one gets\n"
          "its neighbours instead, pruned as insertion prunes: FreshDiskANN's consolidation) and\n"
          "frees their slots for later adds. Returns how many were freed. One pass over the index;\n"
          "adds and deletes wait for it, searches go on. Runs by itself too: see auto_consolidate.")
      .def_prop_rw(
          "auto_consolidate", [](HnswHandle& h) { return h.api->auto_consolidate(); },
          [](HnswHandle& h, double fraction) {
            nb::gil_scoped_release release;
            h.api->set_auto_consolidate(fraction);
          },
          "An add or delete that leaves tombstones (deleted and replaced vectors not yet freed) at\n"
          "max(1000, auto_consolidate x len(self)) or more runs consolidate() before it returns, so\n"
          "searches never wade through more dead nodes than that. Default 0.2; 0 turns it off.\n"
          "Not kept in the pool: set it after each open. Raises InvalidArgumentError for a negative\n"
          "or non-finite value.")
      .def_prop_ro("tombstones", [](HnswHandle& h) { return h.api->tombstones(); },
                   "Deleted and replaced vectors whose nodes consolidate() has not freed yet (right after\n"
                   "an open: an upper bound, made exact by the next consolidation).")
      .def("__len__", [](HnswHandle& h) { return h.api->size(); }, "The number of vectors in the index (added, not deleted).")
      .def(
          "__contains__", [](HnswHandle& h, uint64_t id) { return h.api->contains(id); }, "id"_a,
          "Whether ``id`` is in the index (added and not deleted).")
      .def("get_label", &label_of_id<HnswApi>, "id"_a,
           "The label ``id`` was added with (an int), or None when it has none or is not in the index.")
      .def_prop_ro("name", [](HnswHandle& h) { return h.name; }, "The index's name in its pool.")
      .def_prop_ro("dim", [](HnswHandle& h) { return h.api->dim(); }, "Dimensions per vector.")
      .def_prop_ro("metric", [](HnswHandle& h) { return metric_name(h.api->metric()); }, "'l2', 'ip' or 'cos'.")
      .def_prop_ro("capacity", [](HnswHandle& h) { return h.api->capacity(); },
                   "Nodes (slots) the graph has room for; it doubles whenever an add needs more. Each add\n"
                   "(and each upsert) takes a slot; consolidate() frees deleted and replaced ones.")
      .def_prop_ro("M", [](HnswHandle& h) { return h.api->M(); }, "Links per node on levels above 0.")
      .def_prop_ro(
          "ef_construction", [](HnswHandle& h) { return h.api->ef_construction(); }, "Insertion beam width.")
      .def_rw("optimistic", &HnswHandle::optimistic,
              "Searches read pages optimistically (version-validated, no latch). False: every read\n"
              "pins its page shared (the ablation). Results are identical either way.")
      .def_rw("prefetch", &HnswHandle::prefetch,
              "Searches group-prefetch a node's unvisited neighbours. False: no prefetch (the ablation).")
      .def("__repr__", [](HnswHandle& h) {
        return "calico.HnswIndex('" + h.name + "', dim=" + std::to_string(h.api->dim()) + ", metric='" +
               metric_name(h.api->metric()) + "')";
      });

  nb::class_<CodedHandle>(
      m, "CodedHnswIndex",
      "An HNSW for vectors larger than memory, stored in a Pool under ``name``: a compressed code\n"
      "of every vector (RaBitQ, ``bits`` per dimension, or PQ of ``pq_bytes``) stays in memory and the search walks the\n"
      "graph (level 0) on code distances. A node's row in pool pages holds its links and its\n"
      "full vector, so each node the search expands costs one row read and is ranked exactly:\n"
      "larger than memory a query reads about as many pages as it expands nodes (DiskANN's\n"
      "layout), not one per visited neighbour. The calls are HnswIndex's (ids, upsert, delete,\n"
      "consolidate, filter, labels); the\n"
      "code model is fitted by ``train`` or, when not called, on the first ``add``'s rows.")
      .def(
          "__init__",
          [](CodedHandle* self, PoolHandle& pool, const std::string& name, uint32_t dim, const std::string& metric,
             uint32_t M, uint32_t ef_construction, uint32_t capacity, uint32_t bits, std::optional<uint32_t> clusters,
             std::optional<uint64_t> memory_budget, uint64_t seed, std::optional<uint32_t> pq_bytes) {
            CodedHnswConfig c;
            static_cast<HnswConfig&>(c) = HnswConfig{dim, parse_metric(metric), M, ef_construction, capacity, seed};
            c.bits = bits;
            if (pq_bytes && *pq_bytes == 0) throw Error(ErrorCode::kInvalidArgument, "pq_bytes must be positive (or None)");
            c.pq_bytes = pq_bytes.value_or(0);
            if (clusters && *clusters == 0) throw Error(ErrorCode::kInvalidArgument, "clusters must be 1 to 256 (or None)");
            c.clusters = clusters.value_or(0);
            c.memory_budget = memory_budget.value_or(UINT64_MAX);
            std::shared_ptr<CodedHnswApi> api;
            {
              nb::gil_scoped_release release;
              api = pool.api->coded_hnsw(name, true, c);
            }
            new (self) CodedHandle{std::move(api), name};
          },
          "pool"_a, "name"_a, "dim"_a, "metric"_a = "l2", "M"_a = 16, "ef_construction"_a = 100,
          "capacity"_a = 10000, "bits"_a = 2, "clusters"_a = nb::none(), "memory_budget"_a = nb::none(), "seed"_a = 42,
          "pq_bytes"_a = nb::none(),
          "Opens index ``name`` of ``pool``, or makes a new, untrained one: ``dim``, ``metric``, ``M``,\n"
          "``ef_construction`` and ``capacity`` as for HnswIndex; ``bits`` per dimension of the codes\n"
          "(1, 2 or 4: more bits steer the beam better at more memory); ``pq_bytes``: product-\n"
          "quantization codes of this many bytes a vector instead (at most ``dim``; ``bits`` and\n"
          "``clusters`` unused: at budgets that leave RaBitQ 1 bit a dimension PQ spends every byte\n"
          "on the vector; its codebooks do not follow data added after training); ``clusters``: codes\n"
          "are residuals to the nearest of this many k-means centroids of the training rows (None:\n"
          "about the square root of the training rows, at most 256; data of well-separated clusters\n"
          "estimates better with about as many). Training uses at most 65,536 rows, evenly spaced.\n"
          "``memory_budget``: the bytes\n"
          "the index may hold resident (its codes + model + the pool's frames + translation); a\n"
          "growth past it raises InvalidArgumentError (None: no limit). An existing index keeps its\n"
          "parameters (budget: the one given now).")
      .def_static(
          "open",
          [](PoolHandle& pool, const std::string& name, std::optional<uint64_t> memory_budget) {
            CodedHnswConfig c;
            c.memory_budget = memory_budget.value_or(UINT64_MAX);
            std::shared_ptr<CodedHnswApi> api;
            {
              nb::gil_scoped_release release;
              api = pool.api->coded_hnsw(name, false, c);
            }
            return CodedHandle{std::move(api), name};
          },
          "pool"_a, "name"_a, "memory_budget"_a = nb::none(),
          "Opens the index written earlier under ``name`` (its codes are read into memory). Raises\n"
          "UnknownSpaceError when there is none, CorruptPageError when a code page fails its check.")
      .def(
          "train",
          [](CodedHandle& h, nb::handle x) {
            FloatRows rows(x, h.api->dim(), "vectors");
            nb::gil_scoped_release release;
            h.api->train(rows.batch());
          },
          "vectors"_a,
          "Fits the code model on ``vectors`` (float32 [n, dim]; none is stored) and writes the empty\n"
          "index. Optional: the first add() trains on its own rows; call train() with a sample when\n"
          "the first batch is small or unrepresentative. Raises InvalidArgumentError (trained\n"
          "already, dim, NaN/inf, a budget below the codes of ``capacity`` plus the pool's frames).")
      .def_prop_ro("is_trained", [](CodedHandle& h) { return h.api->trained(); }, "Whether the code model is fitted.")
      .def("add", &add_rows<CodedHnswApi>, "vectors"_a, "ids"_a = nb::none(), "labels"_a = nb::none(),
           "num_threads"_a = 0, "As HnswIndex.add (the first call trains the codes when train() was not called).")
      .def(
          "search",
          [](CodedHandle& h, nb::handle q, uint32_t k, std::optional<uint32_t> ef, uint32_t rerank, unsigned threads,
             const nb::object& filter, const nb::object& labels) {
            std::optional<std::vector<uint64_t>> allowed;
            if (!filter.is_none()) allowed = allowed_ids_of(filter);
            const std::optional<std::vector<uint32_t>> wanted = label_filter_of(labels);
            return search_rows(h, q, k, ef.value_or(std::max<uint32_t>(64, k)), threads, 1,
                               allowed ? &*allowed : nullptr, wanted ? &*wanted : nullptr, rerank);
          },
          "queries"_a, "k"_a = 10, "ef"_a = nb::none(), "rerank"_a = 50, "num_threads"_a = 0, "filter"_a = nb::none(),
          "labels"_a = nb::none(),
          "The k approximate nearest neighbours of each query, as HnswIndex.search: (ids uint64 [n, k],\n"
          "distances float32 [n, k], exact). ``ef``: the beam width on codes (None: max(64, k));\n"
          "every node it expands is ranked by its full vector. A filter allowing few ids is\n"
          "answered by scanning their codes (no graph page read); then the ``rerank`` best\n"
          "(at least 1; raised to k) are read as one group and ranked exactly. Raises as HnswIndex.search,\n"
          "and InvalidArgumentError for rerank 0 or an index with no rows yet.")
      .def("delete", &delete_ids<CodedHnswApi>, "ids"_a, "As HnswIndex.delete.")
      .def(
          "consolidate",
          [](CodedHandle& h) {
            nb::gil_scoped_release release;
            return h.api->consolidate();
          },
          "As HnswIndex.consolidate (on level 0, the only level).")
      .def_prop_rw(
          "auto_consolidate", [](CodedHandle& h) { return h.api->auto_consolidate(); },
          [](CodedHandle& h, double fraction) {
            nb::gil_scoped_release release;
            h.api->set_auto_consolidate(fraction);
          },
          "As HnswIndex.auto_consolidate (default 0.2).")
      .def_prop_ro("tombstones", [](CodedHandle& h) { return h.api->tombstones(); },
                   "Deleted and replaced vectors not yet freed by consolidate().")
      .def(
          "memory",
          [](CodedHandle& h) {
            nb::gil_scoped_release release;
            return h.api->memory();
          },
          "Resident bytes as a dict: 'codes' (codes and slot states of the capacity, the entry sample), 'model',\n"
          "'pool_frames' (the whole pool's, shared with its other structures), 'translation',\n"
          "'pinned_rows' (pin_rows' copies), 'total' (their sum), and 'budget' (the memory_budget;\n"
          "2^64 - 1: none).")
      .def(
          "pin_rows",
          [](CodedHandle& h, uint64_t bytes, uint32_t sample) {
            nb::gil_scoped_release release;
            return h.api->pin_rows(bytes, sample);
          },
          "bytes"_a, "sample"_a = 1000,
          "Keeps in memory copies of the node rows searches expand most, up to ``bytes`` (about\n"
          "4 x (1 + 2M + dim) + 18 bytes a row), so that expanding one reads no page: the rows\n"
          "``sample`` searches (for vectors of the index) expanded most often. Returns the rows\n"
          "pinned. Larger than memory, give it part of the memory the pool would have had: rows\n"
          "are several to a page and few of a page's rows are hot. Adds, deletes that consolidate\n"
          "and consolidate() drop the copies (searches then read pages) until it is called again;\n"
          "``bytes`` 0 drops them. Raises ValueError when untrained, for ``sample`` 0, or when\n"
          "``bytes`` do not fit memory_budget beside the rest of memory().")
      .def("__len__", [](CodedHandle& h) { return h.api->size(); }, "The number of vectors (added, not deleted).")
      .def(
          "__contains__", [](CodedHandle& h, uint64_t id) { return h.api->contains(id); }, "id"_a,
          "Whether ``id`` is in the index (added and not deleted).")
      .def("get_label", &label_of_id<CodedHnswApi>, "id"_a, "As HnswIndex.get_label.")
      .def_prop_ro("name", [](CodedHandle& h) { return h.name; }, "The index's name in its pool.")
      .def_prop_ro("dim", [](CodedHandle& h) { return h.api->dim(); }, "Dimensions per vector.")
      .def_prop_ro("metric", [](CodedHandle& h) { return metric_name(h.api->metric()); }, "'l2', 'ip' or 'cos'.")
      .def_prop_ro("bits", [](CodedHandle& h) { return h.api->bits(); }, "Code bits per dimension (0 with PQ codes).")
      .def_prop_ro("pq_bytes", [](CodedHandle& h) { return h.api->pq_bytes(); },
                   "Bytes of a PQ code (0: RaBitQ codes of ``bits`` per dimension).")
      .def_prop_ro("capacity", [](CodedHandle& h) { return h.api->capacity(); },
                   "Slots the index has room for (0 before training); doubles as needed within the budget.")
      .def_prop_ro("M", [](CodedHandle& h) { return h.api->M(); }, "Links chosen per node (lists hold 2M).")
      .def_prop_ro(
          "ef_construction", [](CodedHandle& h) { return h.api->ef_construction(); }, "Insertion beam width.")
      .def_rw("prefetch", &CodedHandle::prefetch,
              "Searches prefetch the link pages of candidates entering the beam (group reads).")
      .def("__repr__", [](CodedHandle& h) {
        return "calico.CodedHnswIndex('" + h.name + "', dim=" + std::to_string(h.api->dim()) + ", metric='" +
               metric_name(h.api->metric()) + "', " +
               (h.api->pq_bytes() > 0 ? "pq_bytes=" + std::to_string(h.api->pq_bytes()) : "bits=" + std::to_string(h.api->bits())) +
               ")";
      });

  nb::class_<IvfHandle>(m, "IvfIndex",
                        "An IVF-Flat vector index stored in a Pool under ``name``: nlist centroids trained by\n"
                        "k-means (train), rows appended to their nearest centroid's list (add), the nprobe\n"
                        "nearest lists scanned (search). Ids are any uint64 but 2^64 - 1, one row each (an id\n"
                        "map translates them): ``add`` of a present id replaces its row, ``delete`` removes\n"
                        "ids, ``search(filter=...)`` searches among allowed ids.")
      .def(
          "__init__",
          [](IvfHandle* self, PoolHandle& pool, const std::string& name, uint32_t dim, const std::string& metric,
             uint32_t nlist) {
            const MetricName mn = parse_metric(metric);
            std::shared_ptr<IvfApi> api;
            {
              nb::gil_scoped_release release;
              api = pool.api->ivf(name, true, dim, mn, nlist);
            }
            new (self) IvfHandle{std::move(api), name};
          },
          "pool"_a, "name"_a, "dim"_a, "metric"_a = "l2", "nlist"_a = 1024,
          "Opens index ``name`` of ``pool``; when missing, an untrained index of ``dim`` dimensions,\n"
          "metric 'l2', 'ip' or 'cos' and ``nlist`` lists (nothing is stored until train()). An\n"
          "existing index with another dim, metric or nlist raises InvalidArgumentError.")
      .def_static(
          "open",
          [](PoolHandle& pool, const std::string& name) {
            std::shared_ptr<IvfApi> api;
            {
              nb::gil_scoped_release release;
              api = pool.api->ivf(name, false, 0, MetricName::kL2, 0);
            }
            return IvfHandle{std::move(api), name};
          },
          "pool"_a, "name"_a, "Opens the index written earlier under ``name`` (UnknownSpaceError when missing).")
      .def(
          "train",
          [](IvfHandle& h, nb::handle x, uint32_t iters, uint64_t seed, unsigned threads) {
            FloatRows rows(x, h.api->dim(), "vectors");
            nb::gil_scoped_release release;
            h.api->train(rows.batch(), iters, seed, threads);
          },
          "vectors"_a, "iters"_a = 10, "seed"_a = 42, "num_threads"_a = 0,
          "Trains the nlist centroids by k-means on a sample of ``vectors`` (float32 C-contiguous, at\n"
          "least nlist rows; none of them is stored) and writes the empty index. Raises\n"
          "InvalidArgumentError (trained already, too few rows, NaN/inf), SpaceExistsError.")
      .def_prop_ro("is_trained", [](IvfHandle& h) { return h.api->trained(); }, "Whether train() ran.")
      .def("add", &add_rows<IvfApi>, "vectors"_a, "ids"_a = nb::none(), "labels"_a = nb::none(),
           "num_threads"_a = 0,
           "Adds float32 C-contiguous ``vectors`` [n, dim] with ``ids`` (1-D integers, uint64 for ids\n"
           "of 2^63 and up; any value but 2^64 - 1; None: the first ids from len(self) up that are\n"
           "not in the index) on ``num_threads`` C++ threads. An id in the index gets the new\n"
           "vector (upsert; a search meanwhile sees the old or the new one). ``labels``: one\n"
           "integer label (0 to 2^32 - 1) per row, as for HnswIndex.add. The batch is checked\n"
           "first; a bad batch adds nothing. Upserts remove the replaced rows in one pass over the\n"
           "index per call: upsert in batches.")
      .def(
          "search",
          [](IvfHandle& h, nb::handle q, uint32_t k, uint32_t nprobe, unsigned threads, const nb::object& filter,
             const nb::object& labels) {
            if (!h.api->trained()) throw Error(ErrorCode::kInvalidArgument, "ivf search: '" + h.name + "' is not trained");
            std::optional<std::vector<uint64_t>> allowed;
            if (!filter.is_none()) allowed = allowed_ids_of(filter);
            const std::optional<std::vector<uint32_t>> wanted = label_filter_of(labels);
            return search_rows(h, q, k, nprobe, threads, 1, allowed ? &*allowed : nullptr, wanted ? &*wanted : nullptr);
          },
          "queries"_a, "k"_a = 10, "nprobe"_a = 8, "num_threads"_a = 0, "filter"_a = nb::none(),
          "labels"_a = nb::none(),
          "The k nearest rows among the ``nprobe`` nearest lists of each query: (ids uint64 [n, k],\n"
          "distances float32 [n, k]); rows with fewer than k candidates are padded with\n"
          "(2^64 - 1, inf). ``filter``: only rows with these ids may be returned, given as a 1-D\n"
          "integer array of ids or a boolean mask over ids (element i allows id i). A filtered\n"
          "search scans the nprobe nearest lists, then further lists (nearest first) while it has\n"
          "fewer than k allowed rows, so each row holds min(k, allowed rows in the index) results;\n"
          "a filter allowing few rows may scan the whole index. ``labels``: only rows whose label\n"
          "is ``labels`` (an int) or one of ``labels`` (integers), with ``filter`` both; searched\n"
          "the same way. Raises TypeError, InvalidArgumentError (dim, k = 0, k > len(self),\n"
          "nprobe = 0, NaN/inf, not trained, a negative filter id, a label out of range).")
      .def(
          "delete", &delete_ids<IvfApi>, "ids"_a,
          "Removes ``ids`` (1-D integers): no search returns them again. The batch is checked\n"
          "first (each id in the index, none twice), so a bad batch removes nothing. One call\n"
          "reads every posting page once (the id map finds each id's slot, not its list), however\n"
          "few ids it names: delete in batches. The rows' space in their pages is reused by\n"
          "compaction; pages are not freed.\n"
          "Raises TypeError (dtype), InvalidArgumentError (naming the first bad id).")
      .def("__len__", [](IvfHandle& h) { return h.api->size(); }, "The number of rows (added, not deleted).")
      .def(
          "__contains__", [](IvfHandle& h, uint64_t id) { return h.api->contains(id); }, "id"_a,
          "Whether ``id`` is in the index (added and not deleted).")
      .def("get_label", &label_of_id<IvfApi>, "id"_a,
           "The label ``id`` was added with (an int), or None when it has none or is not in the index.")
      .def_prop_ro("name", [](IvfHandle& h) { return h.name; }, "The index's name in its pool.")
      .def_prop_ro("dim", [](IvfHandle& h) { return h.api->dim(); }, "Dimensions per vector.")
      .def_prop_ro("metric", [](IvfHandle& h) { return metric_name(h.api->metric()); }, "'l2', 'ip' or 'cos'.")
      .def_prop_ro("nlist", [](IvfHandle& h) { return h.api->nlist(); }, "The number of lists.")
      .def_rw("optimistic", &IvfHandle::optimistic,
              "Searches read posting pages optimistically. False: under a shared pin (the ablation).")
      .def_rw("prefetch", &IvfHandle::prefetch, "Searches group-prefetch the probed lists' pages.")
      .def("__repr__", [](IvfHandle& h) {
        return "calico.IvfIndex('" + h.name + "', dim=" + std::to_string(h.api->dim()) + ", metric='" +
               metric_name(h.api->metric()) + "', nlist=" + std::to_string(h.api->nlist()) + ")";
      });
}

}  // namespace calico::py
