// The member definitions of BasicCodedHnsw (include/calico/index/coded_hnsw.h); the page
// format is in coded_hnsw_layout.h. Entry points in file order: the search state, create /
// open (with the code load), growth, add (claim, write, link, back links), search (beam on
// codes, exact distances from the node rows it reads), check_structure.
#pragma once

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <thread>
#include <utility>

#include "calico/error.h"
#include "calico/index/coded_hnsw.h"
#include "index/corrupt_page.h"
#include "index/hnsw/hnsw_layout.h"  // hnsw_detail::hnsw_racy_copy: the optimistic copy
#include "io/checksum.h"
#include "vector/model_blob.h"
#include "vector/pq.h"
#include "vector/rabitq.h"

namespace calico::index {

namespace coded_detail {

inline constexpr std::string_view kKind = "coded hnsw";

[[noreturn]] inline void invalid(const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "coded hnsw: " + what);
}

// splitmix64's finaliser: the entry sample's hash of (seed, id) and the uuid.
inline uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Admission predicates take a slot and its state as read once by the caller: two loads of a
// state may straddle a consolidate() that frees the slot (removed, then absent), and a test
// of each against a different load would pass a node removed before the search began.
// Every coded slot is admissible (no tombstone, no filter): the plain path costs nothing more.
struct AdmitAll {
  bool operator()(uint32_t, uint8_t) const { return true; }
};

// Starts a new epoch of the visited and expanded marks over cap slots.
inline void begin_epoch(std::vector<uint16_t>& visited, std::vector<uint16_t>& expanded, uint16_t& epoch,
                        uint32_t cap) {
  if (visited.size() < cap) visited.resize(cap, 0);
  if (expanded.size() < cap) expanded.resize(cap, 0);
  if (++epoch == 0) {
    std::fill(visited.begin(), visited.end(), 0);
    std::fill(expanded.begin(), expanded.end(), 0);
    epoch = 1;
  }
}

// Resident bytes of the codes of `capacity` slots: a code and a state byte per slot, the
// entry sample (about capacity / entry_rate slots, a quarter more for the hash's spread: an id
// and a copy of the code each, and its cells) and the model.
inline uint64_t resident_codes_bytes(uint64_t capacity, uint64_t code_bytes, uint32_t entry_rate, uint32_t dim,
                                     uint64_t model_bytes) {
  const uint64_t sample = capacity / entry_rate + capacity / (4 * uint64_t{entry_rate}) + 16;
  return capacity * (code_bytes + 1) + sample * (code_bytes + 4) + EntryCells::bytes_for(sample, dim) + model_bytes;
}

// Whether a candidate at distance to_base from a node is pruned by a kept neighbour at
// distance to_kept from it: alpha * to_kept < to_base. alpha > 1 keeps some longer edges, so
// searches take fewer hops. On squared L2; cosine distances (1 - cos of unit vectors,
// vector/distance.h) are half the squared L2 of unit vectors, so the same test holds; inner
// products are no metric, so alpha does not apply to them.
inline bool pruned_by(vector::Metric metric, float alpha, float to_kept, float to_base) {
  if (metric == vector::Metric::kL2 || metric == vector::Metric::kCosine) return alpha * to_kept < to_base;
  return to_kept < to_base;
}

}  // namespace coded_detail

template <class Pool>
CodedHnswSearchState::CodedHnswSearchState(const BasicCodedHnsw<Pool>& index)
    : owner_(index.shared_.get()), query_state_(index.model_->new_query()), query_(index.dim()) {}

// --- pages -----------------------------------------------------------------------------------

template <class Pool>
inline CodedPageHeader BasicCodedHnsw<Pool>::header_of(const std::byte* page) {
  CodedPageHeader h;
  std::memcpy(&h, page, sizeof h);
  return h;
}

template <class Pool>
inline void BasicCodedHnsw<Pool>::write_header(std::byte* page, CodedPageHeader::Kind kind, uint64_t uuid,
                                               uint32_t block) {
  const CodedPageHeader h{CodedPageHeader::kMagic, kind, CodedPageHeader::kFormat, uuid, block, 0};
  std::memcpy(page, &h, sizeof h);
}

// Pre: page is pinned, latched or a validated copy. Errors: kCorruptPage naming pid.
template <class Pool>
inline void BasicCodedHnsw<Pool>::check_header(const std::byte* page, PageId pid, CodedPageHeader::Kind kind) const {
  const CodedPageHeader h = header_of(page);
  if (h.magic != CodedPageHeader::kMagic || h.format != CodedPageHeader::kFormat) {
    corrupt_page(coded_detail::kKind, "page header (magic or format)", pid);
  }
  if (h.kind != kind) corrupt_page(coded_detail::kKind, "page kind " + std::to_string(h.kind), pid);
  if (h.uuid != uuid_) corrupt_page(coded_detail::kKind, "page of another index (uuid)", pid);
  if (h.block != pid.block()) corrupt_page(coded_detail::kKind, "page header naming block " + std::to_string(h.block), pid);
}

template <class Pool>
inline uint64_t BasicCodedHnsw<Pool>::codes_bytes(uint64_t capacity) const {
  return coded_detail::resident_codes_bytes(capacity, layout_.code_bytes, params_.entry_rate, params_.dim, model_bytes_);
}

template <class Pool>
inline void BasicCodedHnsw<Pool>::check_budget(Pool& pool, uint64_t budget, uint64_t codes, const char* what,
                                               std::string_view hint) {
  // The pool's frames and its translation as it stands (memory() reports both).
  const uint64_t frames = uint64_t{pool.num_frames()} * pool.page_size() + pool.stats().translation_private_bytes;
  if (budget < codes) {
    coded_detail::invalid(std::string(what) + ": budget_bytes " + std::to_string(budget) +
                          " is below the codes' size " + std::to_string(codes) +
                          " (capacity x (code + state), the entry sample, model)" + std::string(hint));
  }
  if (budget - codes < frames) {
    coded_detail::invalid(std::string(what) + ": budget_bytes " + std::to_string(budget) + " is below the codes (" +
                          std::to_string(codes) + ") plus the pool's frames and translation (" + std::to_string(frames) +
                          ")" + std::string(hint));
  }
}

// --- create / open -----------------------------------------------------------------------------

template <class Pool>
inline BasicCodedHnsw<Pool>::BasicCodedHnsw(Pool& pool, std::string name, const CodedHnswParams& p,
                                            std::unique_ptr<vector::Quantizer> model, uint64_t uuid,
                                            const CodedLayout& l, uint64_t model_bytes)
    : pool_(&pool),
      name_(std::move(name)),
      codes_space_(pool.open_space(name_ + ".codes")),
      graph_space_(pool.open_space(name_ + ".graph")),
      params_(p),
      model_(std::move(model)),
      uuid_(uuid),
      layout_(l),
      model_bytes_(model_bytes),
      dist_(vector::distance_kernel(p.metric == vector::Metric::kCosine ? vector::Metric::kInnerProduct : p.metric)),
      shared_(std::make_unique<Shared>()) {}

template <class Pool>
inline BasicCodedHnsw<Pool> BasicCodedHnsw<Pool>::create(Pool& pool, std::string_view name,
                                                         const CodedHnswParams& params, const float* sample,
                                                         uint64_t n, uint32_t capacity, uint64_t budget_bytes) {
  using coded_detail::invalid;
  if (name.empty() || name.size() > kMaxNameBytes) invalid("name: 1 to 56 characters");
  if (params.dim == 0) invalid("dim is 0");
  if (params.pq_bytes == 0 && params.bits != 1 && params.bits != 2 && params.bits != 4) invalid("bits must be 1, 2 or 4");
  if (params.pq_bytes > params.dim) invalid("pq_bytes must be at most dim (each byte codes one or more dimensions)");
  if (params.M < 2 || params.M > HnswLayout::kMaxM) invalid("M must be in [2, 256]");
  if (static_cast<uint32_t>(params.metric) > static_cast<uint32_t>(vector::Metric::kCosine)) invalid("metric out of range");
  if (capacity == 0 || capacity > kMaxCapacity) invalid("capacity must be in [1, 2^32 - 2]");
  if (params.entry_rate == 0) invalid("entry_rate is 0");
  if (!(params.alpha >= 1.0f && params.alpha <= 2.0f)) invalid("alpha must be in [1, 2]");
  if (sample == nullptr || n == 0) invalid("sample is empty (the code model trains on it)");
  CodedHnswParams p = params;
  p.ef_construction = std::max(p.ef_construction, p.M);
  std::unique_ptr<vector::Quantizer> model;
  if (p.pq_bytes > 0) {
    if (n < 256) invalid("sample: PQ codes (pq_bytes) train 256 centroids per subspace, on 256 rows or more");
    vector::PqParams qp;
    qp.m = p.pq_bytes;
    qp.bits = 8;
    qp.metric = p.metric;
    qp.seed = p.seed;
    p.bits = 0;  // CodedMeta::bits: 0 for PQ
    model = std::make_unique<vector::PqQuantizer>(vector::PqQuantizer::train(sample, n, p.dim, qp));
  } else {
    vector::RabitqParams rp;
    rp.bits = p.bits;
    rp.metric = p.metric;
    rp.seed = p.seed;
    rp.clusters = p.clusters;
    model = std::make_unique<vector::RabitqQuantizer>(vector::RabitqQuantizer::train(sample, n, p.dim, rp));
  }
  const std::vector<uint8_t> blob = model->serialize();
  const CodedLayout l = CodedLayout::make(static_cast<uint32_t>(pool.usable_page_size()), p.dim, p.M,
                                          static_cast<uint32_t>(model->code_bytes()),
                                          static_cast<uint32_t>(blob.size()));
  if (!l.fits()) invalid("dim / M: a node row (links and vector) or a code does not fit a page");
  check_budget(pool, budget_bytes, coded_detail::resident_codes_bytes(capacity, l.code_bytes, p.entry_rate, p.dim, blob.size()),
               "create",
               p.pq_bytes > 0 ? "; PQ codes of fewer bytes (pq_bytes) are smaller"
               : p.bits > 1   ? "; codes of fewer bits per dimension (bits 1) are smaller"
                              : "");

  std::random_device rd;
  const uint64_t uuid = coded_detail::mix((uint64_t{rd()} << 32 | rd()) ^
                                          static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count()));
  const std::string base(name);
  std::vector<SpaceId> made;
  try {
    for (const char* suffix : {".codes", ".graph"}) made.push_back(pool.create_space(base + suffix));
    {  // <name>.codes: metadata, then the model blob
      ExclusiveGuard g = pool.allocate(made[0]);
      write_header(g.data(), CodedPageHeader::kMeta, uuid, 0);
      CodedMeta m{};
      m.page_size = static_cast<uint32_t>(pool.page_size());
      m.dim = p.dim;
      m.metric = static_cast<uint32_t>(p.metric);
      m.bits = p.bits;
      m.M = p.M;
      m.ef_construction = p.ef_construction;
      m.code_bytes = l.code_bytes;
      m.model_bytes = static_cast<uint32_t>(blob.size());
      m.model_pages = l.model_pages;
      m.per_code_page = l.per_code_page;
      m.per_node_page = l.per_node_page;
      m.alpha = p.alpha;
      m.seed = p.seed;
      m.capacity = 0;
      m.size = 0;
      m.entry = CodedMeta::kNone;
      m.entry_rate = p.entry_rate;
      std::memcpy(g.data() + CodedLayout::kHeader, &m, sizeof m);
      g.mark_dirty();
    }
    const size_t room = l.usable - CodedLayout::kHeader;
    for (uint32_t b = 0; b < l.model_pages; ++b) {
      ExclusiveGuard g = pool.allocate(made[0]);
      write_header(g.data(), CodedPageHeader::kModel, uuid, b + 1);
      const size_t at = size_t{b} * room;
      std::memcpy(g.data() + CodedLayout::kHeader, blob.data() + at, std::min(room, blob.size() - at));
      g.mark_dirty();
    }
    {
      ExclusiveGuard g = pool.allocate(made[1]);
      write_header(g.data(), CodedPageHeader::kGraphHead, uuid, 0);
      g.mark_dirty();
    }
  } catch (...) {
    for (SpaceId s : made) pool.drop_space(s);
    throw;
  }
  BasicCodedHnsw index(pool, base, p, std::move(model), uuid, l, blob.size());
  index.shared_->budget_bytes = budget_bytes;
  index.shared_->entry.store(CodedMeta::kNone, std::memory_order_relaxed);
  index.reserve(capacity);
  return index;
}

