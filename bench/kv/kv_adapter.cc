// open_kv / kv_systems: the registry of key-value adapters (kv_adapter.h). Each adapter file
// (calico_kv.cc, lmdb_kv.cc, rocksdb_kv.cc, wiredtiger_kv.cc) defines one open function.
#include "kv/kv_adapter.h"

#include <filesystem>
#include <stdexcept>

namespace calico::bench::kv {

std::unique_ptr<KvStore> open_calico(const KvConfig& config);
std::unique_ptr<KvStore> open_lmdb(const KvConfig& config);
std::unique_ptr<KvStore> open_rocksdb(const KvConfig& config);
std::unique_ptr<KvStore> open_wiredtiger(const KvConfig& config);

std::vector<std::string> kv_systems() { return {"calico", "lmdb", "rocksdb", "wiredtiger"}; }

std::unique_ptr<KvStore> open_kv(std::string_view system, const KvConfig& config) {
  if (config.value_bytes < kMinValueBytes || config.value_bytes > kMaxValueBytes) {
    throw std::invalid_argument("value_bytes must be in " + std::to_string(kMinValueBytes) + ".." +
                                std::to_string(kMaxValueBytes));
  }
  if (!config.data_dir.empty()) std::filesystem::create_directories(config.data_dir);
  if (system == "calico") return open_calico(config);
  if (system == "lmdb") return open_lmdb(config);
  if (system == "rocksdb") return open_rocksdb(config);
  if (system == "wiredtiger") return open_wiredtiger(config);
  throw std::invalid_argument("unknown system '" + std::string(system) +
                              "' (calico, lmdb, rocksdb, wiredtiger)");
}

}  // namespace calico::bench::kv
