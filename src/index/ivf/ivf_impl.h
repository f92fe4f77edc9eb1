// BasicIvf<Pool>'s member definitions and helper types: the declaration and its contract
// (format, search and prefetch, concurrency, errors) are in include/calico/index/ivf.h, the
// format's structs in ivf_layout.h. Included at the end of calico/index/ivf.h (through
// calico/detail/ivf_impl.h); every definition is inline, as if written in the class.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/checks.h"
#include "calico/error.h"
#include "calico/index/ivf.h"
#include "index/corrupt_page.h"
#include "index/ivf/ivf_layout.h"
#include "calico/optimistic_reader.h"
#include "vector/coarse.h"
#include "vector/distance.h"
#include "vector/kmeans.h"
#include "vector/neighbor.h"

namespace calico::index {

template <class Pool>
inline IvfSearchState::IvfSearchState(const BasicIvf<Pool>& ivf) {
  query_.reserve(ivf.dim());
  coarse_.order.reserve(ivf.nlist());
  ids_.resize(ivf.records_per_page());
  dists_.resize(ivf.records_per_page());
}

// The page read one step ahead of the scan (with opt.prefetch): the next page whose block
// is known before the current one is read (the next page of a build-time run, else the
// first page of the next probed list). Its optimistic read starts, and its lines are
// prefetched into the CPU cache, before the current page is scored: frames of adjacent
// blocks are not adjacent in memory, so the hardware prefetcher stops at each page's
// end. The read is used as the page's first optimistic attempt when the scan gets there.
template <class Pool>
struct BasicIvf<Pool>::Lookahead {
  uint32_t block = kNoBlock;
  OptimisticRead read;
};

// Walks a posting chain with a bound: every next block must be a posting page inside the
// space, and a chain may not have more pages than the space (else it has a cycle). The
// space may grow meanwhile (add): the block count is read again before giving up.
template <class Pool>
class BasicIvf<Pool>::ChainBound {
 public:
  explicit ChainBound(const BasicIvf& ivf) : ivf_(ivf), blocks_(ivf.pool_->space_blocks(ivf.space_)) {}
  // The block after `pid` (whose validated or pinned header says `next`), or kNoBlock.
  uint32_t next(PageId pid, uint32_t next) {
    if (next == kNoBlock) return kNoBlock;
    ++pages_;
    if (next >= blocks_ || pages_ >= blocks_) blocks_ = ivf_.pool_->space_blocks(ivf_.space_);
    if (next < posting_first(ivf_.meta_) || next >= blocks_) {
      corrupt(pid, "posting page names next block " + std::to_string(next) + ", not a posting page");
    }
    if (pages_ >= blocks_) corrupt(pid, "posting chain is longer than the space (a cycle)");
    return next;
  }

