// open_kv / kv_systems: the registry of key-value adapters (kv_store.h). Each adapter file
// (calico_kv.cc, lmdb_kv.cc, rocksdb_kv.cc, wiredtiger_kv.cc) defines one open function.
#include "ycsb/kv_store.h"

#include <filesystem>
#include <stdexcept>

#include "calico/variants.h"

namespace calico::bench::kv {

std::unique_ptr<KvStore> open_calico(const KvConfig& config, std::string_view translation);
std::unique_ptr<KvStore> open_lmdb(const KvConfig& config);
std::unique_ptr<KvStore> open_rocksdb(const KvConfig& config);
std::unique_ptr<KvStore> open_wiredtiger(const KvConfig& config);

std::vector<std::string> kv_systems() { return {"calico", "lmdb", "rocksdb", "wiredtiger"}; }

std::string_view calico_translation(std::string_view system) {
  if (system == "calico") return "array";
  if (system.starts_with("calico:")) return system.substr(7);
  return {};
}

void check_system(std::string_view system) {
  const std::string_view t = calico_translation(system);
  if (!t.empty()) {
    variants::with_pool_type(t, []<class Pool>() {});  // throws naming the known translations
    return;
  }
  if (system == "lmdb" || system == "rocksdb" || system == "wiredtiger") return;
  throw std::invalid_argument("unknown system '" + std::string(system) +
                              "' (calico, calico:<translation>, lmdb, rocksdb, wiredtiger)");
}

std::unique_ptr<KvStore> open_kv(std::string_view system, const KvConfig& config) {
  if (config.value_bytes < kMinValueBytes || config.value_bytes > kMaxValueBytes) {
    throw std::invalid_argument("value_bytes must be in " + std::to_string(kMinValueBytes) + ".." +
                                std::to_string(kMaxValueBytes));
  }
  if (!config.data_dir.empty()) std::filesystem::create_directories(config.data_dir);
  check_system(system);
  if (std::string_view t = calico_translation(system); !t.empty()) return open_calico(config, t);
  if (system == "lmdb") return open_lmdb(config);
  if (system == "rocksdb") return open_rocksdb(config);
  return open_wiredtiger(config);
}

}  // namespace calico::bench::kv
