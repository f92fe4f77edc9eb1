// open_peer_store / peer_systems: the registry of TPC-C peer engines (peer_store.h).
#include "tpcc/peers/peer_store.h"

#include <algorithm>
#include <stdexcept>

namespace calico::bench::tpcc::peers {

const std::vector<std::string>& peer_systems() {
  static const std::vector<std::string> names{"wiredtiger", "lmdb"};
  return names;
}

bool is_peer_system(std::string_view name) {
  const auto& n = peer_systems();
  return std::find(n.begin(), n.end(), name) != n.end();
}

std::unique_ptr<PeerStore> open_peer_store(std::string_view system, const PeerOptions& options) {
  if (system == "wiredtiger") return open_wiredtiger_store(options);
  if (system == "lmdb") return open_lmdb_store(options);
  throw std::invalid_argument("unknown TPC-C peer system '" + std::string(system) + "' (wiredtiger, lmdb)");
}

}  // namespace calico::bench::tpcc::peers
