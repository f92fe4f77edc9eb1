// The translation variants by name: the command line (calico_bench --translation) and the
// tests reach every instantiation of BasicBufferPool through this list.
//
// Adding a variant: define its policy in src/translation/<name>.h, instantiate the pool and
// the indexes in src/variants/<name>.cc and the Python package's make_pool in
// python/src/variants/<name>.cc (else the module fails to load with an undefined symbol),
// and append the policy to AllTranslations below. The parameterised tests
// (tests/support/variants.h) then run it through every index test.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/error.h"
#include "translation/array.h"
#include "translation/hash_chained.h"
#include "translation/hash_lockfree.h"
#include "translation/hash_open.h"
#include "translation/predictive.h"
#include "translation/lipah.h"
#include "translation/sparse_array.h"
#include "translation/vmcache.h"
#include "translation/vmcache_n.h"

namespace calico::variants {

template <class... Ts>
struct TranslationList {};

// Every translation, in report order: the ceiling first, then Calico, then the competitors.
using AllTranslations = TranslationList<translation::DirectTranslation, translation::ArrayTranslation,
                                        translation::SparseArrayTranslation, translation::TieredArrayTranslation,
                                        translation::HashChainedTranslation, translation::HashOpenTranslation,
                                        translation::HashLockFreeTranslation, translation::PredictiveTranslation,
                                        translation::VmcacheTranslation, translation::Vmcache2mTranslation,
                                        translation::LipahTranslation, translation::ArrayHintedTranslation,
                                        translation::VmcacheNTranslation>;

template <class... Ts>
std::vector<std::string> names_of(TranslationList<Ts...>) {
  return {std::string(Ts::kName)...};
}
inline std::vector<std::string> translation_names() { return names_of(AllTranslations{}); }

// Calls f.template operator()<BasicBufferPool<T>>() for the translation T named `name` and
// returns its result. Errors: kInvalidArgument naming the known translations.
template <class F, class... Ts>
decltype(auto) with_pool_type_in(std::string_view name, F&& f, TranslationList<Ts...>) {
  using R = decltype(f.template operator()<BasicBufferPool<translation::ArrayTranslation>>());
  if constexpr (std::is_void_v<R>) {
    bool found = ((name == Ts::kName ? (f.template operator()<BasicBufferPool<Ts>>(), true) : false) || ...);
    if (found) return;
  } else {
    R result{};
    bool found = ((name == Ts::kName ? (result = f.template operator()<BasicBufferPool<Ts>>(), true) : false) || ...);
    if (found) return result;
  }
  std::string known;
  for (const std::string& n : translation_names()) known += (known.empty() ? "" : ", ") + n;
  throw Error(ErrorCode::kInvalidArgument,
              "unknown translation '" + std::string(name) + "' (known: " + known + ")");
}

template <class F>
decltype(auto) with_pool_type(std::string_view name, F&& f) {
  return with_pool_type_in(name, std::forward<F>(f), AllTranslations{});
}

}  // namespace calico::variants
