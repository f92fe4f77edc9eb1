// Test support for the crash test (tests/pool/crash_test.cc): a deterministic workload of
// space creates and drops, allocations, page writes and flushes, generated from a seed, and
// the model that says what a directory may hold after the process running it was killed.
//
// The child (crash_tool) runs the ops in order and appends to a log "B <i>" before and
// "D <i>" after flush op i returns. The parent replays the same ops (same seed) to know, for
// any kill point, what the last completed flush made durable (rule 6, pool/README.md).
#pragma once

#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <vector>

namespace calico::testing {

struct CrashOp {
  enum Kind { kCreate, kDrop, kAllocate, kWrite, kFlush } kind;
  std::string space;   // kCreate, kDrop, kAllocate, kWrite
  uint64_t block = 0;  // kAllocate (the block it will get), kWrite
  uint64_t stamp = 0;  // kAllocate, kWrite: unique per op (op index + 1)
};

// The spaces of the model after some prefix of the ops: name -> per block, every stamp
// written, with the op index of each write.
struct CrashSpace {
  uint64_t created_at = 0;
  std::vector<std::vector<std::pair<uint64_t, uint64_t>>> writes;  // block -> (op, stamp)...
};
using CrashState = std::map<std::string, CrashSpace>;

// `n` ops from `seed`: at most 4 spaces, ~30% allocations, ~65% writes, ~2.5% flushes, rare
// creates and drops (each flush, create and drop costs a few fsyncs: they dominate run time). Every op is valid for the state the earlier ops leave.
inline std::vector<CrashOp> make_crash_workload(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::vector<CrashOp> ops;
  std::map<std::string, uint64_t> blocks;  // live spaces -> block count
  int next_name = 0;
  for (size_t i = 0; i < n; ++i) {
    uint64_t stamp = i + 1;
    unsigned roll = static_cast<unsigned>(rng() % 1000);
    auto pick = [&] {
      auto it = blocks.begin();
      std::advance(it, static_cast<long>(rng() % blocks.size()));
      return it;
    };
    if (blocks.empty() || (roll < 10 && blocks.size() < 4)) {
      std::string name = "s" + std::to_string(next_name++);
      blocks[name] = 0;
      ops.push_back({CrashOp::kCreate, name, 0, 0});
    } else if (roll < 15 && blocks.size() > 1) {
      auto it = pick();
      ops.push_back({CrashOp::kDrop, it->first, 0, 0});
      blocks.erase(it);
    } else if (roll < 40) {
      ops.push_back({CrashOp::kFlush, "", 0, 0});
    } else if (roll < 340) {
      auto it = pick();
      ops.push_back({CrashOp::kAllocate, it->first, it->second++, stamp});
    } else {
      auto it = pick();
      if (it->second == 0) {
        ops.push_back({CrashOp::kAllocate, it->first, it->second++, stamp});
      } else {
        ops.push_back({CrashOp::kWrite, it->first, rng() % it->second, stamp});
      }
    }
  }
  return ops;
}

// The model after ops [0, end): the live spaces and every write to them.
inline CrashState replay_crash_workload(const std::vector<CrashOp>& ops, size_t end) {
  CrashState state;
  for (size_t i = 0; i < end && i < ops.size(); ++i) {
    const CrashOp& op = ops[i];
    switch (op.kind) {
      case CrashOp::kCreate: state[op.space].created_at = i; break;
      case CrashOp::kDrop: state.erase(op.space); break;
      case CrashOp::kAllocate: state[op.space].writes.push_back({{i, op.stamp}}); break;
      case CrashOp::kWrite: state[op.space].writes[op.block].push_back({i, op.stamp}); break;
      case CrashOp::kFlush: break;
    }
  }
  return state;
}

}  // namespace calico::testing
