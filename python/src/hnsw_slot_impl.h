// HnswSlotImpl<Pool>: the binding of the 'direct' translation, whose pool holds one space, so
// that an index there has no id map (calico/index/mapped_index.h needs two more spaces): ids
// are the index's own slots, as before the map existed. HnswImpl (hnsw_impl.h) serves every
// other translation.
// HnswApi over index::BasicHnsw<Pool> (api.h has the locking rules).
// Ids are the index's node ids (slots): each added once (a removed id is not added again
// before consolidate()). The capacity grows to take an id past it (format 3: reserve());
// ids index slots, so dense ids (as ids=None hands out) keep the index small. A batch add
// is checked whole (ids in range, unique, not yet added; finite rows; non-zero for cosine),
// and the index grown for its largest id, before its first row is added, so that bad input
// adds nothing; a batch remove likewise (ids in range, unique, in the index).
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
#include "vector_checks.h"

namespace calico::py {

template <class Pool>
class HnswSlotImpl final : public HnswApi {
 public:
  using Index = index::BasicHnsw<Pool>;

  HnswSlotImpl(std::shared_ptr<Gate> gate, std::shared_ptr<void> owner, Index index)
      : gate_(std::move(gate)), owner_(std::move(owner)), index_(std::move(index)) {}
  ~HnswSlotImpl() override {
    std::shared_lock l(gate_->mu);
    index_.reset();
  }

  void sync() override {}
  void close_locked() override { index_.reset(); }

  uint32_t dim() override { return use()->dim(); }
  MetricName metric() override { return from_metric(use()->params().metric); }
  uint64_t size() override { return use()->size(); }
  uint32_t capacity() override { return use()->capacity(); }
  uint32_t M() override { return use()->params().M; }
  uint32_t ef_construction() override { return use()->params().ef_construction; }
  bool contains(uint64_t id) override {
    Use u(*gate_);
    Index& h = live();
    return id < h.capacity() && h.contains(static_cast<uint32_t>(id));
  }
  // No id map, so no labels: every id is unlabeled.
  std::optional<uint32_t> label(uint64_t) override {
    Use u(*gate_);
    live();
    return std::nullopt;
  }

  void add(const VectorBatch& v, const uint64_t* ids, unsigned threads, const uint32_t* labels) override {
    Use u(*gate_);
    if (labels) no_labels("hnsw add");
    Index& h = live();
    check_rows(v, h.dim(), h.params().metric, "hnsw add");
    // ids = None: the first unused ids from size() up (an id is used while it is in the
    // index, deleted and not yet consolidated, or left present by a failed add). Such adds
    // run one batch at a time, so that two threads never hand out the same ids. An id whose
    // add failed (failed_adds()) may be added again explicitly with the same vector, which
    // completes its insertion (calico/index/hnsw.h, "A failed add").
    std::unique_lock numbering(auto_ids_mu_, std::defer_lock);
    const std::vector<uint32_t> failed_ids = h.failed_adds();
    const std::unordered_set<uint64_t> failed(failed_ids.begin(), failed_ids.end());
    std::vector<uint64_t> numbered;
    if (!ids) {
      numbering.lock();
      for (uint64_t next = h.size(); numbered.size() < v.rows; ++next) {
        if (next >= Index::kMaxCapacity) {
          throw Error(ErrorCode::kInvalidArgument, "hnsw add: " + std::to_string(v.rows) + " rows do not fit below " +
                                                       std::to_string(Index::kMaxCapacity) + " ids");
        }
        const auto id = static_cast<uint32_t>(next);
        if (next >= h.capacity() || (!h.contains(id) && !h.removed(id))) numbered.push_back(next);
      }
    }
    auto id_of = [&](uint64_t i) { return ids ? ids[i] : numbered[i]; };
    std::unordered_set<uint64_t> seen;
    uint64_t most = 0;
    for (uint64_t i = 0; i < v.rows; ++i) {
      const uint64_t id = id_of(i);
      if (id >= Index::kMaxCapacity) {
        throw Error(ErrorCode::kInvalidArgument, "hnsw add: id " + std::to_string(id) + " (row " + std::to_string(i) +
                                                     ") is past the largest id, " + std::to_string(Index::kMaxCapacity - 1));
      }
      most = std::max(most, id);
      if (id >= h.capacity()) {
        if (!seen.insert(id).second) {
          throw Error(ErrorCode::kInvalidArgument, "hnsw add: id " + std::to_string(id) + " (row " + std::to_string(i) +
                                                       ") is given twice");
        }
        continue;  // past the capacity: not in the index
      }
      if (!seen.insert(id).second || (h.contains(static_cast<uint32_t>(id)) && !(ids && failed.count(id)))) {
        throw Error(ErrorCode::kInvalidArgument, "hnsw add: id " + std::to_string(id) + " (row " + std::to_string(i) +
                                                     ") was added before");
      }
      if (h.removed(static_cast<uint32_t>(id))) {
        throw Error(ErrorCode::kInvalidArgument, "hnsw add: id " + std::to_string(id) + " (row " + std::to_string(i) +
                                                     ") was deleted; it can be added again after consolidate()");
      }
    }
    // Grown once for the batch (errors here, e.g. a format-2 index, add nothing), so that
    // parallel adds do not grow it id by id.
    if (v.rows > 0) h.reserve(most + 1);
    // 'direct' validates no optimistic read: its adds run one at a time (kDirectAdds).
    std::unique_lock serial(direct_add_mu_, std::defer_lock);
    if constexpr (kDirectAdds) serial.lock();
    parallel_rows(v.rows, kDirectAdds ? 1 : threads_for(v.rows, threads, 1),
                  [&](unsigned, uint64_t i) { h.add(static_cast<uint32_t>(id_of(i)), v.data + i * h.dim()); });
  }

