// Tiered checks (STYLE.md 4), chosen by CALICO_CHECKS_LEVEL at build time and never
// stripped by NDEBUG:
//   CALICO_CHECK(c)    level >= 1: cheap invariants, on in release builds.
//   CALICO_DCHECK(c)   level >= 2: debug asserts (pre/postconditions on hot paths).
//   CALICO_PARANOID    level >= 3: whole-structure checks (callers test the macro).
// A failed check is a bug in Calico, not bad input: it prints and aborts. Bad input is
// reported with calico::Error instead.
#pragma once

#include <cstdio>
#include <cstdlib>

#ifndef CALICO_CHECKS_LEVEL
#define CALICO_CHECKS_LEVEL 1
#endif

namespace calico::detail {
[[noreturn]] inline void check_failed(const char* expr, const char* file, int line) {
  std::fprintf(stderr, "calico: invariant violated: %s at %s:%d\n", expr, file, line);
  std::abort();
}
}  // namespace calico::detail

#define CALICO_CHECK(c) \
  ((c) ? (void)0 : ::calico::detail::check_failed(#c, __FILE__, __LINE__))

#if CALICO_CHECKS_LEVEL >= 2
#define CALICO_DCHECK(c) CALICO_CHECK(c)
#else
#define CALICO_DCHECK(c) ((void)0)
#endif

#define CALICO_PARANOID (CALICO_CHECKS_LEVEL >= 3)
