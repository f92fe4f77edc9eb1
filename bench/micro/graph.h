// BasicGraph<Pool>: the graph workload of the BFS microbenchmarks (micro-bfs, micro-ablation;
// a benchmark workload, not an index of the library): a directed graph with one page per
// node, and the breadth-first search of [Calico] section 3.3 / Table 4 / Table 6 (a
// stand-in for proximity-graph vector search: visiting a node reads its neighbour list, then
// probes every neighbour's payload, optionally after one group prefetch of all of them,
// Algorithm 4).
//
// Principal entry points:
//   BasicGraph::create(pool, name, nodes, neighbours_of)   writes the graph (once)
//   BasicGraph::open(pool, name)
//   neighbours(node, read, &out)   the node's out-neighbours, in stored order
//   probe(node, read)              the node's payload digest (the "distance computation")
//   bfs(root, options, state, &order)   -> BfsResult {visited, probes, digest}
//
// On-disk format (little-endian; only the first usable_page_size() bytes of a page):
//   Block 0, metadata: magic u64 "CALGRAPH" | format_version u32 | page_size u32 |
//                      nodes u32 | reserved u32
//   Block 1 + v, node v: tag u32 "GNOD" | node u32 (= v) | degree u32 | reserved u32 |
//                      neighbours u32[degree] from byte 16 | ... |
//                      payload u64[kPayloadWords] at kPayloadOffset (payload_word(v, i))
//   Invariants: degree <= kMaxDegree, every neighbour < nodes. The payload sits on its own
//   cache lines, so a probe touches the neighbour's page, not the line holding its list.
//
// Prefetch with kOptimistic reads goes through read_group: the group prefetch also starts
// the probes' reads, so that each probed page is translated once.
//
// Reads: kOptimistic uses read_optimistic + validate (no atomic write; the bytes read before
// validation go through graph_racy_* functions, which bounds-check everything taken from the
// page and are optimistic readers, calico/optimistic_reader.h; after kOptimisticAttempts failed
// validations the read is done under a shared pin). kPinned pins shared for every read.
// A validated or pinned page that breaks the invariants (not this node's page, degree past
// kMaxDegree, a neighbour >= nodes) is Error(kCorruptPage) naming the page: such bytes can
// come from disk. Torn bytes of an optimistic read are only judged once they validate.
//
// Concurrency: the graph is immutable after create(); any number of threads may read it
// (each with its own BfsState). create() must run alone. Errors: calico::Error.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "calico/buffer_pool.h"
#include "calico/checks.h"
#include "calico/error.h"
#include "index/corrupt_page.h"
#include "calico/optimistic_reader.h"

namespace calico::bench {

static_assert(std::endian::native == std::endian::little, "the graph format is little-endian");

enum class GraphRead { kOptimistic, kPinned };

struct BfsOptions {
  GraphRead read = GraphRead::kOptimistic;
  bool prefetch = false;        // one prefetch_group of a visited node's neighbours' payloads
  uint64_t max_visits = 10000;  // the search stops after reading this many neighbour lists
};

struct BfsResult {
  uint64_t visited = 0;  // neighbour lists read (nodes dequeued)
  uint64_t probes = 0;   // payloads probed (every neighbour of every visited node)
  uint64_t digest = 0;   // fold of visit order and probe values (GraphFormat::fold)
  friend bool operator==(const BfsResult&, const BfsResult&) = default;
};

// The format constants and the pure functions a reference implementation needs.
struct GraphFormat {
  static constexpr uint64_t kMagic = 0x48504152474C4143ull;  // "CALGRAPH" little-endian
  static constexpr uint32_t kFormatVersion = 1;
  static constexpr uint32_t kNodeTag = 0x444F4E47;  // "GNOD"
  static constexpr size_t kHeaderBytes = 16;
  static constexpr size_t kPayloadOffset = 2048;
  static constexpr size_t kPayloadWords = 8;  // one 64-byte line: the "vector"
  static constexpr uint32_t kMaxDegree = (kPayloadOffset - kHeaderBytes) / 4;  // 508
  static_assert(kPayloadOffset % 64 == 0 && kPayloadOffset + kPayloadWords * 8 <= 4096 - 16);

