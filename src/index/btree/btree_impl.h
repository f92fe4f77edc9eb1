// BasicBTree<Pool>'s member definitions: the declaration and its contract (concurrency,
// index skipping, corrupt pages, errors) are in include/calico/index/btree.h, the node
// formats in btree_node.h. Included at the end of calico/index/btree.h (through
// calico/detail/btree_impl.h); every definition is inline, as if written in the class.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/checks.h"
#include "calico/error.h"
#include "calico/index/btree.h"
#include "index/btree/btree_node.h"
#include "index/corrupt_page.h"

namespace calico::index {

template <class Pool>
inline auto BasicBTree<Pool>::create(Pool& pool, std::string_view space_name) -> BasicBTree {
  SpaceId space = pool.create_space(space_name);
  auto meta = pool.allocate(space);
  auto root = pool.allocate(space);
  CALICO_CHECK(meta.page_id().block() == 0 && root.page_id().block() == 1);
  Node::build(root.data(), pool.usable_page_size(), NodeType::kLeaf, 0, nullptr, nullptr, {}, 0);
  root.mark_dirty();
  MetaPage m{kBTreeMagic, kFormatVersion, 1, 1, 0, 0};
  std::memcpy(meta.data(), &m, sizeof m);
  meta.mark_dirty();
  return BasicBTree(pool, space, 0);
}

template <class Pool>
inline auto BasicBTree<Pool>::open(Pool& pool, std::string_view space_name) -> BasicBTree {
  SpaceId space = pool.open_space(space_name);
  if (pool.space_blocks(space) < 2) {
    throw Error(ErrorCode::kInvalidArgument,
                "space '" + std::string(space_name) + "' is not a B-tree (fewer than 2 blocks)");
  }
  MetaPage m;
  {
    auto g = pool.pin_shared(PageId(space, 0));
    std::memcpy(&m, g.data(), sizeof m);
  }
  if (m.magic != kBTreeMagic || m.format_version != kFormatVersion || m.root == 0 ||
      m.root >= pool.space_blocks(space) || m.height == 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "space '" + std::string(space_name) + "' is not a B-tree (bad metadata page)",
                PageId(space, 0));
  }
  return BasicBTree(pool, space, m.entry_count);
}

template <class Pool>
inline BasicBTree<Pool>::BasicBTree(BasicBTree&& o) noexcept
    : pool_(o.pool_), space_(o.space_), count_(std::move(o.count_)), meta_frame_(std::move(o.meta_frame_)) {}

template <class Pool>
inline BasicBTree<Pool>::~BasicBTree() {
  if (!count_) return;
  try {
    sync_metadata();
  } catch (const std::exception&) {
    // The count is advisory (check() recounts); a pool error here must not escape.
  }
}

template <class Pool>
inline SpaceId BasicBTree<Pool>::space() const { return space_; }

template <class Pool>
inline uint64_t BasicBTree<Pool>::size() const { return count_->load(std::memory_order_relaxed); }

template <class Pool>
inline bool BasicBTree<Pool>::insert(std::string_view key, std::string_view value, RecordHint* where) {
  check_entry(key, value);
  return write(key, value, /*overwrite=*/false, where);
}

template <class Pool>
inline void BasicBTree<Pool>::upsert(std::string_view key, std::string_view value) {
  check_entry(key, value);
  write(key, value, /*overwrite=*/true, nullptr);
}

template <class Pool>
inline bool BasicBTree<Pool>::upsert(std::string_view key, std::string_view value, RecordHint* where) {
  check_entry(key, value);
  return write(key, value, /*overwrite=*/true, where);
}

template <class Pool>
inline bool BasicBTree<Pool>::lookup(std::string_view key, std::string* out) {
  check_key(key);
  alignas(8) std::byte value[kMaxValueBytes];
  for (int restarts = 0;; bump(&restarts)) {
    RacyResult r;
    if (!descend<Mode::kValue>(key, false, 0, nullptr, [](PageId, FrameId) {}, value, &r)) continue;
    if (r.found) out->assign(reinterpret_cast<const char*>(value), r.value_len);
    return r.found;
  }
}

template <class Pool>
template <class Fn>
inline bool BasicBTree<Pool>::lookup(std::string_view key, Fn&& fn) {
  std::string v;
  if (!lookup(key, &v)) return false;
  fn(std::string_view(v));
  return true;
}

template <class Pool>
template <class Fn>
inline bool BasicBTree<Pool>::update(std::string_view key, Fn&& fn, RecordHint* where) {
  check_key(key);
  return update_descending(key, fn, where, nullptr);
}

template <class Pool>
inline bool BasicBTree<Pool>::lookup_hinted(std::string_view key, RecordHint* hint, std::string* out, HintStats* stats,
                                            FrameId* frame) {
  check_key(key);
  HintStats unused;
  HintStats& st = stats ? *stats : unused;
  alignas(8) std::byte value[kMaxValueBytes];
  RacyResult r;
  if (probe_hint(key, *hint, frame, value, &r, &st)) {
    if (r.found) out->assign(reinterpret_cast<const char*>(value), r.value_len);
    *hint = r.found ? RecordHint{hint->block, r.slot} : RecordHint{};
    return r.found;
  }
  ++st.fallbacks;
  for (int restarts = 0;; bump(&restarts)) {
    Ref leaf;
    if (!descend<Mode::kValue>(key, false, 0, nullptr, [&](PageId pid, FrameId f) { leaf = Ref{pid, f}; }, value,
                               &r)) {
      continue;
    }
    if (r.found) out->assign(reinterpret_cast<const char*>(value), r.value_len);
    *hint = r.found ? RecordHint{leaf.pid.block(), r.slot} : RecordHint{};
    if (frame) *frame = leaf.frame;
    return r.found;
  }
}

template <class Pool>
template <class Fn>
inline bool BasicBTree<Pool>::update_hinted(std::string_view key, RecordHint* hint, Fn&& fn, HintStats* stats,
                                            FrameId* frame) {
  check_key(key);
  HintStats unused;
  HintStats& st = stats ? *stats : unused;
  if (std::optional<ExclusiveGuard> g = latch_hinted(key, *hint, frame, &st)) {
    Node n(g->data(), usable());
    const size_t prefix_len = n.h().prefix_len;
    size_t i = hint->slot;
    const bool exact = i < n.count() && n.suffix(i) == key.substr(prefix_len);  // covers: key has the prefix
    bool found = exact;
    if (!exact) i = n.lower_bound(key, false, &found);
    ++(exact ? st.hits : st.slot_moved);
    *hint = found ? hint_of(g->page_id(), i) : RecordHint{};
    if (!found) return false;
    fn(n.mutable_value(i));
    g->mark_dirty();
    return true;
  }
  ++st.fallbacks;
  return update_descending(key, fn, hint, frame);
}

