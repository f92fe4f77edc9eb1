// Shared harness of the index page fuzz targets (tests/fuzz/*_fuzz.cc, libFuzzer; built with
// -DCALICO_FUZZ=ON, run by scripts/fuzz.sh).
//
// Each target builds one small valid index once per process, in a pool under a fresh
// temporary directory (/dev/shm when it exists), and keeps an image of every page of the
// index's space. Per input:
//   1. byte 0 chooses one of the target's candidate pages; bytes 1.. overwrite that page
//      from its offset 0 under the exclusive latch (the rest of the page keeps its valid
//      bytes, so small inputs mutate headers and short inputs stay cheap);
//   2. the target runs the index's operations (lookups, scans, searches and a few writes);
//      each must return or throw the error the README promises for a corrupt page (see
//      "What a corrupt page may raise" below): a crash, a hang (-timeout), a sanitizer
//      report, another exception type, or a calico::Error of another code or naming no page
//      of the index is a finding (the process aborts with the error's message);
//   3. every page is put back from its image (writes may have touched several), and when
//      the space grew by more than kMaxGrowthBlocks (pages allocated by writes, orphaned by
//      the restore) the index is built again in a new space and the old one dropped.
// The pool must stay sound after every input: check_invariants() runs every
// kInvariantEvery inputs.
//
// Seeds (tests/fuzz/corpus/<target>/): with CALICO_FUZZ_SEED_DIR=dir in the environment,
// the first build writes one input per candidate page to dir (the selector byte, then the
// page's valid bytes without trailing zeros: the input that leaves the page as it is); the
// corpus holds a few of them, one per kind of page.
//
// What a corrupt page may raise (error_finding below, and Harness::one_input):
//   - Error(kCorruptPage) naming a page of the index's space below its end, with the message
//     ending in "in page <space>:<block>" for that page (src/index/corrupt_page.h). The named
//     page is the one whose bytes broke the format: usually the overwritten page, or a valid
//     page that the overwritten one points to wrongly (a child of another kind, a chain that
//     closes a cycle);
//   - only when the overwritten page is the metadata page (block 0) and only from the
//     index's open(): Error(kInvalidArgument), the documented answer of every open() to a
//     space that is not an index of its format (targets call open() through open_index()).
//   - what a target's optional legal(error, overwritten page) accepts: the answer of one of
//     its operations to valid bytes that say something else than the build wrote (e.g. an
//     HNSW add of an id whose page now says the id is present: kInvalidArgument). Keep it
//     to such answers; it must not accept a code for bytes that break the format.
//   Any other code (kRestartLimit, kPageOutOfRange, kPoolFull, ...) is a finding.
//   CALICO_FUZZ_SURVEY=1 in the environment prints each finding of this kind instead of
//   aborting, and at exit a count per error code (to survey a target before tightening).
//
// Adding a target: a class with the members of the Target concept below, and
// CALICO_FUZZ_TARGET(ClassName) in its own tests/fuzz/<name>_fuzz.cc (CMakeLists.txt builds
// every such file). Targets that parse something other than an index page (the catalog)
// can call LLVMFuzzerTestOneInput-style code directly instead: see
// CALICO_FUZZ_BYTES_TARGET, the hook for byte-level parsers.
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/error.h"
// The fuzz build instantiates the pool implicitly (CALICO_IMPLICIT_INSTANTIATION, see
// CMakeLists.txt): the member definitions come from here.
#include "pool/definitions.h"

namespace calico::fuzz {

inline constexpr uint64_t kMaxGrowthBlocks = 256;
inline constexpr uint64_t kInvariantEvery = 64;

// An open() that refused the space as not an index of its format (kInvalidArgument): legal
// only when the input overwrote the metadata page (see check_error).
struct OpenRefused {
  Error error;
};

// Calls open (a callable returning the opened index) and turns its kInvalidArgument into
// OpenRefused; every other Error passes through.
template <class Open>
auto open_index(Open&& open) -> decltype(open()) {
  try {
    return open();
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kInvalidArgument) throw OpenRefused{e};
    throw;
  }
}

// Counts of the errors inputs raised, per code (printed at exit under CALICO_FUZZ_SURVEY).
struct ErrorStats {
  uint64_t by_code[16] = {};
  uint64_t open_refused = 0;
  uint64_t named_other_page = 0;  // kCorruptPage naming a page other than the overwritten one
  uint64_t findings = 0;
};

inline bool survey_mode() {
  static const bool on = [] {
    const char* v = std::getenv("CALICO_FUZZ_SURVEY");
    return v != nullptr && *v != '\0' && *v != '0';
  }();
  return on;
}

