// Optimistic readers: the code that reads page bytes between read_optimistic and validate,
// the primitive every index author needs (src/index/README.md, "Writing an index").
//
// Entry points:
//   CALICO_OPTIMISTIC_READER   marks such a function (and only such a function)
//   racy_copy(dst, src, n)     copies bytes of a page that may be changing
//
// Why this exists. An optimistic read races with writers by design (src/pool/README.md,
// rule 4): the reader loads bytes that a writer may be changing, and uses what it loaded only
// if the page's version validates afterwards. ThreadSanitizer cannot know about the
// validation, so it would report each such load. Rather than compile other code under TSan
// or suppress reports by name, the functions that do these loads are left uninstrumented,
// and everything else (the pool, the validation, every use of what was read) is checked.
// Every build compiles the same reads; the attribute changes no code outside TSan builds.
//
// Rules for a function marked CALICO_OPTIMISTIC_READER:
//   - it is the smallest function that reads the page: it takes the page pointer, reads,
//     bounds-checks every offset, length and count it takes from the page before following
//     it, and returns values that the caller uses only after validate();
//   - it is never itself always_inline: GCC and clang inline an always_inline function into
//     an instrumented caller and instrument it there, losing the attribute. A plain inline
//     reader is not inlined into instrumented callers under TSan (the sanitizer attributes
//     differ), and is inlined exactly as before elsewhere (GCC compares them only for
//     sanitizers that are on). always_inline helpers are fine when every caller is a reader;
//   - it calls no library function that TSan intercepts (memcpy, memcmp, ...): the
//     interceptor checks the range it is given, whoever calls it. Use racy_copy, and
//     fixed-size __builtin_memcpy (expanded inline, never a call).
#pragma once

#include <cstddef>

#define CALICO_OPTIMISTIC_READER __attribute__((no_sanitize("thread")))

namespace calico {

// Copies n bytes at src (a page that may be changing) to dst (private memory). The copy is
// meaningful only if the read validates afterwards. 16-byte pieces by fixed-size
// __builtin_memcpy; the empty asm keeps the compiler from turning the loop back into a
// memcpy call (which TSan would intercept and report).
CALICO_OPTIMISTIC_READER inline void racy_copy(void* dst, const void* src, size_t n) {
  auto* d = static_cast<std::byte*>(dst);
  auto* s = static_cast<const std::byte*>(src);
  size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __builtin_memcpy(d + i, s + i, 16);
    asm volatile("" ::: "memory");
  }
  if (n - i >= 8) {
    __builtin_memcpy(d + i, s + i, 8);
    i += 8;
  }
  if (n - i >= 4) {
    __builtin_memcpy(d + i, s + i, 4);
    i += 4;
  }
  if (n - i >= 2) {
    __builtin_memcpy(d + i, s + i, 2);
    i += 2;
  }
  if (n - i >= 1) d[i] = s[i];
}

}  // namespace calico