template <class Pool>
inline bool BasicBTree<Pool>::remove(std::string_view key) {
  check_key(key);
  for (int restarts = 0;; bump(&restarts)) {
    auto g = latch_leaf(key);
    if (!g) continue;
    Node n(g->data(), usable());
    bool found;
    size_t i = n.lower_bound(key, false, &found);
    if (!found) return false;
    n.remove_at(i);
    g->mark_dirty();
    count_->fetch_sub(1, std::memory_order_relaxed);
    bool underfull = n.used_bytes() < usable() / 4;
    g->release();
    if (underfull) merge(key);
    return true;
  }
}

template <class Pool>
template <class Fn>
inline void BasicBTree<Pool>::scan(std::string_view start, Fn&& fn) {
  std::string pos(start);
  bool after = false;
  // The current leaf's validated snapshot, private to this scan: fn may run other reads
  // on this thread, which reuse the thread's snapshot buffer. One page copy per leaf, and
  // fn's views point into it (no copy per entry).
  std::vector<std::byte> leaf_copy;
  size_t from = 0;          // the first slot >= pos in leaf_copy
  std::string key;          // the full key of the entry passed to fn (prefix + suffix)
  std::optional<Ref> next;  // right sibling of the last leaf, to try before descending
  PageId last;              // the last leaf read
  int restarts = 0;
  for (;;) {
    bool has_upper = false;
    std::string upper;
    BlockId link = 0;
    FrameId link_hint = kInvalidFrame;
    PageId leaf_pid;
    auto take = [&](const Node& leaf, PageId pid) {
      leaf_copy.assign(leaf.data(), leaf.data() + leaf.size());
      bool found;
      from = leaf.lower_bound(pos, after, &found);
      has_upper = !leaf.upper_infinite();
      upper.assign(leaf.upper_fence());
      link = leaf.link();
      link_hint = leaf.hint_at(leaf.count());
      leaf_pid = pid;
    };
    bool ok = false;
    if (next) ok = read_sibling(last, *next, pos, take);
    if (!ok) ok = descend<Mode::kSnapshot>(pos, after, 0, nullptr, take);
    if (!ok) {
      bump(&restarts);
      next.reset();
      continue;
    }
    const Node leaf(leaf_copy.data(), leaf_copy.size());
    for (size_t i = from; i < leaf.count(); ++i) {
      key.assign(leaf.prefix());
      key.append(leaf.suffix(i));
      if (!fn(std::string_view(key), leaf.value(i))) return;
    }
    if (!has_upper) return;
    pos = std::move(upper);
    after = true;
    next.reset();
    last = leaf_pid;
    if (link != 0) {
      if (link >= pool_->space_blocks(space_)) {
        corrupt(leaf_pid, "leaf names right sibling block " + std::to_string(link) + " past the space");
      }
      next = Ref{PageId(space_, link), link_hint};
    }
  }
}

template <class Pool>
template <class It>
inline void BasicBTree<Pool>::bulk_load(It first, It last) {
  std::string_view prev;
  bool have_prev = false;
  for (It it = first; it != last; ++it) {
    std::string_view k(it->first), v(it->second);
    check_entry(k, v);
    if (have_prev && !(prev < k)) {
      throw Error(ErrorCode::kInvalidArgument, "bulk_load: keys are not strictly increasing");
    }
    prev = k;
    have_prev = true;
  }
  auto gm = pool_->pin_exclusive(meta_pid());
  MetaPage m;
  std::memcpy(&m, gm.data(), sizeof m);
  check_meta(m);
  if (m.height != 1 || size() != 0) {
    throw Error(ErrorCode::kInvalidArgument, "bulk_load: the tree is not empty");
  }
  {
    auto gr = pool_->pin_shared(PageId(space_, m.root));
    if (Node(const_cast<std::byte*>(gr.data()), usable()).count() != 0) {
      throw Error(ErrorCode::kInvalidArgument, "bulk_load: the tree is not empty");
    }
  }
  if (first == last) return;
  const size_t budget = static_cast<size_t>(kBulkFill * static_cast<double>(usable()));
  // Level 0: leaves. Each built node is described by (upper fence or +inf, block).
  struct Built {
    std::string upper;
    bool upper_inf;
    BlockId block;
  };
  std::vector<Built> level_nodes;
  std::vector<NodeEntry> entries;
  std::string lower;
  bool lower_inf = true;
  // Leaves are written once their right sibling is known, so the previous one is pending.
  std::vector<NodeEntry> pend_entries;
  std::string pend_lower;
  bool pend_lower_inf = true;
  std::optional<decltype(pool_->allocate(space_))> pend_guard;
  bool reuse_root = true;
  uint64_t n_entries = 0;
  auto new_page = [&]() {
    if (reuse_root) {
      reuse_root = false;
      return pool_->pin_exclusive(PageId(space_, m.root));
    }
    return pool_->allocate(space_);
  };
  auto emit_leaf = [&](bool last_leaf) {
    auto g = new_page();
    std::string up = entries.back().key;
    if (pend_guard) {
      Node::build(pend_guard->data(), usable(), NodeType::kLeaf, 0,
                     pend_lower_inf ? nullptr : &pend_lower, &level_nodes.back().upper,
                     pend_entries, g.page_id().block());
      pend_guard->mark_dirty();
      pend_guard.reset();
    }
    level_nodes.push_back({up, last_leaf, g.page_id().block()});
    pend_entries = std::move(entries);
    entries.clear();
    pend_lower = lower;
    pend_lower_inf = lower_inf;
    lower = up;
    lower_inf = false;
    pend_guard.emplace(std::move(g));
  };
  size_t bytes = Node::kHeader + 2 * kMaxKeyBytes;
  for (It it = first; it != last; ++it) {
    std::string_view k(it->first), v(it->second);
    size_t add = kSlotBytes + k.size() + v.size();
    if (!entries.empty() && bytes + add > budget) {
      emit_leaf(false);
      bytes = Node::kHeader + 2 * kMaxKeyBytes;
    }
    entries.push_back({std::string(k), std::string(v)});
    bytes += add;
    ++n_entries;
  }
  emit_leaf(true);
  level_nodes.back().upper_inf = true;
  Node::build(pend_guard->data(), usable(), NodeType::kLeaf, 0,
                 pend_lower_inf ? nullptr : &pend_lower, nullptr, pend_entries, 0);
  pend_guard->mark_dirty();
  pend_guard.reset();
  // Inner levels until one node remains.
  uint32_t height = 1;
  while (level_nodes.size() > 1) {
    std::vector<Built> parents;
    size_t i = 0;
    std::string plower;
    bool plower_inf = true;
    while (i < level_nodes.size()) {
      // Children [i, j): slots for all but the last, which becomes the upper child.
      size_t b = Node::kHeader + 2 * kMaxKeyBytes;
      size_t j = i + 1;
      while (j < level_nodes.size() &&
             b + kSlotBytes + level_nodes[j - 1].upper.size() + Node::kChildBytes <= budget) {
        b += kSlotBytes + level_nodes[j - 1].upper.size() + Node::kChildBytes;
        ++j;
      }
      std::vector<NodeEntry> es;
      for (size_t c = i; c + 1 < j; ++c) {
        es.push_back({level_nodes[c].upper, encode_child_ref<kHints>(level_nodes[c].block)});
      }
      const Built& last_child = level_nodes[j - 1];
      auto g = pool_->allocate(space_);
      Node::build(g.data(), usable(), NodeType::kInner, static_cast<int>(height),
                     plower_inf ? nullptr : &plower, last_child.upper_inf ? nullptr : &last_child.upper,
                     es, last_child.block);
      g.mark_dirty();
      parents.push_back({last_child.upper, last_child.upper_inf, g.page_id().block()});
      plower = last_child.upper;
      plower_inf = false;
      i = j;
    }
    level_nodes = std::move(parents);
    ++height;
  }
  m.root = level_nodes[0].block;
  m.height = height;
  m.entry_count = n_entries;
  std::memcpy(gm.data(), &m, sizeof m);
  gm.mark_dirty();
  count_->store(n_entries, std::memory_order_relaxed);
}

