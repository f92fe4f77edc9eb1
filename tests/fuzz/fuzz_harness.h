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
//      each must return or throw calico::Error: a crash, a hang (-timeout), a sanitizer
//      report, or any other exception type is a finding;
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
// Adding a target: a class with the members of the Target concept below, and
// CALICO_FUZZ_TARGET(ClassName) in its own tests/fuzz/<name>_fuzz.cc (CMakeLists.txt builds
// every such file). Targets that parse something other than an index page (the catalog,
// later) can call LLVMFuzzerTestOneInput-style code directly instead: see
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
#include "pool/buffer_pool_impl.h"

namespace calico::fuzz {

inline constexpr uint64_t kMaxGrowthBlocks = 256;
inline constexpr uint64_t kInvariantEvery = 64;

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
    } catch (const Error&) {
      // The contract: bad page bytes are an Error (kCorruptPage, or kRestartLimit for a
      // structure that never settles). Anything else escapes and is a finding.
    }
    restore();
    if (++inputs_ % kInvariantEvery == 0) {
      pool_->check_invariants();
      control_run();
    }
  }

 private:
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

// The hook for byte-level parsers that need no index (e.g. a future catalog target, in
// tests/fuzz/catalog_fuzz.cc): fn(const uint8_t* data, size_t size) parses the bytes and
// may throw calico::Error only.
#define CALICO_FUZZ_BYTES_TARGET(fn)                                                    \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {             \
    try {                                                                               \
      fn(data, size);                                                                   \
    } catch (const ::calico::Error&) {                                                  \
    }                                                                                   \
    return 0;                                                                           \
  }
