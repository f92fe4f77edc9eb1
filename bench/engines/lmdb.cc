// LMDB: see lmdb.h.
#include "engines/lmdb.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace calico::bench::engines {

void lmdb_check(int rc, std::string_view what) {
  if (rc != MDB_SUCCESS) throw std::runtime_error(fmt::format("lmdb: {}: {}", what, mdb_strerror(rc)));
}

Lmdb::Lmdb(const LmdbOptions& o) : map_bytes_(std::max(kLmdbMinMapBytes, o.map_bytes)) {
  lmdb_check(mdb_env_create(&env_), "mdb_env_create");
  try {
    lmdb_check(mdb_env_set_mapsize(env_, map_bytes_), "mdb_env_set_mapsize");
    lmdb_check(mdb_env_set_maxreaders(env_, o.max_readers), "mdb_env_set_maxreaders");
    if (o.max_dbs > 0) lmdb_check(mdb_env_set_maxdbs(env_, o.max_dbs), "mdb_env_set_maxdbs");
    lmdb_check(mdb_env_open(env_, o.dir.c_str(), kLmdbFlags, 0644), "mdb_env_open");
  } catch (...) {
    mdb_env_close(env_);
    throw;
  }
}

std::string Lmdb::describe() const {
  return fmt::format("lmdb {}: MDB_NOSYNC|MDB_NOMETASYNC|MDB_NOTLS|MDB_NORDAHEAD (no WRITEMAP), map {} MB",
                     MDB_VERSION_STRING, map_bytes_ >> 20);
}

}  // namespace calico::bench::engines