template <class Pool>
inline void BasicBTree<Pool>::sync_metadata() {
  auto g = pool_->pin_exclusive(meta_pid());
  MetaPage m;
  std::memcpy(&m, g.data(), sizeof m);
  m.entry_count = size();
  std::memcpy(g.data(), &m, sizeof m);
  g.mark_dirty();
}

template <class Pool>
inline auto BasicBTree<Pool>::check() const -> CheckStats {
  CheckStats st;
  MetaPage m;
  {
    auto g = pool_->pin_shared(meta_pid());
    std::memcpy(&m, g.data(), sizeof m);
  }
  if (m.magic != kBTreeMagic) fail("metadata page: bad magic");
  uint64_t blocks = pool_->space_blocks(space_);
  std::vector<uint8_t> seen(blocks, 0);
  seen[0] = 1;
  std::vector<BlockId> leaves;
  uint64_t entries = 0;
  check_node(m.root, static_cast<int>(m.height) - 1, nullptr, nullptr, &seen, &leaves, &entries);
  // Sibling chain.
  for (size_t i = 0; i < leaves.size(); ++i) {
    std::vector<std::byte> buf = copy_shared(leaves[i]);
    Node n(buf.data(), usable());
    BlockId expect = i + 1 < leaves.size() ? leaves[i + 1] : 0;
    if (n.link() != expect) {
      fail("leaf " + std::to_string(leaves[i]) + ": right sibling " + std::to_string(n.link()) +
           ", expected " + std::to_string(expect));
    }
  }
  for (uint64_t b = 1; b < blocks; ++b) {
    if (seen[b]) continue;
    std::vector<std::byte> buf = copy_shared(static_cast<BlockId>(b));
    if (Node(buf.data(), usable()).type() != NodeType::kFree) {
      fail("block " + std::to_string(b) + " is a node but unreachable");
    }
    ++st.free_pages;
  }
  if (entries != size()) {
    fail("entry count: tree holds " + std::to_string(entries) + ", size() says " +
         std::to_string(size()));
  }
  st.height = m.height;
  st.leaves = leaves.size();
  st.inner_nodes = blocks - 1 - st.free_pages - st.leaves;
  st.entries = entries;
  return st;
}

template <class Pool>
inline BasicBTree<Pool>::BasicBTree(Pool& pool, SpaceId space, uint64_t count)
    : pool_(&pool), space_(space), count_(std::make_unique<std::atomic<uint64_t>>(count)) {
  if constexpr (kHints) meta_frame_ = std::make_unique<std::atomic<FrameId>>(kInvalidFrame);
}

template <class Pool>
inline size_t BasicBTree<Pool>::usable() const { return pool_->usable_page_size(); }

template <class Pool>
inline PageId BasicBTree<Pool>::meta_pid() const { return PageId(space_, 0); }

template <class Pool>
inline void BasicBTree<Pool>::check_key(std::string_view key) {
  if (key.empty() || key.size() > kMaxKeyBytes) {
    throw Error(ErrorCode::kInvalidArgument,
                "B-tree key of " + std::to_string(key.size()) + " bytes: keys must be 1.." +
                    std::to_string(kMaxKeyBytes) + " bytes");
  }
}

template <class Pool>
inline void BasicBTree<Pool>::check_entry(std::string_view key, std::string_view value) {
  check_key(key);
  if (value.size() > kMaxValueBytes) {
    throw Error(ErrorCode::kInvalidArgument,
                "B-tree value of " + std::to_string(value.size()) + " bytes: values must be 0.." +
                    std::to_string(kMaxValueBytes) + " bytes");
  }
}

template <class Pool>
inline void BasicBTree<Pool>::corrupt(PageId pid, const std::string& what) { corrupt_page("B-tree", what, pid); }

template <class Pool>
inline void BasicBTree<Pool>::malformed(PageId pid, const Node& n) {
  corrupt(pid, "page is not a well-formed node (type " + std::to_string(static_cast<int>(n.type())) + ", level " +
                   std::to_string(n.level()) + ", " + std::to_string(n.count()) + " slots)");
}

// A latched or pinned page: a zeroed (kFree) page or a well-formed node.
template <class Pool>
inline void BasicBTree<Pool>::check_latched(PageId pid, const Node& n) {
  if (n.type() != NodeType::kFree && !n.well_formed()) malformed(pid, n);
}

// Before a split or merge rebuilds n from its keys. Pre: n.well_formed().
template <class Pool>
inline void BasicBTree<Pool>::check_ordered(PageId pid, const Node& n) {
  if (!n.ordered()) corrupt(pid, "node's keys are not strictly increasing inside its fences");
}

