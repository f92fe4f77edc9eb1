// BasicBTree<Pool>: a B+tree in one pool space, with optimistic lock coupling. The declaration
// and its contract; the member definitions are in src/index/btree/btree_impl.h, the node
// formats in src/index/btree/btree_node.h.
//
// Entry points:
//   create(pool, space_name) / open(pool, space_name)
//   insert / upsert / update / lookup / remove / scan / bulk_load / size
//   lookup_hinted / update_hinted   index skipping: go to the page a RecordHint names first
//   insert / upsert / update with `where`   also return the record's RecordHint
//   check()          whole-tree invariant checker for tests (quiescent tree only)
//   sync_metadata()  writes the entry count to the metadata page (also done by the destructor)
//
// Storage: block 0 of the space is the metadata page (MetaPage, src/index/btree/btree_node.h); every other block is
// a node (src/index/btree/btree_node.h) or a zeroed page (type kFree: emptied by a merge, or allocated by a
// split that failed before linking it); nothing references kFree pages and check() accepts them.
//
// Concurrency (optimistic lock coupling over the pool's page versions):
//  - Readers (lookup, scan) descend from the metadata page with read_optimistic: for each
//    node they start the child's read, validate the parent (so the child id they followed
//    was current), search the child in place in its frame (btree_racy_step: every offset,
//    length and count bounds-checked before use; a lookup also copies the found value out),
//    validate the child, and only then use what the search found (the next child id, the
//    value). Scans copy their leaf with copy_page_racy and validate before reading the copy.
//    No atomic write on the happy path; a failed validation restarts from the root. Scans follow right-sibling links when the next leaf's lower fence equals
//    the current leaf's upper fence, and re-descend otherwise.
//  - Frame hints (Pool::kFrameHints, [LIPAH] 4.1 and 4.4): nodes use the hinted format
//    (src/index/btree/btree_node.h: a frame hint next to every child id and sibling link; the metadata page
//    holds the root's hint; the tree object caches the metadata page's frame). Descents,
//    sibling reads and leaf latches use the pool's hinted accesses, which skip the
//    translation when the hint is right and report the real frame when it is not. A stale
//    hint is then repaired opportunistically: only if the page holding it can be latched
//    exclusively at once (repair_hint: never waits, so no lock order is involved), the
//    holder is re-searched under the latch and the hint rewritten if it still belongs to the
//    same child; the page is not marked dirty. The descent holds no latch while repairing.
//  - Writers descend the same way to find the leaf, then pin it exclusively and check that
//    it is still a leaf whose fences cover the key (fences make a latched node
//    self-identifying), else restart. A full leaf is split: latch parent, then node
//    (top-down; the metadata page first when the root splits), check the parent still points
//    to the node, split, release, retry the operation. A parent without room is split first.
//  - A remove that leaves its leaf under 1/4 full merges it with a sibling under the same
//    parent when both fit in 3/4 of a page (parent, left, right latched in that order). The
//    emptied page is zeroed and not reused (a free list is future work). Inner nodes are
//    never merged; an inner node may be left with only its upper child, which is valid.
//  - Index skipping ([LIPAH] 3.2, 3.3, 4.2; calico/index/record_hint.h). Callers keep a RecordHint
//    (leaf block, slot) of a record in a secondary index or a read/write set and pass it to
//    lookup_hinted / update_hinted, which try that page before descending from the root.
//    INVARIANT (the validation rule): a page of the tree's space that is a leaf (type kLeaf,
//    level 0) whose fences cover key k, as seen by a validated optimistic read or under its
//    latch, is the one leaf that may hold k at that moment, so its answer for k (the value,
//    or absence) is the tree's. Why it holds: every block of the space is the metadata page
//    (block 0), a node reachable from the root, or a zeroed kFree page (what a merge emptied,
//    or a split's allocation never linked); the leaves' fences partition the key space; a
//    split or merge changes fences and moves keys only under the exclusive latches of every
//    page involved, and builds a new right half with its final fences and keys before it is
//    released, so a validated read or a latch sees, for each page, fences that match exactly
//    the keys it holds. So the hinted page is accepted only if it is inside the space, not
//    block 0, a leaf (not kFree, not inner) and its fences cover k; the slot is a shortcut
//    used only when it holds exactly k, else the leaf is searched (slot_moved). Anything
//    else (a stale page after a split, merge or remove, an evicted and reloaded page whose
//    frame hint is wrong, a page reused with other fences, garbage) falls back to the
//    descent, which answers and refreshes the hint. A free list that reuses pages keeps the
//    invariant as long as a reused page gets its new fences under its latch before it holds
//    keys (the fence check then rejects hints meant for its old range).
//    Reads: the hinted page is read as a descent reads a node (btree_racy_probe_leaf:
//    bounds-checked, nothing used before validate; kHintAttempts tries while it keeps
//    changing). Writes: pin_exclusive(_hinted) of the hinted page alone (no other latch is
//    held, so no lock order is involved) and the checks under the latch, as latch_leaf does
//    after its descent; a rejected page is released unchanged. A hint never makes an
//    operation fail: pool errors of the hinted access and malformed hinted pages only make
//    it fall back (the descent reports what it reaches).
//  - Every operation restarts at most kMaxRestarts times, then throws
//    Error(kRestartLimit) (a livelock or a corrupt tree: a well-formed tree under
//    contention restarts a handful of times).
// Lock order: metadata page -> parent -> child; no thread waits for a latch while holding a
// latch on a lower level. Pins are held one level at a time except during splits (3 pages).
//
// Corrupt pages (index/corrupt_page.h): node pages can come from disk, so their bytes are
// checked, never trusted: a latched or pinned page must be a zeroed page or well_formed();
// a page whose optimistic read validated but that is malformed, of another level than its
// parent's minus one, or not covering the key its parent routes to it is rechecked under
// shared pins of the parent and the page (confirm_corrupt) and then reported; child and
// sibling ids past the space, splits and merges of nodes whose keys are not ordered inside
// their fences, and malformed metadata are reported too. All as Error(kCorruptPage) naming
// the page, before anything is changed (a remove whose merge finds a corrupt sibling has
// removed its key). Descents are bounded by kMaxHeight levels, scans move strictly forward
// (finite fences are ordered), so a cycle is reported instead of looping.
//
// Errors: keys must be 1..kMaxKeyBytes (256) bytes, values 0..kMaxValueBytes (512) bytes,
// else Error(kInvalidArgument) naming the limit. open() of a space whose block 0 is not a
// tree metadata page: Error(kInvalidArgument). Pool errors propagate unchanged; a split
// allocates its pages before changing anything, so the tree stays valid after any error.
//
// The entry count is kept in memory (one relaxed atomic) and written to the metadata page by
// sync_metadata(), root splits and the destructor; flush the pool after those for
// durability. Destroy the tree before its pool.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/detail/btree.h"
#include "calico/index/record_hint.h"
#include "calico/page_id.h"