// Why e is not what a corrupt page may raise (fuzz_harness.h, top), or "" when it is.
inline std::string error_finding(const Error& e, SpaceId space, uint64_t space_blocks) {
  if (e.code() != ErrorCode::kCorruptPage) return "an Error of another code than kCorruptPage";
  const PageId p = e.page();
  if (p == PageId{} || p.space() != space || p.block() >= space_blocks) {
    return "kCorruptPage naming no page of the index's space";
  }
  const std::string suffix = "in page " + std::to_string(p.space()) + ":" + std::to_string(p.block());
  const std::string what = e.what();
  if (what.size() < suffix.size() || what.compare(what.size() - suffix.size(), suffix.size(), suffix) != 0) {
    return "kCorruptPage whose message does not name its page";
  }
  return "";
}

// Removes path (recursively) when the process exits normally. One path per process.
inline void remove_at_exit(const std::string& path) {
  static std::string* const removed = new std::string(path);
  std::atexit([] {
    std::error_code ec;
    std::filesystem::remove_all(*removed, ec);
  });
}

// A temporary directory, removed at exit (the harness that owns it is never destroyed).
class TempDir {
 public:
  TempDir() {
    std::string base = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    std::string tmpl = base + "/calico-fuzz-XXXXXX";
    if (mkdtemp(tmpl.data()) == nullptr) {
      std::perror("mkdtemp");
      std::abort();
    }
    path_ = tmpl;
    remove_at_exit(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline PoolOptions fuzz_pool_options(const std::string& dir) {
  PoolOptions o;
  o.data_dir = dir;
  o.page_size = 4096;
  o.pool_bytes = size_t{1024} * 4096;  // the index and its growth stay resident: no I/O per input
  o.max_blocks_per_space = uint64_t{1} << 16;
  o.eviction_batch = 8;
  o.prefault_frames = false;
  return o;
}

// Target concept:
//   static constexpr const char* kName;
//   void build(BufferPool& pool, const std::string& space_name);  // the index, in a new space
//   SpaceId space() const;
//   std::vector<BlockId> candidates() const;  // pages inputs may overwrite
//   void run(BufferPool& pool, const uint8_t* data, size_t size);  // operations; may throw Error
//   optional: void verify(BufferPool&);  bool legal(const Error&, PageId overwritten) const;
template <class Target>
class Harness {
 public:
  Harness() : pool_(BufferPool::open(fuzz_pool_options(dir_.path()))) { rebuild(); }

  void one_input(const uint8_t* data, size_t size) {
    if (size == 0) return;
    const std::vector<BlockId>& cand = candidates_;
    const PageId pid(target_->space(), cand[data[0] % cand.size()]);
    const size_t n = std::min(size - 1, pool_->usable_page_size());
    {
      ExclusiveGuard g = pool_->pin_exclusive(pid);
      std::memcpy(g.data(), data + 1, n);
      g.mark_dirty();
    }
    try {
      target_->run(*pool_, data + 1, n);
    } catch (const OpenRefused& r) {
      ++stats().open_refused;
      if (pid.block() != 0) finding(r.error, "open() refused the index for a page other than its metadata page", pid);
    } catch (const Error& e) {
      ++stats().by_code[static_cast<unsigned>(e.code()) % 16];
      if (e.code() == ErrorCode::kCorruptPage && e.page() != pid) ++stats().named_other_page;
      const std::string why = error_finding(e, target_->space(), pool_->space_blocks(target_->space()));
      bool legal = false;
      if constexpr (requires { target_->legal(e, pid); }) legal = target_->legal(e, pid);
      if (!why.empty() && !legal) finding(e, why, pid);
    }
    // Any other exception type escapes: libFuzzer reports it as a finding.
    restore();
    if (++inputs_ % kInvariantEvery == 0) {
      pool_->check_invariants();
      control_run();
    }
  }

 private:
  static ErrorStats& stats() {
    static ErrorStats* const st = [] {
      auto* p = new ErrorStats();
      if (survey_mode()) {
        std::atexit([] {
          const ErrorStats& s = stats();
          std::fprintf(stderr, "fuzz survey (%s): findings %llu, open() refused %llu, kCorruptPage naming another page %llu\n",
                       Target::kName, static_cast<unsigned long long>(s.findings),
                       static_cast<unsigned long long>(s.open_refused),
                       static_cast<unsigned long long>(s.named_other_page));
          for (unsigned c = 0; c < 16; ++c) {
            if (s.by_code[c] != 0) {
              std::fprintf(stderr, "fuzz survey (%s):   %s: %llu\n", Target::kName,
                           to_string(static_cast<ErrorCode>(c)), static_cast<unsigned long long>(s.by_code[c]));
            }
          }
        });
      }
      return p;
    }();
    return *st;
  }
  // An input raised what a corrupt page may not: abort with the error (a finding), or in
  // survey mode print it and go on.
  void finding(const Error& e, const std::string& why, PageId overwritten) {
    ++stats().findings;
    std::fprintf(stderr, "fuzz finding (%s, input overwrote page %u:%u): %s: %s\n", Target::kName,
                 overwritten.space(), overwritten.block(), why.c_str(), e.what());
    if (!survey_mode()) std::abort();
  }

  void rebuild() {
    if (target_) {
      const SpaceId old = target_->space();
      target_.reset();  // index objects may write their metadata when destroyed
      pool_->drop_space(old);
    }
    target_ = std::make_unique<Target>();
    target_->build(*pool_, std::string(Target::kName) + "_" + std::to_string(generation_++));
    pool_->flush();
    candidates_ = target_->candidates();
    const SpaceId s = target_->space();
    const uint64_t blocks = pool_->space_blocks(s);
    images_.assign(blocks, std::vector<std::byte>(pool_->usable_page_size()));
    for (uint64_t b = 0; b < blocks; ++b) {
      SharedGuard g = pool_->pin_shared(PageId(s, static_cast<BlockId>(b)));
      std::memcpy(images_[b].data(), g.data(), images_[b].size());
    }
    if (const char* dir = std::getenv("CALICO_FUZZ_SEED_DIR"); dir != nullptr && generation_ == 1) dump_seeds(dir);
  }
  void dump_seeds(const std::string& dir) const {
    std::filesystem::create_directories(dir);
    for (size_t i = 0; i < candidates_.size() && i < 256; ++i) {
      const std::vector<std::byte>& page = images_[candidates_[i]];
      size_t n = page.size();
      while (n > 0 && page[n - 1] == std::byte{0}) --n;
      const std::string path = dir + "/page_" + std::to_string(candidates_[i]);
      std::FILE* f = std::fopen(path.c_str(), "wb");
      if (f == nullptr) continue;
      const unsigned char selector = static_cast<unsigned char>(i);
      std::fwrite(&selector, 1, 1, f);
      std::fwrite(page.data(), 1, n, f);
      std::fclose(f);
    }
  }
  // The control: on the restored index (every page as built) the same operations must
  // succeed. An Error here means restore() missed a damaged page or a reader rejects valid
  // bytes; either is a finding, so the process aborts with the message.
  void control_run() {
    static const uint8_t kNone = 0;
    try {
      // A target may also say what the restored index holds: verify() aborts on a difference.
      if constexpr (requires { target_->verify(*pool_); }) target_->verify(*pool_);
      target_->run(*pool_, &kNone, 0);
    } catch (const Error& e) {
      std::fprintf(stderr, "fuzz control: the restored %s index raised: %s\n", Target::kName, e.what());
      std::abort();
    }
    restore();
  }

  void restore() {
    const SpaceId s = target_->space();
    if (pool_->space_blocks(s) > images_.size() + kMaxGrowthBlocks) {
      rebuild();
      return;
    }
    for (uint64_t b = 0; b < images_.size(); ++b) {
      ExclusiveGuard g = pool_->pin_exclusive(PageId(s, static_cast<BlockId>(b)));
      if (std::memcmp(g.data(), images_[b].data(), images_[b].size()) != 0) {
        std::memcpy(g.data(), images_[b].data(), images_[b].size());
        g.mark_dirty();
      }
    }
  }

  TempDir dir_;
  std::unique_ptr<BufferPool> pool_;
  std::unique_ptr<Target> target_;
  std::vector<BlockId> candidates_;
  std::vector<std::vector<std::byte>> images_;
  uint64_t generation_ = 0;
  uint64_t inputs_ = 0;
};

}  // namespace calico::fuzz

// One index page target: the harness is built on the first input (libFuzzer calls
// LLVMFuzzerTestOneInput from one thread) and never destroyed: a pool destroyed during
// static destruction would flush through thread-local I/O rings that are already gone.
// Its directory is removed at exit (remove_at_exit; a crash leaves it behind).
#define CALICO_FUZZ_TARGET(TargetClass)                                                 \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {             \
    static auto* harness = new ::calico::fuzz::Harness<TargetClass>();                  \
    harness->one_input(data, size);                                                     \
    return 0;                                                                           \
  }

// The hook for byte-level parsers that need no index (tests/fuzz/catalog_fuzz.cc):
// fn(const uint8_t* data, size_t size) parses the bytes and may throw calico::Error of the
// one code `allowed_code` only (the parser's own, e.g. kCorruptCatalog); any other code
// aborts (a finding), any other exception type escapes to libFuzzer.
#define CALICO_FUZZ_BYTES_TARGET(fn, allowed_code)                                      \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {             \
    try {                                                                               \
      fn(data, size);                                                                   \
    } catch (const ::calico::Error& e) {                                                \
      if (e.code() != (allowed_code)) {                                                 \
        std::fprintf(stderr, "fuzz finding: an Error of another code than %s: %s\n",    \
                     ::calico::to_string(allowed_code), e.what());                      \
        std::abort();                                                                   \
      }                                                                                 \
    }                                                                                   \
    return 0;                                                                           \
  }