// The metadata page, as read validated or under a latch.
template <class Pool>
inline void BasicBTree<Pool>::check_meta(const MetaPage& m) const {
  if (m.magic != kBTreeMagic || m.format_version != kFormatVersion || m.root == 0 || m.height == 0 ||
      m.height > static_cast<uint32_t>(kMaxHeight)) {
    corrupt(meta_pid(), "metadata page (root " + std::to_string(m.root) + ", height " + std::to_string(m.height) +
                            ") is malformed");
  }
}

template <class Pool>
inline void BasicBTree<Pool>::bump(int* restarts) {
  if (++*restarts > kMaxRestarts) {
    throw Error(ErrorCode::kRestartLimit,
                "B-tree operation restarted " + std::to_string(kMaxRestarts) +
                    " times (corrupt tree or livelock)");
  }
}

template <class Pool>
inline std::vector<std::byte>& BasicBTree<Pool>::snapshot_buffer(size_t bytes) {
  thread_local std::vector<std::byte> buf;
  if (buf.size() < bytes) buf.resize(bytes);
  return buf;
}

// Pool accesses through a reference: hinted when the pool has frame hints (ref->frame is
// then the frame actually used), else the plain ones (ref->frame untouched).
template <class Pool>
inline OptimisticRead BasicBTree<Pool>::read_ref(Ref* ref) {
  if constexpr (kHints) {
    return pool_->read_optimistic_hinted(ref->pid, &ref->frame);
  } else {
    return pool_->read_optimistic(ref->pid);
  }
}

template <class Pool>
inline ExclusiveGuard BasicBTree<Pool>::pin_exclusive_ref(Ref* ref) {
  if constexpr (kHints) {
    return pool_->pin_exclusive_hinted(ref->pid, &ref->frame);
  } else {
    return pool_->pin_exclusive(ref->pid);
  }
}

template <class Pool>
inline FrameId BasicBTree<Pool>::cached_meta_frame() const {
  if constexpr (kHints) {
    return meta_frame_->load(std::memory_order_relaxed);
  } else {
    return kInvalidFrame;
  }
}

// Opportunistic repairs (frame hints; see the header comment). Each latches the page that
// holds the hint only if that succeeds at once, checks under the latch that the hint still
// belongs to the same reference, and writes it without marking the page dirty.
// The hint of `child` in `holder`: the metadata page (the root's hint) or the inner node
// whose search for key (with `after`) led to child.
template <class Pool>
inline void BasicBTree<Pool>::repair_child_hint(PageId holder, std::string_view key, bool after,
                                                const Ref& child) requires Pool::kFrameHints {
  const size_t bytes = usable();
  pool_->repair_hint(holder, [&](std::byte* page) {
    if (holder == meta_pid()) {
      MetaPage m;
      std::memcpy(&m, page, sizeof m);
      if (m.magic != kBTreeMagic || m.root != child.pid.block()) return false;
      std::memcpy(page + offsetof(MetaPage, root_hint), &child.frame, sizeof child.frame);
      return true;
    }
    Node n(page, bytes);
    if (!n.well_formed() || !n.is_inner() || !n.covers(key, after)) return false;
    bool found;
    return n.set_hint_if_child(n.lower_bound(key, after, &found), child.pid.block(), child.frame);
  });
}

// The hint of leaf's right-sibling link.
template <class Pool>
inline void BasicBTree<Pool>::repair_link_hint(PageId leaf, const Ref& sibling) requires Pool::kFrameHints {
  pool_->repair_hint(leaf, [&](std::byte* page) {
    Node n(page, usable());
    if (!n.is_leaf() || n.link() != sibling.pid.block()) return false;
    n.set_link_hint(sibling.frame);
    return true;
  });
}

template <class Pool>
template <typename BasicBTree<Pool>::Mode mode, class Fn>
inline bool BasicBTree<Pool>::descend(std::string_view key, bool after, int stop_level, std::vector<PageId>* path,
                                      Fn&& at, std::byte* value_buf, RacyResult* res) {
  const size_t bytes = usable();
  if (path) path->clear();
  const FrameId meta_hint = cached_meta_frame();
  Ref parent_ref{meta_pid(), meta_hint};
  OptimisticRead parent = read_ref(&parent_ref);
  if constexpr (kHints) {
    if (parent_ref.frame != meta_hint) meta_frame_->store(parent_ref.frame, std::memory_order_relaxed);
  }
  alignas(8) std::byte meta_copy[sizeof(MetaPage)];
  copy_page_racy(meta_copy, parent.data, sizeof meta_copy);
  if (!Pool::validate(parent)) return false;
  MetaPage m;
  std::memcpy(&m, meta_copy, sizeof m);
  check_meta(m);  // validated bytes
  Ref ref{PageId(space_, m.root), kHints ? m.root_hint : kInvalidFrame};
  int expect_level = static_cast<int>(m.height) - 1;  // levels decrease by one per step
  RacyResult local;
  RacyResult* r = res ? res : &local;
  for (int depth = 0; depth < kMaxHeight; ++depth) {
    const FrameId hint = ref.frame;
    OptimisticRead cur = read_child(&ref, parent_ref.pid);
    if (!Pool::validate(parent)) return false;  // the pointer we followed is still current
    if constexpr (kHints) {
      if (ref.frame != hint) repair_child_hint(parent_ref.pid, key, after, ref);
    }
    *r = RacyResult{};
    RacyStep step = btree_racy_step<kHints>(cur.data, bytes, key, after, stop_level,
                                            mode == Mode::kValue ? value_buf : nullptr, r);
    if (!Pool::validate(cur)) return false;  // only now is `step` (and r) meaningful
    if (step == RacyStep::kRestart || r->level != expect_level) {
      // Validated bytes that are not the expected node: corrupt, or the tree changed.
      confirm_corrupt(parent_ref.pid, ref.pid, key, after, stop_level);
      return false;
    }
    if (path) path->push_back(ref.pid);
    if (step == RacyStep::kTarget) {
      if constexpr (mode == Mode::kSnapshot) {
        std::vector<std::byte>& buf = snapshot_buffer(bytes);
        copy_page_racy(buf.data(), cur.data, bytes);
        if (!Pool::validate(cur)) return false;
        Node n(buf.data(), bytes);
        if (!n.well_formed()) malformed(ref.pid, n);  // validated bytes
        if (!n.covers(key, after) || n.level() != stop_level) return false;
        at(n, ref.pid);
      } else {
        at(ref.pid, ref.frame);
      }
      return true;
    }
    if (r->child == 0) corrupt(ref.pid, "inner node names block 0 (the metadata page) as a child");
    parent = cur;
    parent_ref = ref;
    ref = Ref{PageId(space_, r->child), r->hint};
    --expect_level;
  }
  return false;
}

