// CodedHnswImpl<Pool>: CodedHnswApi over index::BasicMapped<index::BasicCodedHnsw<Pool>>
// (api.h has the locking rules). A new handle is untrained and writes nothing; train(), or
// the first add() on its own rows, fits RaBitQ (its mean, or k-means centroids) and writes
// the index and its id map. From then on it behaves as HnswImpl: ids are any uint64 but
// 2^64 - 1, add upserts, delete leaves tombstones that consolidate() (automatic at
// auto_consolidate) frees, searches take an allow-list and labels. The memory budget
// (codes + model + the pool's frames + translation) is checked at train and open and on
// every growth.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "api.h"
#include "batch.h"
#include "gate.h"
#include "mapped_filter.h"
#include "calico/index/coded_hnsw.h"
#include "calico/index/mapped_index.h"
#include "vector_checks.h"

namespace calico::py {

template <class Pool>
class CodedHnswImpl final : public CodedHnswApi {
 public:
  using Core = index::BasicCodedHnsw<Pool>;
  using Index = index::BasicMapped<Core>;
  using State = typename Index::State;

  // An open index (`index` set) or an untrained handle for `name` with `cfg`.
  CodedHnswImpl(std::shared_ptr<Gate> gate, std::shared_ptr<void> owner, Pool* pool, std::string name,
                const CodedHnswConfig& cfg, std::optional<Index> index)
      : gate_(std::move(gate)), owner_(std::move(owner)), pool_(pool), name_(std::move(name)), cfg_(cfg),
        index_(std::move(index)) {
    if (index_) adopt_params();
  }
  ~CodedHnswImpl() override {
    std::shared_lock l(gate_->mu);
    index_.reset();
  }

  void sync() override {
    std::lock_guard l(train_mu_);
    if (index_) index_->sync();
  }
  void close_locked() override {
    index_.reset();
    closed_ = true;
  }

  uint32_t dim() override { return cfg_.dim; }
  MetricName metric() override { return cfg_.metric; }
  uint32_t M() override { return cfg_.M; }
  uint32_t ef_construction() override { return cfg_.ef_construction; }
  uint32_t bits() override { return cfg_.bits; }
  uint32_t pq_bytes() override { return cfg_.pq_bytes; }
  bool trained() override {
    Use u(*gate_);
    std::lock_guard l(train_mu_);
    return index_.has_value();
  }
  uint64_t size() override {
    return locked([&]() -> uint64_t { return index_ ? index_->size() : 0; });
  }
  uint32_t capacity() override {
    return locked([&]() -> uint32_t { return index_ ? index_->index().capacity() : 0; });
  }
  bool contains(uint64_t id) override {
    return locked([&] { return index_ && index_->contains(id); });
  }
  std::optional<uint32_t> label(uint64_t id) override {
    return locked([&] { return index_ ? index_->label(id) : std::nullopt; });
  }
  std::map<std::string, uint64_t> memory() override { return locked([&] { return memory_locked(); }); }
  std::map<std::string, uint64_t> memory_locked() {
    std::map<std::string, uint64_t> m{{"budget", cfg_.memory_budget}};
    if (index_) {
      const index::CodedHnswMemory mem = index_->index().memory();
      m["codes"] = mem.codes;
      m["model"] = mem.model;
      m["pool_frames"] = mem.pool_frames;
      m["translation"] = mem.translation;
      m["pinned_rows"] = mem.pinned_rows;
      m["total"] = mem.total();
    }
    return m;
  }

  uint32_t pin_rows(uint64_t bytes, uint32_t sample) override {
    return locked([&]() -> uint32_t {
      if (!index_) throw Error(ErrorCode::kInvalidArgument, "coded hnsw '" + name_ + "' is not trained: nothing to pin");
      return index_->index().pin_rows(bytes, sample);
    });
  }

  void train(const VectorBatch& v) override {
    Use u(*gate_);
    check_open();
    check_rows(v, cfg_.dim, to_metric(cfg_.metric), "coded hnsw train");
    std::lock_guard l(train_mu_);
    if (index_) throw Error(ErrorCode::kInvalidArgument, "coded hnsw '" + name_ + "' is trained already");
    train_locked(v);
  }

  void add(const VectorBatch& v, const uint64_t* ids, unsigned threads, const uint32_t* labels) override {
    Use u(*gate_);
    check_open();
    check_rows(v, cfg_.dim, to_metric(cfg_.metric), "coded hnsw add");
    Index* x;
    {
      std::lock_guard l(train_mu_);
      if (!index_) train_locked(v);  // the first batch fits the code model
      x = &*index_;
    }
    const unsigned n = threads_for(v.rows, threads, 1);
    const auto label_span = labels ? std::span<const uint32_t>(labels, v.rows) : std::span<const uint32_t>();
    if (ids) {
      x->add(std::span<const uint64_t>(ids, v.rows), v.data, n, index::AddMode::kUpsert, label_span);
    } else {
      x->add_numbered(v.data, v.rows, n, label_span);
    }
  }

