// PoolImpl<Pool>: PoolApi over one BasicBufferPool<Translation> and the registry of the
// indexes opened on it (api.h has the lifetime and locking rules). Included only by the
// variant translation units (generated from cmake/variants.cmake), which instantiate make_pool<Pool>.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "api.h"
#include "btree_impl.h"
#include "coded_impl.h"
#include "calico/error.h"
#include "gate.h"
#include "hnsw_impl.h"
#include "hnsw_slot_impl.h"
#include "ivf_impl.h"
#include "ivf_slot_impl.h"

namespace calico::py {

template <class Pool>
class PoolImpl final : public PoolApi, public std::enable_shared_from_this<PoolImpl<Pool>> {
 public:
  PoolImpl(std::unique_ptr<Pool> pool, std::string translation)
      : pool_(std::move(pool)), translation_(std::move(translation)), gate_(std::make_shared<Gate>()) {}
  ~PoolImpl() override {
    try {
      close();
    } catch (...) {  // a destructor cannot report; close() explicitly to see errors
    }
  }

  void flush() override {
    // Declared before the Use: an index whose last reference is here is destroyed after
    // the gate is released (its destructor takes the gate).
    std::vector<std::shared_ptr<IndexApi>> indexes;
    Use u(*gate_);
    indexes = live_indexes();
    for (auto& idx : indexes) idx->sync();
    pool_->flush();
  }

  // Closes every index, flushes and destroys the pool. The pool is closed even when the
  // flush fails (the error is then rethrown); closing twice is a no-op.
  void close() override {
    std::vector<std::shared_ptr<IndexApi>> indexes;  // destroyed after the gate is released
    std::unique_lock l(gate_->mu);
    if (gate_->closed) return;
    gate_->closed = true;
    std::exception_ptr error;
    indexes = live_indexes();
    for (auto& idx : indexes) {
      try {
        idx->sync();
      } catch (...) {
        if (!error) error = std::current_exception();
      }
      idx->close_locked();
    }
    try {
      pool_->flush();
    } catch (...) {
      if (!error) error = std::current_exception();
    }
    pool_.reset();
    if (error) std::rethrow_exception(error);
  }

  bool closed() override {
    std::shared_lock l(gate_->mu);
    return gate_->closed;
  }

  std::map<std::string, uint64_t> stats() override {
    Use u(*gate_);
    const PoolStats s = pool_->stats();
    return {{"accesses", s.accesses},
            {"hits", s.hits},
            {"faults", s.faults},
            {"evictions", s.evictions},
            {"write_backs", s.write_backs},
            {"punches", s.punches},
            {"prefetch_issued", s.prefetch_issued},
            {"prefetch_failed", s.prefetch_failed},
            {"read_inflight_ns", s.read_inflight_ns},
            {"optimistic_fallbacks", s.optimistic_fallbacks},
            {"hint_hits", s.hints.hits},
            {"hint_misses", s.hints.misses},
            {"hint_repairs", s.hints.repairs},
            {"frames", s.frames},
            {"free_frames", s.free_frames},
            {"resident_pages", s.resident_pages},
            {"translation_private_bytes", s.translation_private_bytes},
            {"translation_mincore_bytes", s.translation_mincore_bytes},
            {"translation_reserved_bytes", s.translation_reserved_bytes},
            {"frame_bytes", s.frame_bytes},
            {"frame_huge_page_bytes", s.frame_huge_page_bytes},
            {"direct_io", s.direct_io ? 1u : 0u},
            {"write_back_failures", s.write_back_failures},
            {"journal_pages", s.journal_pages},
            {"journal_syncs", s.journal_syncs},
            {"flush_generation", s.flush_generation},
            {"sync_failures", s.sync_failures},
            {"far_frames", s.tier[1].frames},
            {"far_hits", s.tier[1].hits},
            {"far_evictions", s.tier[1].evictions},
            {"promotions", s.migration.promotions},
            {"demotions", s.migration.demotions},
            {"migration_bytes", s.migration.bytes},
            {"migration_ns", s.migration.ns}};
  }

  std::vector<std::string> space_names() override {
    Use u(*gate_);
    std::vector<std::string> names;
    for (const SpaceInfo& s : pool_->spaces()) names.push_back(s.name);
    return names;
  }
  uint64_t prewarm(std::string_view name) override {
    Use u(*gate_);
    return pool_->prewarm(pool_->open_space(name));
  }
  std::string translation() override { return translation_; }
  size_t page_size() override {
    Use u(*gate_);
    return pool_->page_size();
  }