template <class Pool>
inline BasicCodedHnsw<Pool> BasicCodedHnsw<Pool>::open(Pool& pool, std::string_view name, uint64_t budget_bytes) {
  const std::string base(name);
  const SpaceId cs = pool.open_space(base + ".codes");
  pool.open_space(base + ".graph");
  const PageId meta_pid(cs, 0);
  CodedMeta m;
  uint64_t uuid;
  {
    SharedGuard g = pool.pin_shared(meta_pid);
    const CodedPageHeader h = header_of(g.data());
    if (h.magic == CodedPageHeader::kMagic && (h.format == 1 || h.format == 2)) {
      corrupt_page(coded_detail::kKind,
                   "format " + std::to_string(h.format) +
                       " (links and vectors in separate spaces, before the node rows of format 3): build it again",
                   meta_pid);
    }
    if (h.magic != CodedPageHeader::kMagic || h.format != CodedPageHeader::kFormat || h.kind != CodedPageHeader::kMeta ||
        h.block != 0) {
      corrupt_page(coded_detail::kKind, "metadata page header", meta_pid);
    }
    uuid = h.uuid;
    std::memcpy(&m, g.data() + CodedLayout::kHeader, sizeof m);
  }
  if (m.page_size != pool.page_size()) corrupt_page(coded_detail::kKind, "metadata page size", meta_pid);
  if (m.dim == 0 || m.metric > static_cast<uint32_t>(vector::Metric::kCosine) || m.M < 2 || m.M > HnswLayout::kMaxM ||
      m.model_bytes == 0 || m.model_bytes > vector::kMaxBlobPayloadBytes || m.capacity > kMaxCapacity ||
      m.entry_rate == 0 || !(m.alpha >= 1.0f && m.alpha <= 2.0f)) {
    corrupt_page(coded_detail::kKind, "metadata fields", meta_pid);
  }
  const uint32_t usable = static_cast<uint32_t>(pool.usable_page_size());
  const size_t room = usable - CodedLayout::kHeader;
  const uint64_t model_pages = (uint64_t{m.model_bytes} + room - 1) / room;
  if (model_pages != m.model_pages || pool.space_blocks(cs) < 1 + model_pages) {
    corrupt_page(coded_detail::kKind, "metadata model pages", meta_pid);
  }
  std::vector<uint8_t> blob(m.model_bytes);
  for (uint32_t b = 0; b < m.model_pages; ++b) {
    const PageId pid(cs, b + 1);
    SharedGuard g = pool.pin_shared(pid);
    const CodedPageHeader h = header_of(g.data());
    if (h.magic != CodedPageHeader::kMagic || h.kind != CodedPageHeader::kModel || h.uuid != uuid || h.block != b + 1) {
      corrupt_page(coded_detail::kKind, "model page header", pid);
    }
    const size_t at = size_t{b} * room;
    std::memcpy(blob.data() + at, g.data() + CodedLayout::kHeader, std::min(room, blob.size() - at));
  }
  std::unique_ptr<vector::Quantizer> model = vector::load_quantizer(blob.data(), blob.size());
  const CodedLayout l = CodedLayout::make(usable, m.dim, m.M, m.code_bytes, m.model_bytes);
  const bool pq = model->name().rfind("pq", 0) == 0;
  if (model->dim() != m.dim || model->code_bytes() != m.code_bytes || static_cast<uint32_t>(model->metric()) != m.metric ||
      pq != (m.bits == 0) ||
      !l.fits() || l.per_code_page != m.per_code_page || l.per_node_page != m.per_node_page) {
    corrupt_page(coded_detail::kKind, "metadata disagrees with the model or the layout", meta_pid);
  }
  if (m.entry != CodedMeta::kNone && m.entry >= m.capacity) corrupt_page(coded_detail::kKind, "metadata entry", meta_pid);
  if (m.size > m.capacity) corrupt_page(coded_detail::kKind, "metadata size", meta_pid);
  check_budget(pool, budget_bytes,
               coded_detail::resident_codes_bytes(m.capacity, l.code_bytes, m.entry_rate, m.dim, m.model_bytes), "open");
  CodedHnswParams p;
  p.dim = m.dim;
  p.metric = static_cast<vector::Metric>(m.metric);
  p.bits = m.bits;
  p.pq_bytes = pq ? m.code_bytes : 0;
  p.M = m.M;
  p.ef_construction = m.ef_construction;
  p.seed = m.seed;
  p.entry_rate = m.entry_rate;
  p.alpha = m.alpha;
  BasicCodedHnsw index(pool, base, p, std::move(model), uuid, l, m.model_bytes);
  index.shared_->budget_bytes = budget_bytes;
  index.shared_->entry.store(m.entry, std::memory_order_relaxed);
  index.shared_->size.store(m.size, std::memory_order_relaxed);
  index.load_codes(m.capacity);
  {
    CodedHnswSearchState st(index);
    const auto lock = index.lock_codes();
    index.build_cells(st);
  }
  return index;
}

// open(): the space ends, the graph's head page, and every code page (header and CRC) into
// the resident array; slots with a presence bit are complete.
template <class Pool>
inline void BasicCodedHnsw<Pool>::load_codes(uint32_t capacity) {
  const PageId meta_pid(codes_space_, 0);
  const uint64_t code_pages = (uint64_t{capacity} + layout_.per_code_page - 1) / layout_.per_code_page;
  if (pool_->space_blocks(codes_space_) < 1 + layout_.model_pages + code_pages ||
      pool_->space_blocks(graph_space_) < 1 + (uint64_t{capacity} + layout_.per_node_page - 1) / layout_.per_node_page) {
    corrupt_page(coded_detail::kKind, "metadata capacity past a space's end", meta_pid);
  }
  {
    SharedGuard g = pool_->pin_shared(PageId(graph_space_, 0));
    check_header(g.data(), g.page_id(), CodedPageHeader::kGraphHead);
  }
  Shared& sh = *shared_;
  sh.codes.assign(size_t{capacity} * layout_.code_bytes, 0);
  sh.states = std::make_unique<std::atomic<uint8_t>[]>(capacity);
  uint32_t removed_count = 0;
  for (uint64_t c = 0; c < code_pages; ++c) {
    const PageId pid(codes_space_, static_cast<BlockId>(1 + layout_.model_pages + c));
    SharedGuard g = pool_->pin_shared(pid);
    check_header(g.data(), pid, CodedPageHeader::kCodes);
    const std::byte* payload = g.data() + CodedLayout::kHeader;
    if (io::crc32c(payload, layout_.code_payload_bytes()) != header_of(g.data()).crc) {
      corrupt_page(coded_detail::kKind, "code page CRC (its codes are not used)", pid);
    }
    for (uint32_t i = 0; i < layout_.per_code_page; ++i) {
      const uint64_t s = c * layout_.per_code_page + i;
      if (s >= capacity) break;
      uint64_t present, removed;
      std::memcpy(&present, payload + 8 * (i / 64), 8);
      std::memcpy(&removed, payload + 8 * layout_.bitmap_words + 8 * (i / 64), 8);
      const bool is_present = (present >> (i % 64) & 1) != 0, is_removed = (removed >> (i % 64) & 1) != 0;
      if (is_removed && !is_present) corrupt_page(coded_detail::kKind, "removed bit of an absent slot", pid);
      if (!is_present) continue;
      std::memcpy(sh.codes.data() + s * layout_.code_bytes, g.data() + layout_.code_offset(static_cast<uint32_t>(s)),
                  layout_.code_bytes);
      sh.states[s].store(is_removed ? kRemoved : kComplete, std::memory_order_relaxed);
      if (is_removed) {
        ++removed_count;
      } else if (sampled(static_cast<uint32_t>(s))) {
        sh.entries.push_back(static_cast<uint32_t>(s));
        const uint8_t* code = sh.codes.data() + s * layout_.code_bytes;
        sh.entry_codes.insert(sh.entry_codes.end(), code, code + layout_.code_bytes);
      }
    }
  }
  const uint32_t entry = sh.entry.load(std::memory_order_relaxed);
  // The entry may be removed (it moves at the next consolidate()), never absent.
  if (entry != CodedMeta::kNone && sh.states[entry].load(std::memory_order_relaxed) < kCoded) {
    corrupt_page(coded_detail::kKind, "metadata entry names an absent slot", meta_pid);
  }
  if (removed_count > sh.size.load(std::memory_order_relaxed)) {
    corrupt_page(coded_detail::kKind, "metadata size below the removed slots", meta_pid);
  }
  sh.removed.store(removed_count, std::memory_order_relaxed);
  sh.capacity.store(capacity, std::memory_order_release);
}

template <class Pool>
inline bool BasicCodedHnsw<Pool>::sampled(uint32_t id) const {
  return coded_detail::mix(params_.seed ^ (uint64_t{id} * 0x9E3779B97F4A7C15ull)) % params_.entry_rate == 0;
}

// --- growth ------------------------------------------------------------------------------------

template <class Pool>
inline void BasicCodedHnsw<Pool>::reserve(uint64_t n) {
  if (n <= capacity()) return;
  if (n > kMaxCapacity) coded_detail::invalid("id / capacity " + std::to_string(n) + " past the maximum");
  std::lock_guard grow(shared_->grow_mutex);
  const uint64_t cap = capacity();
  if (n <= cap) return;
  uint64_t target = std::min<uint64_t>(std::max<uint64_t>(n, 2 * cap), kMaxCapacity);
  // Codes and states, plus a translation entry (8 bytes) for each page the growth adds.
  auto need = [&](uint64_t c) {
    const uint64_t pages = c / layout_.per_code_page + c / layout_.per_node_page + 2;
    return codes_bytes(c) + 8 * pages;
  };
  const uint64_t frames = uint64_t{pool_->num_frames()} * pool_->page_size() + pool_->stats().translation_private_bytes;
  if (need(target) + frames > shared_->budget_bytes) target = n;  // no doubling past the budget
  check_budget(*pool_, shared_->budget_bytes, need(target), "growth");
  grow_pages(static_cast<uint32_t>(target));
}

