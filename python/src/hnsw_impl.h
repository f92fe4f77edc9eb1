// HnswImpl<Pool>: HnswApi over index::BasicMapped<index::BasicHnsw<Pool>> (api.h has the
// locking rules): ids are any uint64 but 2^64 - 1, mapped to the index's slots by its id map
// (calico/index/mapped_index.h); add upserts (a present id gets the new vector); ids=None
// takes the first free ids from size() up, never overwriting one. Batches are checked whole
// by the map (ids: not 2^64 - 1, none twice; rows: finite, non-zero for cosine) before the
// first row is written; a delete batch likewise (every id present, none twice).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_set>
#include <vector>

#include "api.h"
#include "batch.h"
#include "gate.h"
#include "mapped_filter.h"
#include "calico/index/hnsw.h"
#include "calico/index/mapped_index.h"
#include "vector_checks.h"

namespace calico::py {

template <class Pool>
class HnswImpl final : public HnswApi {
 public:
  using Index = index::BasicMapped<index::BasicHnsw<Pool>>;
  using State = typename Index::State;

  HnswImpl(std::shared_ptr<Gate> gate, std::shared_ptr<void> owner, Index index)
      : gate_(std::move(gate)), owner_(std::move(owner)), index_(std::move(index)) {}
  ~HnswImpl() override {
    std::shared_lock l(gate_->mu);
    index_.reset();
  }

  void close_locked() override { index_.reset(); }

  uint32_t dim() override { return use()->dim(); }
  MetricName metric() override { return from_metric(use()->index().params().metric); }
  uint64_t size() override { return use()->size(); }
  uint32_t capacity() override { return use()->index().capacity(); }
  uint32_t M() override { return use()->index().params().M; }
  uint32_t ef_construction() override { return use()->index().params().ef_construction; }
  bool contains(uint64_t id) override { return use()->contains(id); }
  std::optional<uint32_t> label(uint64_t id) override { return use()->label(id); }
  // Under the gate (PoolApi::flush and close hold it): the map's B+tree count.
  void sync() override {
    if (index_) index_->sync();
  }

  void add(const VectorBatch& v, const uint64_t* ids, unsigned threads, const uint32_t* labels) override {
    Use u(*gate_);
    Index& h = live();
    check_rows(v, h.dim(), h.index().params().metric, "hnsw add");
    // 'direct' validates no optimistic read: its adds run one at a time (kDirectAdds).
    std::unique_lock serial(direct_add_mu_, std::defer_lock);
    if constexpr (kDirectAdds) serial.lock();
    const unsigned n = kDirectAdds ? 1 : threads_for(v.rows, threads, 1);
    const auto label_span = labels ? std::span<const uint32_t>(labels, v.rows) : std::span<const uint32_t>();
    if (ids) {
      h.add(std::span<const uint64_t>(ids, v.rows), v.data, n, index::AddMode::kUpsert, label_span);
    } else {
      h.add_numbered(v.data, v.rows, n, label_span);
    }
  }

  void remove(const uint64_t* ids, uint64_t n) override {
    Use u(*gate_);
    live().remove(std::span<const uint64_t>(ids, n));
  }

  uint64_t consolidate() override {
    Use u(*gate_);
    return live().consolidate();
  }
  double auto_consolidate() override {
    Use u(*gate_);
    return live().auto_consolidate_fraction();
  }
  void set_auto_consolidate(double fraction) override {
    Use u(*gate_);
    live().set_auto_consolidate(fraction);
  }
  uint64_t tombstones() override {
    Use u(*gate_);
    return live().tombstones();
  }

