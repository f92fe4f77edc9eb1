// pool::PoolCore<T> sparse groups (array_sparse, translation/array/sparse_array.h): the moves of a
// group's entries between its array page and the side table, the test hooks, and the
// checker of both representations. Rules: pool/README.md, "Sparse groups".
//
// A move (either way), by one mover that holds the group's move flag (kMoving):
//   1. begin: the flag, from a quiet group of the right kind and count; new references
//      (faults, allocations, prefetches) and lookups wait for it to clear.
//   2. latch every non-zero entry of the source exclusively by CAS; a loading, pending,
//      latched or pinned one refuses the move. Then the count must equal the entries
//      latched: otherwise a fault holds a reference it has not used yet, and the move is
//      refused. (Releases may still come before this check; after it, every reference is an
//      entry the mover holds, so none can come or go.)
//   3. install each latched word into the destination, still exclusive, by CAS out of 0: a
//      side entry recycled from another group may hold a stale faulter's claim (S2), which
//      refuses the move; then zero the source (a side entry is then retired: kGone, R2).
//   4. commit: to sparse, the array page is punched, then kSparse set; to dense, kSparse
//      cleared, and then the zero side entries that lookups left in the group are retired
//      (never before: a refused move leaves the side table as it was). The flag clears
//      with the commit.
//   5. unlatch the destination with a version bump.
// A refusal unlatches what it took, unchanged, and clears the flag. Nothing waits: the
// evictor (under evict_mutex_) moves groups to the side table, and a fault (holding the
// space's fault_latch shared, perhaps pins) moves them back; a thread that holds a pin in the
// group and needs a frame would otherwise wait for itself.
// Who holds a stale pointer after a move finds out: optimistic readers validate against the
// source (zero, or kGone and then recycled: R5); latch waiters see zero or kGone and look the
// page up again (retry(), which waits for the flag), and a fault through a stale pointer is
// refused by acquire_ref_for (the reference covers the other representation).
#pragma once

#include <array>
#include <map>

#include "pool/core_definitions.h"
#include "translation/array/sparse_group_counter.h"

