// crash_tool: the child process of the crash test (tests/pool/crash_test.cc).
//   crash_tool DIR SEED OPS LOG
// Opens (or creates) a pool in DIR and runs the ops of make_crash_workload(SEED, OPS) in order
// with a small pool (constant eviction); before flush op i it appends "B i\n" to LOG and after
// it returns "D i\n" (plain write(2): the parent reads it after a SIGKILL, which loses no
// written bytes); "E\n" at the end. Exit 0 when done, 1 (with a message) on any error.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <exception>
#include <string>

#include "calico/buffer_pool.h"
#include "support/page_pattern.h"
#include "support/crash_workload.h"

namespace {

void log_line(int fd, const std::string& line) {
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    std::perror("crash_tool: log");
    std::_Exit(1);
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: crash_tool DIR SEED OPS LOG\n");
    return 2;
  }
  using namespace calico;
  PoolOptions o;
  o.data_dir = argv[1];
  o.pool_bytes = 12 * o.page_size;
  o.max_blocks_per_space = 1 << 20;
  o.eviction_batch = 4;
  o.prefault_frames = false;
  const auto ops = testing::make_crash_workload(std::stoull(argv[2]), std::stoull(argv[3]));
  int log = ::open(argv[4], O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) {
    std::perror("crash_tool: open log");
    return 1;
  }
  try {
    auto pool = BufferPool::open(o);
    const size_t usable = pool->usable_page_size();
    for (size_t i = 0; i < ops.size(); ++i) {
      const testing::CrashOp& op = ops[i];
      switch (op.kind) {
        case testing::CrashOp::kCreate: pool->create_space(op.space); break;
        case testing::CrashOp::kDrop: pool->drop_space(pool->open_space(op.space)); break;
        case testing::CrashOp::kAllocate: {
          ExclusiveGuard g = pool->allocate(pool->open_space(op.space));
          if (g.page_id().block() != op.block) {
            std::fprintf(stderr, "crash_tool: op %zu allocated block %u, expected %lu\n", i, g.page_id().block(),
                         (unsigned long)op.block);
            return 1;
          }
          test::stamp_pattern(g.data(), usable, g.page_id(), op.stamp);
          g.mark_dirty();
          break;
        }
        case testing::CrashOp::kWrite: {
          PageId pid(pool->open_space(op.space), static_cast<BlockId>(op.block));
          ExclusiveGuard g = pool->pin_exclusive(pid);
          test::stamp_pattern(g.data(), usable, pid, op.stamp);
          g.mark_dirty();
          break;
        }
        case testing::CrashOp::kFlush:
          log_line(log, "B " + std::to_string(i) + "\n");
          pool->flush();
          log_line(log, "D " + std::to_string(i) + "\n");
          break;
      }
    }
    // A last logged flush, so that the destructor's flush has nothing left to make durable.
    log_line(log, "B " + std::to_string(ops.size()) + "\n");
    pool->flush();
    log_line(log, "D " + std::to_string(ops.size()) + "\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "crash_tool: %s\n", e.what());
    return 1;
  }
  log_line(log, "E\n");
  return 0;
}