 private:
  const BasicIvf& ivf_;
  uint64_t blocks_;
  uint64_t pages_ = 0;  // pages left behind so far
};

template <class Pool>
inline auto BasicIvf<Pool>::build(Pool& pool, std::string_view name, const IvfParams& params, const float* data,
                                  uint64_t n, const IvfProgressFn& progress) -> BasicIvf {
  const size_t usable = pool.usable_page_size();
  check_build_args(params, usable, data, n);
  const uint32_t dim = params.dim, nlist = params.nlist;
  const bool cosine = params.metric == vector::Metric::kCosine;

  // 1. Train on a seeded sample (ascending row order: Knuth's selection sampling).
  IvfParams p = params;
  p.train_sample = std::clamp<uint64_t>(params.train_sample == 0 ? uint64_t{64} * nlist : params.train_sample,
                                        nlist, n);
  std::vector<float> sample(p.train_sample * dim);
  {
    std::mt19937_64 rng(p.seed);
    uint64_t taken = 0;
    for (uint64_t i = 0; i < n && taken < p.train_sample; ++i) {
      if (std::uniform_int_distribution<uint64_t>(0, n - i - 1)(rng) < p.train_sample - taken) {
        std::copy_n(data + i * dim, dim, sample.data() + taken * dim);
        if (cosine) vector::normalize(sample.data() + taken * dim, dim);
        ++taken;
      }
    }
    CALICO_CHECK(taken == p.train_sample);
  }
  vector::KmeansParams kp;
  kp.k = nlist;
  kp.metric = p.metric;
  kp.iters = p.train_iters;
  kp.seed = p.seed;
  kp.threads = p.threads;
  vector::KmeansResult km = vector::kmeans(sample.data(), p.train_sample, dim, kp);
  sample = {};

  // 2. Assign every row (in chunks; kCosine rows are normalised in a chunk buffer).
  //    train_only: no row is stored (stored = 0), so there is nothing to assign.
  const uint64_t stored = p.train_only ? 0 : n;
  const uint64_t total = 2 * stored;
  std::vector<uint32_t> assignment(stored);
  if (stored > 0) {
    constexpr uint64_t kChunkRows = 16384;
    std::vector<float> chunk;
    for (uint64_t b = 0; b < n; b += kChunkRows) {
      const uint64_t rows = std::min(kChunkRows, n - b);
      const float* src = data + b * dim;
      if (cosine) {
        chunk.assign(src, src + rows * dim);
        for (uint64_t i = 0; i < rows; ++i) vector::normalize(chunk.data() + i * dim, dim);
        src = chunk.data();
      }
      vector::assign_nearest(src, rows, dim, km.centroids.data(), nlist, p.metric, p.threads,
                             assignment.data() + b);
      if (progress) progress(b + rows, total);
    }
  }

  // 3. Lay out: list l's rows in ascending row order (a counting sort by list).
  std::vector<uint64_t> start(uint64_t{nlist} + 1, 0);
  for (uint32_t a : assignment) ++start[a + 1];
  for (uint32_t l = 0; l < nlist; ++l) start[l + 1] += start[l];
  std::vector<uint32_t> members(stored);
  {
    std::vector<uint64_t> fill(start.begin(), start.end() - 1);
    for (uint64_t i = 0; i < stored; ++i) members[fill[assignment[i]]++] = static_cast<uint32_t>(i);
  }
  assignment = {};
  ivf_detail::IvfMeta m{};
  m.magic = kMagic;
  m.format_version = kFormatVersion;
  m.page_size = static_cast<uint32_t>(pool.page_size());
  m.dim = dim;
  m.metric = static_cast<uint32_t>(p.metric);
  m.nlist = nlist;
  m.train_iters = p.train_iters;
  m.seed = p.seed;
  m.train_sample = p.train_sample;
  m.built_rows = stored;
  m.centroids_per_page = centroids_per_page(usable, dim);
  m.centroid_first = 1;
  m.centroid_pages = (nlist + m.centroids_per_page - 1) / m.centroids_per_page;
  m.entries_per_page = static_cast<uint32_t>(usable / kDirEntryBytes);
  m.directory_first = m.centroid_first + m.centroid_pages;
  m.directory_pages = (nlist + m.entries_per_page - 1) / m.entries_per_page;
  m.records_per_page = IvfFormat::records_per_page(usable, dim);
  const uint32_t rpp = m.records_per_page;
  std::vector<ivf_detail::IvfDirEntry> dir(nlist);
  uint64_t next_block = uint64_t{m.directory_first} + m.directory_pages;
  for (uint32_t l = 0; l < nlist; ++l) {
    const uint64_t rows = start[l + 1] - start[l];
    const uint64_t pages = std::max<uint64_t>(1, (rows + rpp - 1) / rpp);
    dir[l] = {static_cast<uint32_t>(next_block), static_cast<uint32_t>(next_block + pages - 1),
              static_cast<uint32_t>(rows), static_cast<uint32_t>(pages)};
    next_block += pages;
  }
  if (next_block > pool.options().max_blocks_per_space || next_block > UINT32_MAX) {
    throw Error(ErrorCode::kInvalidArgument, "ivf '" + std::string(name) + "' needs " + std::to_string(next_block) +
                                                 " pages; the space holds at most " +
                                                 std::to_string(pool.options().max_blocks_per_space));
  }

  // 4. Write: block 0 zeroed, centroids, directory, lists, then the metadata.
  const SpaceId space = pool.create_space(name);
  auto write_page = [&](uint64_t expect_block, auto&& fill_page) {
    ExclusiveGuard g = pool.allocate(space);
    CALICO_CHECK(g.page_id().block() == expect_block);  // build is the space's only writer
    fill_page(g.data());
    g.mark_dirty();
  };
  write_page(0, [](std::byte*) {});
  for (uint32_t pg = 0; pg < m.centroid_pages; ++pg) {
    const uint32_t c0 = pg * m.centroids_per_page, c1 = std::min(nlist, c0 + m.centroids_per_page);
    write_page(m.centroid_first + pg, [&](std::byte* d) {
      std::memcpy(d, km.centroids.data() + size_t{c0} * dim, size_t{c1 - c0} * dim * 4);
    });
  }
  for (uint32_t pg = 0; pg < m.directory_pages; ++pg) {
    const uint32_t l0 = pg * m.entries_per_page, l1 = std::min(nlist, l0 + m.entries_per_page);
    write_page(m.directory_first + pg, [&](std::byte* d) { std::memcpy(d, &dir[l0], size_t{l1 - l0} * kDirEntryBytes); });
  }
  const size_t rec = record_bytes(dim);
  uint64_t written = 0;
  for (uint32_t l = 0; l < nlist; ++l) {
    const uint64_t rows = start[l + 1] - start[l];
    for (uint32_t pg = 0; pg < dir[l].build_pages; ++pg) {
      const uint64_t r0 = uint64_t{pg} * rpp, r1 = std::min<uint64_t>(rows, r0 + rpp);
      const bool last = pg + 1 == dir[l].build_pages;
      write_page(dir[l].first + pg, [&](std::byte* d) {
        const ivf_detail::IvfPostingHeader h{kPostingTag, l, static_cast<uint32_t>(r1 - r0),
                                             last ? kNoBlock : dir[l].first + pg + 1};
        std::memcpy(d, &h, sizeof h);
        for (uint64_t r = r0; r < r1; ++r) {
          const uint32_t id = members[start[l] + r];
          std::byte* out = d + kPostingHeaderBytes + (r - r0) * rec;
          std::memcpy(out, &id, 4);
          std::memcpy(out + 4, data + uint64_t{id} * dim, size_t{dim} * 4);
          if (cosine) normalize_in_page(out + 4, dim);
        }
      });
    }
    written += rows;
    if (progress) progress(stored + written, total);
  }
  {
    ExclusiveGuard g = pool.pin_exclusive(PageId(space, 0));
    std::memcpy(g.data(), &m, sizeof m);
    g.mark_dirty();
  }
  std::vector<ListHead> heads(nlist);
  for (uint32_t l = 0; l < nlist; ++l) heads[l] = {dir[l].first, dir[l].build_pages};
  return BasicIvf(pool, space, m, std::move(km.centroids), std::move(heads), stored);
}

template <class Pool>
inline auto BasicIvf<Pool>::open(Pool& pool, std::string_view name) -> BasicIvf {
  const SpaceId space = pool.open_space(name);
  const uint64_t blocks = pool.space_blocks(space);
  auto reject = [&](const std::string& why) {
    return Error(ErrorCode::kInvalidArgument, "space '" + std::string(name) + "' is not an IVF index: " + why,
                 PageId(space, 0));
  };
  ivf_detail::IvfMeta m{};
  if (blocks > 0) {
    SharedGuard g = pool.pin_shared(PageId(space, 0));
    std::memcpy(&m, g.data(), sizeof m);
  }
  const size_t usable = pool.usable_page_size();
  if (m.magic != kMagic || m.format_version != kFormatVersion) throw reject("no IVF metadata in block 0");
  if (m.page_size != pool.page_size() || m.dim == 0 || m.dim > max_dim(usable) || m.metric > 2 || m.nlist == 0 ||
      m.centroids_per_page != centroids_per_page(usable, m.dim) || m.records_per_page != IvfFormat::records_per_page(usable, m.dim) ||
      m.entries_per_page != usable / kDirEntryBytes ||
      // Exactly as many pages as the lists need: a page past them would start past nlist
      // (the copies below would then count from c0 > c1; found by ivf_posting_fuzz).
      m.centroid_pages != (uint64_t{m.nlist} + m.centroids_per_page - 1) / m.centroids_per_page ||
      m.directory_pages != (uint64_t{m.nlist} + m.entries_per_page - 1) / m.entries_per_page ||
      uint64_t{m.centroid_first} + m.centroid_pages > blocks ||
      uint64_t{m.directory_first} + m.directory_pages > blocks) {
    throw reject("inconsistent metadata");
  }
  std::vector<float> centroids(size_t{m.nlist} * m.dim);
  for (uint32_t pg = 0; pg < m.centroid_pages; ++pg) {
    const uint32_t c0 = pg * m.centroids_per_page, c1 = std::min(m.nlist, c0 + m.centroids_per_page);
    const PageId pid(space, m.centroid_first + pg);
    SharedGuard g = pool.pin_shared(pid);
    float* const dst = centroids.data() + size_t{c0} * m.dim;
    std::memcpy(dst, g.data(), size_t{c1 - c0} * m.dim * 4);
    if (!vector::all_finite(dst, size_t{c1 - c0} * m.dim)) {
      corrupt(pid, "centroids " + std::to_string(c0) + ".." + std::to_string(c1 - 1) + " not all finite");
    }
  }
  std::vector<ListHead> heads(m.nlist);
  uint64_t rows = 0;
  for (uint32_t pg = 0; pg < m.directory_pages; ++pg) {
    const uint32_t l0 = pg * m.entries_per_page, l1 = std::min(m.nlist, l0 + m.entries_per_page);
    const PageId pid(space, m.directory_first + pg);
    SharedGuard g = pool.pin_shared(pid);
    for (uint32_t l = l0; l < l1; ++l) {
      ivf_detail::IvfDirEntry e;
      std::memcpy(&e, g.data() + size_t{l - l0} * kDirEntryBytes, sizeof e);
      if (e.first < posting_first(m) || e.build_pages == 0 || uint64_t{e.first} + e.build_pages > blocks ||
          e.tail < posting_first(m) || e.tail >= blocks) {
        corrupt(pid, "directory entry of list " + std::to_string(l) + " outside the posting pages");
      }
      heads[l] = {e.first, e.build_pages};
      rows += e.rows;
    }
  }
  return BasicIvf(pool, space, m, std::move(centroids), std::move(heads), rows);
}

template <class Pool>
inline void BasicIvf<Pool>::search(const float* q, const IvfSearchOptions& opt, IvfSearchState& st,
                                   std::vector<vector::Neighbor>* out) const {
  search_one(q, opt, st, out, nullptr);
}

template <class Pool>
inline void BasicIvf<Pool>::search(const float* q, const IvfSearchOptions& opt, IvfSearchState& st,
                                   std::vector<vector::Neighbor>* out, const vector::IdFilter& filter) const {
  search_one(q, opt, st, out, &filter);
}

template <class Pool>
inline void BasicIvf<Pool>::search_batch(const float* qs, size_t nq, const IvfSearchOptions& opt, IvfSearchState& st,
                                         std::vector<vector::Neighbor>* out) const {
  search_block(qs, nq, opt, st, out, nullptr);
}

template <class Pool>
inline void BasicIvf<Pool>::search_batch(const float* qs, size_t nq, const IvfSearchOptions& opt, IvfSearchState& st,
                                         std::vector<vector::Neighbor>* out, const vector::IdFilter& filter) const {
  search_block(qs, nq, opt, st, out, &filter);
}

// search() with or without a filter. Unfiltered: the nprobe nearest centroids are ranked;
// filtered: every centroid, so that scan_probes can go past nprobe (the first nprobe are
// the same either way: the ranking is a total order).
template <class Pool>
inline void BasicIvf<Pool>::search_one(const float* q, const IvfSearchOptions& opt, IvfSearchState& st,
                                       std::vector<vector::Neighbor>* out, const vector::IdFilter* filter) const {
  check_search_options(opt);
  const float* query = prepare(q, &st.query_, "ivf search");
  const uint32_t nprobe = std::min(opt.nprobe, nlist());
  const uint32_t ranked = filter == nullptr ? nprobe : nlist();
  st.probes_.resize(ranked);
  ranker_.rank(query, ranked, st.coarse_, st.probes_.data());
  scan_probes(query, std::span<const vector::Neighbor>(st.probes_.data(), ranked), nprobe, opt, st, out, filter);
}

template <class Pool>
inline void BasicIvf<Pool>::search_block(const float* qs, size_t nq, const IvfSearchOptions& opt, IvfSearchState& st,
                                         std::vector<vector::Neighbor>* out, const vector::IdFilter* filter) const {
  check_search_options(opt);
  if (nq == 0) return;
  if (qs == nullptr) throw Error(ErrorCode::kInvalidArgument, "ivf search_batch: no queries");
  const size_t d = dim();
  st.batch_.resize(nq * d);
  for (size_t i = 0; i < nq; ++i) {
    const float* query;
    try {
      query = prepare(qs + i * d, &st.query_, "ivf search_batch");
    } catch (const Error& e) {
      throw Error(e.code(), std::string(e.what()) + " (query " + std::to_string(i) + ")");
    }
    std::copy_n(query, d, st.batch_.data() + i * d);
  }
  const uint32_t nprobe = std::min(opt.nprobe, nlist());
  const uint32_t ranked = filter == nullptr ? nprobe : nlist();
  st.probes_.resize(nq * ranked);
  ranker_.rank_block(st.batch_.data(), nq, ranked, st.coarse_, st.probes_.data());
  for (size_t i = 0; i < nq; ++i) {
    scan_probes(st.batch_.data() + i * d, std::span<const vector::Neighbor>(st.probes_.data() + i * ranked, ranked),
                nprobe, opt, st, &out[i], filter);
  }
}

template <class Pool>
inline void BasicIvf<Pool>::add(uint32_t id, const float* v) {
  std::vector<float> buf;
  const float* row = prepare(v, &buf, "ivf add");
  const uint32_t list = vector::nearest_centroid(row, centroids_.data(), nlist(), dim(), dist_);
  const PageId dir_pid(space_, meta_.directory_first + list / meta_.entries_per_page);
  const size_t dir_off = size_t{list % meta_.entries_per_page} * kDirEntryBytes;
  ExclusiveGuard dg = pool_->pin_exclusive(dir_pid);
  ivf_detail::IvfDirEntry e;
  std::memcpy(&e, dg.data() + dir_off, sizeof e);
  // The tail must be a posting page: never the latched directory page (a self-deadlock)
  // nor a block past the space.
  if (e.tail < posting_first(meta_) || e.tail >= pool_->space_blocks(space_)) {
    corrupt(dir_pid, "directory entry of list " + std::to_string(list) + " names tail block " +
                         std::to_string(e.tail) + ", not a posting page");
  }
  ExclusiveGuard tg = pool_->pin_exclusive(PageId(space_, e.tail));
  ivf_detail::IvfPostingHeader h;
  std::memcpy(&h, tg.data(), sizeof h);
  if (h.tag != kPostingTag || h.list != list || h.next != kNoBlock || h.count > meta_.records_per_page) {
    bad_posting(tg.page_id(), h, list, "as the tail of");
  }
  const size_t rec = record_bytes(dim());
  auto write_record = [&](std::byte* page, uint32_t slot) {
    std::byte* r = page + kPostingHeaderBytes + size_t{slot} * rec;
    std::memcpy(r, &id, 4);
    std::memcpy(r + 4, row, size_t{dim()} * 4);
  };
  if (h.count == meta_.records_per_page) {
    ExclusiveGuard ng = pool_->allocate(space_);  // may throw: nothing is written yet
    const ivf_detail::IvfPostingHeader nh{kPostingTag, list, 1, kNoBlock};
    std::memcpy(ng.data(), &nh, sizeof nh);
    write_record(ng.data(), 0);
    ng.mark_dirty();
    h.next = ng.page_id().block();
    e.tail = h.next;
  } else {
    write_record(tg.data(), h.count);
    ++h.count;
  }
  std::memcpy(tg.data(), &h, sizeof h);
  tg.mark_dirty();
  ++e.rows;
  std::memcpy(dg.data() + dir_off, &e, sizeof e);
  dg.mark_dirty();
  size_->fetch_add(1, std::memory_order_relaxed);
}

// remove(): the batch is checked (no id twice), pass 1 finds which ids have rows and in
// which lists (rejecting the batch before any write when one has none), pass 2 compacts
// the lists that hold them (remove_in_list). Calls are serialised by remove_mu_, so the
// rows pass 1 found are still there in pass 2 (add() only appends).
template <class Pool>
inline void BasicIvf<Pool>::remove(const uint32_t* ids, size_t n) {
  if (n == 0) return;
  if (ids == nullptr) throw Error(ErrorCode::kInvalidArgument, "ivf remove: no ids");
  std::vector<uint32_t> wanted(ids, ids + n);  // sorted, for lookups
  std::sort(wanted.begin(), wanted.end());
  if (std::adjacent_find(wanted.begin(), wanted.end()) != wanted.end()) {
    std::vector<uint8_t> seen(n, 0);  // by position in `wanted`
    for (size_t i = 0; i < n; ++i) {
      const size_t at = std::lower_bound(wanted.begin(), wanted.end(), ids[i]) - wanted.begin();
      if (seen[at]++ != 0) {
        throw Error(ErrorCode::kInvalidArgument, "ivf remove: id " + std::to_string(ids[i]) + " (element " +
                                                     std::to_string(i) + ") is given twice");
      }
    }
  }
  std::lock_guard serial(*remove_mu_);
  std::vector<uint8_t> found;
  std::vector<uint32_t> lists;
  find_rows(wanted, &found, &lists);
  for (size_t i = 0; i < n; ++i) {
    const size_t at = std::lower_bound(wanted.begin(), wanted.end(), ids[i]) - wanted.begin();
    if (found[at] == 0) {
      throw Error(ErrorCode::kInvalidArgument, "ivf remove: id " + std::to_string(ids[i]) + " (element " +
                                                   std::to_string(i) + ") is not in the index");
    }
  }
  for (uint32_t l : lists) remove_in_list(l, wanted);
}

// Pass 1 of remove(): walks every list's chain under shared pins (one at a time); sets
// (*found)[i] when wanted[i] (sorted, distinct) has a row, and lists the lists holding one.
template <class Pool>
inline void BasicIvf<Pool>::find_rows(std::span<const uint32_t> wanted, std::vector<uint8_t>* found,
                                      std::vector<uint32_t>* lists) const {
  found->assign(wanted.size(), 0);
  lists->clear();
  for (uint32_t l = 0; l < nlist(); ++l) {
    bool holds = false;
    for_each_id(l, [&](uint32_t id) {
      const auto it = std::lower_bound(wanted.begin(), wanted.end(), id);
      if (it != wanted.end() && *it == id) {
        (*found)[it - wanted.begin()] = 1;
        holds = true;
      }
    });
    if (holds) lists->push_back(l);
  }
}

// Pass 2 of remove() for list l: under the directory page's exclusive latch (held
// throughout: no add or other writer changes the chain meanwhile), each chain page is
// latched exclusively in turn and every record whose id is in `wanted` (sorted) is replaced
// by the page's last record (count - 1). The directory entry's rows and size_ are updated
// after each changed page, so a pool error on a later page leaves them agreeing with the
// pages (the header of calico/index/ivf.h, "Removal").
template <class Pool>
inline void BasicIvf<Pool>::remove_in_list(uint32_t l, std::span<const uint32_t> wanted) {
  const PageId dir_pid(space_, meta_.directory_first + l / meta_.entries_per_page);
  const size_t dir_off = size_t{l % meta_.entries_per_page} * kDirEntryBytes;
  ExclusiveGuard dg = pool_->pin_exclusive(dir_pid);
  ivf_detail::IvfDirEntry e;
  std::memcpy(&e, dg.data() + dir_off, sizeof e);
  const size_t rec = record_bytes(dim());
  auto wanted_id = [&](const std::byte* page, uint32_t r) {
    uint32_t id;
    std::memcpy(&id, page + kPostingHeaderBytes + r * rec, 4);
    return std::binary_search(wanted.begin(), wanted.end(), id);
  };
  ChainBound bound(*this);
  for (uint32_t block = heads_[l].first; block != kNoBlock;) {
    // A chain page is a posting page, never the latched directory page (a self-deadlock).
    if (block < posting_first(meta_)) {
      corrupt(dir_pid, "list " + std::to_string(l) + " starts at block " + std::to_string(block) +
                           ", not a posting page");
    }
    ExclusiveGuard g = pool_->pin_exclusive(PageId(space_, block));
    std::byte* page = g.data();
    ivf_detail::IvfPostingHeader h;
    std::memcpy(&h, page, sizeof h);
    if (h.tag != kPostingTag || h.list != l || h.count > meta_.records_per_page) {
      bad_posting(g.page_id(), h, l, "in the chain of");
    }
    uint32_t matches = 0;
    for (uint32_t r = 0; r < h.count; ++r) matches += wanted_id(page, r) ? 1 : 0;
    if (matches > 0) {
      if (matches > e.rows) {  // checked before the page changes
        corrupt(dir_pid, "directory entry of list " + std::to_string(l) + " counts " + std::to_string(e.rows) +
                             " rows; its chain holds more");
      }
      for (uint32_t r = 0; r < h.count;) {
        if (!wanted_id(page, r)) {
          ++r;
          continue;
        }
        --h.count;  // the last record fills slot r, which is checked again
        if (r != h.count) {
          std::memcpy(page + kPostingHeaderBytes + r * rec, page + kPostingHeaderBytes + size_t{h.count} * rec, rec);
        }
      }
      std::memcpy(page, &h, sizeof h);
      g.mark_dirty();
      e.rows -= matches;
      std::memcpy(dg.data() + dir_off, &e, sizeof e);
      dg.mark_dirty();
      size_->fetch_sub(matches, std::memory_order_relaxed);
    }
    block = bound.next(g.page_id(), h.next);
  }
}

template <class Pool>
inline uint64_t BasicIvf<Pool>::verify() const {
  uint64_t total = 0;
  std::vector<uint32_t> ids;
  for (uint32_t l = 0; l < nlist(); ++l) {
    const ivf_detail::IvfDirEntry e = dir_entry(l);
    if (e.first != heads_[l].first || e.build_pages != heads_[l].build_pages) fail(l, "directory moved");
    uint64_t rows = 0, pages = 0;
    uint32_t block = e.first, last = kNoBlock;
    while (block != kNoBlock) {
      if (++pages > pool_->space_blocks(space_)) fail(l, "chain has a cycle");
      if (pages <= e.build_pages && block != e.first + pages - 1) fail(l, "build pages not contiguous");
      SharedGuard g = pool_->pin_shared(PageId(space_, block));
      ivf_detail::IvfPostingHeader h;
      std::memcpy(&h, g.data(), sizeof h);
      if (h.tag != kPostingTag || h.list != l || h.count > meta_.records_per_page) fail(l, "bad posting page");
      rows += h.count;
      last = block;
      block = h.next;
    }
    if (pages < e.build_pages || last != e.tail || rows != e.rows) fail(l, "chain disagrees with the directory");
    total += rows;
  }
  if (total != size()) throw std::logic_error("ivf: rows " + std::to_string(total) + " != size() " + std::to_string(size()));
  return total;
}

template <class Pool>
inline void BasicIvf<Pool>::list_ids(uint32_t list, std::vector<uint32_t>* ids) const {
  if (list >= nlist()) {
    throw Error(ErrorCode::kInvalidArgument, "ivf list_ids: list " + std::to_string(list) + " >= nlist " +
                                                 std::to_string(nlist()));
  }
  ids->clear();
  for_each_id(list, [&](uint32_t id) { ids->push_back(id); });
}

// Calls fn(id) for every record of list l in stored order, walking its chain under shared
// pins, one at a time (fn runs with the page pinned: it must not pin pages of this index).
template <class Pool>
template <class Fn>
inline void BasicIvf<Pool>::for_each_id(uint32_t l, Fn&& fn) const {
  const size_t rec = record_bytes(dim());
  ChainBound bound(*this);
  for (uint32_t block = heads_[l].first; block != kNoBlock;) {
    SharedGuard g = pool_->pin_shared(PageId(space_, block));
    ivf_detail::IvfPostingHeader h;
    std::memcpy(&h, g.data(), sizeof h);
    if (h.tag != kPostingTag || h.list != l || h.count > meta_.records_per_page) {
      bad_posting(g.page_id(), h, l, "in the chain of");
    }
    for (uint32_t r = 0; r < h.count; ++r) {
      uint32_t id;
      std::memcpy(&id, g.data() + kPostingHeaderBytes + r * rec, 4);
      fn(id);
    }
    block = bound.next(g.page_id(), h.next);
  }
}

template <class Pool>
inline uint32_t BasicIvf<Pool>::dim() const { return meta_.dim; }

template <class Pool>
inline uint32_t BasicIvf<Pool>::nlist() const { return meta_.nlist; }

template <class Pool>
inline vector::Metric BasicIvf<Pool>::metric() const { return static_cast<vector::Metric>(meta_.metric); }

template <class Pool>
inline uint64_t BasicIvf<Pool>::size() const { return size_->load(std::memory_order_relaxed); }

template <class Pool>
inline uint32_t BasicIvf<Pool>::records_per_page() const { return meta_.records_per_page; }

template <class Pool>
inline SpaceId BasicIvf<Pool>::space() const { return space_; }

template <class Pool>
inline IvfParams BasicIvf<Pool>::params() const {
  IvfParams p;
  p.dim = meta_.dim;
  p.metric = metric();
  p.nlist = meta_.nlist;
  p.train_iters = meta_.train_iters;
  p.train_sample = meta_.train_sample;
  p.seed = meta_.seed;
  return p;
}

template <class Pool>
inline const float* BasicIvf<Pool>::centroid(uint32_t l) const { return centroids_.data() + size_t{l} * dim(); }

template <class Pool>
inline uint32_t BasicIvf<Pool>::prefetch_window() const {
  return std::clamp<uint32_t>(pool_->num_frames() / 8, 1, kMaxPrefetchWindow);
}

template <class Pool>
inline uint32_t BasicIvf<Pool>::first_page_prefetch() const {
  return std::clamp<uint32_t>(pool_->num_frames() / 4, 1, kMaxFirstPagePrefetch);
}

template <class Pool>
inline BasicIvf<Pool>::BasicIvf(Pool& pool, SpaceId space, const ivf_detail::IvfMeta& meta,
                                std::vector<float> centroids, std::vector<ListHead> heads, uint64_t rows)
    : pool_(&pool),
      space_(space),
      meta_(meta),
      centroids_(std::move(centroids)),
      heads_(std::move(heads)),
      size_(std::make_unique<std::atomic<uint64_t>>(rows)),
      remove_mu_(std::make_unique<std::mutex>()),
      dist_(vector::distance_kernel(static_cast<vector::Metric>(meta.metric))),
      many_(vector::distance_many_kernel(static_cast<vector::Metric>(meta.metric))),
      ranker_(centroids_.data(), meta_.nlist, meta_.dim, static_cast<vector::Metric>(meta.metric)) {
  CALICO_CHECK(centroids_.size() == size_t{meta_.nlist} * meta_.dim && heads_.size() == meta_.nlist);
}

template <class Pool>
inline void BasicIvf<Pool>::check_build_args(const IvfParams& p, size_t usable, const float* data, uint64_t n) {
  auto bad = [](const std::string& what) { return Error(ErrorCode::kInvalidArgument, "ivf build: " + what); };
  if (p.dim == 0 || p.dim > max_dim(usable)) {
    throw bad("dim " + std::to_string(p.dim) + " not in 1.." + std::to_string(max_dim(usable)) + " for this page size");
  }
  if (static_cast<uint32_t>(p.metric) > 2) throw bad("unknown metric");
  if (n == 0 || n > UINT32_MAX - 1 || data == nullptr) throw bad("need 1.." + std::to_string(UINT32_MAX - 1) + " rows");
  if (p.nlist == 0 || p.nlist > n) {
    throw bad("nlist " + std::to_string(p.nlist) + " not in 1.." + std::to_string(n) + " (the rows)");
  }
  for (uint64_t i = 0; i < n; ++i) {
    const float* v = data + i * p.dim;
    if (!vector::all_finite(v, p.dim)) throw bad("row " + std::to_string(i) + " is not finite");
    if (p.metric == vector::Metric::kCosine && std::all_of(v, v + p.dim, [](float x) { return x == 0; })) {
      throw bad("row " + std::to_string(i) + " is zero (cosine)");
    }
  }
}

// Normalises dim floats stored (unaligned) at p.
template <class Pool>
inline void BasicIvf<Pool>::normalize_in_page(std::byte* p, uint32_t dim) {
  std::vector<float> v(dim);
  std::memcpy(v.data(), p, size_t{dim} * 4);
  CALICO_CHECK(vector::normalize(v.data(), dim));  // zero rows were rejected
  std::memcpy(p, v.data(), size_t{dim} * 4);
}

// Checks a query or a new row; returns it, or its normalised copy in *buf (kCosine).
template <class Pool>
inline const float* BasicIvf<Pool>::prepare(const float* v, std::vector<float>* buf, const char* what) const {
  if (v == nullptr || !vector::all_finite(v, dim())) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": the vector is missing or not finite");
  }
  if (metric() != vector::Metric::kCosine) return v;
  buf->assign(v, v + dim());
  if (!vector::normalize(buf->data(), dim())) {
    throw Error(ErrorCode::kInvalidArgument, std::string(what) + ": a zero vector has no cosine distance");
  }
  return buf->data();
}