// Pre: grow_mutex held, new_capacity > capacity(). Pages first (a failure leaves them for the
// next growth to take over), then the resident arrays (codes_mutex exclusive), then the
// metadata, then the published capacity (release).
template <class Pool>
inline void BasicCodedHnsw<Pool>::grow_pages(uint32_t new_capacity) {
  const CodedLayout& l = layout_;
  auto extend = [&](SpaceId space, uint64_t blocks, CodedPageHeader::Kind kind) {
    for (uint64_t b = pool_->space_blocks(space); b < blocks; ++b) {
      ExclusiveGuard g = pool_->allocate(space);
      write_header(g.data(), kind, uuid_, g.page_id().block());
      if (kind == CodedPageHeader::kCodes) {
        CodedPageHeader h = header_of(g.data());
        h.crc = io::crc32c(g.data() + CodedLayout::kHeader, l.code_payload_bytes());
        std::memcpy(g.data(), &h, sizeof h);
      }
      g.mark_dirty();
    }
  };
  const uint64_t c = new_capacity;
  extend(codes_space_, 1 + l.model_pages + (c + l.per_code_page - 1) / l.per_code_page, CodedPageHeader::kCodes);
  extend(graph_space_, 1 + (c + l.per_node_page - 1) / l.per_node_page, CodedPageHeader::kNodes);
  Shared& sh = *shared_;
  {
    const auto lock = lock_codes_exclusive();
    const uint32_t old = sh.capacity.load(std::memory_order_relaxed);
    // Exactly the new size (resize() may reserve more, past what the budget counted).
    std::vector<uint8_t> codes(size_t{new_capacity} * l.code_bytes, 0);
    std::copy(sh.codes.begin(), sh.codes.end(), codes.begin());
    sh.codes.swap(codes);
    auto states = std::make_unique<std::atomic<uint8_t>[]>(new_capacity);
    for (uint32_t s = 0; s < old; ++s) states[s].store(sh.states[s].load(std::memory_order_relaxed), std::memory_order_relaxed);
    sh.states = std::move(states);
  }
  {
    ExclusiveGuard g = pool_->pin_exclusive(PageId(codes_space_, 0));
    CodedMeta m;
    std::memcpy(&m, g.data() + CodedLayout::kHeader, sizeof m);
    m.capacity = new_capacity;
    std::memcpy(g.data() + CodedLayout::kHeader, &m, sizeof m);
    g.mark_dirty();
  }
  sh.capacity.store(new_capacity, std::memory_order_release);
}

template <class Pool>
inline std::shared_lock<std::shared_mutex> BasicCodedHnsw<Pool>::lock_codes() const {
  // Bounded by the growth: it clears the flag as soon as it holds the lock.
  while (shared_->growing.load(std::memory_order_acquire)) std::this_thread::yield();
  return std::shared_lock(shared_->codes_mutex);
}

// The entry sample's lock, with writers first as for the codes (pthread's rwlock prefers
// readers, and searches back to back, each holding it while it scores the sample, would
// starve an add()). Lock order: codes_mutex, then entries_mutex.
template <class Pool>
inline std::shared_lock<std::shared_mutex> BasicCodedHnsw<Pool>::lock_entries() const {
  while (shared_->entry_writers.load(std::memory_order_acquire) != 0) std::this_thread::yield();
  return std::shared_lock(shared_->entries_mutex);
}

template <class Pool>
inline std::unique_lock<std::shared_mutex> BasicCodedHnsw<Pool>::lock_entries_exclusive() const {
  shared_->entry_writers.fetch_add(1, std::memory_order_acq_rel);
  std::unique_lock lock(shared_->entries_mutex);
  shared_->entry_writers.fetch_sub(1, std::memory_order_acq_rel);
  return lock;
}

template <class Pool>
inline std::unique_lock<std::shared_mutex> BasicCodedHnsw<Pool>::lock_codes_exclusive() {
  shared_->growing.store(true, std::memory_order_release);
  std::unique_lock lock(shared_->codes_mutex);
  shared_->growing.store(false, std::memory_order_release);
  return lock;
}

template <class Pool>
inline CodedHnswMemory BasicCodedHnsw<Pool>::memory() const {
  CodedHnswMemory mem;
  {
    const auto lock = lock_codes();
    mem.codes = shared_->codes.capacity() + capacity();
    const auto entries = lock_entries();
    mem.codes += shared_->entries.capacity() * 4 + shared_->entry_codes.capacity();
    if (shared_->cells != nullptr) mem.codes += shared_->cells->bytes();
    mem.pinned_rows = shared_->pinned != nullptr ? shared_->pinned->bytes() : 0;
  }
  mem.model = model_bytes_;
  mem.pool_frames = uint64_t{pool_->num_frames()} * pool_->page_size();
  mem.translation = pool_->stats().translation_private_bytes;
  return mem;
}

// --- add -----------------------------------------------------------------------------------------

template <class Pool>
inline void BasicCodedHnsw<Pool>::prepare_vector(const float* v, float* out, const char* what) const {
  if (!vector::all_finite(v, params_.dim)) coded_detail::invalid(std::string(what) + ": the vector has NaN or infinity");
  std::memcpy(out, v, size_t{params_.dim} * 4);
  if (params_.metric == vector::Metric::kCosine && !vector::normalize(out, params_.dim)) {
    coded_detail::invalid(std::string(what) + ": a cosine vector of norm 0");
  }
}

// Pre: codes_mutex held (shared) and id < the capacity the caller read.
template <class Pool>
inline uint8_t BasicCodedHnsw<Pool>::state_of(uint32_t id) const {
  return shared_->states[id].load(std::memory_order_acquire);
}

template <class Pool>
inline bool BasicCodedHnsw<Pool>::contains(uint32_t id) const {
  const auto lock = lock_codes();
  if (id >= capacity()) coded_detail::invalid("contains: id " + std::to_string(id) + " >= capacity");
  return live_state(state_of(id));
}

template <class Pool>
inline bool BasicCodedHnsw<Pool>::removed(uint32_t id) const {
  const auto lock = lock_codes();
  if (id >= capacity()) coded_detail::invalid("removed: id " + std::to_string(id) + " >= capacity");
  return state_of(id) == kRemoved;
}

template <class Pool>
inline std::vector<uint32_t> BasicCodedHnsw<Pool>::failed_adds() const {
  const auto lock = lock_codes();
  std::vector<uint32_t> out;
  const uint32_t cap = capacity();
  for (uint32_t s = 0; s < cap; ++s) {
    if (state_of(s) == kCoded) out.push_back(s);
  }
  return out;
}

// The code page of slot id: its presence and removed bits, and its code when `code` is
// given (present) or zeros (absent); then the page's CRC. One exclusive latch.
template <class Pool>
inline void BasicCodedHnsw<Pool>::write_code_bits(uint32_t id, bool present, bool removed, const uint8_t* code) {
  ExclusiveGuard g = pool_->pin_exclusive(PageId(codes_space_, layout_.code_block(id)));
  check_header(g.data(), g.page_id(), CodedPageHeader::kCodes);
  if (code != nullptr) {
    std::memcpy(g.data() + layout_.code_offset(id), code, layout_.code_bytes);
  } else if (!present) {
    std::memset(g.data() + layout_.code_offset(id), 0, layout_.code_bytes);
  }
  const uint64_t bit = CodedLayout::bit_of(id, layout_.per_code_page);
  for (const auto& [at, on] : {std::pair{layout_.presence_word(id), present}, std::pair{layout_.removed_word(id), removed}}) {
    uint64_t word;
    std::memcpy(&word, g.data() + at, 8);
    word = on ? (word | bit) : (word & ~bit);
    std::memcpy(g.data() + at, &word, 8);
  }
  CodedPageHeader h = header_of(g.data());
  h.crc = io::crc32c(g.data() + CodedLayout::kHeader, layout_.code_payload_bytes());
  std::memcpy(g.data(), &h, sizeof h);
  g.mark_dirty();
}

template <class Pool>
inline void BasicCodedHnsw<Pool>::add(uint32_t id, const float* v) {
  const uint32_t dim = params_.dim;
  if (id >= kMaxCapacity) coded_detail::invalid("add: id " + std::to_string(id) + " past the maximum");
  Lease lease(*this);
  CodedHnswSearchState& st = *lease.state;
  prepare_vector(v, st.query_.data(), "add");
  std::shared_lock writing(shared_->writers);
  st.frees_ = shared_->frees.load(std::memory_order_acquire);  // none while writers is held
  shared_->pinned_valid.store(false, std::memory_order_release);  // lists change below
  reserve(uint64_t{id} + 1);
  Shared& sh = *shared_;
  const auto lock = lock_codes();  // held to the end: codes are read and written
  {
    uint8_t expected = kAbsent;
    if (!sh.states[id].compare_exchange_strong(expected, kClaimed, std::memory_order_acq_rel)) {
      coded_detail::invalid("add: id " + std::to_string(id) +
                            (expected == kRemoved ? " was removed; its slot is a tombstone until consolidate() frees it"
                                                  : " was added before"));
    }
  }
  std::vector<uint8_t> code(layout_.code_bytes);
  try {
    model_->encode(st.query_.data(), 1, code.data());
  } catch (...) {
    sh.states[id].store(kAbsent, std::memory_order_release);
    throw;
  }
  const uint32_t crc = io::crc32c(code.data(), code.size());
  try {
    {  // the vector part of the node row (its links are written once chosen)
      ExclusiveGuard g = pool_->pin_exclusive(PageId(graph_space_, layout_.node_block(id)));
      check_header(g.data(), g.page_id(), CodedPageHeader::kNodes);
      std::byte* row = g.data() + layout_.vec_offset(id);
      const uint32_t head[2] = {1, crc};
      std::memcpy(row, head, 8);
      std::memcpy(row + 8, st.query_.data(), size_t{dim} * 4);
      g.mark_dirty();
    }
    // the code: resident array, then its page (presence bit, CRC)
    std::memcpy(sh.codes.data() + size_t{id} * layout_.code_bytes, code.data(), code.size());
    write_code_bits(id, true, false, code.data());
  } catch (...) {
    sh.states[id].store(kAbsent, std::memory_order_release);  // no link names it yet
    throw;
  }
  sh.states[id].store(kCoded, std::memory_order_release);  // links may name it from here on

  // The first node: nothing to link.
  bool first = false;
  {
    ExclusiveGuard g = pool_->pin_exclusive(PageId(codes_space_, 0));
    CodedMeta m;
    std::memcpy(&m, g.data() + CodedLayout::kHeader, sizeof m);
    if (m.entry == CodedMeta::kNone) {
      m.entry = id;
      first = true;
      std::memcpy(g.data() + CodedLayout::kHeader, &m, sizeof m);
      g.mark_dirty();
      sh.entry.store(id, std::memory_order_release);
    }
  }
  const std::vector<float> base = st.query_;  // st.query_ is the searches' from here on
  if (!first) {
    // Removed nodes are walked through, not linked to (consolidate() would unlink them).
    std::vector<uint32_t> chosen;
    choose_links(base.data(), id, [](uint32_t, uint8_t state) { return live_state(state); }, st, &chosen);
    write_list(id, chosen);  // own list first, then the back links (a node is linked to only once its list is written)
    for (uint32_t n : chosen) link_back(n, id, st);
  }
  {
    ExclusiveGuard g = pool_->pin_exclusive(PageId(codes_space_, 0));
    CodedMeta m;
    std::memcpy(&m, g.data() + CodedLayout::kHeader, sizeof m);
    m.size += 1;
    std::memcpy(g.data() + CodedLayout::kHeader, &m, sizeof m);
    g.mark_dirty();
  }
  sh.size.fetch_add(1, std::memory_order_relaxed);
  sh.states[id].store(kComplete, std::memory_order_release);
  if (sampled(id)) {
    bool partition;
    {
      const auto entries = lock_entries_exclusive();
      sh.entries.push_back(id);
      sh.entry_codes.insert(sh.entry_codes.end(), code.data(), code.data() + code.size());
      if (sh.cells != nullptr) {
        sh.cells->push(sh.cells->nearest(base.data(), dist_));
        if (sh.cells->tail_too_long()) sh.cells->sort(sh.entries, sh.entry_codes, layout_.code_bytes);
      }
      partition = coded_detail::EntryCells::wanted(sh.cells.get(), sh.entries.size());
    }
    if (partition) build_cells(st);
  }
}