namespace calico::index {

// Thread safety: every member may be called from any number of threads at once, except
// bulk_load (alone on the tree) and check() (quiescent tree); one BasicBTree object per tree
// (its entry count and cached metadata frame live in the object).
template <class Pool>
class BasicBTree {
 public:
  static constexpr int kMaxRestarts = 10000;  // per operation; see the header comment
  static constexpr double kBulkFill = 0.9;    // bulk_load fills nodes to 90% of a page

  // Creates the space and an empty tree (metadata page + an empty root leaf).
  // Errors: those of create_space / allocate.
  static BasicBTree create(Pool& pool, std::string_view space_name);

  // Opens the tree stored in an existing space. Errors: kUnknownSpace; kInvalidArgument when
  // block 0 is missing or is not a tree metadata page of this format version.
  static BasicBTree open(Pool& pool, std::string_view space_name);

  // Move-only; a moved-from tree may only be destroyed.
  BasicBTree(BasicBTree&& o) noexcept;
  BasicBTree& operator=(BasicBTree&&) = delete;
  BasicBTree(const BasicBTree&) = delete;
  // Writes the entry count to the metadata page (sync_metadata; a pool error is swallowed:
  // the count is advisory). Destroy the tree before its pool.
  ~BasicBTree();

  SpaceId space() const;
  // Entries, as counted in memory (relaxed: racy while writers run).
  uint64_t size() const;

  // Every write and lookup below throws kInvalidArgument for a key outside 1..kMaxKeyBytes
  // or a value over kMaxValueBytes, kRestartLimit after kMaxRestarts restarts, kCorruptPage
  // naming a page that breaks the format, and pool errors unchanged; the tree stays valid.

  // Inserts key -> value; false (and no change) when the key exists. With `where`, it
  // receives the record's hint (the new record's, or the existing one's when false),
  // taken under the leaf's latch (index skipping, below).
  bool insert(std::string_view key, std::string_view value, RecordHint* where = nullptr);
  // Inserts or replaces.
  void upsert(std::string_view key, std::string_view value);
  // Inserts or replaces; true when the key was added. *where receives the record's hint.
  bool upsert(std::string_view key, std::string_view value, RecordHint* where);

  // Copies the value of key into *out; false when absent (out untouched).
  bool lookup(std::string_view key, std::string* out);
  // Calls fn(std::string_view value) with a private copy of the value; false when absent.
  template <class Fn>
  bool lookup(std::string_view key, Fn&& fn);