// A node read through a validated reference (held by `holder`: the metadata page or an
// inner node) failed its step: malformed, another level than its parent's minus one, or
// fences not covering key. Rechecks under shared pins, holder first (the latch order;
// nothing else is held): when the holder still leads to `child` for key and the pinned
// child still fails, throws kCorruptPage naming it (or naming the holder when that is
// malformed); otherwise returns, and the caller restarts (the tree changed meanwhile).
template <class Pool>
inline void BasicBTree<Pool>::confirm_corrupt(PageId holder, PageId child, std::string_view key, bool after,
                                              int stop_level) {
  const size_t bytes = usable();
  // Levels decrease by one per step, so no node is its own child (and a second pin of the
  // holder could wait behind a writer queued on it).
  if (holder == child) corrupt(holder, "inner node names itself as a child");
  SharedGuard gh = pool_->pin_shared(holder);
  int expect;
  if (holder == meta_pid()) {
    MetaPage m;
    std::memcpy(&m, gh.data(), sizeof m);
    check_meta(m);
    if (m.root != child.block()) return;
    expect = static_cast<int>(m.height) - 1;
  } else {
    Node h(const_cast<std::byte*>(gh.data()), bytes);
    if (!h.well_formed()) malformed(holder, h);
    if (!h.is_inner() || h.level() <= stop_level || !h.covers(key, after)) return;
    if (h.child_for(key, after) != child.block()) return;
    expect = h.level() - 1;
  }
  SharedGuard gc = pool_->pin_shared(child);
  Node c(const_cast<std::byte*>(gc.data()), bytes);
  if (!c.well_formed()) malformed(child, c);
  if (c.level() != expect) {
    corrupt(child, "node has level " + std::to_string(c.level()) + " where its parent (page " +
                       std::to_string(holder.space()) + ":" + std::to_string(holder.block()) + ") expects " +
                       std::to_string(expect));
  }
  if (!c.covers(key, after)) {
    corrupt(child, "node's fences do not cover the keys its parent (page " + std::to_string(holder.space()) + ":" +
                       std::to_string(holder.block()) + ") leads to it");
  }
}

// read_ref of a child whose id came from validated (or latched) bytes of `holder`: an id
// past the space is the holder's corruption.
template <class Pool>
inline OptimisticRead BasicBTree<Pool>::read_child(Ref* ref, PageId holder) {
  try {
    return read_ref(ref);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kPageOutOfRange && e.page() == ref->pid) {
      corrupt(holder, "names child block " + std::to_string(ref->pid.block()) + " past the space");
    }
    throw;
  }
}

// The node at `level` responsible for key (with the frame it was read from), or nullopt
// (restart).
template <class Pool>
inline auto BasicBTree<Pool>::find(std::string_view key, int level) -> std::optional<Ref> {
  std::optional<Ref> out;
  if (!descend<Mode::kLocate>(key, false, level, nullptr, [&](PageId pid, FrameId f) { out = Ref{pid, f}; })) {
    return std::nullopt;
  }
  return out;
}

// Reads leaf `next` (the right sibling of leaf `left`) optimistically; calls take(snapshot,
// pid) and returns true when it is a leaf whose lower fence is exactly `pos` (left's upper
// fence). With frame hints, repairs left's link hint when it was stale.
template <class Pool>
template <class Fn>
inline bool BasicBTree<Pool>::read_sibling(PageId left, Ref next, std::string_view pos, Fn&& take) {
  const size_t bytes = usable();
  std::vector<std::byte>& buf = snapshot_buffer(bytes);
  const FrameId hint = next.frame;
  OptimisticRead r = read_ref(&next);
  copy_page_racy(buf.data(), r.data, bytes);
  if (!Pool::validate(r)) return false;
  Node n(buf.data(), bytes);
  if (n.type() == NodeType::kFree) return false;  // merged away
  if (!n.well_formed()) malformed(next.pid, n);    // validated bytes
  if (!n.is_leaf() || n.lower_infinite() || n.lower_fence() != pos) return false;
  if constexpr (kHints) {
    if (next.frame != hint) repair_link_hint(left, next);
  } else {
    (void)left, (void)hint;
  }
  take(n, next.pid);
  return true;
}

// Descends optimistically to the leaf covering `key` and latches it exclusively (through
// the frame the descent read it from, with frame hints). nullopt when the tree changed
// under the descent (the page is no longer that leaf): restart.
template <class Pool>
inline std::optional<ExclusiveGuard> BasicBTree<Pool>::latch_leaf(std::string_view key, FrameId* frame) {
  std::optional<Ref> leaf = find(key, 0);
  if (!leaf) return std::nullopt;
  ExclusiveGuard g = pin_exclusive_ref(&*leaf);
  if (frame) *frame = leaf->frame;
  Node n(g.data(), usable());
  if (n.type() == NodeType::kFree) return std::nullopt;  // merged away meanwhile
  if (!n.well_formed()) malformed(g.page_id(), n);
  if (!n.is_leaf() || !n.covers(key, false)) return std::nullopt;
  return g;
}

template <class Pool>
inline RecordHint BasicBTree<Pool>::hint_of(PageId leaf, size_t slot) {
  CALICO_DCHECK(leaf.block() != 0 && slot <= UINT16_MAX);
  return RecordHint{leaf.block(), static_cast<uint16_t>(slot)};
}

// A hint worth following: not none (counted as such), block inside the space and not the
// metadata page (else counted stale).
template <class Pool>
inline bool BasicBTree<Pool>::hint_in_space(const RecordHint& h, HintStats* st) const {
  if (h.none()) {
    ++st->none;
    return false;
  }
  if (h.block == 0 || h.block >= pool_->space_blocks(space_)) {
    ++st->stale;
    return false;
  }
  return true;
}