  static constexpr uint64_t payload_word(uint32_t node, size_t i) {
    uint64_t z = (uint64_t{node} << 8 | i) + 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // What probe(node) returns.
  static constexpr uint64_t probe_value(uint32_t node) {
    uint64_t s = 0;
    for (size_t i = 0; i < kPayloadWords; ++i) s += payload_word(node, i);
    return s;
  }
  // The digest step: bfs folds fold(d, node) per visit and fold(d, probe value) per probe.
  static constexpr uint64_t fold(uint64_t digest, uint64_t value) {
    return (digest ^ value) * 0x100000001B3ull + 0x9E37;
  }
};

// A search's scratch space (seen marks, queue, prefetch group): one per thread, reused
// across searches so that a search allocates nothing.
class BfsState {
 public:
  explicit BfsState(uint32_t nodes)
      : seen_(nodes, 0), neighbours_(GraphFormat::kMaxDegree), offsets_(GraphFormat::kMaxDegree, GraphFormat::kPayloadOffset),
        reads_(GraphFormat::kMaxDegree) {}

 private:
  template <class>
  friend class BasicGraph;
  std::vector<uint32_t> seen_;  // seen_[v] == epoch_: enqueued in the current search
  uint32_t epoch_ = 0;
  std::vector<uint32_t> queue_;
  std::vector<uint32_t> neighbours_;  // kMaxDegree: the list being visited
  std::vector<uint32_t> offsets_;     // kMaxDegree x kPayloadOffset: prefetch offsets
  std::vector<PageId> group_;
  std::vector<OptimisticRead> reads_;  // kMaxDegree: the group's reads (read_group)
};

namespace graph_detail {

struct MetaPage {
  uint64_t magic;
  uint32_t format_version;
  uint32_t page_size;
  uint32_t nodes;
  uint32_t reserved;
};
static_assert(sizeof(MetaPage) == 24);

// Copies the neighbour list of node `node`'s page (which may be changing) into
// out[0..kMaxDegree) and returns its degree, or UINT32_MAX when the header is not node's
// (garbage, or a page of another kind or node).
CALICO_OPTIMISTIC_READER inline __attribute__((noinline)) uint32_t graph_racy_neighbours(const std::byte* page,
                                                                                       uint32_t node, uint32_t* out) {
  uint32_t h[4];
  __builtin_memcpy(h, page, sizeof h);
  if (h[0] != GraphFormat::kNodeTag || h[1] != node || h[2] > GraphFormat::kMaxDegree) return UINT32_MAX;
  racy_copy(out, page + GraphFormat::kHeaderBytes, size_t{h[2]} * 4);  // never a memcpy call
  return h[2];
}

// The payload digest of a page that may be changing.
CALICO_OPTIMISTIC_READER inline __attribute__((noinline)) uint64_t graph_racy_probe(const std::byte* page) {
  uint64_t w[GraphFormat::kPayloadWords];
  __builtin_memcpy(w, page + GraphFormat::kPayloadOffset, sizeof w);
  uint64_t s = 0;
  for (uint64_t x : w) s += x;
  return s;
}

}  // namespace graph_detail

template <class Pool>
class BasicGraph : public GraphFormat {
 public:
  // neighbours_of(v, &out) fills v's out-neighbours (out arrives empty).
  using NeighboursFn = std::function<void(uint32_t node, std::vector<uint32_t>* out)>;