template <class Pool>
inline void BasicIvf<Pool>::check_search_options(const IvfSearchOptions& opt) {
  if (opt.k == 0 || opt.nprobe == 0) {
    throw Error(ErrorCode::kInvalidArgument, "ivf search: k (" + std::to_string(opt.k) + ") and nprobe (" +
                                                 std::to_string(opt.nprobe) + ") must be at least 1");
  }
}

// Scans lists in the ranked order into *out: prefetch step (1), then each list's chain
// (scan_list), then the heap sorted. The first nprobe lists are scanned always; the rest
// of `ranked` (a filtered search ranks every list; unfiltered, ranked has nprobe entries)
// only while the heap holds fewer than k rows.
template <class Pool>
inline void BasicIvf<Pool>::scan_probes(const float* query, std::span<const vector::Neighbor> ranked,
                                        uint32_t nprobe, const IvfSearchOptions& opt, IvfSearchState& st,
                                        std::vector<vector::Neighbor>* out, const vector::IdFilter* filter) const {
  CALICO_CHECK(nprobe <= ranked.size() && (filter != nullptr || nprobe == ranked.size()));
  if (opt.prefetch) {  // (1) the first page of the nearest probed lists
    st.group_.clear();
    for (const vector::Neighbor& p : ranked.first(std::min<size_t>(nprobe, first_page_prefetch()))) {
      st.group_.push_back(PageId(space_, heads_[p.id].first));
    }
    pool_->prefetch_group(st.group_);
  }
  st.ids_.resize(meta_.records_per_page);
  st.dists_.resize(meta_.records_per_page);
  st.heap_.clear();
  Lookahead ahead;
  for (size_t i = 0; i < ranked.size() && (i < nprobe || st.heap_.size() < opt.k); ++i) {
    // Past nprobe the next list is scanned only if the heap is still short: the lookahead
    // reads it anyway (a hint; an unused optimistic read costs nothing but the read).
    const uint32_t after = i + 1 < ranked.size() ? heads_[ranked[i + 1].id].first : kNoBlock;
    scan_list(ranked[i].id, after, query, opt, st, ahead, filter);
  }
  std::sort_heap(st.heap_.begin(), st.heap_.end());
  out->assign(st.heap_.begin(), st.heap_.end());
}