// The leaders are every (n / cells)-th entry of the sample (the sample's hash spreads it
// over the slots); build_cells() reads their rows, then assigns every entry under the
// exclusive lock (cells x n estimates: about 25 ms at 1M rows), so that no add() pushes an
// entry between the assignment and the install.
template <class Pool>
inline void BasicCodedHnsw<Pool>::build_cells(CodedHnswSearchState& st) {
  Shared& sh = *shared_;
  if (sh.cells_building.exchange(true, std::memory_order_acq_rel)) return;  // another add() builds
  struct Done {
    std::atomic<bool>& flag;
    ~Done() { flag.store(false, std::memory_order_release); }
  } done{sh.cells_building};
  std::vector<uint32_t> picks;
  {
    const auto entries = lock_entries();
    const size_t n = sh.entries.size();
    if (!coded_detail::EntryCells::wanted(sh.cells.get(), n)) return;
    const uint32_t c = coded_detail::EntryCells::cells_for(n);
    for (uint32_t i = 0; i < c; ++i) picks.push_back(sh.entries[size_t{i} * n / c]);
  }
  const uint32_t dim = params_.dim;
  auto cells = std::make_unique<coded_detail::EntryCells>();
  cells->dim = dim;
  cells->leaders.reserve(picks.size() * dim);
  std::vector<uint32_t> links(2 * params_.M);
  std::vector<float> vec(dim);
  try {
    for (const uint32_t id : picks) {
      if (read_node(id, st, links.data(), vec.data()) == kStale) continue;
      cells->leaders.insert(cells->leaders.end(), vec.begin(), vec.end());
    }
  } catch (const Error&) {
    return;  // searches score the sample as before: slower, as correct
  }
  const auto c = static_cast<uint32_t>(cells->leaders.size() / dim);
  if (c == 0) return;
  cells->sizes.assign(c, 0);
  std::unique_ptr<vector::QueryState> leader_state = model_->new_query();
  const auto entries = lock_entries_exclusive();
  const size_t n = sh.entries.size();
  std::vector<float> best(n, std::numeric_limits<float>::infinity()), est(n);
  cells->cell_of.assign(n, 0);
  for (uint32_t l = 0; l < c; ++l) {
    model_->prepare(cells->leader(l), *leader_state);
    model_->estimate(*leader_state, sh.entry_codes.data(), n, est.data());
    for (size_t i = 0; i < n; ++i) {
      if (est[i] < best[i]) best[i] = est[i], cells->cell_of[i] = static_cast<uint16_t>(l);
    }
  }
  for (const uint16_t x : cells->cell_of) ++cells->sizes[x];
  cells->built_at = n;
  cells->sort(sh.entries, sh.entry_codes, layout_.code_bytes);
  sh.cells = std::move(cells);
}

// Adds id to node's list; an overflowing list (2M) is cut back by the heuristic around node,
// from exact distances (node's and the members' vectors read as one group), and written only
// if unchanged meanwhile. Pre: codes_mutex held shared.
template <class Pool>
inline void BasicCodedHnsw<Pool>::link_back(uint32_t node, uint32_t id, CodedHnswSearchState& st) {
  const uint32_t max = 2 * params_.M;
  const PageId pid(graph_space_, layout_.node_block(node));
  const uint32_t off = layout_.node_offset(node);
  std::vector<uint32_t> snapshot(max);
  std::vector<float> base(params_.dim);
  for (uint32_t attempt = 0; attempt < kMaxLinkAttempts; ++attempt) {
    uint32_t count;
    {
      ExclusiveGuard g = pool_->pin_exclusive(pid);
      check_header(g.data(), pid, CodedPageHeader::kNodes);
      std::byte* row = g.data() + off;
      uint16_t head[2];
      std::memcpy(head, row, 4);
      count = head[0];
      if (count > max) corrupt_page(coded_detail::kKind, "link count of slot " + std::to_string(node), pid);
      std::memcpy(snapshot.data(), row + 4, size_t{count} * 4);
      // The members are read (codes, vectors) below: a latched list naming a slot that is
      // not coded is corrupt, never followed.
      const uint32_t cap = capacity();
      for (uint32_t i = 0; i < count; ++i) {
        if (snapshot[i] >= cap || state_of(snapshot[i]) < kCoded) {
          corrupt_page(coded_detail::kKind, "link of slot " + std::to_string(node) + " names an absent slot", pid);
        }
      }
      if (std::find(snapshot.begin(), snapshot.begin() + count, id) != snapshot.begin() + count) return;
      if (count < max) {
        std::memcpy(row + 4 + size_t{count} * 4, &id, 4);
        head[0] = static_cast<uint16_t>(count + 1);
        head[1] = 1;
        std::memcpy(row, head, 4);
        g.mark_dirty();
        return;
      }
    }
    // Overflow: choose from snapshot + id around node, no latch held.
    std::vector<uint32_t> ids(snapshot.begin(), snapshot.begin() + count);
    ids.push_back(id);
    read_vector(node, nullptr, st, base.data());
    rerank(base.data(), ids.data(), static_cast<uint32_t>(ids.size()), st);
    for (vector::Neighbor& e : st.exact_) e.id = ids[e.id];
    std::vector<uint32_t> chosen;
    select_heuristic(max, st, &chosen);
    ExclusiveGuard g = pool_->pin_exclusive(pid);
    check_header(g.data(), pid, CodedPageHeader::kNodes);
    std::byte* row = g.data() + off;
    uint16_t head[2];
    std::memcpy(head, row, 4);
    if (head[0] != count || std::memcmp(row + 4, snapshot.data(), size_t{count} * 4) != 0) continue;  // changed: redo
    head[0] = static_cast<uint16_t>(chosen.size());
    std::memcpy(row, head, 4);
    std::memcpy(row + 4, chosen.data(), chosen.size() * 4);
    g.mark_dirty();
    return;
  }
  throw Error(ErrorCode::kRestartLimit, "coded hnsw: a back link to slot " + std::to_string(node) + " kept changing", pid);
}

// The links of `node` (vector `base`) as insertion chooses them: a beam of ef_construction on
// codes from the entries, among the nodes admit() accepts (and not node itself); the
// ef_construction nearest of the nodes it expanded (exact distances, from the rows it read),
// the heuristic choosing M. When no admissible node is reachable from the entries (removes
// cut them off), the nearest by a scan of the codes are re-ranked instead, so a node is
// linked while any other admissible node exists. Pre: codes_mutex held shared.
template <class Pool>
template <class Admit>
inline void BasicCodedHnsw<Pool>::choose_links(const float* base, uint32_t node, const Admit& admit,
                                               CodedHnswSearchState& st, std::vector<uint32_t>* chosen) const {
  auto other = [&](uint32_t s, uint8_t state) { return s != node && admit(s, state); };
  model_->prepare(base, *st.query_state_);
  beam(base, params_.ef_construction, 0, false, other, st, 0, true);
  if (st.results_.empty()) {
    scan_codes(params_.ef_construction, other, nullptr, st);
    std::vector<uint32_t> ids;
    for (const vector::Neighbor& r : st.results_) ids.push_back(r.id);
    rerank(base, ids.data(), static_cast<uint32_t>(ids.size()), st);
    for (vector::Neighbor& e : st.exact_) e.id = ids[e.id];
  } else {
    st.exact_.clear();
    for (uint32_t j = 0; j < st.scored_.size(); ++j) st.exact_.push_back(vector::Neighbor{st.scored_[j].distance, j});
    std::sort(st.exact_.begin(), st.exact_.end());
    st.exact_.resize(std::min<size_t>(st.exact_.size(), params_.ef_construction));
    st.row_of_.resize(st.exact_.size());
    for (size_t j = 0; j < st.exact_.size(); ++j) {
      st.row_of_[j] = st.exact_[j].id;
      st.exact_[j].id = st.scored_[st.row_of_[j]].id;
    }
  }
  select_heuristic(params_.M, st, chosen);
}

// Writes node's level-0 list (one exclusive latch).
template <class Pool>
inline void BasicCodedHnsw<Pool>::write_list(uint32_t node, const std::vector<uint32_t>& ids) {
  ExclusiveGuard g = pool_->pin_exclusive(PageId(graph_space_, layout_.node_block(node)));
  check_header(g.data(), g.page_id(), CodedPageHeader::kNodes);
  std::byte* row = g.data() + layout_.node_offset(node);
  const uint16_t head[2] = {static_cast<uint16_t>(ids.size()), 1};
  std::memcpy(row, head, 4);
  if (!ids.empty()) std::memcpy(row + 4, ids.data(), ids.size() * 4);  // data() may be null when empty
  g.mark_dirty();
}

template <class Pool>
inline bool BasicCodedHnsw<Pool>::pruned_by(float to_kept, float to_base) const {
  return coded_detail::pruned_by(params_.metric, params_.alpha, to_kept, to_base);
}

// HNSW's neighbour heuristic (Malkov & Yashunin, Algorithm 4, no extension, pruned
// connections dropped) with Vamana's alpha (DiskANN's RobustPrune) over st.exact_
// (ascending exact distance to the base; id = slot, vectors in st.rows_ at st.row_of_):
// keeps a candidate unless a kept one is closer to it than the base is (pruned_by); at most m.
template <class Pool>
inline void BasicCodedHnsw<Pool>::select_heuristic(uint32_t m, CodedHnswSearchState& st,
                                                   std::vector<uint32_t>* out) const {
  const uint32_t dim = params_.dim;
  out->clear();
  std::vector<uint32_t> kept_rows;
  for (size_t j = 0; j < st.exact_.size() && out->size() < m; ++j) {
    const float* row = st.rows_.data() + size_t{st.row_of_[j]} * dim;
    bool keep = true;
    for (size_t r = 0; r < kept_rows.size() && keep; ++r) {
      keep = !pruned_by(dist_(row, st.rows_.data() + size_t{kept_rows[r]} * dim, dim), st.exact_[j].distance);
    }
    if (keep) {
      out->push_back(st.exact_[j].id);
      kept_rows.push_back(st.row_of_[j]);
    }
  }
}

// --- remove / consolidate --------------------------------------------------------------------------

template <class Pool>
inline void BasicCodedHnsw<Pool>::remove(uint32_t id) {
  std::shared_lock writing(shared_->writers);
  const auto lock = lock_codes();
  if (id >= capacity()) coded_detail::invalid("remove: id " + std::to_string(id) + " >= capacity");
  uint8_t expected = kComplete;
  if (!shared_->states[id].compare_exchange_strong(expected, kRemoved, std::memory_order_acq_rel)) {
    coded_detail::invalid("remove: id " + std::to_string(id) +
                          (expected == kRemoved ? " was removed before" : " is not in the index"));
  }
  try {
    write_code_bits(id, true, true, nullptr);
  } catch (...) {
    shared_->states[id].store(kComplete, std::memory_order_release);
    throw;
  }
  shared_->removed.fetch_add(1, std::memory_order_relaxed);
}

