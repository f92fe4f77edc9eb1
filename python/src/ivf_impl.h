// IvfImpl<Pool>: IvfApi over index::BasicMapped<index::BasicIvf<Pool>> (api.h has the
// locking rules). A new handle is untrained and writes nothing; train() writes the centroids
// and empty lists (IvfParams::train_only) and the id map; add() upserts rows. Ids are any
// uint64 but 2^64 - 1, each one row (an index written before the id map, whose ids could
// repeat, keeps a repeated id's rows together under that id); ids=None takes the first
// free ids from size() up. Batches are checked whole before the first row is written (by
// the map: ids; here: rows), a delete batch likewise.
#pragma once

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
#include "calico/index/mapped_index.h"
#include "vector_checks.h"

namespace calico::py {

template <class Pool>
class IvfImpl final : public IvfApi {
 public:
  using Core = index::BasicIvf<Pool>;
  using Index = index::BasicMapped<Core>;
  using State = typename Index::State;

  // An open index (`index` set) or an untrained handle for `name`.
  IvfImpl(std::shared_ptr<Gate> gate, std::shared_ptr<void> owner, Pool* pool, std::string name, uint32_t dim,
          MetricName metric, uint32_t nlist, std::optional<Index> index)
      : gate_(std::move(gate)),
        owner_(std::move(owner)),
        pool_(pool),
        name_(std::move(name)),
        dim_(dim),
        metric_(metric),
        nlist_(nlist),
        index_(std::move(index)) {}
  ~IvfImpl() override {
    std::shared_lock l(gate_->mu);
    index_.reset();
  }

  // Under the gate (PoolApi::flush and close hold it): the map's B+tree count.
  void sync() override {
    std::lock_guard l(train_mu_);
    if (index_) index_->sync();
  }
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
  bool contains(uint64_t id) override {
    Use u(*gate_);
    check_open();
    std::lock_guard l(train_mu_);
    return index_ && index_->contains(id);
  }
  std::optional<uint32_t> label(uint64_t id) override {
    Use u(*gate_);
    check_open();
    std::lock_guard l(train_mu_);
    return index_ ? index_->label(id) : std::nullopt;
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
    index_.emplace(Index::attach(*pool_, name_, Core::build(*pool_, name_, p, v.data, v.rows)));
  }

  void add(const VectorBatch& v, const uint64_t* ids, unsigned threads, const uint32_t* labels) override {
    Use u(*gate_);
    Index& x = trained_index("add");
    check_rows(v, dim_, to_metric(metric_), "ivf add");
    // 'direct' validates no optimistic read: its adds run one at a time.
    std::unique_lock serial(direct_add_mu_, std::defer_lock);
    if constexpr (Pool::TranslationPolicy::kDirect) serial.lock();
    const unsigned n = Pool::TranslationPolicy::kDirect ? 1 : threads_for(v.rows, threads, 64);
    const auto label_span = labels ? std::span<const uint32_t>(labels, v.rows) : std::span<const uint32_t>();
    if (ids) {
      x.add(std::span<const uint64_t>(ids, v.rows), v.data, n, index::AddMode::kUpsert, label_span);
    } else {
      x.add_numbered(v.data, v.rows, n, label_span);
    }
  }

  void remove(const uint64_t* ids, uint64_t n) override {
    Use u(*gate_);
    Index& x = trained_index("delete");
    // 'direct' validates no optimistic read: its writers run one at a time (as add's).
    std::unique_lock serial(direct_add_mu_, std::defer_lock);
    if constexpr (Pool::TranslationPolicy::kDirect) serial.lock();
    x.remove(std::span<const uint64_t>(ids, n));
  }

  void search(const VectorBatch& q, const SearchKnobs& knobs, uint64_t* ids, float* dist) override {
    Use u(*gate_);
    Index& x = trained_index("search");
    check_rows(q, dim_, to_metric(metric_), "ivf search");
    // The allow-list and labels as slots, built once for the call (it holds a read section
    // until the call returns: calico/index/mapped_index.h).
    const std::optional<index::SlotFilter> filter = slot_filter_of(x, knobs);
    index::IvfSearchOptions opt;
    opt.k = knobs.k;
    opt.nprobe = knobs.param;
    opt.optimistic = knobs.optimistic;
    opt.prefetch = knobs.prefetch;
    search_each_row(x, q, dim_, knobs.k, opt, filter, states_, threads_for(q.rows, knobs.threads, 4), ids, dist);
  }

 private:
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
  StatePool<State> states_;
};

}  // namespace calico::py