template <class Pool>
inline void BasicIvf<Pool>::look_ahead(uint32_t block, Lookahead& ahead) const {
  ahead.block = block;
  if (block == kNoBlock) return;
  ahead.read = pool_->read_optimistic(PageId(space_, block));
  // Every line of the page is prefetched, spread over the scoring of the current page
  // (ivf_racy_score_posting). At 4 KB (64 lines), measured on a quiet machine
  // (docs/results/vector_ivf.md): 1.10-1.34x the QPS of 8 lines at 1 thread and 1.07-1.28x at 2; 16
  // or 32 lines 0.68-0.93x of 64. Larger pages are one frame, contiguous in memory, but
  // the hardware prefetcher does not cross 4 KB boundaries, so they get every line too.
}

// Scans list l's chain into st.heap_, with prefetch step (2) of the header; `after` is the
// first block of the next probed list (kNoBlock: none), for the lookahead.
template <class Pool>
inline void BasicIvf<Pool>::scan_list(uint32_t l, uint32_t after, const float* query, const IvfSearchOptions& opt,
                                      IvfSearchState& st, Lookahead& ahead, const vector::IdFilter* filter) const {
  const ListHead head = heads_[l];
  const uint32_t window = prefetch_window();
  uint32_t prefetched = 1;  // pages [0, prefetched) of the build-time run were prefetched
  uint64_t index = 0;
  ChainBound bound(*this);
  for (uint32_t block = head.first; block != kNoBlock; ++index) {
    if (opt.prefetch && prefetched < head.build_pages && prefetched <= index + window / 2) {
      const uint64_t end = std::min<uint64_t>(head.build_pages, index + 1 + window);
      st.group_.clear();
      for (uint64_t i = std::max<uint64_t>(prefetched, index + 1); i < end; ++i) {
        st.group_.push_back(PageId(space_, static_cast<BlockId>(head.first + i)));
      }
      if (!st.group_.empty()) pool_->prefetch_group(st.group_);
      prefetched = static_cast<uint32_t>(std::max<uint64_t>(end, prefetched));
    }
    const PageId pid(space_, block);
    const OptimisticRead* pre = nullptr;
    OptimisticRead here;
    if (opt.prefetch) {
      if (ahead.block == block) {
        here = ahead.read;
        pre = &here;
      }
      look_ahead(index + 1 < head.build_pages ? static_cast<uint32_t>(head.first + index + 1) : after, ahead);
    }
    block = bound.next(pid, scan_page(pid, l, query, opt, st, pre, ahead.block == kNoBlock ? nullptr : ahead.read.data,
                                      filter));
  }
}