template <class Pool>
inline uint32_t BasicCodedHnsw<Pool>::consolidate() {
  std::unique_lock writing(shared_->writers);  // no add or remove: states change only here
  if (tombstones() == 0) return 0;
  shared_->pinned_valid.store(false, std::memory_order_release);  // lists change below
  Lease lease(*this);
  CodedHnswSearchState& st = *lease.state;
  Shared& sh = *shared_;
  const auto lock = lock_codes();
  st.frees_ = sh.frees.load(std::memory_order_acquire);
  const uint32_t cap = capacity();
  const uint32_t max = 2 * params_.M;
  std::vector<uint32_t> removed;
  uint32_t live_count = 0;
  for (uint32_t s = 0; s < cap; ++s) {
    const uint8_t state = state_of(s);
    if (state == kRemoved) removed.push_back(s);
    if (live_state(state)) ++live_count;
  }
  if (removed.empty()) return 0;
  auto is_live = [&](uint32_t s) { return live_state(state_of(s)); };
  // 1. Every live node's list that names a removed node: its live members (the survivors)
  // all stay, and the removed ones' places are filled from the live nodes those lead to,
  // by the heuristic seeded with the survivors (as BasicHnsw::consolidate, and for the same
  // measured reason: docs/results/vector_churn.md). A removed member's own removed
  // neighbours are walked only while no live candidate is found. A node left with no
  // candidate (or with an empty list) while the index has other live nodes is linked as
  // insertion links it.
  std::vector<uint32_t> members(max), theirs(max), through, merged, chosen;
  std::vector<uint32_t> mark(cap, 0);
  std::vector<float> base(params_.dim);
  uint32_t epoch = 0;
  for (uint32_t p = 0; p < cap; ++p) {
    if (!is_live(p)) continue;
    const uint32_t n = read_links(p, st, members.data());
    ++epoch;
    mark[p] = epoch;
    merged.clear();
    through.clear();
    auto take = [&](uint32_t v, uint32_t owner) {
      if (v >= cap || state_of(v) < kCoded) {
        corrupt_page(coded_detail::kKind, "link of slot " + std::to_string(owner) + " names an absent slot",
                     PageId(graph_space_, layout_.node_block(owner)));
      }
      if (mark[v] == epoch) return false;
      mark[v] = epoch;
      return true;
    };
    for (uint32_t i = 0; i < n; ++i) {
      if (take(members[i], p)) (is_live(members[i]) ? merged : through).push_back(members[i]);
    }
    // A list naming no removed node stays, unless it is empty (an insertion that found no
    // live node to link to while others were removed): that one is linked as insertion links.
    if (through.empty() && (n > 0 || live_count < 2)) continue;
    const size_t survivors = merged.size();
    for (size_t t = 0; t < through.size(); ++t) {
      const uint32_t m = read_links(through[t], st, theirs.data());
      for (uint32_t j = 0; j < m; ++j) {
        const uint32_t v = theirs[j];
        if (!take(v, through[t])) continue;
        if (is_live(v)) {
          merged.push_back(v);
        } else if (merged.empty()) {
          through.push_back(v);
        }
      }
    }
    if (merged.empty() && live_count >= 2) {  // as insertion links it
      read_vector(p, nullptr, st, base.data());
      choose_links(base.data(), p, [](uint32_t, uint8_t state) { return live_state(state); }, st, &chosen);
    } else if (merged.size() > max) {  // the survivors stay; the freed places are filled
      read_vector(p, nullptr, st, base.data());
      rerank(base.data(), merged.data(), static_cast<uint32_t>(merged.size()), st);
      chosen.assign(merged.begin(), merged.begin() + static_cast<std::ptrdiff_t>(survivors));
      std::vector<uint32_t> kept_rows;
      for (size_t j = 0; j < st.exact_.size(); ++j) {
        if (st.exact_[j].id < survivors) kept_rows.push_back(st.row_of_[j]);
      }
      for (size_t j = 0; j < st.exact_.size() && chosen.size() < max; ++j) {
        if (st.exact_[j].id < survivors) continue;
        const float* row = st.rows_.data() + size_t{st.row_of_[j]} * params_.dim;
        bool keep = true;
        for (size_t r = 0; r < kept_rows.size() && keep; ++r) {
          keep = !pruned_by(dist_(row, st.rows_.data() + size_t{kept_rows[r]} * params_.dim, params_.dim),
                            st.exact_[j].distance);
        }
        if (keep) {
          chosen.push_back(merged[st.exact_[j].id]);
          kept_rows.push_back(st.row_of_[j]);
        }
      }
    } else {
      chosen = merged;
    }
    write_list(p, chosen);
  }
  // 2. A removed entry gives way to a live node (searches start there), before any slot is
  // freed; the entry sample drops the removed slots.
  const uint32_t entry = sh.entry.load(std::memory_order_acquire);
  if (entry != CodedMeta::kNone && !is_live(entry)) {
    uint32_t next = CodedMeta::kNone;
    for (uint32_t s = 0; s < cap && next == CodedMeta::kNone; ++s) {
      if (state_of(s) == kComplete) next = s;
    }
    ExclusiveGuard g = pool_->pin_exclusive(PageId(codes_space_, 0));
    CodedMeta m;
    std::memcpy(&m, g.data() + CodedLayout::kHeader, sizeof m);
    m.entry = next;
    std::memcpy(g.data() + CodedLayout::kHeader, &m, sizeof m);
    g.mark_dirty();
    sh.entry.store(next, std::memory_order_release);
  }
  {
    const auto entries = lock_entries_exclusive();
    const size_t cb = layout_.code_bytes;
    coded_detail::EntryCells* cells = sh.cells.get();
    size_t kept = 0, kept_sorted = 0;  // the compaction keeps the order: the cells' runs stay runs
    for (size_t i = 0; i < sh.entries.size(); ++i) {
      if (!is_live(sh.entries[i])) {
        if (cells != nullptr) --cells->sizes[cells->cell_of[i]];
        continue;
      }
      sh.entries[kept] = sh.entries[i];
      std::memmove(sh.entry_codes.data() + kept * cb, sh.entry_codes.data() + i * cb, cb);
      if (cells != nullptr) {
        cells->cell_of[kept] = cells->cell_of[i];
        kept_sorted += i < cells->sorted;
      }
      ++kept;
    }
    sh.entries.resize(kept);
    sh.entry_codes.resize(kept * cb);
    if (cells != nullptr) {
      cells->cell_of.resize(kept);
      cells->sorted = kept_sorted;
      cells->index_runs();
    }
  }
  // 3. The removed slots: no list names them now. Counted as freed first (a search that
  // then finds one absent skips it: freed_since), then cleared: state (the resident code
  // stays as it was: a search may still be reading it), code page bits and code, node row.
  sh.frees.fetch_add(1, std::memory_order_acq_rel);
  for (const uint32_t id : removed) {
    sh.states[id].store(kAbsent, std::memory_order_release);
    write_code_bits(id, false, false, nullptr);
    {
      ExclusiveGuard g = pool_->pin_exclusive(PageId(graph_space_, layout_.node_block(id)));
      std::memset(g.data() + layout_.node_offset(id), 0, layout_.row_bytes);
      g.mark_dirty();
    }
  }
  const uint32_t freed = static_cast<uint32_t>(removed.size());
  {
    ExclusiveGuard g = pool_->pin_exclusive(PageId(codes_space_, 0));
    CodedMeta m;
    std::memcpy(&m, g.data() + CodedLayout::kHeader, sizeof m);
    if (m.size < freed) corrupt_page(coded_detail::kKind, "metadata size below the removed slots", g.page_id());
    m.size -= freed;
    std::memcpy(g.data() + CodedLayout::kHeader, &m, sizeof m);
    g.mark_dirty();
  }
  sh.size.fetch_sub(freed, std::memory_order_relaxed);
  sh.removed.fetch_sub(freed, std::memory_order_relaxed);
  return freed;
}

// --- pinned rows -------------------------------------------------------------------------------

template <class Pool>
inline const coded_detail::PinnedRows* BasicCodedHnsw<Pool>::pinned_for_search() const {
  return shared_->pinned_valid.load(std::memory_order_acquire) ? shared_->pinned.get() : nullptr;
}

template <class Pool>
inline uint32_t BasicCodedHnsw<Pool>::pinned_rows() const {
  const auto lock = lock_codes();
  const coded_detail::PinnedRows* p = pinned_for_search();
  return p != nullptr ? p->size() : 0;
}

// 1. Counts: `sample` searches (default options, beam only) for the vectors of live nodes
// spread over the slots, each expansion counted. 2. The most expanded rows that fit `bytes`,
// read from their pages into a new PinnedRows. 3. Installed under codes_mutex exclusive.
// writers is held exclusive throughout, so no list changes between the counts and the
// install; searches run on (with the previous copies, if valid) until the install.
template <class Pool>
inline uint32_t BasicCodedHnsw<Pool>::pin_rows(uint64_t bytes, uint32_t sample) {
  if (sample == 0) coded_detail::invalid("pin_rows: sample is 0");
  std::unique_lock writing(shared_->writers);
  Shared& sh = *shared_;
  const uint32_t max = 2 * params_.M;
  const uint64_t per_row = coded_detail::PinnedRows::bytes_per_row(max, params_.dim);
  {
    CodedHnswMemory mem = memory();
    const uint64_t rest = mem.total() - mem.pinned_rows;
    if (bytes > 0 && (rest > sh.budget_bytes || bytes > sh.budget_bytes - rest)) {
      coded_detail::invalid("pin_rows: bytes " + std::to_string(bytes) + " past budget_bytes " +
                            std::to_string(sh.budget_bytes) + " less the rest of memory() (" + std::to_string(rest) + ")");
    }
  }
  auto fresh = std::make_unique<coded_detail::PinnedRows>(max, params_.dim);
  const uint64_t fit = bytes / per_row;
  if (fit > 0) {
    Lease lease(*this);
    CodedHnswSearchState& st = *lease.state;
    const auto lock = lock_codes();
    st.frees_ = sh.frees.load(std::memory_order_acquire);  // none while writers is held
    const uint32_t cap = capacity();
    std::vector<uint32_t> live;
    for (uint32_t s = 0; s < cap; ++s) {
      if (live_state(state_of(s))) live.push_back(s);
    }
    // 1. The counts.
    std::vector<uint32_t> counts(cap, 0), trace, links(max);
    std::vector<float> q(params_.dim);
    const CodedHnswSearchOptions opt;
    const size_t step = std::max<size_t>(1, live.size() / sample);
    st.trace_ = &trace;
    try {
      for (size_t i = 0; i < live.size(); i += step) {
        read_vector(live[i], nullptr, st, q.data());
        model_->prepare(q.data(), *st.query_state_);
        trace.clear();
        beam(q.data(), opt.ef, opt.prefetch_width, opt.batched, coded_detail::AdmitAll{}, st, opt.entries, false);
        for (const uint32_t s : trace) ++counts[s];
      }
    } catch (...) {
      st.trace_ = nullptr;
      throw;
    }
    st.trace_ = nullptr;
    // 2. The most expanded rows (ties to the lower slot), read from their pages.
    std::vector<uint32_t> hot;
    for (uint32_t s = 0; s < cap; ++s) {
      if (counts[s] > 0) hot.push_back(s);
    }
    const size_t take = std::min<size_t>(hot.size(), fit);
    auto hotter = [&](uint32_t a, uint32_t b) { return counts[a] != counts[b] ? counts[a] > counts[b] : a < b; };
    std::partial_sort(hot.begin(), hot.begin() + static_cast<std::ptrdiff_t>(take), hot.end(), hotter);
    fresh->reserve(static_cast<uint32_t>(take));
    for (size_t i = 0; i < take; ++i) {
      const uint32_t n = read_node(hot[i], st, links.data(), st.vec_.data());
      if (n == kStale) continue;  // not while writers is held: frees happen only under it
      fresh->add(hot[i], links.data(), n, st.vec_.data());
    }
  }
  // 3. Install (the previous copies are freed here: no search holds codes_mutex now).
  std::lock_guard grow(sh.grow_mutex);
  const auto exclusive = lock_codes_exclusive();
  const uint32_t pinned = fresh->size();
  sh.pinned = pinned > 0 ? std::move(fresh) : nullptr;
  sh.pinned_valid.store(pinned > 0, std::memory_order_release);
  return pinned;
}

