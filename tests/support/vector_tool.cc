// vector_tool: a separate process for the vector-index persistence tests.
//   vector_tool build hnsw|ivf DIR N SEED
//       builds index "vectors" over the first N rows of testing::clustered(N, kDim, ...,
//       SEED) in a small pool on DIR (HNSW: capacity 2N, adds in id order; IVF: kNlist
//       lists), flushes, exits 0
//   vector_tool check hnsw|ivf DIR N SEED MIN_RECALL
//       opens "vectors" on DIR, exits 0 when it holds exactly N rows, its structure check
//       passes and mean recall@10 of the data set's queries against brute force over those
//       N rows is >= MIN_RECALL; 1 (with a message) otherwise
//   vector_tool churn DIR SEED ROUNDS LOG
//       the child of the vector crash test: runs ROUNDS rounds of testing::churn_round on a
//       mapped HNSW index "churn" (upserts with labels, deletes, consolidations), flushing
//       after each; appends "I" to LOG once the empty index is flushed, "B r" before round
//       r's flush and "D r" after it, "E" at the end (plain write(2), which a SIGKILL does
//       not lose)
// Exit 2: usage or an exception. The pool is small, so both modes evict and reload.
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/index/hnsw.h"
#include "calico/index/ivf.h"
#include "calico/index/mapped_index.h"
#include "support/vector_churn.h"
#include "support/vector_data.h"

namespace {

using calico::BufferPool;
using calico::testing::Data;

constexpr uint32_t kDim = 16;
constexpr uint32_t kClusters = 20;
constexpr uint32_t kQueries = 40;
constexpr uint32_t kNlist = 16;
constexpr uint32_t kK = 10;

calico::PoolOptions options(const std::string& dir) {
  calico::PoolOptions o;
  o.data_dir = dir;
  o.page_size = 4096;
  o.pool_bytes = 40 * o.page_size;
  o.max_blocks_per_space = 1 << 20;
  o.eviction_batch = 4;
  o.prefault_frames = false;
  return o;
}

void build(const std::string& kind, BufferPool& pool, const Data& d) {
  if (kind == "hnsw") {
    calico::index::HnswParams p;
    p.dim = d.dim;
    p.M = 8;
    p.ef_construction = 64;
    auto h = calico::index::BasicHnsw<BufferPool>::create(pool, "vectors", p, static_cast<uint32_t>(2 * d.n));
    for (uint64_t i = 0; i < d.n; ++i) h.add(static_cast<uint32_t>(i), d.row(i));
  } else {
    calico::index::IvfParams p;
    p.dim = d.dim;
    p.nlist = kNlist;
    p.threads = 1;
    calico::index::BasicIvf<BufferPool>::build(pool, "vectors", p, d.rows.data(), d.n);
  }
  pool.flush();
}

// Returns the exit code of `check`.
int check(const std::string& kind, BufferPool& pool, const Data& d, double min_recall) {
  std::vector<std::vector<calico::vector::Neighbor>> got(d.num_queries());
  uint64_t rows = 0;
  if (kind == "hnsw") {
    auto h = calico::index::BasicHnsw<BufferPool>::open(pool, "vectors");
    h.check_structure();
    rows = h.size();
    calico::index::HnswSearchState st(h);
    for (uint64_t q = 0; q < d.num_queries(); ++q) h.search(d.query(q), {kK, 64, true, true}, st, &got[q]);
  } else {
    auto ivf = calico::index::BasicIvf<BufferPool>::open(pool, "vectors");
    rows = ivf.verify();
    calico::index::IvfSearchState st(ivf);
    for (uint64_t q = 0; q < d.num_queries(); ++q) ivf.search(d.query(q), {kK, 4, true, true}, st, &got[q]);
  }
  if (rows != d.n) {
    std::fprintf(stderr, "vector_tool: index holds %lu rows, expected %lu\n", (unsigned long)rows, (unsigned long)d.n);
    return 1;
  }
  const double r = calico::testing::mean_recall(got, calico::testing::reference(d, calico::vector::Metric::kL2, kK));
  if (r < min_recall) {
    std::fprintf(stderr, "vector_tool: recall@%u %.3f < %.3f\n", kK, r, min_recall);
    return 1;
  }
  return 0;
}

void log_line(int fd, const std::string& line) {
  if (::write(fd, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    std::perror("vector_tool: log");
    std::_Exit(2);
  }
}

int churn(const std::string& dir, uint64_t seed, uint64_t rounds, const std::string& log_path) {
  using Index = calico::index::BasicHnsw<BufferPool>;
  const int log = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (log < 0) {
    std::perror("vector_tool: open log");
    return 2;
  }
  auto pool = BufferPool::open(options(dir));
  calico::index::HnswParams p;
  p.dim = calico::testing::kChurnDim;
  p.M = 8;
  p.ef_construction = 32;
  auto mapped = calico::index::MappedHnsw<BufferPool>::attach(*pool, "churn", Index::create(*pool, "churn", p, 64));
  mapped.set_auto_consolidate(0);  // the workload's own consolidations only
  mapped.sync();
  pool->flush();
  log_line(log, "I\n");  // the empty index is durable: the parent can open it from here on
  calico::testing::ChurnModel model;
  for (uint64_t r = 0; r < rounds; ++r) {
    const calico::testing::ChurnRound c = calico::testing::churn_round(seed, r, model);
    std::vector<float> rows;
    for (const uint64_t id : c.upserts) {
      const std::vector<float> v = calico::testing::churn_vector(id, r);
      rows.insert(rows.end(), v.begin(), v.end());
    }
    mapped.add(c.upserts, rows.data(), 1, calico::index::AddMode::kUpsert, c.labels);
    if (!c.deletes.empty()) mapped.remove(c.deletes);
    if (c.consolidate) mapped.consolidate();
    for (size_t i = 0; i < c.upserts.size(); ++i) model[c.upserts[i]] = {r, c.labels[i]};
    for (const uint64_t id : c.deletes) model.erase(id);
    log_line(log, "B " + std::to_string(r) + "\n");
    mapped.sync();  // the B+trees' counts, then the pages
    pool->flush();
    log_line(log, "D " + std::to_string(r) + "\n");
  }
  log_line(log, "E\n");
  ::close(log);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "churn") {
    if (argc != 6) {
      std::fprintf(stderr, "usage: vector_tool churn DIR SEED ROUNDS LOG\n");
      return 2;
    }
    try {
      return churn(argv[2], std::stoull(argv[3]), std::stoull(argv[4]), argv[5]);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vector_tool: %s\n", e.what());
      return 2;
    }
  }
  const std::string kind = argc > 2 ? argv[2] : "";
  if (!((mode == "build" && argc == 6) || (mode == "check" && argc == 7)) || (kind != "hnsw" && kind != "ivf")) {
    std::fprintf(stderr,
                 "usage: vector_tool build hnsw|ivf DIR N SEED\n"
                 "       vector_tool check hnsw|ivf DIR N SEED MIN_RECALL\n");
    return 2;
  }
  try {
    const Data d = calico::testing::clustered(std::stoull(argv[4]), kDim, kClusters, kQueries, std::stoull(argv[5]));
    auto pool = BufferPool::open(options(argv[3]));
    if (mode == "build") {
      build(kind, *pool, d);
      return 0;
    }
    return check(kind, *pool, d, std::stod(argv[6]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vector_tool: %s\n", e.what());
    return 2;
  }
}
