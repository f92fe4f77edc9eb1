// The calico adapter: Calico's B+tree (include/calico/index/btree.h) in one space of a BufferPool.
//
// Entry point: open_calico(config) (registered in kv_store.cc as "calico").
//
// Configuration (what the papers do, what we set):
//  - vmcache and PrediCache run YCSB on their B-tree over the buffer pool with 4 KB pages,
//    the pool sized to the cache budget, and direct I/O. We set: pool_bytes = cache_bytes,
//    page_size 4096, O_DIRECT on, huge pages on, the translation is "array" (Calico's) for
//    the system "calico", any other by name for "calico:<translation>".
//  - Load: bulk_load (bottom-up, nodes 90% full) of the sorted keys, then flush.
//  - Reads: BTree::lookup (optimistic lock coupling: no atomic write on the happy path).
//    Updates: upsert; inserts: insert; scans: BTree::scan from the start key.
//  - Larger than memory: the pool evicts (CLOCK) and writes back; the limit is real.
//  - --far-mb / --far-tier (docs/results/tiers.md): a far frame tier behind the pool of a tiered
//    translation (calico:array_tiered: Calico tiers, src/pool/features/tiering.h); per-tier hits and
//    migrations are printed when the store closes. Other translations ignore it.
// The pool's hit counters (hits / accesses) are reported as the hit rate.
#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cstdio>
#include <stdexcept>
#include <iterator>
#include <memory>
#include <optional>

#include "calico/buffer_pool.h"
#include "calico/index/btree.h"
#include "ycsb/generated_records.h"
#include "common/far_tier_option.h"
#include "ycsb/kv_store.h"
#include "calico/variants.h"

namespace calico::bench::kv {
namespace {

template <class Tree>
class CalicoHandle final : public KvHandle {
 public:
  explicit CalicoHandle(Tree* tree) : tree_(tree) {}
  void insert(std::string_view key, std::string_view value) override { tree_->insert(key, value); }
  bool read(std::string_view key, std::string* out) override { return tree_->lookup(key, out); }
  void update(std::string_view key, std::string_view value) override { tree_->upsert(key, value); }
  uint64_t scan(std::string_view start, uint64_t count,
                FunctionRef<void(std::string_view, std::string_view)> visit) override {
    uint64_t n = 0;
    if (count == 0) return 0;
    tree_->scan(start, [&](std::string_view k, std::string_view v) {
      visit(k, v);
      return ++n < count;
    });
    return n;
  }

 private:
  Tree* tree_;
};

template <class Pool>
class CalicoStore final : public KvStore {
  using Tree = index::BasicBTree<Pool>;

 public:
  explicit CalicoStore(const KvConfig& config) {
    PoolOptions opt;
    opt.data_dir = config.data_dir;
    opt.page_size = 4096;
    opt.pool_bytes = config.cache_bytes;
    opt.direct_io = true;
    opt.huge_pages = true;
    // Small pools (tests): eviction rounds of at most a quarter of the frames.
    uint64_t frames = config.cache_bytes / opt.page_size;
    opt.eviction_batch = static_cast<uint32_t>(std::clamp<uint64_t>(frames / 4, 1, 64));
    // Translation address space: 16x the loaded pages leaves room for the run's inserts;
    // at least 2^22 blocks (16 GB of data, 32 MB of address space).
    uint64_t pages = config.data_bytes / opt.page_size + 1;
    opt.max_blocks_per_space = std::clamp<uint64_t>(std::bit_ceil(pages * 16), uint64_t{1} << 22, uint64_t{1} << 32);
    if (config.far_bytes > 0 && Pool::kTierable) {
      opt.tiers.far = far_tier_option(config.far_tier, config.far_bytes / opt.page_size);
    }
    pool_ = Pool::open(opt);
    tree_.emplace(Tree::create(*pool_, "ycsb"));
  }

  ~CalicoStore() override;

  std::string name() const override { return "calico"; }
  std::string configuration() const override {
    const PoolOptions& o = pool_->options();
    std::string far = o.tiers.far.frames == 0
                          ? std::string("no far tier")
                          : fmt::format("far tier {} (promote on read {}, on write {}, {} lines charged per far access)",
                                        o.tiers.far.describe(), o.tiers.promote_on_read, o.tiers.promote_on_write,
                                        o.tiers.far_lines_per_access);
    return fmt::format("calico B+tree (optimistic lock coupling) on BufferPool<{}>: pool {} MB, "
                       "page 4096 B, O_DIRECT {}, eviction batch {}, max {} blocks, bulk load 90% full, {}",
                       Pool::kTranslationName, o.pool_bytes >> 20, pool_->stats().direct_io ? "on" : "off (unsupported)", o.eviction_batch,
                       o.max_blocks_per_space, far);
  }
  void load(uint64_t n, FunctionRef<void(uint64_t, std::string*, std::string*)> make,
            FunctionRef<void(uint64_t)> progress) override {
    uint64_t steps = 0;
    tree_->bulk_load(GeneratedRecords(0, &make, &progress, &steps),
                     GeneratedRecords(n, &make, &progress, &steps));
    pool_->flush();
    progress(n);
  }
  std::unique_ptr<KvHandle> handle() override { return std::make_unique<CalicoHandle<Tree>>(&*tree_); }
  std::optional<CacheCounters> cache_counters() const override {
    PoolStats s = pool_->stats();
    return CacheCounters{s.hits,       s.accesses,       s.tier[1].hits,      s.migration.promotions,
                         s.migration.demotions,  s.tier[1].evictions, s.migration.bytes, s.migration.wait_ns,
                         s.migration.ns, s.migration.fault_ns, s.migration.copy_ns, s.migration.discard_ns};
  }

 private:
  std::unique_ptr<Pool> pool_;
  std::optional<Tree> tree_;
};

template <class Pool>
CalicoStore<Pool>::~CalicoStore() {
  // Per-tier figures of the far tier runs (docs/results/tiers.md), on stderr: hits per tier, migrations.
  if (pool_ != nullptr && pool_->options().tiers.far.frames > 0) {
    PoolStats s = pool_->stats();
    std::fprintf(stderr,
                 "calico tiers: fast %llu frames (%llu hits, %llu evictions), far %llu frames (%llu hits, %llu "
                 "evictions to disk), %llu promotions, %llu demotions, %llu MB migrated, %.3f s waiting for "
                 "bandwidth\n",
                 (unsigned long long)s.tier[0].frames, (unsigned long long)s.tier[0].hits,
                 (unsigned long long)s.tier[0].evictions, (unsigned long long)s.tier[1].frames,
                 (unsigned long long)s.tier[1].hits, (unsigned long long)s.tier[1].evictions,
                 (unsigned long long)s.migration.promotions, (unsigned long long)s.migration.demotions,
                 (unsigned long long)(s.migration.bytes >> 20), s.migration.wait_ns / 1e9);
  }
  tree_.reset();  // writes the entry count to the metadata page
  pool_.reset();  // flushes
}

}  // namespace

std::unique_ptr<KvStore> open_calico(const KvConfig& config, std::string_view translation) {
  return variants::with_pool_type(translation, [&]<class Pool>() -> std::unique_ptr<KvStore> {
    return std::make_unique<CalicoStore<Pool>>(config);
  });
}

}  // namespace calico::bench::kv