  // Creates space `name` and writes the metadata page and `nodes` node pages.
  // Errors: kInvalidArgument (nodes == 0 or past the space's capacity, a degree above
  // kMaxDegree, a neighbour >= nodes, a page smaller than 4 KB); create_space / allocate errors.
  static BasicGraph create(Pool& pool, std::string_view name, uint32_t nodes, const NeighboursFn& neighbours_of) {
    if (nodes == 0 || uint64_t{nodes} + 1 > pool.options().max_blocks_per_space) {
      throw Error(ErrorCode::kInvalidArgument, "graph of " + std::to_string(nodes) + " nodes: need 1.." +
                                                   std::to_string(pool.options().max_blocks_per_space - 1));
    }
    if (pool.usable_page_size() < kPayloadOffset + kPayloadWords * 8) {
      throw Error(ErrorCode::kInvalidArgument, "graph pages must be at least 4 KB");
    }
    SpaceId space = pool.create_space(name);
    {
      ExclusiveGuard g = pool.allocate(space);
      CALICO_CHECK(g.page_id().block() == 0);
      graph_detail::MetaPage m{kMagic, kFormatVersion, static_cast<uint32_t>(pool.page_size()), nodes, 0};
      std::memcpy(g.data(), &m, sizeof m);
      g.mark_dirty();
    }
    std::vector<uint32_t> out;
    for (uint32_t v = 0; v < nodes; ++v) {
      out.clear();
      neighbours_of(v, &out);
      if (out.size() > kMaxDegree) {
        throw Error(ErrorCode::kInvalidArgument, "graph node " + std::to_string(v) + " has " +
                                                     std::to_string(out.size()) + " neighbours; at most " +
                                                     std::to_string(kMaxDegree));
      }
      for (uint32_t w : out) {
        if (w >= nodes) {
          throw Error(ErrorCode::kInvalidArgument, "graph node " + std::to_string(v) + " names neighbour " +
                                                       std::to_string(w) + " of " + std::to_string(nodes));
        }
      }
      ExclusiveGuard g = pool.allocate(space);
      CALICO_CHECK(g.page_id().block() == v + 1);
      const uint32_t header[4] = {kNodeTag, v, static_cast<uint32_t>(out.size()), 0};
      std::memcpy(g.data(), header, sizeof header);
      if (!out.empty()) std::memcpy(g.data() + kHeaderBytes, out.data(), out.size() * 4);
      for (size_t i = 0; i < kPayloadWords; ++i) {
        uint64_t w = payload_word(v, i);
        std::memcpy(g.data() + kPayloadOffset + 8 * i, &w, 8);
      }
      g.mark_dirty();
    }
    return BasicGraph(pool, space, nodes);
  }

  // Errors: kUnknownSpace; kInvalidArgument when block 0 is not this format's metadata.
  static BasicGraph open(Pool& pool, std::string_view name) {
    SpaceId space = pool.open_space(name);
    graph_detail::MetaPage m{};
    if (pool.space_blocks(space) > 0) {
      SharedGuard g = pool.pin_shared(PageId(space, 0));
      std::memcpy(&m, g.data(), sizeof m);
    }
    if (m.magic != kMagic || m.format_version != kFormatVersion || m.page_size != pool.page_size() ||
        m.nodes == 0 || uint64_t{m.nodes} + 1 > pool.space_blocks(space)) {
      throw Error(ErrorCode::kInvalidArgument, "space '" + std::string(name) + "' is not a graph of this format",
                  PageId(space, 0));
    }
    return BasicGraph(pool, space, m.nodes);
  }

  uint32_t nodes() const { return nodes_; }
  SpaceId space() const { return space_; }
  PageId page_of(uint32_t node) const { return PageId(space_, node + 1); }

  // Replaces *out with node's neighbours. Pre: node < nodes().
  void neighbours(uint32_t node, GraphRead read, std::vector<uint32_t>* out) const {
    out->resize(kMaxDegree);
    out->resize(read_list(node, read, out->data()));
  }

  // The payload digest of `node` (equals probe_value(node)). Pre: node < nodes().
  [[gnu::always_inline]] uint64_t probe(uint32_t node, GraphRead read) const {
    CALICO_DCHECK(node < nodes_);
    if (read == GraphRead::kOptimistic) {
      return pool_->optimistic_read(
          page_of(node), [](const std::byte* p) { return graph_detail::graph_racy_probe(p); }, kPayloadOffset);
    }
    SharedGuard g = pool_->pin_shared(page_of(node));
    return graph_detail::graph_racy_probe(g.data());
  }

