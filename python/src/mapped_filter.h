// The search filter of a call (SearchKnobs: an allow-list of ids, labels, or both) as the
// id map's slot bitmap (index::SlotFilter, calico/index/mapped_index.h), the refusal of
// labels where there is no id map (the 'direct' translation), and the loop that searches a
// batch of queries one row per call on C++ threads.
#pragma once

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "api.h"
#include "batch.h"
#include "calico/error.h"
#include "calico/index/mapped_index.h"

namespace calico::py {

// None when knobs ask for no filter; else the filter of both conditions that are given.
// The filter holds a read section while it lives: build it once per call.
template <class Mapped>
std::optional<index::SlotFilter> slot_filter_of(const Mapped& m, const SearchKnobs& knobs) {
  std::optional<index::SlotFilter> f;
  if (knobs.allowed_ids && knobs.labels) {
    f.emplace(m.filter(*knobs.allowed_ids, *knobs.labels));
  } else if (knobs.labels) {
    f.emplace(m.filter_labels(*knobs.labels));
  } else if (knobs.allowed_ids) {
    f.emplace(m.filter(*knobs.allowed_ids));
  }
  return f;
}

// Labels live in the id map, which an index on 'direct' does not have.
[[noreturn]] inline void no_labels(const char* what) {
  throw Error(ErrorCode::kInvalidArgument, std::string(what) +
                                               ": labels need the id map, which an index on the 'direct' translation "
                                               "does not have (use another translation)");
}

// Searches each row of q (dim floats) with opt on `threads` threads, each with a state
// leased from `states`, through `filter` when given; writes k results per row into ids and
// dist, padding a row with fewer with (2^64 - 1, +inf).
template <class Mapped, class Options>
void search_each_row(const Mapped& x, const VectorBatch& q, uint32_t dim, uint32_t k, const Options& opt,
                     const std::optional<index::SlotFilter>& filter, StatePool<typename Mapped::State>& states,
                     unsigned threads, uint64_t* ids, float* dist) {
  using State = typename Mapped::State;
  auto make = [&] { return std::make_unique<State>(x); };
  std::vector<typename StatePool<State>::Lease> leases;
  for (unsigned w = 0; w < threads; ++w) leases.push_back(states.acquire(make));
  // One result vector per worker (its capacity is kept between rows).
  std::vector<std::vector<index::MappedNeighbor>> outs(threads);
  parallel_rows(q.rows, threads, [&](unsigned w, uint64_t i) {
    std::vector<index::MappedNeighbor>& out = outs[w];
    if (filter) {
      x.search(q.data + i * dim, opt, *leases[w], &out, *filter);
    } else {
      x.search(q.data + i * dim, opt, *leases[w], &out);
    }
    for (uint32_t j = 0; j < k; ++j) {
      const bool have = j < out.size();
      ids[i * k + j] = have ? out[j].id : std::numeric_limits<uint64_t>::max();
      dist[i * k + j] = have ? out[j].distance : std::numeric_limits<float>::infinity();
    }
  });
}

}  // namespace calico::py
