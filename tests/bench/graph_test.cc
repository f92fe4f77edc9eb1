// Graph: the BFS of the translation microbenchmark ([Calico] Table 4 / Table 6) against a
// reference BFS on an in-memory adjacency list, on every evicting translation, with every
// read mode and with and without group prefetch; on a resident pool and a 4-frame pool
// (every visit evicts); two threads searching at once; open(); bad input; corrupt node pages
// (Error(kCorruptPage) naming the page, the pool still sound).
#include "micro/graph.h"

#include <gtest/gtest.h>

#include <atomic>
#include <random>
#include <thread>
#include <vector>

#include "support/corrupt_page_env.h"
#include "support/test_util.h"
#include "support/variants.h"

namespace calico {
namespace {

using bench::BasicGraph;
using bench::BfsOptions;
using bench::BfsResult;
using bench::GraphFormat;
using bench::BfsState;
using bench::GraphRead;
using testing::expect_error;
using testing::small_options;
using testing::TempDir;

using Adjacency = std::vector<std::vector<uint32_t>>;

// Random out-lists of 0..max_degree neighbours (repeats and self-loops allowed: the BFS must
// cope), so some nodes are dead ends and some searches end before max_visits.
Adjacency random_adjacency(uint32_t nodes, uint32_t max_degree, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Adjacency adj(nodes);
  for (auto& list : adj) {
    list.resize(rng() % (max_degree + 1));
    for (auto& v : list) v = static_cast<uint32_t>(rng() % nodes);
  }
  return adj;
}

// The specification of BasicGraph::bfs, on the adjacency list.
BfsResult reference_bfs(const Adjacency& adj, uint32_t root, uint64_t max_visits, std::vector<uint32_t>* order) {
  BfsResult r;
  std::vector<bool> seen(adj.size(), false);
  std::vector<uint32_t> queue{root};
  seen[root] = true;
  for (size_t head = 0; head < queue.size() && r.visited < max_visits; ++head) {
    uint32_t u = queue[head];
    ++r.visited;
    r.digest = GraphFormat::fold(r.digest, u);
    order->push_back(u);
    for (uint32_t v : adj[u]) {
      r.digest = GraphFormat::fold(r.digest, GraphFormat::probe_value(v));
      ++r.probes;
      if (!seen[v]) {
        seen[v] = true;
        queue.push_back(v);
      }
    }
  }
  return r;
}

template <class Pool>
BasicGraph<Pool> make_graph(Pool& pool, const Adjacency& adj) {
  return BasicGraph<Pool>::create(pool, "graph", static_cast<uint32_t>(adj.size()),
                                  [&](uint32_t v, std::vector<uint32_t>* out) { *out = adj[v]; });
}

// Every root of `roots`, visit limit, read mode and prefetch setting against the reference.
template <class Pool>
void expect_bfs_matches(const BasicGraph<Pool>& g, const Adjacency& adj, const std::vector<uint32_t>& roots) {
  BfsState st(g.nodes());
  for (uint32_t root : roots) {
    for (uint64_t limit : {uint64_t{1}, uint64_t{37}, uint64_t{1} << 40}) {
      std::vector<uint32_t> want_order;
      BfsResult want = reference_bfs(adj, root, limit, &want_order);
      for (GraphRead read : {GraphRead::kOptimistic, GraphRead::kPinned}) {
        for (bool prefetch : {false, true}) {
          std::vector<uint32_t> order;
          BfsResult got = g.bfs(root, BfsOptions{read, prefetch, limit}, st, &order);
          ASSERT_EQ(got, want) << "root " << root << " limit " << limit << " pinned " << (read == GraphRead::kPinned)
                               << " prefetch " << prefetch;
          ASSERT_EQ(order, want_order);
        }
      }
    }
  }
}

template <class Pool>
class GraphOnEveryTranslation : public ::testing::Test {};
TYPED_TEST_SUITE(GraphOnEveryTranslation, testing::IndexPools, testing::PoolName);

TYPED_TEST(GraphOnEveryTranslation, BfsMatchesReferenceResidentAndTinyPool) {
  const Adjacency adj = random_adjacency(300, 9, 7);
  for (uint32_t frames : {512u, 4u}) {
    TempDir dir;
    auto pool = TypeParam::open(testing::pool_options<TypeParam>(dir.path(), frames));
    auto g = make_graph(*pool, adj);
    ASSERT_EQ(g.nodes(), 300u);
    expect_bfs_matches(g, adj, {0, 1, 150, 299});
    pool->check_invariants();
    if (frames == 4) {
      EXPECT_GT(testing::pages_pushed_out(pool->stats()), 600u) << "a 4-frame pool evicts on every visit";
    }
  }
}

TYPED_TEST(GraphOnEveryTranslation, NeighboursProbeAndOpen) {
  TempDir dir;
  const Adjacency adj = random_adjacency(64, GraphFormat::kMaxDegree, 3);  // full pages too
  auto pool = TypeParam::open(testing::pool_options<TypeParam>(dir.path(), 8));
  make_graph(*pool, adj);
  auto g = BasicGraph<TypeParam>::open(*pool, "graph");
  ASSERT_EQ(g.nodes(), 64u);
  std::vector<uint32_t> out;
  for (uint32_t v = 0; v < 64; ++v) {
    for (GraphRead read : {GraphRead::kOptimistic, GraphRead::kPinned}) {
      g.neighbours(v, read, &out);
      ASSERT_EQ(out, adj[v]) << "node " << v;
      ASSERT_EQ(g.probe(v, read), GraphFormat::probe_value(v));
    }
  }
  pool->check_invariants();
}

// Two threads search a 6-frame pool at once: optimistic reads race with evictions (the
// other thread's faults reuse frames), and every result must still be the reference's.
TYPED_TEST(GraphOnEveryTranslation, ConcurrentSearchesOnATinyPool) {
  TempDir dir;
  const Adjacency adj = random_adjacency(200, 12, 11);
  auto pool = TypeParam::open(testing::pool_options<TypeParam>(dir.path(), 6));
  auto g = make_graph(*pool, adj);
  std::vector<BfsResult> want;
  for (uint32_t root = 0; root < 200; root += 10) {
    std::vector<uint32_t> order;
    want.push_back(reference_bfs(adj, root, 60, &order));
  }
  std::atomic<int> mismatches{0};
  auto worker = [&](int t) {
    BfsState st(g.nodes());
    for (int round = 0; round < 3; ++round) {
      for (uint32_t i = 0; i < want.size(); ++i) {
        BfsOptions o{(i + t) % 2 ? GraphRead::kOptimistic : GraphRead::kPinned, (i + round) % 2 == 0, 60};
        if (g.bfs(i * 10, o, st) != want[i]) mismatches.fetch_add(1);
      }
    }
  };
  std::thread a(worker, 0), b(worker, 1);
  a.join();
  b.join();
  EXPECT_EQ(mismatches.load(), 0);
  pool->check_invariants();
}

TYPED_TEST(GraphOnEveryTranslation, BadInputIsRejected) {
  TempDir dir;
  auto pool = TypeParam::open(testing::pool_options<TypeParam>(dir.path(), 8));
  expect_error(ErrorCode::kInvalidArgument, [&] {
    BasicGraph<TypeParam>::create(*pool, "wide", 2, [](uint32_t, std::vector<uint32_t>* out) {
      out->assign(GraphFormat::kMaxDegree + 1, 0);
    });
  });
  expect_error(ErrorCode::kInvalidArgument, [&] {
    BasicGraph<TypeParam>::create(*pool, "dangling", 2, [](uint32_t, std::vector<uint32_t>* out) { out->push_back(2); });
  });
  expect_error(ErrorCode::kInvalidArgument, [&] {
    BasicGraph<TypeParam>::create(*pool, "empty", 0, [](uint32_t, std::vector<uint32_t>*) {});
  });
  auto g = make_graph(*pool, random_adjacency(10, 3, 1));
  BfsState st(g.nodes()), wrong(11);
  expect_error(ErrorCode::kInvalidArgument, [&] { g.bfs(10, BfsOptions{}, st); });
  expect_error(ErrorCode::kInvalidArgument, [&] { g.bfs(0, BfsOptions{}, wrong); });
  pool->create_space("other");
  expect_error(ErrorCode::kInvalidArgument, [&] { BasicGraph<TypeParam>::open(*pool, "other"); });
  expect_error(ErrorCode::kUnknownSpace, [&] { BasicGraph<TypeParam>::open(*pool, "missing"); });
}

// --- corrupt pages (as tests/index/corrupt_pages_test.cc does for the indexes) ----------

using CorruptPageEnv = testing::CorruptPageEnv;
using testing::store;
using Graph = BasicGraph<BufferPool>;
constexpr uint32_t kGraphNodes = 40;

void build_graph(CorruptPageEnv& env) {
  Graph::create(env.pool(), "graph", kGraphNodes, [](uint32_t v, std::vector<uint32_t>* out) {
    out->push_back((v + 1) % kGraphNodes);
    out->push_back((v * 7 + 3) % kGraphNodes);
  });
}

void expect_graph_reads_fail(CorruptPageEnv& env, PageId bad) {
  Graph g = Graph::open(env.pool(), "graph");
  BfsState st(kGraphNodes);
  for (GraphRead read : {GraphRead::kOptimistic, GraphRead::kPinned}) {
    BfsOptions opt;
    opt.read = read;
    env.expect_corrupt(bad, [&] { g.bfs(0, opt, st); });
    std::vector<uint32_t> out;
    env.expect_corrupt(bad, [&] { g.neighbours(bad.block() - 1, read, &out); });
  }
}

TEST(CorruptPages, GraphNodeWithWrongTag) {
  CorruptPageEnv env;
  build_graph(env);
  const PageId page(env.pool().open_space("graph"), 1 + 5);
  env.patch(page, [](std::byte* p) { store<uint32_t>(p, 0, 0x1234); });
  expect_graph_reads_fail(env, page);
}

TEST(CorruptPages, GraphDegreePastTheMaximum) {
  CorruptPageEnv env;
  build_graph(env);
  const PageId page(env.pool().open_space("graph"), 1 + 9);
  env.patch(page, [](std::byte* p) { store<uint32_t>(p, 8, 100000); });
  expect_graph_reads_fail(env, page);
}

TEST(CorruptPages, GraphNeighbourPastTheNodes) {
  CorruptPageEnv env;
  build_graph(env);
  const PageId page(env.pool().open_space("graph"), 1 + 0);
  env.patch(page, [](std::byte* p) { store<uint32_t>(p, 16, kGraphNodes + 1); });
  expect_graph_reads_fail(env, page);
}

TEST(CorruptPages, GraphPageOfAnotherNodeOnDisk) {
  CorruptPageEnv env;
  build_graph(env);
  const SpaceId s = env.pool().open_space("graph");
  std::vector<std::byte> other(env.pool().usable_page_size());
  {
    SharedGuard g = env.pool().pin_shared(PageId(s, 1 + 3));
    std::memcpy(other.data(), g.data(), other.size());
  }
  const PageId page(s, 1 + 4);
  env.patch_on_disk(page, [&](std::byte* p) { std::memcpy(p, other.data(), other.size()); });
  expect_graph_reads_fail(env, page);
}

}  // namespace
}  // namespace calico