  void remove(const uint64_t* ids, uint64_t n) override {
    Use u(*gate_);
    trained_index("delete").remove(std::span<const uint64_t>(ids, n));
  }
  uint64_t consolidate() override {
    return locked([&]() -> uint64_t { return index_ ? index_->consolidate() : 0; });
  }
  double auto_consolidate() override {
    return locked([&] { return index_ ? index_->auto_consolidate_fraction() : pending_auto_; });
  }
  void set_auto_consolidate(double fraction) override {
    locked([&] { set_auto_locked(fraction); });
  }
  void set_auto_locked(double fraction) {
    if (index_) {
      index_->set_auto_consolidate(fraction);
    } else {
      if (!std::isfinite(fraction) || fraction < 0) {
        throw Error(ErrorCode::kInvalidArgument,
                    "coded hnsw auto consolidate: fraction " + std::to_string(fraction) + " (must be finite and >= 0)");
      }
      pending_auto_ = fraction;
    }
  }
  uint64_t tombstones() override {
    return locked([&]() -> uint64_t { return index_ ? index_->tombstones() : 0; });
  }

  void search(const VectorBatch& q, const SearchKnobs& knobs, uint64_t* ids, float* dist) override {
    Use u(*gate_);
    Index& x = trained_index("search");
    check_rows(q, cfg_.dim, to_metric(cfg_.metric), "coded hnsw search");
    if (knobs.rerank == 0) throw Error(ErrorCode::kInvalidArgument, "coded hnsw search: rerank must be at least 1");
    const std::optional<index::SlotFilter> filter = slot_filter_of(x, knobs);
    index::CodedHnswSearchOptions opt;
    opt.k = knobs.k;
    opt.ef = knobs.param;
    opt.rerank = knobs.rerank;
    opt.prefetch = knobs.prefetch;
    search_each_row(x, q, cfg_.dim, knobs.k, opt, filter, states_, threads_for(q.rows, knobs.threads, 8), ids, dist);
  }

 private:
  // fn() under the gate, on an open handle, with the trained state stable (train_mu_).
  template <class Fn>
  auto locked(Fn&& fn) {
    Use u(*gate_);
    check_open();
    std::lock_guard l(train_mu_);
    return fn();
  }
  void check_open() {
    if (closed_) throw ClosedError("the index's pool is closed");
  }
  Index& trained_index(const char* what) {
    check_open();
    std::lock_guard l(train_mu_);
    if (!index_) {
      throw Error(ErrorCode::kInvalidArgument,
                  std::string("coded hnsw ") + what + ": '" + name_ + "' has no rows yet (add or train first)");
    }
    return *index_;
  }
  // Pre: train_mu_ held, no index. Creates the index (its spaces, the model fitted to v) and
  // its id map.
  void train_locked(const VectorBatch& v) {
    // At most kMaxTrainRows rows, evenly spaced, train the model.
    std::vector<float> sample;
    const float* rows = v.data;
    uint64_t n = v.rows;
    if (n > kMaxTrainRows) {
      sample.resize(size_t{kMaxTrainRows} * cfg_.dim);
      for (uint64_t i = 0; i < kMaxTrainRows; ++i) {
        std::copy_n(v.data + (i * v.rows / kMaxTrainRows) * cfg_.dim, cfg_.dim, sample.data() + i * cfg_.dim);
      }
      rows = sample.data();
      n = kMaxTrainRows;
    }
    index::CodedHnswParams p;
    p.dim = cfg_.dim;
    p.metric = to_metric(cfg_.metric);
    p.bits = cfg_.bits;
    p.pq_bytes = cfg_.pq_bytes;
    // Automatic: about the square root of the training rows, 1 to 256. Codes are residuals
    // to the nearest centroid, so clustered data needs centroids near its clusters: on
    // isotropic clusters, one centroid (the mean) left 1-bit codes at recall 0.55 where
    // 63 reached 0.93 (python/tests/test_coded.py's data, rerank 50).
    p.clusters = cfg_.clusters != 0 ? cfg_.clusters
                                    : static_cast<uint32_t>(std::clamp<double>(std::round(std::sqrt(double(n))), 1, 256));
    p.M = cfg_.M;
    p.ef_construction = cfg_.ef_construction;
    p.seed = cfg_.seed;
    const uint32_t capacity = std::max<uint32_t>(1, cfg_.capacity);
    index_.emplace(Index::attach(*pool_, name_, Core::create(*pool_, name_, p, rows, n, capacity, cfg_.memory_budget)));
    if (pending_auto_ != Index::kAutoFraction) index_->set_auto_consolidate(pending_auto_);
  }
  // The parameters of the index as written (an opened index keeps its own).
  void adopt_params() {
    const index::CodedHnswParams& p = index_->index().params();
    cfg_.dim = p.dim;
    cfg_.metric = from_metric(p.metric);
    cfg_.M = p.M;
    cfg_.ef_construction = p.ef_construction;
    cfg_.bits = p.bits;
    cfg_.pq_bytes = p.pq_bytes;
    cfg_.seed = p.seed;
  }

  static constexpr uint64_t kMaxTrainRows = 65536;

  std::shared_ptr<Gate> gate_;
  std::shared_ptr<void> owner_;
  Pool* pool_;  // valid while the gate is open
  std::string name_;
  CodedHnswConfig cfg_;
  std::mutex train_mu_;  // guards the untrained -> trained transition of index_
  std::optional<Index> index_;
  double pending_auto_ = Index::kAutoFraction;  // set before training
  bool closed_ = false;
  StatePool<State> states_;
};

}  // namespace calico::py