// The pool access for a hinted page: through *frame when the pool has frame hints and
// the caller keeps one (then repaired, counted in frame_misses when it was wrong).
template <class Pool>
template <class Access>
inline auto BasicBTree<Pool>::access_hinted(BlockId block, FrameId* frame, HintStats* st, Access&& access) {
  Ref ref{PageId(space_, block), frame ? *frame : kInvalidFrame};
  if constexpr (kHints) {
    if (frame) {
      auto r = access(&ref, true);
      if (ref.frame != *frame) ++st->frame_misses;
      *frame = ref.frame;
      return r;
    }
  }
  return access(&ref, false);
}

// Index skipping, read side: reads the page named by h optimistically and looks key up in
// place (btree_racy_probe_leaf: bounds-checked reads of what may be garbage). True when the
// read validated and the page was a leaf whose fences cover key: the key's only leaf, so
// *r (found, slot, value_len; the value in value_buf) is the answer, counted as a hit or
// slot_moved. False: the caller descends (stale, none, or the page kept changing).
template <class Pool>
inline bool BasicBTree<Pool>::probe_hint(std::string_view key, const RecordHint& h, FrameId* frame,
                                         std::byte* value_buf, RacyResult* r, HintStats* st) {
  if (!hint_in_space(h, st)) return false;
  for (int attempt = 0; attempt < kHintAttempts; ++attempt) {
    OptimisticRead cur;
    try {
      cur = access_hinted(h.block, frame, st, [&](Ref* ref, bool hinted) {
        if constexpr (kHints) {
          if (hinted) return pool_->read_optimistic_hinted(ref->pid, &ref->frame);
        }
        (void)hinted;
        return pool_->read_optimistic(ref->pid);
      });
    } catch (const Error&) {  // the hinted block cannot be read: the descent decides
      ++st->stale;
      return false;
    }
    *r = RacyResult{};
    bool exact = false;
    const RacyStep step = btree_racy_probe_leaf<kHints>(cur.data, usable(), key, h.slot, value_buf, r, &exact);
    if (!Pool::validate(cur)) continue;  // only now are step, r and the value meaningful
    if (step != RacyStep::kTarget) {
      ++st->stale;
      return false;
    }
    ++(exact ? st->hits : st->slot_moved);
    return true;
  }
  return false;
}

// Index skipping, write side: the page named by h, latched exclusively, when it is a leaf
// whose fences cover key (checked under the latch: the key's only leaf); else nullopt,
// counted (none or stale), nothing held. Pre: the caller holds no latch of this tree (one
// page is latched, as by latch_leaf, so no lock order is involved).
template <class Pool>
inline std::optional<ExclusiveGuard> BasicBTree<Pool>::latch_hinted(std::string_view key, const RecordHint& h,
                                                                    FrameId* frame, HintStats* st) {
  if (!hint_in_space(h, st)) return std::nullopt;
  std::optional<ExclusiveGuard> g;
  try {
    g.emplace(access_hinted(h.block, frame, st, [&](Ref* ref, bool hinted) {
      if constexpr (kHints) {
        if (hinted) return pool_->pin_exclusive_hinted(ref->pid, &ref->frame);
      }
      (void)hinted;
      return pool_->pin_exclusive(ref->pid);
    }));
  } catch (const Error&) {  // the hinted block cannot be read: the descent decides
    ++st->stale;
    return std::nullopt;
  }
  Node n(g->data(), usable());
  // A hint is no reason to report a malformed page (the descent reports what it reaches).
  if (n.type() != NodeType::kLeaf || !n.well_formed() || !n.covers(key, false)) {
    ++st->stale;
    return std::nullopt;  // releases the latch unchanged (the version is bumped)
  }
  return g;
}

// update(): latches key's leaf found by a descent. *where (optional): the record's hint
// or none; *frame (optional): the frame the leaf was latched in (0 without frame hints).
template <class Pool>
template <class Fn>
inline bool BasicBTree<Pool>::update_descending(std::string_view key, Fn& fn, RecordHint* where, FrameId* frame) {
  for (int restarts = 0;; bump(&restarts)) {
    auto g = latch_leaf(key, frame);
    if (!g) continue;
    Node n(g->data(), usable());
    bool found;
    size_t i = n.lower_bound(key, false, &found);
    if (where) *where = found ? hint_of(g->page_id(), i) : RecordHint{};
    if (!found) return false;
    fn(n.mutable_value(i));
    g->mark_dirty();
    return true;
  }
}

// insert (overwrite = false) or upsert. Returns true when a new key was added.
// With `where`: the record's hint (the existing record's when insert finds it).
template <class Pool>
inline bool BasicBTree<Pool>::write(std::string_view key, std::string_view value, bool overwrite, RecordHint* where) {
  for (int restarts = 0;; bump(&restarts)) {
    auto g = latch_leaf(key);
    if (!g) continue;
    Node n(g->data(), usable());
    bool found;
    size_t i = n.lower_bound(key, false, &found);
    if (found && !overwrite) {
      if (where) *where = hint_of(g->page_id(), i);
      return false;
    }
    size_t freed = found ? kSlotBytes + n.suffix(i).size() + n.value(i).size() : 0;
    if (n.entry_bytes(key, value.size()) <= n.free_total() + freed) {
      if (found) n.remove_at(i);
      n.insert_at(i, key, value);
      g->mark_dirty();
      if (where) *where = hint_of(g->page_id(), i);
      if (!found) count_->fetch_add(1, std::memory_order_relaxed);
      return !found;
    }
    g->release();
    split(key, 0);
  }
}