// --- reads -------------------------------------------------------------------------------------

// Reads one row of page pid through copy(const std::byte* page) (racy copies only):
// optimistically (the group read's `started` read first when it has one), validated, and
// under a shared pin after Pool::kOptimisticAttempts failed validations. What copy wrote is
// valid when this returns; the caller checks it (a validated page may still be corrupt).
template <class Pool>
template <class Copy>
inline void BasicCodedHnsw<Pool>::read_row(PageId pid, uint32_t off, const OptimisticRead* started,
                                           CodedHnswSearchState& st, Copy&& copy) const {
  for (int attempt = 0; attempt < Pool::kOptimisticAttempts; ++attempt) {
    const bool given = attempt == 0 && started != nullptr && started->data != nullptr;
    const OptimisticRead r = given ? *started : pool_->read_optimistic(pid, off);
    copy(r.data);
    if (Pool::validate(r)) return;
    ++st.stats_.retries;
  }
  SharedGuard g = pool_->pin_shared(pid);
  copy(g.data());
}

// Node id's level-0 list into out (at most 2M ids); returns its length. Errors:
// kCorruptPage when the validated row or its page header breaks the format.
template <class Pool>
inline uint32_t BasicCodedHnsw<Pool>::read_links(uint32_t id, CodedHnswSearchState& st, uint32_t* out) const {
  const PageId pid(graph_space_, layout_.node_block(id));
  const uint32_t off = layout_.node_offset(id);
  const uint32_t max = 2 * params_.M;
  std::byte head[CodedLayout::kHeader];
  uint16_t count_flags[2];
  read_row(pid, off, nullptr, st, [&](const std::byte* page) {
    hnsw_detail::hnsw_racy_copy(head, page, sizeof head);
    hnsw_detail::hnsw_racy_copy(count_flags, page + off, 4);
    hnsw_detail::hnsw_racy_copy(out, page + off + 4, size_t{max} * 4);
  });
  check_header(head, pid, CodedPageHeader::kNodes);
  if (count_flags[0] > max) corrupt_page(coded_detail::kKind, "link count of slot " + std::to_string(id), pid);
  return count_flags[0];
}

// Whether the vector part of slot id's row ({present, code_crc}) is present and its code's:
// a code and a vector that disagree are never used. Pre: codes_mutex held shared.
template <class Pool>
inline bool BasicCodedHnsw<Pool>::vector_row_ok(uint32_t id, const uint32_t row_head[2]) const {
  return row_head[0] == 1 && row_head[1] == io::crc32c(code_of(id), layout_.code_bytes);
}

template <class Pool>
inline void BasicCodedHnsw<Pool>::bad_vector_row(uint32_t id, const uint32_t row_head[2], PageId pid) const {
  if (row_head[0] != 1) corrupt_page(coded_detail::kKind, "vector row of slot " + std::to_string(id) + " is absent", pid);
  corrupt_page(coded_detail::kKind, "vector row of slot " + std::to_string(id) + " disagrees with its code (CRC)", pid);
}

// Node id's row in one read: its list into links (returns its length), its vector into vec.
// Returns kStale instead when the vector part is absent or not its code's and consolidate()
// freed slots since the search began (it freed this node while the search held it). Errors:
// kCorruptPage as read_links and read_vector. Pre: codes_mutex held shared; id is coded.
template <class Pool>
inline uint32_t BasicCodedHnsw<Pool>::read_node(uint32_t id, CodedHnswSearchState& st, uint32_t* links,
                                                float* vec) const {
  const PageId pid(graph_space_, layout_.node_block(id));
  const uint32_t off = layout_.node_offset(id);
  const uint32_t max = 2 * params_.M;
  std::byte head[CodedLayout::kHeader];
  uint16_t count_flags[2];
  uint32_t row_head[2];
  read_row(pid, off, nullptr, st, [&](const std::byte* page) {
    hnsw_detail::hnsw_racy_copy(head, page, sizeof head);
    hnsw_detail::hnsw_racy_copy(count_flags, page + off, 4);
    hnsw_detail::hnsw_racy_copy(links, page + off + 4, size_t{max} * 4);
    hnsw_detail::hnsw_racy_copy(row_head, page + off + layout_.links_bytes, 8);
    hnsw_detail::hnsw_racy_copy(vec, page + off + layout_.links_bytes + 8, size_t{params_.dim} * 4);
  });
  ++st.stats_.expanded;
  check_header(head, pid, CodedPageHeader::kNodes);
  if (!vector_row_ok(id, row_head)) {
    if (freed_since(st)) return kStale;
    bad_vector_row(id, row_head, pid);
  }
  if (count_flags[0] > max) corrupt_page(coded_detail::kKind, "link count of slot " + std::to_string(id), pid);
  return count_flags[0];
}

// Node id's vector into out. `started`: the group read's optimistic read of the page
// (data == nullptr: none). Errors: kCorruptPage for a bad header, an absent row, or a row
// whose code CRC is not the resident code's.
template <class Pool>
inline void BasicCodedHnsw<Pool>::read_vector(uint32_t id, const OptimisticRead* started, CodedHnswSearchState& st,
                                              float* out) const {
  const PageId pid(graph_space_, layout_.node_block(id));
  const uint32_t off = layout_.vec_offset(id);
  std::byte head[CodedLayout::kHeader];
  uint32_t row_head[2];
  read_row(pid, off, started, st, [&](const std::byte* page) {
    hnsw_detail::hnsw_racy_copy(head, page, sizeof head);
    hnsw_detail::hnsw_racy_copy(row_head, page + off, 8);
    hnsw_detail::hnsw_racy_copy(out, page + off + 8, size_t{params_.dim} * 4);
  });
  check_header(head, pid, CodedPageHeader::kNodes);
  // Pre: codes_mutex held shared; id is coded.
  if (!vector_row_ok(id, row_head)) bad_vector_row(id, row_head, pid);
}

// Exact distances from q to ids[0 .. n): their node pages requested as one group
// (pool.read_group: one batch of reads for the evicted ones), then each row copied and
// validated. st.exact_ = {distance, index into ids} ascending; st.row_of_[j] = the row of
// st.exact_[j] in st.rows_. Pre: codes_mutex held shared.
template <class Pool>
inline void BasicCodedHnsw<Pool>::rerank(const float* q, const uint32_t* ids, uint32_t n, CodedHnswSearchState& st,
                                         bool skip_stale) const {
  const uint32_t dim = params_.dim;
  st.rows_.resize(size_t{n} * dim);
  st.group_.resize(n);
  st.offsets_.resize(n);
  st.reads_.assign(n, OptimisticRead{});
  for (uint32_t i = 0; i < n; ++i) {
    st.group_[i] = PageId(graph_space_, layout_.node_block(ids[i]));
    st.offsets_[i] = layout_.vec_offset(ids[i]);
  }
  st.stats_.group_reads += pool_->read_group(std::span<const PageId>(st.group_), std::span<const uint32_t>(st.offsets_),
                                             std::span<OptimisticRead>(st.reads_));
  st.exact_.clear();
  for (uint32_t i = 0; i < n; ++i) {
    float* row = st.rows_.data() + size_t{i} * dim;
    if (skip_stale && state_of(ids[i]) < kCoded) continue;  // freed meanwhile (frees counted first)
    try {
      read_vector(ids[i], &st.reads_[i], st, row);
    } catch (const Error& e) {
      if (!skip_stale || e.code() != ErrorCode::kCorruptPage || !freed_since(st)) throw;
      continue;  // freed (and perhaps added again) during the read
    }
    st.exact_.push_back(vector::Neighbor{dist_(q, row, dim), i});
  }
  st.stats_.reranked += n;
  std::sort(st.exact_.begin(), st.exact_.end());
  st.row_of_.resize(st.exact_.size());
  for (size_t j = 0; j < st.exact_.size(); ++j) st.row_of_[j] = st.exact_[j].id;
}

// --- search ------------------------------------------------------------------------------------