// Scores one posting page of list l into st.heap_; returns its next block. pre, when not
// null, is an optimistic read of pid already started (the lookahead): the first attempt.
template <class Pool>
inline uint32_t BasicIvf<Pool>::scan_page(PageId pid, uint32_t l, const float* query, const IvfSearchOptions& opt,
                                          IvfSearchState& st, const OptimisticRead* pre, const std::byte* next_frame,
                                          const vector::IdFilter* filter) const {
  ivf_detail::IvfPostingHeader h;
  if (opt.optimistic) {
    for (int attempt = 0; attempt < Pool::kOptimisticAttempts; ++attempt) {
      OptimisticRead r = attempt == 0 && pre != nullptr ? *pre : pool_->read_optimistic(pid);
      const bool ok = ivf_detail::ivf_racy_score_posting(r.data, meta_.records_per_page, dim(), many_, query, &h,
                                                         st.ids_.data(), st.dists_.data(), next_frame,
                                                         next_frame == nullptr ? 0 : meta_.page_size);
      if (Pool::validate(r)) {
        if (!ok || h.list != l) bad_posting(pid, h, l, "in the chain of");  // validated bytes
        offer(st, opt.k, h.count, filter);
        return h.next;
      }
    }
  }
  SharedGuard g = pool_->pin_shared(pid);  // pinned reads, or repeated conflicts
  if (next_frame != nullptr) {
    for (size_t off = 0; off < meta_.page_size; off += 64) __builtin_prefetch(next_frame + off);
  }
  std::memcpy(&h, g.data(), sizeof h);
  if (h.tag != kPostingTag || h.list != l || h.count > meta_.records_per_page) bad_posting(pid, h, l, "in the chain of");
  const std::byte* records = g.data() + kPostingHeaderBytes;
  const size_t words = record_bytes(dim()) / 4;
  for (uint32_t r = 0; r < h.count; ++r) std::memcpy(&st.ids_[r], records + r * words * 4, 4);
  many_(query, reinterpret_cast<const float*>(records + 4), words, h.count, dim(), st.dists_.data());
  offer(st, opt.k, h.count, filter);
  return h.next;
}