// Splits the node at `level` responsible for key (splitting its parent first when the
// parent has no room for the separator). Returns when a split happened or when the node
// turned out to be gone or tiny (the caller retries its operation either way).
template <class Pool>
inline void BasicBTree<Pool>::split(std::string_view key, int level) {
  for (int restarts = 0;; bump(&restarts)) {
    std::vector<PageId> path;
    if (!descend<Mode::kLocate>(key, false, level, &path, [](PageId, FrameId) {})) continue;
    PageId target = path.back();
    if (path.size() == 1) {
      if (split_root(key, level, target)) return;
      continue;
    }
    PageId parent_pid = path[path.size() - 2];
    auto gp = pool_->pin_exclusive(parent_pid);
    Node p(gp.data(), usable());
    check_latched(parent_pid, p);
    if (!p.is_inner() || p.level() != level + 1 || !p.covers(key, false) ||
        p.child_for(key, false) != target.block()) {
      continue;
    }
    auto gt = pool_->pin_exclusive(target);
    Node t(gt.data(), usable());
    check_latched(target, t);
    if (t.type() == NodeType::kFree || t.level() != level || !t.covers(key, false)) continue;
    check_ordered(target, t);
    if (t.count() < 2) return;
    std::vector<NodeEntry> all = t.entries();
    size_t mid = split_point(t, all);
    std::string sep = all[mid - 1].key;
    {  // sep lies inside target's fences; the parent must route it to target
      bool found;
      const size_t i = p.lower_bound(sep, false, &found);
      if (found || (i < p.count() ? p.child(i) : p.link()) != target.block()) {
        corrupt(target, "node's keys do not match its parent's separators (page " + std::to_string(parent_pid.space()) +
                            ":" + std::to_string(parent_pid.block()) + ")");
      }
    }
    if (!p.fits(sep, Node::kChildBytes)) {
      gt.release();
      gp.release();
      split(key, level + 1);
      continue;
    }
    auto gr = pool_->allocate(space_);  // before any change: an error leaves all intact
    BlockId right = gr.page_id().block();
    split_into(t, all, mid, sep, gr.data(), gr.page_id().block());
    // Parent: the slot that pointed to target now points to right; sep -> target added
    // (with target's frame hint, if any; right's is unknown).
    bool found;
    size_t i = p.lower_bound(sep, false, &found);
    CALICO_CHECK(!found);
    const FrameId target_hint = p.hint_at(i);
    if (i < p.count()) {
      CALICO_CHECK(p.child(i) == target.block());
      p.set_child(i, right);
    } else {
      CALICO_CHECK(p.link() == target.block());
      p.set_link(right);
    }
    p.insert_at(i, sep, encode_child_ref<kHints>(target.block(), target_hint));
    gr.mark_dirty();
    gt.mark_dirty();
    gp.mark_dirty();
    return;
  }
}

// Merges the leaf responsible for key with its right sibling under the same parent, else
// with its left one, when their entries fit in 3/4 of a page. Latches parent, left, right
// in that order. The right page is zeroed (kFree);
// readers holding its id fail their parent validation or the leaf checks and restart.
// Best effort: returns without merging when anything changed.
template <class Pool>
inline void BasicBTree<Pool>::merge(std::string_view key) {
  for (int restarts = 0;; bump(&restarts)) {
    std::vector<PageId> path;
    if (!descend<Mode::kLocate>(key, false, 0, &path, [](PageId, FrameId) {})) continue;
    if (path.size() < 2) return;
    PageId leaf = path.back();
    auto gp = pool_->pin_exclusive(path[path.size() - 2]);
    Node p(gp.data(), usable());
    check_latched(gp.page_id(), p);
    if (!p.is_inner() || p.level() != 1 || !p.covers(key, false) ||
        p.child_for(key, false) != leaf.block()) {
      continue;
    }
    bool found;
    // Children are positions 0..count (count = the upper child); pair (a, a + 1) merges.
    size_t i = p.lower_bound(key, false, &found);
    for (size_t a : {i, i - 1}) {
      if (a >= p.count()) continue;  // also skips i - 1 when i == 0 (wraps around)
      if (merge_pair(gp.page_id(), p, a)) {
        gp.mark_dirty();
        return;
      }
    }
    return;
  }
}