  // Calls fn(std::span<std::byte> value) on key's value in place under its leaf's exclusive
  // latch: read-modify-writes of one record are atomic against each other and against every
  // writer of that leaf. fn must not change the length or call into the tree (it runs under
  // a latch). False (fn not called) when key is absent. With `where`, it receives the
  // record's hint (none when absent).
  template <class Fn>
  bool update(std::string_view key, Fn&& fn, RecordHint* where = nullptr);

  // --- Index skipping (see the header comment) -------------------------------------------
  // lookup(key, out) that tries the page named by *hint first. *hint is anything (none,
  // stale, garbage, read from disk). On return *hint names where key is now (its leaf and
  // slot), or is none when key is absent. `frame` (optional; used on pools with frame hints,
  // ignored otherwise): a guess at the frame holding hint->block, read through it and
  // repaired. `stats` (optional) counts how it went. Errors: kInvalidArgument (key), and
  // those of lookup (the hinted access's own pool errors only make it fall back).
  bool lookup_hinted(std::string_view key, RecordHint* hint, std::string* out, HintStats* stats,
                     FrameId* frame = nullptr);

  // update(key, fn) that latches the page named by *hint first (exclusively, through
  // `frame` on pools with frame hints) and applies fn there when the page, checked under
  // the latch, is the key's leaf; else update(key, fn). *hint, frame and stats as for
  // lookup_hinted; fn as for update (runs under the leaf's exclusive latch).
  template <class Fn>
  bool update_hinted(std::string_view key, RecordHint* hint, Fn&& fn, HintStats* stats, FrameId* frame = nullptr);

  // Removes key; false when absent.
  bool remove(std::string_view key);

  // Calls fn(std::string_view key, std::string_view value) for every key >= start in key
  // order until fn returns false. Each leaf is read as one validated snapshot; a concurrent
  // writer may be seen in one leaf and not in another (no snapshot across leaves). The views
  // passed to fn live until fn returns.
  template <class Fn>
  void scan(std::string_view start, Fn&& fn);

  // Loads sorted (strictly increasing) key/value pairs into an EMPTY tree, bottom-up, nodes
  // filled to kBulkFill. It must be the only operation on the tree while it runs. [first,
  // last) is a forward range of pairs whose .first/.second convert to std::string_view; it
  // is validated entirely before anything is written. Errors: kInvalidArgument (not empty,
  // unsorted, limits); pool errors (the tree may then hold a prefix of the input).
  template <class It>
  void bulk_load(It first, It last);

  // Writes the in-memory entry count into the metadata page. Pre: the caller holds no
  // latch of this tree.
  void sync_metadata();

  // Whole-tree check at quiescence; throws std::logic_error naming the first violation,
  // else returns the tree's shape.
  // Checks: node well-formedness, levels, keys strictly sorted and within the fences, key
  // heads and prefixes, children's fences equal to the parent's separators, every leaf at
  // depth height-1, the sibling chain visits the leaves in order, every block reachable
  // exactly once (or a zeroed kFree page), entry count == size().
  struct CheckStats {
    uint32_t height = 0;
    uint64_t leaves = 0;
    uint64_t inner_nodes = 0;
    uint64_t free_pages = 0;  // zeroed pages (merged away, or never linked)
    uint64_t entries = 0;
  };
  CheckStats check() const;

 private:
  static constexpr bool kHints = Pool::kFrameHints;
  using Node = BasicNodeRef<kHints>;
  static constexpr uint32_t kFormatVersion = kHints ? kBTreeHintedFormatVersion : kBTreeFormatVersion;

  BasicBTree(Pool& pool, SpaceId space, uint64_t count);
  size_t usable() const;
  PageId meta_pid() const;
  static void check_key(std::string_view key);
  static void check_entry(std::string_view key, std::string_view value);

  static constexpr int kMaxHeight = 64;  // levels; a descent longer than this is a cycle

  [[noreturn]] static void corrupt(PageId pid, const std::string& what);
  [[noreturn]] static void malformed(PageId pid, const Node& n);
  static void check_latched(PageId pid, const Node& n);
  static void check_ordered(PageId pid, const Node& n);
  void check_meta(const MetaPage& m) const;
  static void bump(int* restarts);
  static std::vector<std::byte>& snapshot_buffer(size_t bytes);

  // A reference to a page as the tree follows it: the page id and, with frame hints, the
  // frame hint stored next to it (kInvalidFrame: none).
  struct Ref {
    PageId pid;
    FrameId frame = kInvalidFrame;
  };