  std::shared_ptr<HnswApi> hnsw(std::string_view name, bool create, const HnswConfig& cfg) override {
    Use u(*gate_);
    std::lock_guard l(registry_mu_);
    if (auto x = registered<HnswApi>(name, "an HNSW index")) {
      if (std::dynamic_pointer_cast<CodedHnswApi>(x)) {  // a CodedHnswApi is an HnswApi too
        throw Error(ErrorCode::kInvalidArgument, "space '" + std::string(name) + "' holds a coded HNSW index");
      }
      return check_hnsw(x, name, create, cfg);
    }
    using Core = index::BasicHnsw<Pool>;
    index::HnswParams p;
    p.dim = cfg.dim;
    p.metric = to_metric(cfg.metric);
    p.M = cfg.M;
    p.ef_construction = cfg.ef_construction;
    p.seed = cfg.seed;
    refuse_if_coded(name);
    if (!exists(name) && !create) pool_->open_space(name);  // throws kUnknownSpace naming it
    std::shared_ptr<HnswApi> x;
    if constexpr (kDirect) {  // one space per pool: no id map (hnsw_slot_impl.h)
      if (exists(name)) make_resident_if_direct(name);
      Core index = exists(name) ? Core::open(*pool_, name) : Core::create(*pool_, name, p, cfg.capacity);
      x = std::make_shared<HnswSlotImpl<Pool>>(gate_, this->shared_from_this(), std::move(index));
    } else {
      using Index = index::BasicMapped<Core>;
      if (!exists(name)) check_map_name(name);
      // attach() opens the map, creates it for a new index, or migrates an index without one.
      Index index = Index::attach(*pool_, name,
                                  exists(name) ? Core::open(*pool_, name) : Core::create(*pool_, name, p, cfg.capacity));
      x = std::make_shared<HnswImpl<Pool>>(gate_, this->shared_from_this(), std::move(index));
    }
    registry_[std::string(name)] = x;
    return check_hnsw(x, name, create, cfg);
  }

  std::shared_ptr<IvfApi> ivf(std::string_view name, bool create, uint32_t dim, MetricName metric,
                              uint32_t nlist) override {
    Use u(*gate_);
    std::lock_guard l(registry_mu_);
    std::shared_ptr<IvfApi> x = registered<IvfApi>(name, "an IVF index");
    if (!x) {
      refuse_if_coded(name);
      using Core = index::BasicIvf<Pool>;
      using Index = index::BasicMapped<Core>;
      if (exists(name)) {
        make_resident_if_direct(name);
        Core core = Core::open(*pool_, name);
        const uint32_t d = core.dim(), nl = core.nlist();
        const MetricName mn = from_metric(core.metric());
        if constexpr (kDirect) {  // one space per pool: no id map (ivf_slot_impl.h)
          x = std::make_shared<IvfSlotImpl<Pool>>(gate_, this->shared_from_this(), pool_.get(), std::string(name), d,
                                                  mn, nl, std::move(core));
        } else {
          // attach() opens the map, or migrates an index without one.
          x = std::make_shared<IvfImpl<Pool>>(gate_, this->shared_from_this(), pool_.get(), std::string(name), d, mn,
                                              nl, Index::attach(*pool_, name, std::move(core)));
        }
      } else if (create) {
        if (dim == 0 || nlist == 0) {
          throw Error(ErrorCode::kInvalidArgument, "ivf '" + std::string(name) + "': dim " + std::to_string(dim) +
                                                       " and nlist " + std::to_string(nlist) + " must be at least 1");
        }
        if constexpr (kDirect) {
          x = std::make_shared<IvfSlotImpl<Pool>>(gate_, this->shared_from_this(), pool_.get(), std::string(name),
                                                  dim, metric, nlist, std::nullopt);
        } else {
          check_map_name(name);
          x = std::make_shared<IvfImpl<Pool>>(gate_, this->shared_from_this(), pool_.get(), std::string(name), dim,
                                              metric, nlist, std::nullopt);
        }
      } else {
        pool_->open_space(name);  // throws kUnknownSpace naming it
      }
      registry_[std::string(name)] = x;
    }
    if (create && (x->dim() != dim || x->metric() != metric || x->nlist() != nlist)) {
      throw Error(ErrorCode::kInvalidArgument, "ivf '" + std::string(name) + "' exists with dim " +
                                                   std::to_string(x->dim()) + ", nlist " + std::to_string(x->nlist()) +
                                                   " and another metric or these; open it with IvfIndex.open");
    }
    return x;
  }