  // Breadth-first search from `root`: dequeues a node (a visit), reads its neighbour list,
  // [prefetches the group of its neighbours' payloads], probes every neighbour in list order
  // and enqueues those not seen yet; stops when max_visits nodes were visited or the queue
  // is empty. Appends the visit order to *order when given. Deterministic: the result
  // depends only on the graph, root and max_visits, never on reads or prefetch.
  // Errors: kInvalidArgument (root >= nodes(), state sized for another graph); pool errors.
  BfsResult bfs(uint32_t root, const BfsOptions& opt, BfsState& st, std::vector<uint32_t>* order = nullptr) const {
    if (root >= nodes_ || st.seen_.size() != nodes_) {
      throw Error(ErrorCode::kInvalidArgument, "bfs: root " + std::to_string(root) + " or state of " +
                                                   std::to_string(st.seen_.size()) + " nodes does not fit a graph of " +
                                                   std::to_string(nodes_));
    }
    if (++st.epoch_ == 0) {  // wrapped: forget every old mark
      std::fill(st.seen_.begin(), st.seen_.end(), 0);
      st.epoch_ = 1;
    }
    BfsResult res;
    st.queue_.clear();
    st.queue_.push_back(root);
    st.seen_[root] = st.epoch_;
    for (size_t head = 0; head < st.queue_.size() && res.visited < opt.max_visits; ++head) {
      const uint32_t u = st.queue_[head];
      ++res.visited;
      res.digest = fold(res.digest, u);
      if (order != nullptr) order->push_back(u);
      const uint32_t degree = read_list(u, opt.read, st.neighbours_.data());
      const std::span<const uint32_t> list(st.neighbours_.data(), degree);
      // Optimistic: the group also starts each resident page's read, so that a probe
      // translates its page once (read_group), not once for the prefetch and again to read.
      const bool group_reads = opt.prefetch && opt.read == GraphRead::kOptimistic;
      if (opt.prefetch) {
        st.group_.clear();
        for (uint32_t v : list) st.group_.push_back(page_of(v));
        const std::span<const uint32_t> offsets(st.offsets_.data(), degree);
        if (group_reads) {
          pool_->read_group(st.group_, offsets, std::span<OptimisticRead>(st.reads_.data(), degree));
        } else {
          pool_->prefetch_group(st.group_, offsets);
        }
      }
      auto probed = [&](uint32_t v, uint64_t value) {
        res.digest = fold(res.digest, value);
        ++res.probes;
        if (st.seen_[v] != st.epoch_) {
          st.seen_[v] = st.epoch_;
          st.queue_.push_back(v);
        }
      };
      // Two loops, so that each keeps its probe inlined.
      if (group_reads) {
        for (uint32_t i = 0; i < degree; ++i) probed(list[i], probe_started(list[i], st.reads_[i]));
      } else {
        for (uint32_t v : list) probed(v, probe(v, opt.read));
      }
    }
    return res;
  }

 private:
  BasicGraph(Pool& pool, SpaceId space, uint32_t nodes) : pool_(&pool), space_(space), nodes_(nodes) {}

  // Copies node's list into buf[0..kMaxDegree) and returns its degree. Errors:
  // kCorruptPage when the validated (or pinned) page is not node's or names a neighbour
  // >= nodes().
  uint32_t read_list(uint32_t node, GraphRead read, uint32_t* buf) const {
    CALICO_DCHECK(node < nodes_);
    const PageId pid = page_of(node);
    uint32_t degree = UINT32_MAX;
    bool done = false;
    if (read == GraphRead::kOptimistic) {
      for (int attempt = 0; attempt < Pool::kOptimisticAttempts && !done; ++attempt) {
        OptimisticRead r = pool_->read_optimistic(pid);
        const uint32_t d = graph_detail::graph_racy_neighbours(r.data, node, buf);
        if (Pool::validate(r)) {
          degree = d;
          done = true;
        }
      }
    }
    if (!done) {  // kPinned, or repeated conflicts
      SharedGuard g = pool_->pin_shared(pid);
      degree = graph_detail::graph_racy_neighbours(g.data(), node, buf);
    }
    if (degree == UINT32_MAX) corrupt(pid, "has no node header for node " + std::to_string(node));
    for (uint32_t i = 0; i < degree; ++i) {
      if (buf[i] >= nodes_) corrupt(pid, "names neighbour " + std::to_string(buf[i]) + " of " + std::to_string(nodes_));
    }
    return degree;
  }

  // probe(node, kOptimistic) for a read that read_group started; r.data == nullptr (the
  // group started none) or a failed validation: the page is read again (probe_again).
  uint64_t probe_started(uint32_t node, const OptimisticRead& r) const {
    if (r.data != nullptr) [[likely]] {
      const uint64_t value = graph_detail::graph_racy_probe(r.data);
      if (Pool::validate(r)) [[likely]] return value;
    }
    return probe_again(node);
  }
  [[gnu::noinline, gnu::cold]] uint64_t probe_again(uint32_t node) const { return probe(node, GraphRead::kOptimistic); }

  [[noreturn]] static void corrupt(PageId pid, const std::string& what) { index::corrupt_page("graph node page", what, pid); }

  Pool* pool_;
  SpaceId space_;
  uint32_t nodes_;
};

}  // namespace calico::bench
