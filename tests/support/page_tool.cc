// page_tool: a separate process for the persistence tests.
//   page_tool write  DIR PAGE_SIZE SPACE PAGES STAMP_BASE   (re)writes pages 0..PAGES-1 with
//                    stamp STAMP_BASE + block (allocating what is missing), flushes, exits 0
//   page_tool verify DIR PAGE_SIZE SPACE PAGES STAMP_BASE   exits 0 when every page carries
//                    its pattern and stamp, 1 (with a message) otherwise
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include "calico/buffer_pool.h"
#include "support/page_pattern.h"

int main(int argc, char** argv) {
  if (argc != 7) {
    std::fprintf(stderr, "usage: page_tool write|verify DIR PAGE_SIZE SPACE PAGES STAMP_BASE\n");
    return 2;
  }
  std::string mode = argv[1];
  calico::PoolOptions o;
  o.data_dir = argv[2];
  o.page_size = std::stoul(argv[3]);
  o.pool_bytes = 8 * o.page_size;  // small: the run evicts and reloads
  o.max_blocks_per_space = 1 << 20;
  o.eviction_batch = 4;
  o.prefault_frames = false;
  std::string space_name = argv[4];
  uint64_t pages = std::stoull(argv[5]);
  uint64_t base = std::stoull(argv[6]);
  try {
    auto pool = calico::BufferPool::open(o);
    size_t usable = pool->usable_page_size();
    if (mode == "write") {
      calico::SpaceId s;
      try {
        s = pool->open_space(space_name);
      } catch (const calico::Error&) {
        s = pool->create_space(space_name);
      }
      for (uint64_t b = 0; b < pages; ++b) {
        calico::ExclusiveGuard g = b < pool->space_blocks(s)
                                       ? pool->pin_exclusive(calico::PageId(s, static_cast<calico::BlockId>(b)))
                                       : pool->allocate(s);
        calico::test::stamp_pattern(g.data(), usable, g.page_id(), base + b);
        g.mark_dirty();
      }
      pool->flush();
      return 0;
    }
    if (mode == "verify") {
      calico::SpaceId s = pool->open_space(space_name);
      if (pool->space_blocks(s) != pages) {
        std::fprintf(stderr, "space has %lu blocks, expected %lu\n", (unsigned long)pool->space_blocks(s),
                     (unsigned long)pages);
        return 1;
      }
      for (uint64_t b = 0; b < pages; ++b) {
        calico::PageId pid(s, static_cast<calico::BlockId>(b));
        calico::SharedGuard g = pool->pin_shared(pid);
        if (!calico::test::check_pattern(g.data(), usable, pid) || calico::test::pattern_stamp(g.data()) != base + b) {
          std::fprintf(stderr, "block %lu does not hold stamp %lu\n", (unsigned long)b, (unsigned long)(base + b));
          return 1;
        }
      }
      return 0;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "page_tool: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 2;
}