  OptimisticRead read_ref(Ref* ref);
  ExclusiveGuard pin_exclusive_ref(Ref* ref);
  FrameId cached_meta_frame() const;
  void repair_child_hint(PageId holder, std::string_view key, bool after, const Ref& child)
    requires Pool::kFrameHints;
  void repair_link_hint(PageId leaf, const Ref& sibling)
    requires Pool::kFrameHints;

  // Optimistic descent to the node at `stop_level` responsible for key (with `after`: for
  // the keys just above key). Each node is searched in place in its frame
  // (btree_racy_step: bounds-checked reads, used only once the node validates); the child
  // id it yields touches the pool only after that validation. With frame hints, each page is
  // read through its reference's hint, and a hint found stale is repaired right after the
  // parent that holds it validated (no latch is held meanwhile). At the stop level:
  //  - Mode::kLocate: calls at(pid, frame) (frame: where the node was read; 0 without hints);
  //  - Mode::kValue (stop_level 0): the leaf lookup of key was done in place; its value
  //    (when res->found) is in value_buf, copied out before validation; calls at(pid, frame);
  //  - Mode::kSnapshot: copies the node with copy_page_racy, validates, checks the copy
  //    (well_formed, covers) and calls at(snapshot, pid).
  // Returns false for "restart" (a validation failed or the tree changed). `path`, when
  // given, receives the validated page ids from the root down.
  enum class Mode { kLocate, kValue, kSnapshot };
  template <Mode mode, class Fn>
  bool descend(std::string_view key, bool after, int stop_level, std::vector<PageId>* path, Fn&& at,
               std::byte* value_buf = nullptr, RacyResult* res = nullptr);
  void confirm_corrupt(PageId holder, PageId child, std::string_view key, bool after, int stop_level);
  OptimisticRead read_child(Ref* ref, PageId holder);
  std::optional<Ref> find(std::string_view key, int level);
  template <class Fn>
  bool read_sibling(PageId left, Ref next, std::string_view pos, Fn&& take);
  std::optional<ExclusiveGuard> latch_leaf(std::string_view key, FrameId* frame = nullptr);

  // --- Index skipping ------------------------------------------------------------------
  static constexpr int kHintAttempts = 4;  // optimistic reads of a hinted page that keeps changing

  static RecordHint hint_of(PageId leaf, size_t slot);
  bool hint_in_space(const RecordHint& h, HintStats* st) const;
  template <class Access>
  auto access_hinted(BlockId block, FrameId* frame, HintStats* st, Access&& access);
  bool probe_hint(std::string_view key, const RecordHint& h, FrameId* frame, std::byte* value_buf, RacyResult* r,
                  HintStats* st);
  std::optional<ExclusiveGuard> latch_hinted(std::string_view key, const RecordHint& h, FrameId* frame,
                                             HintStats* st);
  template <class Fn>
  bool update_descending(std::string_view key, Fn& fn, RecordHint* where, FrameId* frame);
  bool write(std::string_view key, std::string_view value, bool overwrite, RecordHint* where);
  void split(std::string_view key, int level);
  void merge(std::string_view key);
  bool merge_pair(PageId parent, Node& p, size_t a);
  bool split_root(std::string_view key, int level, PageId root);
  size_t split_point(const Node& t, const std::vector<NodeEntry>& all) const;
  void split_into(Node& t, std::vector<NodeEntry>& all, size_t mid, const std::string& sep,
                  std::byte* right_page, BlockId right_block);
  std::vector<std::byte> copy_shared(BlockId b) const;
  [[noreturn]] static void fail(const std::string& what);
  void check_node(BlockId b, int level, const std::string* lower, const std::string* upper,
                  std::vector<uint8_t>* seen, std::vector<BlockId>* leaves, uint64_t* entries) const;

  Pool* pool_;
  SpaceId space_;
  std::unique_ptr<std::atomic<uint64_t>> count_;
  // Frame hints: the frame of the metadata page, as last seen (shared by the tree's users;
  // relaxed, written only when it changed).
  struct NoMetaFrame {};
  [[no_unique_address]] std::conditional_t<kHints, std::unique_ptr<std::atomic<FrameId>>, NoMetaFrame> meta_frame_;
};

}  // namespace calico::index

// The member definitions (src/index/btree/btree_impl.h). They come before the explicit
// instantiation declaration below, as they did when they were written in the class: with the
// declaration first, GCC inlines differently in the users' translation units (a B+tree lookup
// on vmcache_2m took 3 more instructions; bench/experiments/micro_counts.sh).
#include "calico/detail/btree_impl.h"

namespace calico::index {

using BTree = BasicBTree<BufferPool>;
#ifndef CALICO_IMPLICIT_INSTANTIATION  // the fuzz build (CMakeLists.txt, CALICO_FUZZ)
extern template class BasicBTree<BufferPool>;
#endif

}  // namespace calico::index