  void remove(const uint64_t* ids, uint64_t n) override {
    Use u(*gate_);
    Index& h = live();
    // One batch at a time: two batches naming one id would both pass the check.
    std::lock_guard serial(remove_mu_);
    std::unordered_set<uint64_t> seen;
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t id = ids[i];
      if (!seen.insert(id).second) {
        throw Error(ErrorCode::kInvalidArgument, "hnsw delete: id " + std::to_string(id) + " is given twice");
      }
      if (id >= h.capacity() || !h.contains(static_cast<uint32_t>(id))) {
        throw Error(ErrorCode::kInvalidArgument, "hnsw delete: id " + std::to_string(id) + " (element " +
                                                     std::to_string(i) + ") is not in the index");
      }
    }
    for (uint64_t i = 0; i < n; ++i) h.remove(static_cast<uint32_t>(ids[i]));
  }

  uint64_t consolidate() override {
    Use u(*gate_);
    return live().consolidate();
  }
  // No id map here, so no automatic consolidation (BasicMapped's): consolidate() by hand.
  double auto_consolidate() override { return 0.0; }
  void set_auto_consolidate(double fraction) override {
    if (fraction != 0.0) {
      throw Error(ErrorCode::kInvalidArgument,
                  "hnsw auto_consolidate: an index on the 'direct' translation has no id map and consolidates "
                  "only when consolidate() is called (0 is the only value)");
    }
  }
  uint64_t tombstones() override {
    Use u(*gate_);
    Index& h = live();
    uint64_t n = 0;
    for (uint32_t s = 0, cap = h.capacity(); s < cap; ++s) n += h.removed(s) ? 1 : 0;
    return n;
  }

  void search(const VectorBatch& q, const SearchKnobs& knobs, uint64_t* ids, float* dist) override {
    Use u(*gate_);
    if (knobs.labels) no_labels("hnsw search");
    Index& h = live();
    check_rows(q, h.dim(), h.params().metric, "hnsw search");
    const std::vector<uint64_t> words = slot_words(knobs.allowed_ids);
    const std::optional<index::HnswFilter> filter =
        knobs.allowed_ids ? std::optional(index::HnswFilter{words}) : std::nullopt;
    index::HnswSearchOptions opt;
    opt.k = knobs.k;
    opt.ef = knobs.param;
    opt.optimistic = knobs.optimistic;
    opt.prefetch = knobs.prefetch;
    const unsigned threads = threads_for(q.rows, knobs.threads, 8);
    auto emit = [&](uint64_t i, const std::vector<vector::Neighbor>& out) {
      for (uint32_t j = 0; j < knobs.k; ++j) {
        const bool have = j < out.size();
        ids[i * knobs.k + j] = have ? out[j].id : std::numeric_limits<uint64_t>::max();
        dist[i * knobs.k + j] = have ? out[j].distance : std::numeric_limits<float>::infinity();
      }
    };
    auto make = [&] { return std::make_unique<index::HnswSearchState>(h); };
    if (knobs.in_flight > 1 && !filter) {  // blocks of in_flight rows, each one search_batch on one thread
      const uint64_t per = knobs.in_flight;
      const uint64_t blocks = (q.rows + per - 1) / per;
      const unsigned workers = static_cast<unsigned>(std::min<uint64_t>(threads, blocks));
      std::vector<typename StatePool<index::HnswSearchState>::Lease> leases;
      std::vector<index::HnswSearchState*> states;  // worker w's are [w * per, (w + 1) * per)
      for (uint64_t s = 0; s < uint64_t{workers} * per; ++s) {
        leases.push_back(states_.acquire(make));
        states.push_back(&*leases.back());
      }
      std::vector<std::vector<std::vector<vector::Neighbor>>> outs(workers, std::vector<std::vector<vector::Neighbor>>(per));
      std::vector<std::vector<const float*>> rows(workers, std::vector<const float*>(per));
      parallel_rows(blocks, workers, [&](unsigned w, uint64_t b) {
        const uint64_t first = b * per, n = std::min<uint64_t>(per, q.rows - first);
        for (uint64_t i = 0; i < n; ++i) rows[w][i] = q.data + (first + i) * h.dim();
        h.search_batch(std::span<const float* const>(rows[w].data(), n), opt,
                       std::span<index::HnswSearchState* const>(states.data() + w * per, n),
                       std::span(outs[w].data(), n));
        for (uint64_t i = 0; i < n; ++i) emit(first + i, outs[w][i]);
      });
      return;
    }
    auto run = [&](uint64_t i, index::HnswSearchState& st, std::vector<vector::Neighbor>& out) {
      if (filter) {
        h.search(q.data + i * h.dim(), opt, st, &out, *filter);
      } else {
        h.search(q.data + i * h.dim(), opt, st, &out);
      }
      emit(i, out);
    };
    if (threads <= 1) {  // no allocation once a state is cached and out has grown
      auto st = states_.acquire(make);
      thread_local std::vector<vector::Neighbor> out;
      for (uint64_t i = 0; i < q.rows; ++i) run(i, *st, out);
      return;
    }
    std::vector<typename StatePool<index::HnswSearchState>::Lease> leases;
    for (unsigned w = 0; w < threads; ++w) leases.push_back(states_.acquire(make));
    std::vector<std::vector<vector::Neighbor>> outs(threads);
    parallel_rows(q.rows, threads, [&](unsigned w, uint64_t i) { run(i, *leases[w], outs[w]); });
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
  std::mutex auto_ids_mu_;  // held by an add with ids = None for its whole batch
  std::mutex remove_mu_;    // held by a remove for its whole batch
  StatePool<index::HnswSearchState> states_;
};

}  // namespace calico::py
