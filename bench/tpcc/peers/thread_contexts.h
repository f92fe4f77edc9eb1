// ThreadContexts<Ctx>: each thread's context of one engine environment (a WiredTiger session
// with its cursors, an LMDB read transaction), made on the thread's first use.
//
// Entry points: ThreadContexts(make), get(), close_all().
//
// Rules:
//  - get() returns the calling thread's context, made by make() on its first call (under the
//    registry mutex); only that thread uses it, until the thread exits. The TPC-C tables are
//    shared by every worker (run.h makes one TpccWorkload per thread over one Database), so
//    the engine handles cannot live in the tables: they live here, one per thread.
//  - A thread that exits gives its context back to a free list and the next new thread
//    reuses it, so that engine handles are bounded by the threads alive at once (loaders,
//    then each run's workers), not by every thread ever started.
//  - close_all() (the environment's destructor, while no thread uses a context) destroys
//    every context; a thread exiting afterwards finds the registry closed and touches
//    nothing of it. Each environment has a serial never reused, so a thread's entry for a
//    closed one never matches a later one.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace calico::bench::tpcc::peers {

template <class Ctx>
class ThreadContexts {
 public:
  explicit ThreadContexts(std::function<std::unique_ptr<Ctx>()> make)
      : make_(std::move(make)), serial_(next_serial().fetch_add(1)), reg_(std::make_shared<Registry>()) {}
  ~ThreadContexts() { close_all(); }
  ThreadContexts(const ThreadContexts&) = delete;
  ThreadContexts& operator=(const ThreadContexts&) = delete;

  // The calling thread's context. Errors: make()'s (nothing is registered then).
  Ctx& get() {
    ThreadList& mine = thread_list();
    for (const Entry& e : mine.entries) {
      if (e.serial == serial_) return *e.ctx;
    }
    // Drop the entries of closed environments (a long-lived thread, e.g. a test's main one).
    std::erase_if(mine.entries, [](const Entry& e) {
      std::lock_guard lock(e.reg->mu);
      return !e.reg->open;
    });
    Ctx* ctx;
    {
      std::lock_guard lock(reg_->mu);
      if (!reg_->free.empty()) {
        ctx = reg_->free.back();
        reg_->free.pop_back();
      } else {
        reg_->all.push_back(make_());
        ctx = reg_->all.back().get();
      }
    }
    mine.entries.push_back({serial_, ctx, reg_});
    return *ctx;
  }

  // Destroys every context (in creation order). Pre: no thread uses one.
  void close_all() {
    std::lock_guard lock(reg_->mu);
    reg_->open = false;
    reg_->free.clear();
    reg_->all.clear();
  }

 private:
  struct Registry {
    std::mutex mu;
    bool open = true;
    std::vector<std::unique_ptr<Ctx>> all;  // every context made, in use or free
    std::vector<Ctx*> free;                 // contexts of exited threads
  };
  struct Entry {
    uint64_t serial;
    Ctx* ctx;
    std::shared_ptr<Registry> reg;
  };
  struct ThreadList {
    std::vector<Entry> entries;
    ~ThreadList() {
      for (Entry& e : entries) {
        std::lock_guard lock(e.reg->mu);
        if (e.reg->open) e.reg->free.push_back(e.ctx);
      }
    }
  };
  static ThreadList& thread_list() {
    static thread_local ThreadList list;
    return list;
  }
  static std::atomic<uint64_t>& next_serial() {
    static std::atomic<uint64_t> serial{1};
    return serial;
  }

  std::function<std::unique_ptr<Ctx>()> make_;
  const uint64_t serial_;
  std::shared_ptr<Registry> reg_;
};

}  // namespace calico::bench::tpcc::peers
