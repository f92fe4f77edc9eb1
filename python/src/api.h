// The type-erased interface between the Python module (module.cc) and the pools and indexes,
// which are templates over the translation (BasicBufferPool<Translation>). module.cc sees
// only these abstract classes; pool_impl.h (with btree_impl.h, hnsw_impl.h, ivf_impl.h)
// implements them once as templates, and the translation units cmake/variants.cmake
// generates instantiate them, one per group of variants (make_pool.cc picks one by name
// through include/calico/variants.h).
//
// Lifetime and locking (the rules every implementation keeps):
//   - a PoolApi owns the pool; the indexes it opened are registered in it by name (one
//     object per name, as BasicHnsw requires) and hold a shared_ptr to it;
//   - every operation holds the pool's `gate` shared for its whole duration (never while
//     taking the GIL: callers release the GIL first); close() takes it exclusive, closes
//     every registered index (BTree metadata synced), then destroys the pool; afterwards
//     every call throws ClosedError;
//   - an index's C++ object is destroyed under the gate (shared), so never after its pool.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "calico/options.h"

namespace calico::py {

// An operation on a closed pool or an index whose pool was closed (Python: ClosedError).
class ClosedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class MetricName { kL2, kIp, kCos };

struct VectorBatch {
  const float* data = nullptr;  // rows x dim floats, C order
  uint64_t rows = 0;
};

class IndexApi {
 public:
  virtual ~IndexApi() = default;
  // Writes in-memory metadata to the pool's pages (BTree entry count); under the gate.
  virtual void sync() = 0;
  // Destroys the C++ index object (after sync); later calls throw ClosedError. Under the
  // gate held exclusive by PoolApi::close().
  virtual void close_locked() = 0;
};

struct SearchKnobs {
  uint32_t k = 10;
  uint32_t param = 50;  // ef (HNSW) or nprobe (IVF)
  bool optimistic = true;
  bool prefetch = true;
  unsigned threads = 0;  // 0: one per core (at most one per 8 queries)
  uint32_t in_flight = 1;  // HNSW: queries in flight per thread (BasicHnsw::search_batch)
  const std::vector<uint64_t>* allowed_ids = nullptr;  // an allow-list of user ids (nullptr: no filter)
  // A label filter: rows whose label is one of these (nullptr: no label filter). With
  // allowed_ids, both must hold.
  const std::vector<uint32_t>* labels = nullptr;
  uint32_t rerank = 50;  // coded HNSW: candidates re-ranked with their full vectors
};

class VectorIndexApi : public IndexApi {
 public:
  virtual uint32_t dim() = 0;
  virtual MetricName metric() = 0;
  virtual uint64_t size() = 0;
  // Upserts rows with ids ids[i] (nullptr: the first free ids from size() up, never a
  // present one) and labels labels[i] (nullptr: unlabeled rows). Threads as in
  // SearchKnobs. The batch is checked whole first (ids not 2^64 - 1, none twice; rows
  // finite, non-zero for cosine); then throws calico::Error of the first failing row, with
  // the rows committed before it kept. Labels need an id map: kInvalidArgument on 'direct'.
  virtual void add(const VectorBatch& v, const uint64_t* ids, unsigned threads, const uint32_t* labels) = 0;
  // The label of id (none: not present, or unlabeled).
  virtual std::optional<uint32_t> label(uint64_t id) = 0;
  // Fills ids[n x k] (user ids) and dist[n x k]; rows with fewer than k results are padded
  // with (UINT64_MAX, +inf).
  virtual void search(const VectorBatch& q, const SearchKnobs& knobs, uint64_t* ids, float* dist) = 0;
};

class HnswApi : public VectorIndexApi {
 public:
  virtual uint32_t capacity() = 0;
  virtual uint32_t M() = 0;
  virtual uint32_t ef_construction() = 0;
  virtual bool contains(uint64_t id) = 0;
  // Removes ids[0 .. n): all are checked first (present, distinct), so that a bad batch
  // removes nothing. Throws calico::Error naming the first bad id.
  virtual void remove(const uint64_t* ids, uint64_t n) = 0;
  // BasicHnsw::consolidate: repairs the graph around deleted ids and frees them; returns
  // how many.
  virtual uint64_t consolidate() = 0;
  // Automatic consolidation (BasicMapped::set_auto_consolidate): the fraction of len()
  // that tombstones may reach before a delete or add consolidates (0: off).
  virtual double auto_consolidate() = 0;
  virtual void set_auto_consolidate(double fraction) = 0;
  // Deleted and replaced nodes not yet freed by consolidate().
  virtual uint64_t tombstones() = 0;
};

// An HNSW that navigates on resident RaBitQ codes and re-ranks with full vectors read from
// pool pages (calico/index/coded_hnsw.h), under an id map. A new handle is untrained and
// writes nothing; train() (or the first add(), on its rows) fits the code model and writes
// the index. Before that, size() is 0 and contains() false.
class CodedHnswApi : public HnswApi {
 public:
  virtual bool trained() = 0;
  // Fits the code model on v (stores none of the rows) and writes the empty index. Errors:
  // trained already; the memory budget below the codes plus the pool's frames.
  virtual void train(const VectorBatch& v) = 0;
  virtual uint32_t bits() = 0;
  virtual uint32_t pq_bytes() = 0;
  // Resident bytes: "codes", "model", "pool_frames", "translation", "pinned_rows", "total",
  // and "budget".
  virtual std::map<std::string, uint64_t> memory() = 0;
  // BasicCodedHnsw::pin_rows. Errors: untrained; as pin_rows.
  virtual uint32_t pin_rows(uint64_t bytes, uint32_t sample) = 0;
};

class IvfApi : public VectorIndexApi {
 public:
  virtual uint32_t nlist() = 0;
  virtual bool trained() = 0;
  virtual bool contains(uint64_t id) = 0;  // false while untrained
  // Trains the centroids on v (stores none of the rows). Errors: already trained.
  virtual void train(const VectorBatch& v, uint32_t iters, uint64_t seed, unsigned threads) = 0;
  // Removes ids[0 .. n) (their rows: BasicIvf::remove, one scan of the index per call).
  // The batch is checked first (each id present, none twice), so that a bad batch removes
  // nothing. Throws calico::Error naming the first bad id.
  virtual void remove(const uint64_t* ids, uint64_t n) = 0;
};

class BTreeApi : public IndexApi {
 public:
  virtual void put(std::string_view key, std::string_view value) = 0;
  virtual bool get(std::string_view key, std::string* value) = 0;
  virtual bool remove(std::string_view key) = 0;
  virtual uint64_t size() = 0;
  // Up to max entries with start <= key (start < key when `after`) and key < end (no bound
  // when !has_end), in key order. Returns false when the scan reached its end.
  virtual bool scan_batch(std::string_view start, bool after, bool has_end, std::string_view end, size_t max,
                          std::vector<std::pair<std::string, std::string>>* out) = 0;
  virtual void bulk_load(const std::vector<std::pair<std::string, std::string>>& pairs) = 0;
};

struct HnswConfig {
  uint32_t dim = 0;
  MetricName metric = MetricName::kL2;
  uint32_t M = 16;
  uint32_t ef_construction = 100;
  uint32_t capacity = 10000;
  uint64_t seed = 42;
};

struct CodedHnswConfig : HnswConfig {
  uint32_t bits = 2;      // RaBitQ bits per dimension: 1, 2 or 4 (CodedHnswParams::bits)
  uint32_t pq_bytes = 0;  // PQ codes of this many bytes instead (CodedHnswParams::pq_bytes); 0: RaBitQ
  uint32_t clusters = 0;  // RaBitQ centroids (k-means of the training rows); 0: automatic
  uint64_t memory_budget = UINT64_MAX;  // codes + model + pool frames + translation, bytes
};

class PoolApi {
 public:
  virtual ~PoolApi() = default;
  virtual void flush() = 0;
  virtual void close() = 0;
  virtual bool closed() = 0;
  virtual std::map<std::string, uint64_t> stats() = 0;
  virtual std::vector<std::string> space_names() = 0;
  // BasicBufferPool::prewarm of the space `name` (kUnknownSpace when missing): its pages in
  // block order into free frames, nothing evicted; the pages resident afterwards.
  virtual uint64_t prewarm(std::string_view name) = 0;
  virtual std::string translation() = 0;
  virtual size_t page_size() = 0;
  // create: a new index named `name` (kSpaceExists when the name is taken);
  // !create: the index written earlier under `name` (kUnknownSpace when missing). The same
  // name opened twice returns the same object.
  virtual std::shared_ptr<HnswApi> hnsw(std::string_view name, bool create, const HnswConfig& cfg) = 0;
  // create: an untrained handle (nothing written until train()).
  virtual std::shared_ptr<IvfApi> ivf(std::string_view name, bool create, uint32_t dim, MetricName metric,
                                      uint32_t nlist) = 0;
  virtual std::shared_ptr<BTreeApi> btree(std::string_view name, bool create) = 0;
  // create: an untrained handle when `name` is missing (nothing written until train() or
  // the first add()); an existing index is opened with cfg.memory_budget. Errors: the
  // 'direct' translation (kInvalidArgument: the coded index is for pools smaller than the
  // data, which 'direct' never is).
  virtual std::shared_ptr<CodedHnswApi> coded_hnsw(std::string_view name, bool create, const CodedHnswConfig& cfg) = 0;
};

// Opens (or creates) the pool of options.data_dir with the translation named `translation`
// (every name of include/calico/variants.h). Errors: calico::Error.
std::shared_ptr<PoolApi> open_pool(std::string_view translation, const PoolOptions& options);
std::vector<std::string> translation_names();

// One instantiation per variant (generated from cmake/variants.cmake).
template <class Pool>
std::shared_ptr<PoolApi> make_pool(const PoolOptions& options);

}  // namespace calico::py
