// IvfSlotImpl<Pool>: the binding of the 'direct' translation, whose pool holds one space, so
// that an index there has no id map (calico/index/mapped_index.h needs two more spaces): ids
// are the index's own slots, as before the map existed. IvfImpl (ivf_impl.h) serves every
// other translation.
// IvfApi over index::BasicIvf<Pool> (api.h has the locking rules). A new
// handle is untrained and writes nothing; train() writes the centroids and empty lists
// (IvfParams::train_only); add() appends rows. Ids are any value < 2^32 - 1, not checked
// for uniqueness (as in IVF-Flat: a repeated id is a second row). A batch is checked whole
// (finite rows, non-zero for cosine, ids in range) before its first row is added; a
// delete batch likewise (BasicIvf::remove checks that every id has a row and none is
// repeated before it removes anything).
#pragma once

#include <algorithm>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "api.h"
#include "batch.h"
#include "gate.h"
#include "mapped_filter.h"
#include "calico/index/ivf.h"
#include "vector_checks.h"

namespace calico::py {

template <class Pool>
class IvfSlotImpl final : public IvfApi {
 public:
  using Index = index::BasicIvf<Pool>;

  // An open index (`index` set) or an untrained handle for `name`.
  IvfSlotImpl(std::shared_ptr<Gate> gate, std::shared_ptr<void> owner, Pool* pool, std::string name, uint32_t dim,
          MetricName metric, uint32_t nlist, std::optional<Index> index)
      : gate_(std::move(gate)),
        owner_(std::move(owner)),
        pool_(pool),
        name_(std::move(name)),
        dim_(dim),
        metric_(metric),
        nlist_(nlist),
        index_(std::move(index)) {}
  ~IvfSlotImpl() override {
    std::shared_lock l(gate_->mu);
    index_.reset();
  }

  void sync() override {}
  void close_locked() override {
    index_.reset();
    closed_ = true;
  }

  uint32_t dim() override { return dim_; }
  MetricName metric() override { return metric_; }
  uint32_t nlist() override { return nlist_; }
  bool trained() override {
    Use u(*gate_);
    std::lock_guard l(train_mu_);
    return index_.has_value();
  }
  uint64_t size() override {
    Use u(*gate_);
    return index_ ? index_->size() : 0;
  }
  // A scan of every list (no id map on 'direct').
  bool contains(uint64_t id) override {
    Use u(*gate_);
    check_open();
    std::lock_guard l(train_mu_);
    if (!index_ || id >= UINT32_MAX) return false;
    std::vector<uint32_t> ids;
    for (uint32_t l = 0; l < index_->nlist(); ++l) {
      index_->list_ids(l, &ids);
      if (std::find(ids.begin(), ids.end(), static_cast<uint32_t>(id)) != ids.end()) return true;
    }
    return false;
  }

  // No id map, so no labels: every id is unlabeled.
  std::optional<uint32_t> label(uint64_t) override {
    Use u(*gate_);
    check_open();
    return std::nullopt;
  }

  void train(const VectorBatch& v, uint32_t iters, uint64_t seed, unsigned threads) override {
    Use u(*gate_);
    check_open();
    std::lock_guard l(train_mu_);
    if (index_) throw Error(ErrorCode::kInvalidArgument, "ivf '" + name_ + "' is trained already");
    index::IvfParams p;
    p.dim = dim_;
    p.metric = to_metric(metric_);
    p.nlist = nlist_;
    p.train_iters = iters;
    p.seed = seed;
    p.threads = threads;
    p.train_only = true;
    index_.emplace(Index::build(*pool_, name_, p, v.data, v.rows));
  }

  void add(const VectorBatch& v, const uint64_t* ids, unsigned threads, const uint32_t* labels) override {
    Use u(*gate_);
    if (labels) no_labels("ivf add");
    Index& x = trained_index("add");
    check_rows(v, dim_, to_metric(metric_), "ivf add");
    std::unique_lock numbering(auto_ids_mu_, std::defer_lock);  // as in HnswImpl::add
    if (!ids) numbering.lock();
    const uint64_t base = x.size();
    auto id_of = [&](uint64_t i) { return ids ? ids[i] : base + i; };
    for (uint64_t i = 0; i < v.rows; ++i) {
      if (id_of(i) >= std::numeric_limits<uint32_t>::max()) {
        throw Error(ErrorCode::kInvalidArgument, "ivf add: id " + std::to_string(id_of(i)) + " (row " +
                                                     std::to_string(i) + ") is not below 2^32 - 1");
      }
    }
    // 'direct' validates no optimistic read: its adds run one at a time.
    std::unique_lock serial(direct_add_mu_, std::defer_lock);
    if constexpr (Pool::TranslationPolicy::kDirect) serial.lock();
    parallel_rows(v.rows, Pool::TranslationPolicy::kDirect ? 1 : threads_for(v.rows, threads, 64),
                  [&](unsigned, uint64_t i) { x.add(static_cast<uint32_t>(id_of(i)), v.data + i * dim_); });
  }