namespace calico {

template <class T>
bool pool::PoolCore<T>::try_sparsify(Space* s, BlockId block)
  requires translation::kSparseGroupTable<typename T::Table>
{
  return move_group(s, block, /*to_sparse=*/true);
}

template <class T>
bool pool::PoolCore<T>::try_densify(Space* s, BlockId block)
  requires translation::kSparseGroupTable<typename T::Table>
{
  return move_group(s, block, /*to_sparse=*/false);
}

template <class T>
bool pool::PoolCore<T>::move_group(Space* s, BlockId block, bool to_sparse)
  requires translation::kSparseGroupTable<typename T::Table>
{
  auto& t = s->table;
  const BlockId first = block - block % translation::kEntriesPerGroup;
  const uint64_t end = std::min<uint64_t>(uint64_t{first} + translation::kEntriesPerGroup, t.capacity());
  uint32_t count = 0;
  if (to_sparse ? !t.begin_move(first, /*sparse=*/false, 1, t.sparse_group_at(), &count)
                : !t.begin_move(first, /*sparse=*/true, t.dense_group_at(), translation::kGroupCountMask, &count)) {
    return false;
  }
  struct Moved {
    BlockId block;
    translation::Entry* from;
    translation::Entry* to;
    EntryWord held;
  };
  std::array<Moved, translation::kEntriesPerGroup> moved;
  size_t n = 0;
  std::array<BlockId, translation::kEntriesPerGroup> leftovers;
  size_t n_leftovers = 0;
  bool ok = true;
  for (uint64_t b = first; b < end && ok; ++b) {  // 2
    const BlockId blk = static_cast<BlockId>(b);
    translation::Entry* from = to_sparse ? &t.entries()[blk] : t.side_find(blk);
    if (from == nullptr) continue;
    EntryWord w = translation::load(*from);
    if (w.evicted()) {
      if (!to_sparse) leftovers[n_leftovers++] = blk;  // a lookup's zero side entry (see 4)
      continue;
    }
    if (n == count || !translation::try_lock_exclusive(*from, w)) {
      ok = false;
      break;
    }
    const EntryWord held = w.with_state(kExclusive);
    if (!to_sparse && !translation::owned_by(*from, blk)) {  // recycled since the lookup (R4)
      translation::unlock_exclusive(*from, held, /*bump_version=*/false);
      ok = false;
      break;
    }
    moved[n++] = Moved{blk, from, nullptr, held};
  }
  // Every reference is an entry we hold (releases during the scan only counted down; if they
  // left none, there is nothing to move and abort_move does what the last release would).
  ok = ok && n > 0 && t.group_count(first) == n;
  if (ok && options_.testing.test_points != nullptr) {
    options_.testing.test_points->at(pool::TestPoints::Point::kGroupMoveLatched, PageId(s->id, first));
  }
  size_t placed = 0;  // 3
  if (ok) {
    try {
      for (; placed < n; ++placed) {
        Moved& m = moved[placed];
        m.to = to_sparse ? &t.side_insert(m.block) : &t.entries()[m.block];
        if (options_.testing.test_points != nullptr) {
          options_.testing.test_points->at(pool::TestPoints::Point::kGroupMoveInstall, PageId(s->id, m.block));
        }
        // Installed by CAS out of 0, never stored: the destination is zero as far as this
        // group goes (no reference of the group writes it while the flag is held), but a side
        // entry is recycled across groups, and a faulter of another group holding it from an
        // earlier life may claim it out of 0 at any moment (it then sees the owner, R4, and
        // gives its claim back). A foreign word refuses the move.
        if (!translation::try_cas(*m.to, EntryWord{0}, m.held)) break;
      }
    } catch (...) {  // the side table could not grow: nothing moved
    }
    if (placed < n) {  // refused: every destination back to zero, side entries retired
      for (size_t i = 0; i < placed; ++i) {
        [[maybe_unused]] const bool ours = translation::release_claim(*moved[i].to, moved[i].held);
        CALICO_DCHECK(ours);  // latched exclusive: nobody else writes it
        if (to_sparse) t.forget_side(moved[i].block);
      }
      ok = false;
    }
  }
  if (!ok) {
    for (size_t i = 0; i < n; ++i) translation::unlock_exclusive(*moved[i].from, moved[i].held, /*bump_version=*/false);
    if (t.abort_move(first)) counters_.punches.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  for (size_t i = 0; i < n; ++i) {
    moved[i].from->store(0, std::memory_order_release);
    if (!to_sparse) t.forget_side(moved[i].block);  // zero, and nobody writes it: retired
  }
  t.commit_move(first, to_sparse);  // 4
  if (to_sparse) {
    counters_.punches.fetch_add(1, std::memory_order_relaxed);
  } else {
    // The zero side entries that lookups left in the group are retired (if still zero, R2)
    // only now that it is dense: their holders then look up the array word. A refused move
    // keeps them, since one may be the entry of the fault that tried the move, which then
    // loads its page there. (Retired, its CAS would fail, its next lookup would recycle the
    // entry, and its next fault would try the same refused move again, for ever.)
    for (size_t i = 0; i < n_leftovers; ++i) t.forget_side(leftovers[i]);
  }
  for (size_t i = 0; i < n; ++i) translation::unlock_exclusive(*moved[i].to, moved[i].held, /*bump_version=*/true);
  return true;
}

template <class T>
bool pool::PoolCore<T>::try_sparse_group(PageId pid)
  requires translation::kSparseGroupTable<typename T::Table>
{
  Resolved r = resolve(pid.space());
  if (pid.block() >= r.capacity) throw_out_of_range(pid);
  std::lock_guard lock(evict_mutex_);  // as the evictor
  if (!r.space->alive.load(std::memory_order_acquire)) return false;
  return try_sparsify(r.space, pid.block());
}

template <class T>
bool pool::PoolCore<T>::group_is_sparse(PageId pid)
  requires translation::kSparseGroupTable<typename T::Table>
{
  Resolved r = resolve(pid.space());
  if (pid.block() >= r.capacity) throw_out_of_range(pid);
  return r.space->table.group_sparse(pid.block());
}

// check_invariants()'s part for sparse groups: no move running; a sparse group's array words
// are all zero and its count is its non-zero side entries; a dense group's count is its
// non-zero array words and its side entries (lookups' leftovers) are zero; every side entry
// in the table is owned by its block and not retired; every resident entry, in either
// representation, points to a frame its page owns (reads in flight excepted).
template <class T>
void pool::PoolCore<T>::check_sparse_groups(const std::vector<uint64_t>& pending_pages) const
  requires translation::kSparseGroupTable<typename T::Table>
{
  auto fail = [](const std::string& why) { throw std::logic_error("pool invariant violated: " + why); };
  std::lock_guard lock(spaces_mutex_);
  for (const auto& s : spaces_) {
    if (!s->alive.load()) continue;
    const auto& t = s->table;
    auto check_word = [&](BlockId b, EntryWord w, const char* where) {
      const PageId pid(s->id, b);
      if (w.state() == kIoPending && std::binary_search(pending_pages.begin(), pending_pages.end(), pid.raw)) return;
      if (!w.resident() || w.frame() > frames_.num_frames() || meta_[w.frame()].owner.load() != pid.raw) {
        fail(std::string(where) + " entry of block " + std::to_string(b) + " in space " + s->name +
             " points to a frame it does not own");
      }
    };
    std::map<uint64_t, uint32_t> side_resident;  // group -> non-zero side entries
    t.for_each_side_entry([&](BlockId b, const translation::Entry& e) {
      EntryWord w = translation::load(e);
      if (w.state() == translation::kGone || !translation::owned_by(e, b)) {
        fail("side entry of block " + std::to_string(b) + " in space " + s->name + " is retired or another's");
      }
      if (w.evicted()) return;
      if (!t.group_sparse(b)) {
        fail("non-zero side entry of block " + std::to_string(b) + " in dense group of space " + s->name);
      }
      check_word(b, w, "side");
      ++side_resident[b / translation::kEntriesPerGroup];
    });
    const uint64_t blocks = s->num_blocks.load();
    for (uint64_t g = 0; g * translation::kEntriesPerGroup < blocks; ++g) {
      const BlockId first = static_cast<BlockId>(g * translation::kEntriesPerGroup);
      const uint32_t word = t.group_word(first);
      if (word & (translation::kGroupMoving | translation::kPunchLock)) fail("group " + std::to_string(g) + " is moving");
      const bool sparse = word & translation::kGroupSparse;
      uint32_t resident = 0;
      for (uint64_t b = first; b < std::min(blocks, uint64_t{first} + translation::kEntriesPerGroup); ++b) {
        EntryWord w = translation::load(t.array_word(static_cast<BlockId>(b)));
        if (w.evicted()) continue;
        if (sparse) fail("array word of block " + std::to_string(b) + " is non-zero in sparse group " + std::to_string(g));
        check_word(static_cast<BlockId>(b), w, "array");
        ++resident;
      }
      if (sparse) {
        auto it = side_resident.find(g);
        resident = it == side_resident.end() ? 0 : it->second;  // 0: emptied, and sparse still
      }
      if ((sparse || translation::group_count_of(word) == 0) && t.array_page_backed(first)) {
        fail(std::string("the array page of ") + (sparse ? "sparse" : "unreferenced dense") + " group " +
             std::to_string(g) + " of space " + s->name + " is backed (written after its punch)");
      }
      if (translation::group_count_of(word) != resident) {
        fail("hole-punch count " + std::to_string(translation::group_count_of(word)) + " != " +
             std::to_string(resident) + " resident entries in " + (sparse ? "sparse" : "dense") + " group " +
             std::to_string(g) + " of space " + s->name);
      }
    }
  }
}

}  // namespace calico
