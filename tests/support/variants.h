// Test support: the translation variants of include/calico/variants.h as GoogleTest type
// lists, so that an index or stress test written once runs on every translation.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <type_traits>

#include "support/test_util.h"
#include "calico/variants.h"

namespace calico::testing {

namespace detail {
template <class List, class... Kept>
struct Evicting;
template <class... Kept>
struct Evicting<variants::TranslationList<>, Kept...> {
  using type = ::testing::Types<BasicBufferPool<Kept>...>;
};
template <class T, class... Rest, class... Kept>
struct Evicting<variants::TranslationList<T, Rest...>, Kept...> {
  using type = std::conditional_t<T::kDirect, typename Evicting<variants::TranslationList<Rest...>, Kept...>::type,
                                  typename Evicting<variants::TranslationList<Rest...>, Kept..., T>::type>;
};
}  // namespace detail

// Every pool whose translation evicts (all but `direct`, which needs every page resident and
// is tested on its own): the index and stress tests run on each, with tiny pools.
using EvictingPools = typename detail::Evicting<variants::AllTranslations>::type;

// Test names carry the translation's name: BTreeOnEveryTranslation/hash_open.Model...
struct PoolName {
  template <class Pool>
  static std::string GetName(int) {
    return std::string(Pool::kTranslationName);
  }
};

// Options for a typed test's pool: small_options(dir, frames, page_size), and for a tiered
// pool (array_tiered, vmcache_n) a far tier of as many frames again behind it (the local tier: no
// latency charge, unthrottled copies) with promotion probability 1/2 on reads and writes,
// so that the test's pages move between the tiers constantly as well as to disk. The fast
// tier keeps `frames`: what a test pins at once still fits.
template <class Pool>
PoolOptions pool_options(const std::string& dir, uint32_t frames, size_t page_size = 4096) {
  PoolOptions o = small_options(dir, frames, page_size);
  if constexpr (Pool::kTierable) {
    o.tiers.far = memory::tiers::TierConfig::local(frames);
    o.tiers.promote_on_read = 0.5;
    o.tiers.promote_on_write = 0.5;
    if constexpr (Pool::kBatchedMigration) {
      // vmcache_n: demotion rounds as array_tiered's (eviction_batch, not 512) and promotion
      // batches of 2 (not 64), so that tiny tiers migrate, and reach disk, as often.
      o.tiers.demotion_batch = o.eviction_batch;
      o.tiers.promotion_batch = 2;
    }
  }
  return o;
}

// Pages that left the fast frames: evicted to disk, or demoted to a tiered pool's far tier.
// What "the data does not fit the pool" means for a test on every translation.
inline uint64_t pages_pushed_out(const PoolStats& s) { return s.evictions + s.migration.demotions; }

}  // namespace calico::testing