  void remove(const uint64_t* ids, uint64_t n) override {
    Use u(*gate_);
    Index& x = trained_index("delete");
    std::vector<uint32_t> id(n);
    for (uint64_t i = 0; i < n; ++i) {
      if (ids[i] >= std::numeric_limits<uint32_t>::max()) {  // never added: add() takes ids below it
        throw Error(ErrorCode::kInvalidArgument, "ivf delete: id " + std::to_string(ids[i]) + " (element " +
                                                     std::to_string(i) + ") is not in the index");
      }
      id[i] = static_cast<uint32_t>(ids[i]);
    }
    // 'direct' validates no optimistic read: its writers run one at a time (as add's).
    std::unique_lock serial(direct_add_mu_, std::defer_lock);
    if constexpr (Pool::TranslationPolicy::kDirect) serial.lock();
    x.remove(id.data(), id.size());  // remove() calls are serialised inside the index
  }

  void search(const VectorBatch& q, const SearchKnobs& knobs, uint64_t* ids, float* dist) override {
    Use u(*gate_);
    if (knobs.labels) no_labels("ivf search");
    Index& x = trained_index("search");
    check_rows(q, dim_, to_metric(metric_), "ivf search");
    const std::vector<uint64_t> words = slot_words(knobs.allowed_ids);
    const std::optional<vector::IdFilter> filter =
        knobs.allowed_ids ? std::optional(vector::IdFilter{words}) : std::nullopt;
    index::IvfSearchOptions opt;
    opt.k = knobs.k;
    opt.nprobe = knobs.param;
    opt.optimistic = knobs.optimistic;
    opt.prefetch = knobs.prefetch;
    const unsigned threads = threads_for(q.rows, knobs.threads, 4);
    auto make = [&] { return std::make_unique<index::IvfSearchState>(x); };
    std::vector<typename StatePool<index::IvfSearchState>::Lease> leases;
    for (unsigned w = 0; w < threads; ++w) leases.push_back(states_.acquire(make));
    std::vector<std::vector<vector::Neighbor>> outs(threads);
    parallel_rows(q.rows, threads, [&](unsigned w, uint64_t i) {
      std::vector<vector::Neighbor>& out = outs[w];
      if (filter) {
        x.search(q.data + i * dim_, opt, *leases[w], &out, *filter);
      } else {
        x.search(q.data + i * dim_, opt, *leases[w], &out);
      }
      for (uint32_t j = 0; j < knobs.k; ++j) {
        const bool have = j < out.size();
        ids[i * knobs.k + j] = have ? out[j].id : std::numeric_limits<uint64_t>::max();
        dist[i * knobs.k + j] = have ? out[j].distance : std::numeric_limits<float>::infinity();
      }
    });
  }

 private:
  // An allow-list of ids as the bitmap over slots (ids are slots here; ids from 2^32 - 1 up
  // allow nothing).
  static std::vector<uint64_t> slot_words(const std::vector<uint64_t>* ids) {
    std::vector<uint64_t> words;
    if (!ids) return words;
    for (const uint64_t id : *ids) {
      if (id >= UINT32_MAX) continue;
      if (id / 64 >= words.size()) words.resize(id / 64 + 1, 0);
      words[id / 64] |= uint64_t{1} << (id % 64);
    }
    return words;
  }

  void check_open() {
    if (closed_) throw ClosedError("the index's pool is closed");
  }
  Index& trained_index(const char* what) {
    check_open();
    std::lock_guard l(train_mu_);
    if (!index_) {
      throw Error(ErrorCode::kInvalidArgument, std::string("ivf ") + what + ": '" + name_ + "' is not trained");
    }
    return *index_;
  }

  std::shared_ptr<Gate> gate_;
  std::shared_ptr<void> owner_;
  Pool* pool_;  // valid while the gate is open
  std::string name_;
  uint32_t dim_;
  MetricName metric_;
  uint32_t nlist_;
  std::mutex train_mu_;  // guards the untrained -> trained transition of index_
  std::optional<Index> index_;
  bool closed_ = false;
  std::mutex direct_add_mu_;  // serialises adds on 'direct' pools
  std::mutex auto_ids_mu_;    // held by an add with ids = None for its whole batch  // written under the gate held exclusive
  StatePool<index::IvfSearchState> states_;
};

}  // namespace calico::py