// The beam of width ef on level 0, scored by code estimates of q prepared in
// st.query_state_, from the entry sample. Every node scored near enough enters the
// candidates (the beam walks through removed and filtered-out nodes); only those admit()
// accepts enter the results, which decide when the beam stops (hnswlib's filtered search).
// Expanding a node reads its row, which holds its vector: the admissible expanded nodes get
// their exact distance to q in st.scored_ (in expansion order; with keep_rows their vectors
// in st.rows_, row j for st.scored_[j]) and are marked in st.expanded_. Every node left in
// the results was expanded (the beam stops at a candidate worse than all of them). Leaves
// st.results_ ascending by estimate. Pre: codes_mutex held shared.
template <class Pool>
template <class Admit>
inline void BasicCodedHnsw<Pool>::beam(const float* q, uint32_t ef, uint32_t width, bool batched, const Admit& admit,
                                       CodedHnswSearchState& st, uint32_t entries, bool keep_rows) const {
  const uint32_t cap = capacity();
  const uint32_t max = 2 * params_.M;
  const uint32_t dim = params_.dim;
  const size_t cb = layout_.code_bytes;
  coded_detail::begin_epoch(st.visited_, st.expanded_, st.epoch_, cap);
  st.candidates_.clear();
  st.results_.clear();
  st.scored_.clear();
  if (keep_rows) st.rows_.clear();
  st.links_.resize(max);
  st.vec_.resize(dim);
  const coded_detail::PinnedRows* pinned = st.pinned_;
  // Takes c into the beam when the results have room or c beats their worst estimate.
  auto take = [&](const vector::Neighbor& c) {
    st.candidates_.push_back(c);
    std::push_heap(st.candidates_.begin(), st.candidates_.end(), std::greater<>{});
    if (admit(c.id, state_of(c.id))) {
      st.results_.push_back(c);
      std::push_heap(st.results_.begin(), st.results_.end());
      if (st.results_.size() > ef) {
        std::pop_heap(st.results_.begin(), st.results_.end());
        st.results_.pop_back();
      }
    }
  };
  auto wanted = [&](const vector::Neighbor& c) { return st.results_.size() < ef || c < st.results_.front(); };
  // Scores st.fresh_ (unvisited, coded, marked) and offers them to the beam.
  auto offer = [&] {
    const size_t n = st.fresh_.size();
    if (n == 0) return;
    st.codes_.resize(n * cb);
    st.est_.resize(n);
    for (size_t i = 0; i < n; ++i) std::memcpy(st.codes_.data() + i * cb, code_of(st.fresh_[i]), cb);
    model_->estimate(*st.query_state_, st.codes_.data(), n, st.est_.data());
    st.stats_.estimates += n;
    for (size_t i = 0; i < n; ++i) {
      const vector::Neighbor c{st.est_[i], st.fresh_[i]};
      if (wanted(c)) take(c);
    }
  };
  // Larger than memory: before a node is expanded, its page and those of the next width - 1
  // candidates (the first entries of the heap: about the best) are requested as one batch of
  // asynchronous reads, so that up to `width` reads are in flight while this thread scores
  // (DiskANN's beam width). After kIdlePrefetches batches in a row found every page
  // resident, the next kSkippedOffers expansions request nothing (in memory it only costs).
  auto note_prefetch = [&](bool started) {
    if (started) {
      st.idle_prefetches_ = 0;
    } else if (++st.idle_prefetches_ >= kIdlePrefetches) {
      st.idle_prefetches_ = 0;
      st.skip_prefetch_ = kSkippedOffers;
    }
  };
  auto prefetch = [&](uint32_t next) {
    if (st.skip_prefetch_ > 0) {
      --st.skip_prefetch_;
      return;
    }
    st.group_.clear();
    st.group_.push_back(PageId(graph_space_, layout_.node_block(next)));
    const size_t more = std::min<size_t>(width - 1, st.candidates_.size());
    for (size_t i = 0; i < more; ++i) {
      const uint32_t id = st.candidates_[i].id;
      if (pinned == nullptr || pinned->find(id) == coded_detail::PinnedRows::kNone) {
        st.group_.push_back(PageId(graph_space_, layout_.node_block(id)));
      }
    }
    note_prefetch(pool_->prefetch_group(std::span<const PageId>(st.group_)) > 0);
  };
  st.fresh_.clear();
  const uint32_t entry = shared_->entry.load(std::memory_order_acquire);
  auto start = [&](uint32_t s) {
    if (s < cap && st.visited_[s] != st.epoch_ && state_of(s) >= kCoded) {
      st.visited_[s] = st.epoch_;
      st.fresh_.push_back(s);
      __builtin_prefetch(code_of(s));  // offer() copies it: the misses overlap
    }
  };
  if (entry != CodedMeta::kNone) start(entry);
  offer();
  {
    // The sample, scored from its codes' copies in blocks. Only an entry the beam takes is
    // looked up (visited, state) and marked: one the full results turn away now would be
    // turned away later too (their worst estimate only falls), so it needs no mark.
    const auto lock = lock_entries();
    const std::vector<uint32_t>& sample = shared_->entries;
    const uint8_t* codes = shared_->entry_codes.data();
    const coded_detail::EntryCells* cells = shared_->cells.get();
    const size_t want = entries != 0   ? entries
                        : cells != nullptr ? sample.size() / coded_detail::EntryCells::kProbeShare
                                           : sample.size();
    constexpr size_t kBlock = 256;
    st.est_.resize(kBlock);
    auto score = [&](const uint8_t* block, const uint32_t* ids, size_t n) {
      model_->estimate(*st.query_state_, block, n, st.est_.data());
      st.stats_.estimates += n;
      for (size_t j = 0; j < n; ++j) {
        const vector::Neighbor c{st.est_[j], ids[j]};
        if (!wanted(c) || c.id >= cap || st.visited_[c.id] == st.epoch_ || state_of(c.id) < kCoded) continue;
        st.visited_[c.id] = st.epoch_;
        take(c);
      }
    };
    if (want >= sample.size()) {  // all of it, in place
      for (size_t first = 0; first < sample.size(); first += kBlock) {
        score(codes + first * cb, sample.data() + first, std::min(kBlock, sample.size() - first));
      }
    } else {  // the nearest cells' entries, or evenly spread ones, gathered into blocks
      st.codes_.resize(kBlock * cb);
      st.block_ids_.resize(kBlock);
      size_t n = 0;
      auto gather = [&](size_t i) {
        std::memcpy(st.codes_.data() + n * cb, codes + i * cb, cb);
        st.block_ids_[n] = sample[i];
        if (++n == kBlock) score(st.codes_.data(), st.block_ids_.data(), std::exchange(n, 0));
      };
      if (cells != nullptr) {
        // The probed cells' runs in place, nearest first; then the tail's entries in them.
        const uint32_t probed = cells->probe(q, dist_, want, st.cell_order_, st.probe_);
        for (uint32_t p = 0; p < probed; ++p) {
          const uint32_t c = st.cell_order_[p].id;
          for (size_t first = cells->start[c]; first < cells->start[c + 1]; first += kBlock) {
            score(codes + first * cb, sample.data() + first, std::min<size_t>(kBlock, cells->start[c + 1] - first));
          }
        }
        for (size_t i = cells->sorted; i < sample.size(); ++i) {
          if (st.probe_[cells->cell_of[i]] != 0) gather(i);
        }
      } else {
        const size_t step = (sample.size() + want - 1) / want;
        for (size_t i = 0; i < sample.size(); i += step) gather(i);
      }
      if (n > 0) score(st.codes_.data(), st.block_ids_.data(), n);
    }
  }
  // Expands c: its row (a pinned copy, or read from its page), its exact distance, and its
  // unvisited links offered.
  auto expand = [&](const vector::Neighbor& c, bool prefetch_first) {
    const uint32_t row = pinned != nullptr ? pinned->find(c.id) : coded_detail::PinnedRows::kNone;
    uint32_t n;
    const uint32_t* links;
    const float* vec;
    if (row != coded_detail::PinnedRows::kNone) {
      n = pinned->count(row);
      links = pinned->links(row);
      vec = pinned->vector(row);
      ++st.stats_.expanded;
      ++st.stats_.pinned;
    } else {
      if (prefetch_first) prefetch(c.id);
      n = read_node(c.id, st, st.links_.data(), st.vec_.data());
      if (n == kStale) return;  // freed by a consolidate() meanwhile
      links = st.links_.data();
      vec = st.vec_.data();
    }
    st.expanded_[c.id] = st.epoch_;
    if (st.trace_ != nullptr) st.trace_->push_back(c.id);
    // Judged now, not when offered (it may have been removed or freed since), on one load.
    const uint8_t state = state_of(c.id);
    if (state >= kCoded && admit(c.id, state)) {
      st.scored_.push_back(vector::Neighbor{dist_(q, vec, dim), c.id});
      if (keep_rows) st.rows_.insert(st.rows_.end(), vec, vec + dim);
    }
    st.fresh_.clear();
    for (uint32_t i = 0; i < n; ++i) {
      const uint32_t s = links[i];
      if (s >= cap) {
        if (s < capacity()) continue;  // a node of a growth after this search began
        corrupt_page(coded_detail::kKind, "link of slot " + std::to_string(c.id) + " past the capacity",
                     PageId(graph_space_, layout_.node_block(c.id)));
      }
      if (st.visited_[s] == st.epoch_) continue;
      if (state_of(s) < kCoded) {
        if (freed_since(st)) continue;  // a list read before consolidate() rewrote it
        corrupt_page(coded_detail::kKind, "link of slot " + std::to_string(c.id) + " names an absent slot",
                     PageId(graph_space_, layout_.node_block(c.id)));
      }
      st.visited_[s] = st.epoch_;
      st.fresh_.push_back(s);
      __builtin_prefetch(code_of(s));
    }
    offer();
  };
  // Each step takes the best candidate (batched: up to the best `width`, DiskANN's beam step)
  // while the results are not full or one of them is worse than it. A search whose best
  // candidate fails that test ends, so every node left in the results was expanded.
  // Batched steps only while pages are being read: once the prefetch has gone idle (in
  // memory), steps take one candidate until it tries again (batches expand nodes a
  // best-first beam would not, which in memory only costs).
  for (bool stop = false; !stop;) {
    const size_t take = batched && width > 1 && st.skip_prefetch_ == 0 ? width : 1;
    st.batch_.clear();
    while (st.batch_.size() < take && !st.candidates_.empty()) {
      std::pop_heap(st.candidates_.begin(), st.candidates_.end(), std::greater<>{});
      const vector::Neighbor c = st.candidates_.back();
      st.candidates_.pop_back();
      if (st.results_.size() >= ef && st.results_.front() < c) {
        if (st.batch_.empty()) {
          stop = true;
        } else {  // the step ends here; the next one tests c again
          st.candidates_.push_back(c);
          std::push_heap(st.candidates_.begin(), st.candidates_.end(), std::greater<>{});
        }
        break;
      }
      st.batch_.push_back(c);
    }
    if (st.batch_.empty()) break;
    if (take == 1) {
      expand(st.batch_[0], width > 0);
      continue;
    }
    // Batched: the step's pages requested as one group, then every node expanded.
    st.group_.clear();
    for (const vector::Neighbor& c : st.batch_) {
      if (pinned == nullptr || pinned->find(c.id) == coded_detail::PinnedRows::kNone) {
        st.group_.push_back(PageId(graph_space_, layout_.node_block(c.id)));
      }
    }
    if (!st.group_.empty()) note_prefetch(pool_->prefetch_group(std::span<const PageId>(st.group_)) > 0);
    for (const vector::Neighbor& c : st.batch_) expand(c, false);
  }
  std::sort_heap(st.results_.begin(), st.results_.end());
}

template <class Pool>
template <class Admit>
inline void BasicCodedHnsw<Pool>::scan_codes(uint32_t keep, const Admit& admit, const vector::IdFilter* filter,
                                             CodedHnswSearchState& st) const {
  ++st.stats_.scans;
  const uint32_t cap = std::min<uint32_t>(capacity(), static_cast<uint32_t>(st.visited_.size()));
  const size_t cb = layout_.code_bytes;
  std::make_heap(st.results_.begin(), st.results_.end());  // a max-heap of the best `keep`
  constexpr size_t kBatch = 256;
  st.fresh_.clear();
  auto flush = [&] {
    const size_t n = st.fresh_.size();
    if (n == 0) return;
    st.codes_.resize(n * cb);
    st.est_.resize(n);
    for (size_t i = 0; i < n; ++i) std::memcpy(st.codes_.data() + i * cb, code_of(st.fresh_[i]), cb);
    model_->estimate(*st.query_state_, st.codes_.data(), n, st.est_.data());
    st.stats_.estimates += n;
    for (size_t i = 0; i < n; ++i) {
      const vector::Neighbor c{st.est_[i], st.fresh_[i]};
      if (st.results_.size() < keep) {
        st.results_.push_back(c);
        std::push_heap(st.results_.begin(), st.results_.end());
      } else if (c < st.results_.front()) {
        std::pop_heap(st.results_.begin(), st.results_.end());
        st.results_.back() = c;
        std::push_heap(st.results_.begin(), st.results_.end());
      }
    }
    st.fresh_.clear();
  };
  auto consider = [&](uint32_t s) {
    // Visited slots were scored by the beam (an admissible one is in the results already).
    if (st.visited_[s] == st.epoch_) return;
    const uint8_t state = state_of(s);
    if (state < kCoded || !admit(s, state)) return;
    st.visited_[s] = st.epoch_;
    st.fresh_.push_back(s);
    if (st.fresh_.size() == kBatch) flush();
  };
  if (filter != nullptr) {
    const size_t words = std::min<size_t>(filter->allowed.size(), (size_t{cap} + 63) / 64);
    for (size_t w = 0; w < words; ++w) {
      for (uint64_t bits = filter->allowed[w]; bits != 0; bits &= bits - 1) {
        const uint32_t s = static_cast<uint32_t>(w * 64 + static_cast<size_t>(std::countr_zero(bits)));
        if (s < cap) consider(s);
      }
    }
  } else {
    for (uint32_t s = 0; s < cap; ++s) consider(s);
  }
  flush();
  std::sort_heap(st.results_.begin(), st.results_.end());
}