  std::shared_ptr<CodedHnswApi> coded_hnsw(std::string_view name, bool create, const CodedHnswConfig& cfg) override {
    Use u(*gate_);
    std::lock_guard l(registry_mu_);
    std::shared_ptr<CodedHnswApi> x = registered<CodedHnswApi>(name, "a coded HNSW index");
    if (!x) {
      if constexpr (kDirect) {
        throw Error(ErrorCode::kInvalidArgument,
                    "coded hnsw '" + std::string(name) +
                        "': the 'direct' translation holds every page in memory, where the full-vector HnswIndex is "
                        "faster; use another translation");
      } else {
        using Core = index::BasicCodedHnsw<Pool>;
        using Index = index::BasicMapped<Core>;
        if (exists(name)) {
          throw Error(ErrorCode::kInvalidArgument, "space '" + std::string(name) + "' holds another kind of structure");
        }
        if (coded_exists(name)) {
          x = std::make_shared<CodedHnswImpl<Pool>>(
              gate_, this->shared_from_this(), pool_.get(), std::string(name), cfg,
              Index::attach(*pool_, name, Core::open(*pool_, name, cfg.memory_budget)));
        } else if (create) {
          if (cfg.dim == 0) throw Error(ErrorCode::kInvalidArgument, "coded hnsw '" + std::string(name) + "': dim is 0");
          if (name.empty() || name.size() > Core::kMaxNameBytes) {
            throw Error(ErrorCode::kInvalidArgument, "coded hnsw name '" + std::string(name) + "': 1 to " +
                                                         std::to_string(Core::kMaxNameBytes) + " characters");
          }
          check_map_name(name);
          x = std::make_shared<CodedHnswImpl<Pool>>(gate_, this->shared_from_this(), pool_.get(), std::string(name),
                                                    cfg, std::nullopt);
        } else {
          pool_->open_space(std::string(name) + ".codes");  // throws kUnknownSpace naming it
        }
      }
      registry_[std::string(name)] = x;
    }
    if (create && (x->dim() != cfg.dim || x->metric() != cfg.metric)) {
      throw Error(ErrorCode::kInvalidArgument, "coded hnsw '" + std::string(name) + "' exists with dim " +
                                                   std::to_string(x->dim()) +
                                                   " and another metric or dim than asked; open it with CodedHnswIndex.open");
    }
    return x;
  }

  std::shared_ptr<BTreeApi> btree(std::string_view name, bool create) override {
    Use u(*gate_);
    std::lock_guard l(registry_mu_);
    if (auto x = registered<BTreeApi>(name, "a B+tree")) return x;
    refuse_if_coded(name);
    using Tree = index::BasicBTree<Pool>;
    std::unique_ptr<Tree> tree;
    if (exists(name)) {
      make_resident_if_direct(name);
      tree = std::make_unique<Tree>(Tree::open(*pool_, name));
    } else if (create) {
      tree = std::make_unique<Tree>(Tree::create(*pool_, name));
    } else {
      pool_->open_space(name);  // throws kUnknownSpace naming it
    }
    auto x = std::make_shared<BTreeImpl<Pool>>(gate_, this->shared_from_this(), std::move(tree));
    registry_[std::string(name)] = x;
    return x;
  }

 private:
  // 'direct' maps one space to frames: its vector indexes have no id map (*_slot_impl.h).
  static constexpr bool kDirect = Pool::TranslationPolicy::kDirect;

  // A new vector index's name must leave room for its id map's space names.
  static void check_map_name(std::string_view name) {
    if (name.size() > index::BasicIdMap<Pool>::kMaxIndexName) {
      throw Error(ErrorCode::kInvalidArgument, "index name '" + std::string(name) + "' is longer than " +
                                                   std::to_string(index::BasicIdMap<Pool>::kMaxIndexName) +
                                                   " characters (its id map adds '.slots')");
    }
  }

  // 'direct' (no translation: the ceiling) reads optimistically from frame block + 1
  // without validation, so a page must be resident before any read: an index opened there
  // has its whole space loaded first (pages allocated later are resident already).
  void make_resident_if_direct(std::string_view name) {
    if constexpr (Pool::TranslationPolicy::kDirect) {
      const SpaceId s = pool_->open_space(name);
      const uint64_t blocks = pool_->space_blocks(s);
      for (uint64_t b = 0; b < blocks; ++b) pool_->pin_shared(PageId(s, static_cast<BlockId>(b)));
    }
  }

