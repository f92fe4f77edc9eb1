// PeerStore: a peer engine (WiredTiger, LMDB) holding the TPC-C tables, one engine table per
// TPC-C table or index, behind a small virtual interface (as the YCSB driver's KvStore,
// bench/ycsb/kv_store.h: a virtual call costs about a nanosecond, far under an engine's
// operation; the Calico path has none).
//
// Entry points: open_peer_store(system, options), peer_systems(), is_peer_system(name);
// PeerStore::create_table / read / update / insert / remove / scan (by table slot).
//
// ISOLATION (the same as Calico's workload, workload.h): each table operation is atomic on
// its own, nothing spans two operations, no rollback, no log, no sync:
//  - WiredTiger: sessions with isolation=snapshot; reads, inserts, removes and scans are
//    auto-committed cursor calls (a WT_ROLLBACK from a write conflict is retried: an insert
//    of an existing key then returns false, a remove of a removed key false, so exactly one
//    of concurrent removers gets true); an update is one explicit transaction: reserve the
//    record (WT_CURSOR::reserve; a WT_ROLLBACK there is retried before anything else ran),
//    read it, run fn once, write it, commit. After a successful reserve no other
//    transaction can commit a change of the record until ours ends, and our snapshot reads
//    the latest committed value, so no update is lost and fn runs exactly once.
//  - LMDB: one write transaction per write operation (LMDB serialises writers, so an update
//    = get, fn, put, commit is atomic); reads and scans use the thread's read-only
//    transaction, renewed for the operation and reset after it.
// Per-thread engine state (WT session and cursors, LMDB read transaction) is made on a
// thread's first use (peers/thread_contexts.h).
//
// Statistics: stats() is all zeros (no page counters are asked of the engines: WiredTiger
// runs with statistics=(none), engines/wiredtiger.h; LMDB has none); size_summary() says
// what the engine reports cheaply about its size after the load.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "calico/stats.h"
#include "common/function_ref.h"

namespace calico::bench::tpcc::peers {

struct PeerOptions {
  std::string dir;              // the engine's directory: exists and is empty
  uint64_t cache_bytes = 0;     // WiredTiger's cache_size (LMDB: the OS page cache, not limited)
  uint64_t map_bytes = 0;       // LMDB's map size (a sparse reservation)
  unsigned max_threads = 1;     // threads using the store at once (sessions, readers)
};

inline constexpr uint32_t kMaxPeerTables = 16;

class PeerStore {
 public:
  virtual ~PeerStore() = default;
  virtual std::string name() const = 0;
  // One line: the engine's settings that matter for the comparison (printed with each run).
  virtual std::string configuration() const = 0;
  // False when cache_bytes is not a real limit (LMDB).
  virtual bool cache_enforced() const = 0;
  // Creates the empty table "tpcc_<name>"; returns its slot (< kMaxPeerTables). Alone only
  // (no other call running). Errors: std::runtime_error naming the engine call.
  virtual uint32_t create_table(const std::string& name) = 0;

  // The operations of PeerTable (peer_table.h), with its contracts; any thread, concurrently.
  // Errors: std::runtime_error naming the engine call and the table.
  virtual bool read(uint32_t table, std::string_view key, std::string* out) = 0;
  virtual bool update(uint32_t table, std::string_view key, FunctionRef<void(std::span<std::byte>)> fn) = 0;
  virtual bool insert(uint32_t table, std::string_view key, std::string_view value) = 0;
  virtual bool remove(uint32_t table, std::string_view key) = 0;
  virtual void scan(uint32_t table, std::string_view start,
                    FunctionRef<bool(std::string_view, std::string_view)> fn) = 0;

  // After the load, alone: WiredTiger takes a checkpoint (the loaded data is then clean in
  // its cache), LMDB syncs its map once.
  virtual void after_load() = 0;
  // What the engine says about its size (LMDB: pages in use; WiredTiger: its files' bytes).
  virtual std::string size_summary() = 0;

  // The driver's backend interface (run.h): no page counters (header).
  PoolStats stats() const { return {}; }
  size_t page_size() const { return 4096; }
};

// Opens a fresh store of `system` ("wiredtiger", "lmdb") in options.dir. Errors:
// std::invalid_argument for an unknown system; the engine's as std::runtime_error.
std::unique_ptr<PeerStore> open_peer_store(std::string_view system, const PeerOptions& options);
const std::vector<std::string>& peer_systems();
bool is_peer_system(std::string_view name);

// The engines, registered by open_peer_store (wiredtiger_tpcc.cc, lmdb_tpcc.cc).
std::unique_ptr<PeerStore> open_wiredtiger_store(const PeerOptions& options);
std::unique_ptr<PeerStore> open_lmdb_store(const PeerOptions& options);

}  // namespace calico::bench::tpcc::peers
