// Test support: the translation variants of src/variants/registry.h as GoogleTest type
// lists, so that an index or stress test written once runs on every translation.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <type_traits>

#include "variants/registry.h"

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

}  // namespace calico::testing