// Merges children a and a + 1 of the latched parent p into child a when they fit in 3/4
// of a page; latches left then right. Returns whether it merged (p is then modified).
// Errors: kCorruptPage (nothing is changed) when the children are not two distinct leaves
// of this space, linked left to right, with matching fences and ordered keys.
template <class Pool>
inline bool BasicBTree<Pool>::merge_pair(PageId parent, Node& p, size_t a) {
  BlockId left_b = p.child(a);
  BlockId right_b = a + 1 < p.count() ? p.child(a + 1) : p.link();
  const uint64_t blocks = pool_->space_blocks(space_);
  for (BlockId b : {left_b, right_b}) {
    // Latching block 0, the parent itself or a block twice would break the latch order.
    if (b == 0 || b >= blocks || b == parent.block() || left_b == right_b) {
      corrupt(parent, "inner node names children " + std::to_string(left_b) + " and " + std::to_string(right_b) +
                          ", not two leaves of the space");
    }
  }
  auto gl = pool_->pin_exclusive(PageId(space_, left_b));
  auto gr = pool_->pin_exclusive(PageId(space_, right_b));
  Node l(gl.data(), usable()), r(gr.data(), usable());
  for (auto [pid, n] : {std::pair{gl.page_id(), &l}, std::pair{gr.page_id(), &r}}) {
    if (!n->well_formed()) malformed(pid, *n);
    if (!n->is_leaf()) corrupt(pid, "node under a level-1 node is not a leaf");
    check_ordered(pid, *n);
  }
  if (l.link() != right_b || l.upper_infinite() || r.lower_infinite() || l.upper_fence() != r.lower_fence()) {
    corrupt(gl.page_id(), "leaf's right sibling or upper fence disagrees with its parent's next child (page " +
                              std::to_string(gr.page_id().space()) + ":" + std::to_string(right_b) + ")");
  }
  std::vector<NodeEntry> all = l.entries();
  std::vector<NodeEntry> more = r.entries();
  all.insert(all.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
  std::string lower(l.lower_fence()), upper(r.upper_fence());
  const std::string* lo = l.lower_infinite() ? nullptr : &lower;
  const std::string* up = r.upper_infinite() ? nullptr : &upper;
  if (Node::needed_bytes(lo, up, all.data(), all.data() + all.size()) > usable() * 3 / 4) {
    return false;
  }
  Node::build(l.data(), usable(), NodeType::kLeaf, 0, lo, up, all, r.link(), r.hint_at(r.count()));
  std::memset(r.data(), 0, usable());
  // Parent: drop the separator between them; whoever pointed to right points to left.
  p.remove_at(a);
  if (a < p.count()) {
    p.set_child(a, left_b);
  } else {
    p.set_link(left_b);
  }
  gr.mark_dirty();
  gl.mark_dirty();
  return true;
}

// Root split: latches the metadata page, then the root; a new root gets two children.
// False: restart (the root changed meanwhile).
template <class Pool>
inline bool BasicBTree<Pool>::split_root(std::string_view key, int level, PageId root) {
  auto gm = pool_->pin_exclusive(meta_pid());
  MetaPage m;
  std::memcpy(&m, gm.data(), sizeof m);
  check_meta(m);
  if (m.root != root.block()) return false;
  auto gt = pool_->pin_exclusive(root);
  Node t(gt.data(), usable());
  check_latched(root, t);
  if (t.type() == NodeType::kFree || t.level() != level || !t.covers(key, false)) return false;
  check_ordered(root, t);
  if (t.count() < 2) return true;
  auto gr = pool_->allocate(space_);
  auto gn = pool_->allocate(space_);
  std::vector<NodeEntry> all = t.entries();
  size_t mid = split_point(t, all);
  std::string sep = all[mid - 1].key;
  split_into(t, all, mid, sep, gr.data(), gr.page_id().block());
  std::vector<NodeEntry> root_entries{{sep, encode_child_ref<kHints>(root.block())}};
  Node::build(gn.data(), usable(), NodeType::kInner, level + 1, nullptr, nullptr, root_entries,
                 gr.page_id().block());
  m.root = gn.page_id().block();
  m.height = static_cast<uint32_t>(level + 2);
  m.entry_count = size();
  std::memcpy(gm.data(), &m, sizeof m);
  gn.mark_dirty();
  gr.mark_dirty();
  gt.mark_dirty();
  gm.mark_dirty();
  return true;
}

// Index mid (1..count-1) such that entries [0, mid) go left: half of the bytes each side.
template <class Pool>
inline size_t BasicBTree<Pool>::split_point(const Node& t, const std::vector<NodeEntry>& all) const {
  size_t total = 0;
  for (const NodeEntry& e : all) total += e.key.size() + e.value.size() + kSlotBytes;
  size_t acc = 0, mid = 0;
  while (mid < all.size() && acc < total / 2) {
    acc += all[mid].key.size() + all[mid].value.size() + kSlotBytes;
    ++mid;
  }
  (void)t;
  // Inner nodes: entry mid-1 moves up as the separator and its child becomes the left
  // node's upper child, so the left keeps entries [0, mid-1): mid >= 1 suffices.
  return std::clamp<size_t>(mid, 1, all.size() - 1);
}

// Rewrites t as the left half (keys <= sep) and builds the right half at right_page
// (block right_block). Leaves: all[mid-1] is sep and stays left; the left links to the
// right. Inner: all[mid-1] moves up as sep and its child becomes the left's upper child.
template <class Pool>
inline void BasicBTree<Pool>::split_into(Node& t, std::vector<NodeEntry>& all, size_t mid, const std::string& sep,
                                         std::byte* right_page, BlockId right_block) {
  CALICO_DCHECK(mid >= 1 && mid < all.size() && all[mid - 1].key == sep);
  std::string lower(t.lower_fence()), upper(t.upper_fence());
  const std::string* lo = t.lower_infinite() ? nullptr : &lower;
  const std::string* up = t.upper_infinite() ? nullptr : &upper;
  NodeType type = t.type();
  int level = t.level();
  BlockId link = t.link();
  FrameId link_hint = t.hint_at(t.count());
  std::vector<NodeEntry> right_entries(std::make_move_iterator(all.begin() + static_cast<ptrdiff_t>(mid)),
                                       std::make_move_iterator(all.end()));
  all.resize(mid);
  Node::build(right_page, usable(), type, level, &sep, up, right_entries, link, link_hint);
  if (type == NodeType::kLeaf) {
    Node::build(t.data(), usable(), type, level, lo, &sep, all, right_block);
  } else {
    // The separator's child (and its hint, hinted format) becomes the left's upper child.
    BlockId left_upper;
    FrameId left_upper_hint = kInvalidFrame;
    std::memcpy(&left_upper, all.back().value.data(), sizeof left_upper);
    if constexpr (kHints) std::memcpy(&left_upper_hint, all.back().value.data() + sizeof left_upper, sizeof left_upper_hint);
    all.pop_back();
    Node::build(t.data(), usable(), type, level, lo, &sep, all, left_upper, left_upper_hint);
  }
}

template <class Pool>
inline std::vector<std::byte> BasicBTree<Pool>::copy_shared(BlockId b) const {
  std::vector<std::byte> buf(usable());
  auto g = pool_->pin_shared(PageId(space_, b));
  std::memcpy(buf.data(), g.data(), buf.size());
  return buf;
}

template <class Pool>
inline void BasicBTree<Pool>::fail(const std::string& what) {
  throw std::logic_error("B-tree check: " + what);
}

template <class Pool>
inline void BasicBTree<Pool>::check_node(BlockId b, int level, const std::string* lower, const std::string* upper,
                                         std::vector<uint8_t>* seen, std::vector<BlockId>* leaves,
                                         uint64_t* entries) const {
  std::string at = "node " + std::to_string(b) + ": ";
  if (b == 0 || b >= seen->size()) fail(at + "child id out of range");
  if ((*seen)[b]) fail(at + "reachable twice");
  (*seen)[b] = 1;
  std::vector<std::byte> buf = copy_shared(b);
  Node n(buf.data(), usable());
  if (!n.well_formed()) fail(at + "malformed");
  if (n.level() != level) fail(at + "level " + std::to_string(n.level()) + ", expected " + std::to_string(level));
  if (n.lower_infinite() != (lower == nullptr) || (lower && n.lower_fence() != *lower)) {
    fail(at + "lower fence differs from the parent's separator");
  }
  if (n.upper_infinite() != (upper == nullptr) || (upper && n.upper_fence() != *upper)) {
    fail(at + "upper fence differs from the parent's separator");
  }
  std::string lo(n.lower_fence()), up(n.upper_fence());
  if (n.h().prefix_len != Node::common_prefix(lower ? &lo : nullptr, upper ? &up : nullptr)) {
    fail(at + "prefix length is not the fences' common prefix");
  }
  std::string prev;
  for (size_t i = 0; i < n.count(); ++i) {
    std::string k = n.full_key(i);
    if (n.slots()[i].head != key_head(n.suffix(i))) fail(at + "wrong key head at slot " + std::to_string(i));
    if (i > 0 && !(prev < k)) fail(at + "keys not strictly sorted at slot " + std::to_string(i));
    if (!n.covers(k, false)) fail(at + "key outside the fences at slot " + std::to_string(i));
    prev = k;
  }
  if (n.is_leaf()) {
    leaves->push_back(b);
    *entries += n.count();
    return;
  }
  std::vector<NodeEntry> es = n.entries();
  BlockId upper_child = n.link();
  const std::string* child_lower = lower ? &lo : nullptr;
  for (size_t i = 0; i < es.size(); ++i) {
    check_node(n.child(i), level - 1, child_lower, &es[i].key, seen, leaves, entries);
    child_lower = &es[i].key;
  }
  check_node(upper_child, level - 1, child_lower, upper ? &up : nullptr, seen, leaves, entries);
}

}  // namespace calico::index
