// What every file of PoolCore's out-of-line member definitions shares (access.h and the
// policy hooks, the I/O ring, the pool's support functions, test points), and the entry
// word's names they use unqualified. Included only through definitions.h, by the translation
// units that instantiate a pool.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "calico/checks.h"
#include "io/checksum.h"
#include "io/io_ring.h"
#include "pool/access.h"
#include "pool/catalog.h"
#include "pool/data_dir.h"
#include "pool/pool_support.h"
#include "pool/test_points.h"

namespace calico {

using translation::EntryWord;
using translation::kExclusive;
using translation::kIoPending;
using translation::kMarked;
using translation::kUnlocked;

}  // namespace calico