// Offers a scored page (st.ids_, st.dists_ [0, count)) to the heap: every record, or
// without a filter's allowed ones (a loop of its own, so the unfiltered one is unchanged).
template <class Pool>
inline void BasicIvf<Pool>::offer(IvfSearchState& st, uint32_t k, uint32_t count, const vector::IdFilter* filter) {
  if (filter == nullptr) {
    ivf_detail::push_scored(st.heap_, k, st.ids_.data(), st.dists_.data(), count);
  } else {
    ivf_detail::push_scored_allowed(st.heap_, k, st.ids_.data(), st.dists_.data(), count, *filter);
  }
}

template <class Pool>
inline ivf_detail::IvfDirEntry BasicIvf<Pool>::dir_entry(uint32_t l) const {
  SharedGuard g = pool_->pin_shared(PageId(space_, meta_.directory_first + l / meta_.entries_per_page));
  ivf_detail::IvfDirEntry e;
  std::memcpy(&e, g.data() + size_t{l % meta_.entries_per_page} * kDirEntryBytes, sizeof e);
  return e;
}

// The first block after the centroids and the directory: posting pages start there.
template <class Pool>
inline uint64_t BasicIvf<Pool>::posting_first(const ivf_detail::IvfMeta& m) {
  return std::max<uint64_t>(uint64_t{m.centroid_first} + m.centroid_pages,
                            uint64_t{m.directory_first} + m.directory_pages);
}

template <class Pool>
inline void BasicIvf<Pool>::corrupt(PageId pid, const std::string& what) { corrupt_page("ivf", what, pid); }

template <class Pool>
inline void BasicIvf<Pool>::bad_posting(PageId pid, const ivf_detail::IvfPostingHeader& h, uint32_t list,
                                        const char* role) const {
  corrupt(pid, "page (tag " + std::to_string(h.tag) + ", list " + std::to_string(h.list) + ", count " +
                   std::to_string(h.count) + ", next " + std::to_string(h.next) + ") is not a posting page " + role +
                   " list " + std::to_string(list) + " (at most " + std::to_string(meta_.records_per_page) +
                   " records)");
}

template <class Pool>
inline void BasicIvf<Pool>::fail(uint32_t list, const char* what) {
  throw std::logic_error("ivf list " + std::to_string(list) + ": " + what);
}

}  // namespace calico::index
