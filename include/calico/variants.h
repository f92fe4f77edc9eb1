// The translation variants by name: the command line (calico_bench --translation), the
// Python package and the tests reach every instantiation of BasicBufferPool through this list.
//
// Adding a variant: define its policy (calico/translation_policy.h; src/translation/README.md
// says how) and add it to the one list in cmake/variants.cmake, which generates its
// translation units (the pool and indexes, and the Python module's make_pool) and
// CALICO_ALL_TRANSLATIONS below. The typed tests (tests/support/variants.h) then run it
// through every index test.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/error.h"
#include "calico/detail/all_translations.h"

namespace calico::variants {

template <class... Ts>
struct TranslationList {};

// Every translation, in report order: the ceiling first, then Calico, then the competitors.
using AllTranslations = TranslationList<CALICO_ALL_TRANSLATIONS>;

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