// The search proper, for admit() (and the filter it reads, when given). Pre: the query is
// prepared in st.query_, codes_mutex held shared, st.frees_ read.
template <class Pool>
template <class Admit>
inline void BasicCodedHnsw<Pool>::search_admitted(const float* q, const CodedHnswSearchOptions& opt,
                                                  CodedHnswSearchState& st, std::vector<vector::Neighbor>* out,
                                                  const Admit& admit, const vector::IdFilter* filter) const {
  (void)q;
  const float* query = st.query_.data();
  const uint32_t depth = std::max(opt.rerank, opt.k);  // a scan's candidates scored exactly
  const uint32_t ef = std::max(opt.ef, opt.k);
  ++st.stats_.searches;
  model_->prepare(st.query_.data(), *st.query_state_);
  const uint32_t cap = capacity();
  bool scanned = false;
  if (filter != nullptr) {
    const uint64_t allowed = filter->count_below(cap);
    const uint64_t live = std::max<uint64_t>(size(), 1);
    const bool scan = opt.exact_scan_below != 0 ? allowed <= opt.exact_scan_below
                                                : allowed * allowed <= CodedHnswSearchOptions::kScanC * ef * live;
    if (scan) {
      coded_detail::begin_epoch(st.visited_, st.expanded_, st.epoch_, cap);
      st.results_.clear();
      st.scored_.clear();
      scan_codes(depth, admit, filter, st);
      scanned = true;
    }
  }
  if (!scanned) {
    beam(query, ef, opt.prefetch ? std::max<uint32_t>(opt.prefetch_width, 1) : 0, opt.batched, admit, st, opt.entries,
         false);
    // Fewer than k admissible nodes found: the rest of them, by a scan of their codes.
    if (st.results_.size() < opt.k) scan_codes(depth, admit, filter, st);
  }
  // The expanded nodes have exact distances (st.scored_); of the best `depth` by estimate,
  // those a scan found (not expanded) are read as one group and scored.
  const uint32_t r = std::min<uint32_t>(depth, static_cast<uint32_t>(st.results_.size()));
  st.fresh_.clear();
  for (uint32_t i = 0; i < r; ++i) {
    const uint32_t id = st.results_[i].id;
    if (st.expanded_[id] != st.epoch_) st.fresh_.push_back(id);
  }
  if (!st.fresh_.empty()) {
    rerank(query, st.fresh_.data(), static_cast<uint32_t>(st.fresh_.size()), st, true);
    for (const vector::Neighbor& e : st.exact_) st.scored_.push_back(vector::Neighbor{e.distance, st.fresh_[e.id]});
  }
  const size_t k = std::min<size_t>(opt.k, st.scored_.size());
  std::partial_sort(st.scored_.begin(), st.scored_.begin() + static_cast<std::ptrdiff_t>(k), st.scored_.end());
  out->assign(st.scored_.begin(), st.scored_.begin() + static_cast<std::ptrdiff_t>(k));
}

template <class Pool>
inline void BasicCodedHnsw<Pool>::search(const float* q, const CodedHnswSearchOptions& opt, CodedHnswSearchState& st,
                                         std::vector<vector::Neighbor>* out) const {
  if (opt.k == 0) coded_detail::invalid("search: k is 0");
  if (opt.rerank == 0) coded_detail::invalid("search: rerank is 0 (at least the k best must be re-ranked)");
  if (st.owner_ != shared_.get()) coded_detail::invalid("search: the state was made for another index");
  prepare_vector(q, st.query_.data(), "search");
  const auto lock = lock_codes();
  st.frees_ = shared_->frees.load(std::memory_order_acquire);
  st.pinned_ = pinned_for_search();
  if (tombstones() == 0) {  // a remove after this read may be returned, as by a search that began before it
    search_admitted(q, opt, st, out, coded_detail::AdmitAll{}, nullptr);
  } else {
    search_admitted(q, opt, st, out, [](uint32_t, uint8_t state) { return live_state(state); }, nullptr);
  }
}

template <class Pool>
inline void BasicCodedHnsw<Pool>::search(const float* q, const CodedHnswSearchOptions& opt, CodedHnswSearchState& st,
                                         std::vector<vector::Neighbor>* out, const vector::IdFilter& filter) const {
  if (opt.k == 0) coded_detail::invalid("search: k is 0");
  if (opt.rerank == 0) coded_detail::invalid("search: rerank is 0 (at least the k best must be re-ranked)");
  if (st.owner_ != shared_.get()) coded_detail::invalid("search: the state was made for another index");
  prepare_vector(q, st.query_.data(), "search");
  const auto lock = lock_codes();
  st.frees_ = shared_->frees.load(std::memory_order_acquire);
  st.pinned_ = pinned_for_search();
  search_admitted(q, opt, st, out,
                  [&filter](uint32_t s, uint8_t state) { return live_state(state) && filter.allows(s); }, &filter);
}

// --- check_structure -----------------------------------------------------------------------------

template <class Pool>
inline void BasicCodedHnsw<Pool>::check_structure() const {
  auto fail = [](const std::string& what) { throw std::logic_error("coded hnsw: " + what); };
  const auto lock = lock_codes();
  const uint32_t cap = capacity();
  const uint32_t max = 2 * params_.M;
  uint32_t present = 0;
  for (uint32_t s = 0; s < cap; ++s) {
    const uint8_t state = state_of(s);
    if (state == kClaimed) fail("slot " + std::to_string(s) + " claimed at quiescence");
    bool bit, removed_bit;
    {
      SharedGuard g = pool_->pin_shared(PageId(codes_space_, layout_.code_block(s)));
      check_header(g.data(), g.page_id(), CodedPageHeader::kCodes);
      if (s % layout_.per_code_page == 0 &&
          io::crc32c(g.data() + CodedLayout::kHeader, layout_.code_payload_bytes()) != header_of(g.data()).crc) {
        fail("code page CRC at slot " + std::to_string(s));
      }
      uint64_t word, removed_word;
      std::memcpy(&word, g.data() + layout_.presence_word(s), 8);
      std::memcpy(&removed_word, g.data() + layout_.removed_word(s), 8);
      bit = (word & CodedLayout::bit_of(s, layout_.per_code_page)) != 0;
      removed_bit = (removed_word & CodedLayout::bit_of(s, layout_.per_code_page)) != 0;
      if (bit && std::memcmp(g.data() + layout_.code_offset(s), code_of(s), layout_.code_bytes) != 0) {
        fail("resident code of slot " + std::to_string(s) + " differs from its page");
      }
    }
    if (bit != (state >= kCoded)) fail("presence bit of slot " + std::to_string(s) + " disagrees with its state");
    if (removed_bit != (state == kRemoved)) fail("removed bit of slot " + std::to_string(s) + " disagrees with its state");
    uint32_t row_head[2];
    std::vector<uint32_t> ids(max);
    uint16_t head[2];
    {
      SharedGuard g = pool_->pin_shared(PageId(graph_space_, layout_.node_block(s)));
      check_header(g.data(), g.page_id(), CodedPageHeader::kNodes);
      std::memcpy(row_head, g.data() + layout_.vec_offset(s), 8);
      std::memcpy(head, g.data() + layout_.node_offset(s), 4);
      std::memcpy(ids.data(), g.data() + layout_.node_offset(s) + 4, size_t{max} * 4);
    }
    if ((row_head[0] == 1) != bit) fail("vector row of slot " + std::to_string(s) + " disagrees with its presence bit");
    if (bit && row_head[1] != io::crc32c(code_of(s), layout_.code_bytes)) {
      fail("vector row of slot " + std::to_string(s) + " disagrees with its code");
    }
    if (head[0] > max) fail("link count of slot " + std::to_string(s));
    if (!bit && head[0] != 0) fail("absent slot " + std::to_string(s) + " has links");
    ids.resize(head[0]);
    for (uint32_t n : ids) {
      if (n >= cap || state_of(n) < kCoded) fail("slot " + std::to_string(s) + " links an absent slot");
      if (n == s) fail("slot " + std::to_string(s) + " links itself");
    }
    std::sort(ids.begin(), ids.end());
    if (std::adjacent_find(ids.begin(), ids.end()) != ids.end()) fail("slot " + std::to_string(s) + " links twice");
    if (bit) ++present;
  }
  const uint32_t added = shared_->size.load(std::memory_order_relaxed);
  if (present < added) fail("size " + std::to_string(added) + " > present slots " + std::to_string(present));
  uint32_t removed_slots = 0;
  for (uint32_t s = 0; s < cap; ++s) removed_slots += state_of(s) == kRemoved ? 1 : 0;
  if (removed_slots != tombstones()) fail("tombstone count " + std::to_string(tombstones()) + " != removed slots " + std::to_string(removed_slots));
  const uint32_t entry = shared_->entry.load(std::memory_order_relaxed);
  if (entry != CodedMeta::kNone && (entry >= cap || state_of(entry) < kCoded)) {
    fail("entry " + std::to_string(entry) + " is absent");
  }
  // The entry sample: the sampled complete slots (and sampled removed ones consolidate() has
  // not freed yet), each once, each copy equal to its slot's resident code.
  {
    const auto entries = lock_entries();
    const std::vector<uint32_t>& sample = shared_->entries;
    const size_t cb = layout_.code_bytes;
    if (shared_->entry_codes.size() != sample.size() * cb) fail("entry sample and its codes differ in length");
    std::vector<uint8_t> seen(cap, 0);
    for (size_t i = 0; i < sample.size(); ++i) {
      const uint32_t s = sample[i];
      if (s >= cap || state_of(s) < kComplete || !sampled(s) || seen[s]++) fail("entry sample holds slot " + std::to_string(s));
      if (std::memcmp(shared_->entry_codes.data() + i * cb, code_of(s), cb) != 0) {
        fail("entry sample's code of slot " + std::to_string(s) + " differs from its resident code");
      }
    }
    for (uint32_t s = 0; s < cap; ++s) {
      if (state_of(s) == kComplete && sampled(s) && !seen[s]) fail("sampled slot " + std::to_string(s) + " is no entry");
    }
    // Its cells (entry_cells.h): a cell per entry, the sizes their counts, a leader per cell.
    if (const coded_detail::EntryCells* cells = shared_->cells.get()) {
      if (cells->cell_of.size() != sample.size()) fail("entry cells and the sample differ in length");
      if (cells->cells() == 0 || cells->dim != params_.dim || cells->leaders.size() != size_t{cells->cells()} * cells->dim) {
        fail("entry cells' leaders");
      }
      std::vector<uint32_t> count(cells->cells(), 0);
      for (const uint16_t c : cells->cell_of) {
        if (c >= cells->cells()) fail("entry cell " + std::to_string(c) + " past the cells");
        ++count[c];
      }
      if (count != cells->sizes) fail("entry cells' sizes differ from their entries");
      if (cells->sorted > sample.size() || cells->start.size() != size_t{cells->cells()} + 1 ||
          cells->start[cells->cells()] != cells->sorted) {
        fail("entry cells' ordered part");
      }
      for (uint32_t c = 0; c < cells->cells(); ++c) {
        if (cells->start[c] > cells->start[c + 1]) fail("entry cells' runs out of order");
        for (size_t i = cells->start[c]; i < cells->start[c + 1]; ++i) {
          if (cells->cell_of[i] != c) fail("entry " + std::to_string(i) + " out of its cell's run");
        }
      }
    }
  }
  // Every node has a link while the graph has another node (not after removals: a node
  // whose only neighbours were removed keeps an empty list when no live node is left).
  if (present > 1 && added == present && removed_slots == 0) {
    for (uint32_t s = 0; s < cap; ++s) {
      if (state_of(s) != kComplete) continue;
      SharedGuard g = pool_->pin_shared(PageId(graph_space_, layout_.node_block(s)));
      uint16_t head[2];
      std::memcpy(head, g.data() + layout_.node_offset(s), 4);
      if (head[0] == 0) fail("slot " + std::to_string(s) + " has no links");
    }
  }
}

}  // namespace calico::index