  // Whether the structure named `name` is in the pool. Each one's create allocates its first
  // page at once, so a space without a block was created and never flushed (a crash came
  // before the first flush): the last flush held no such structure, so its space, and its
  // id map's, are dropped here and it counts as absent (created anew, or kUnknownSpace).
  // Callers hold registry_mu_, and a live structure is found in the registry first.
  bool exists(std::string_view name) {
    for (const SpaceInfo& s : pool_->spaces()) {
      if (s.name != name) continue;
      if (s.blocks >= 1) return true;
      pool_->drop_space(s.id);
      if constexpr (!kDirect) index::BasicIdMap<Pool>::drop(*pool_, name);
      return false;
    }
    return false;
  }

  // A coded HNSW has no space named `name` (its spaces are name + kCodedSuffixes), so whether
  // one is stored under `name` is asked of its codes space; one created and never flushed
  // (no block) is dropped with its other spaces and its id map, as exists() drops others.
  static constexpr const char* kCodedSuffixes[] = {".codes", ".graph"};
  bool coded_exists(std::string_view name) {
    const std::string codes = std::string(name) + ".codes";
    bool found = false, empty = false;
    for (const SpaceInfo& s : pool_->spaces()) {
      if (s.name != codes) continue;
      found = true;
      empty = s.blocks == 0;
    }
    if (!found || !empty) return found;
    for (const char* suffix : kCodedSuffixes) {
      const std::string n = std::string(name) + suffix;
      for (const SpaceInfo& s : pool_->spaces()) {
        if (s.name == n) pool_->drop_space(s.id);
      }
    }
    if constexpr (!kDirect) index::BasicIdMap<Pool>::drop(*pool_, name);
    return false;
  }
  // Another kind of structure may not take the name of a coded HNSW (their id maps would
  // share spaces).
  void refuse_if_coded(std::string_view name) {
    if (coded_exists(name)) {
      throw Error(ErrorCode::kInvalidArgument, "space '" + std::string(name) + "' holds a coded HNSW index");
    }
  }

  // The live index registered under `name` as a T; kInvalidArgument when it is another kind.
  template <class T>
  std::shared_ptr<T> registered(std::string_view name, const char* kind) {
    auto it = registry_.find(std::string(name));
    if (it == registry_.end()) return nullptr;
    std::shared_ptr<IndexApi> x = it->second.lock();
    if (!x) {
      registry_.erase(it);
      return nullptr;
    }
    auto t = std::dynamic_pointer_cast<T>(x);
    if (!t) {
      throw Error(ErrorCode::kInvalidArgument, "space '" + std::string(name) + "' is open as another kind than " + kind);
    }
    return t;
  }

  std::shared_ptr<HnswApi> check_hnsw(std::shared_ptr<HnswApi> x, std::string_view name, bool create,
                                      const HnswConfig& cfg) {
    if (create && (x->dim() != cfg.dim || x->metric() != cfg.metric)) {
      throw Error(ErrorCode::kInvalidArgument, "hnsw '" + std::string(name) + "' exists with dim " +
                                                   std::to_string(x->dim()) +
                                                   " and another metric or dim than asked; open it with HnswIndex.open");
    }
    return x;
  }

  // Every registered index still alive (expired entries are dropped).
  std::vector<std::shared_ptr<IndexApi>> live_indexes() {
    std::lock_guard l(registry_mu_);
    std::vector<std::shared_ptr<IndexApi>> out;
    for (auto it = registry_.begin(); it != registry_.end();) {
      if (auto x = it->second.lock()) {
        out.push_back(std::move(x));
        ++it;
      } else {
        it = registry_.erase(it);
      }
    }
    return out;
  }

  std::unique_ptr<Pool> pool_;
  std::string translation_;
  std::shared_ptr<Gate> gate_;
  std::mutex registry_mu_;
  std::map<std::string, std::weak_ptr<IndexApi>> registry_;
};

template <class Pool>
std::shared_ptr<PoolApi> make_pool(const PoolOptions& options) {
  return std::make_shared<PoolImpl<Pool>>(Pool::open(options), std::string(Pool::kTranslationName));
}

}  // namespace calico::py
