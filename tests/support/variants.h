// Test support: the translation variants of include/calico/variants.h as GoogleTest type
// lists, so that an index or stress test written once runs on every translation.
#pragma once

#include <gtest/gtest.h>

#include <iterator>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>

#include "support/test_util.h"
#include "calico/variants.h"

namespace calico::testing {

namespace detail {
// The pools of the translations in List that Keep<T>::value keeps, as a GoogleTest type list.
template <template <class> class Keep, class List, class... Kept>
struct Filter;
template <template <class> class Keep, class... Kept>
struct Filter<Keep, variants::TranslationList<>, Kept...> {
  using type = ::testing::Types<BasicBufferPool<Kept>...>;
};
template <template <class> class Keep, class T, class... Rest, class... Kept>
struct Filter<Keep, variants::TranslationList<T, Rest...>, Kept...> {
  using type = std::conditional_t<Keep<T>::value,
                                  typename Filter<Keep, variants::TranslationList<Rest...>, Kept..., T>::type,
                                  typename Filter<Keep, variants::TranslationList<Rest...>, Kept...>::type>;
};

template <class T>
struct Evicts : std::bool_constant<!T::kDirect> {};

// The translations the index tests run on under the sanitizers: one per mechanism (the
// array with versions, the sparse array's lazy reservation and hole punching, tier
// migration, the lock-free hash table, LIPAH's hints, vmcache's page table with tiers).
// The others are a lock-based hash table (chained, open), a variant of one listed (vmcache
// and vmcache_2m of vmcache_n, array_hinted of lipah) or a predictor in front of the array.
inline constexpr std::string_view kSanitizerIndexTranslations[] = {"array",         "array_sparse", "array_tiered",
                                                                   "hash_lockfree", "lipah",        "vmcache_n"};

template <class T>
constexpr bool in_sanitizer_index_set() {
  for (std::string_view name : kSanitizerIndexTranslations)
    if (name == T::kName) return true;
  return false;
}
template <class T>
struct InSanitizerIndexSet : std::bool_constant<!T::kDirect && in_sanitizer_index_set<T>()> {};

template <class... Ts>
constexpr size_t sanitizer_index_set_size(variants::TranslationList<Ts...>) {
  return (size_t{InSanitizerIndexSet<Ts>::value} + ... + 0);
}
static_assert(sanitizer_index_set_size(variants::AllTranslations{}) == std::size(kSanitizerIndexTranslations),
              "a name in kSanitizerIndexTranslations names no evicting translation");
}  // namespace detail

// Every pool whose translation evicts (all but `direct`, which needs every page resident and
// is tested on its own): the pool's own tests (the stress test with its reference model,
// prewarm, read groups) run on each, with tiny pools, in every build.
using EvictingPools = typename detail::Filter<detail::Evicts, variants::AllTranslations>::type;

// The pools the index and benchmark tests (B+tree, heap file, HNSW, IVF, graphs, TPC-C) run
// on: every evicting translation in the release build, and the six of
// detail::kSanitizerIndexTranslations under ThreadSanitizer and ASan
// (CALICO_INDEX_TESTS_SANITIZER_SET, set by CMakeLists.txt), where every test costs 5-20
// times as much: the pool's tests above still cover all twelve there.
#if CALICO_INDEX_TESTS_SANITIZER_SET
using IndexPools = typename detail::Filter<detail::InSanitizerIndexSet, variants::AllTranslations>::type;
#else
using IndexPools = EvictingPools;
#endif

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