  void search(const VectorBatch& q, const SearchKnobs& knobs, uint64_t* ids, float* dist) override {
    Use u(*gate_);
    Index& h = live();
    check_rows(q, h.dim(), h.index().params().metric, "hnsw search");
    // The allow-list and labels as slots, built once for the call; it holds a read section
    // until the call returns (an upsert's retirement waits for it: calico/index/mapped_index.h).
    const std::optional<index::SlotFilter> filter = slot_filter_of(h, knobs);
    index::HnswSearchOptions opt;
    opt.k = knobs.k;
    opt.ef = knobs.param;
    opt.optimistic = knobs.optimistic;
    opt.prefetch = knobs.prefetch;
    const unsigned threads = threads_for(q.rows, knobs.threads, 8);
    auto emit = [&](uint64_t i, const std::vector<index::MappedNeighbor>& out) {
      for (uint32_t j = 0; j < knobs.k; ++j) {
        const bool have = j < out.size();
        ids[i * knobs.k + j] = have ? out[j].id : std::numeric_limits<uint64_t>::max();
        dist[i * knobs.k + j] = have ? out[j].distance : std::numeric_limits<float>::infinity();
      }
    };
    auto make = [&] { return std::make_unique<State>(h); };
    if (knobs.in_flight > 1 && !filter) {  // blocks of in_flight rows, each one search_batch on one thread
      const uint64_t per = knobs.in_flight;
      const uint64_t blocks = (q.rows + per - 1) / per;
      const unsigned workers = static_cast<unsigned>(std::min<uint64_t>(threads, blocks));
      std::vector<typename StatePool<State>::Lease> leases;
      std::vector<State*> states;  // worker w's are [w * per, (w + 1) * per)
      for (uint64_t s = 0; s < uint64_t{workers} * per; ++s) {
        leases.push_back(states_.acquire(make));
        states.push_back(&*leases.back());
      }
      std::vector<std::vector<std::vector<index::MappedNeighbor>>> outs(workers, std::vector<std::vector<index::MappedNeighbor>>(per));
      std::vector<std::vector<const float*>> rows(workers, std::vector<const float*>(per));
      parallel_rows(blocks, workers, [&](unsigned w, uint64_t b) {
        const uint64_t first = b * per, n = std::min<uint64_t>(per, q.rows - first);
        for (uint64_t i = 0; i < n; ++i) rows[w][i] = q.data + (first + i) * h.dim();
        h.search_batch(std::span<const float* const>(rows[w].data(), n), opt,
                       std::span<State* const>(states.data() + w * per, n),
                       std::span(outs[w].data(), n));
        for (uint64_t i = 0; i < n; ++i) emit(first + i, outs[w][i]);
      });
      return;
    }
    auto run = [&](uint64_t i, State& st, std::vector<index::MappedNeighbor>& out) {
      if (filter) {
        h.search(q.data + i * h.dim(), opt, st, &out, *filter);
      } else {
        h.search(q.data + i * h.dim(), opt, st, &out);
      }
      emit(i, out);
    };
    if (threads <= 1) {  // no allocation once a state is cached and out has grown
      auto st = states_.acquire(make);
      thread_local std::vector<index::MappedNeighbor> out;
      for (uint64_t i = 0; i < q.rows; ++i) run(i, *st, out);
      return;
    }
    std::vector<typename StatePool<State>::Lease> leases;
    for (unsigned w = 0; w < threads; ++w) leases.push_back(states_.acquire(make));
    std::vector<std::vector<index::MappedNeighbor>> outs(threads);
    parallel_rows(q.rows, threads, [&](unsigned w, uint64_t i) { run(i, *leases[w], outs[w]); });
  }

 private:
  // The index, or ClosedError; callers hold a Use.
  Index& live() {
    if (!index_) throw ClosedError("the index's pool is closed");
    return *index_;
  }
  // For one-value getters: the gate is held only while the value is read.
  struct Access {
    Use u;
    Index* h;
    Index* operator->() { return h; }
  };
  Access use() {
    Use u(*gate_);
    return Access{std::move(u), &live()};
  }

  std::shared_ptr<Gate> gate_;
  std::shared_ptr<void> owner_;  // keeps the pool object alive
  std::optional<Index> index_;
  // The direct translation (the ceiling) validates no optimistic read, so concurrent adds
  // (whose searches read lists other adds write) are serialised; searching while adding is
  // then still unsupported there (include/calico/index/hnsw.h).
  static constexpr bool kDirectAdds = Pool::TranslationPolicy::kDirect;
  std::mutex direct_add_mu_;
  StatePool<State> states_;
};

}  // namespace calico::py
