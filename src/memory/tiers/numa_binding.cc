// NUMA placement: see numa_binding.h.
#include "memory/tiers/numa_binding.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "calico/error.h"
#include "memory/tiers/tier_config.h"

namespace calico::memory::tiers {
namespace {

// include/uapi/linux/mempolicy.h
constexpr int kMpolBind = 2;
constexpr unsigned kMpolMfMove = 1u << 1;
constexpr unsigned long kMpolFNode = 1ul << 0;
constexpr unsigned long kMpolFAddr = 1ul << 1;

constexpr size_t kMaskWords = kMaxNumaNodes / (8 * sizeof(unsigned long));
static_assert(kMaxNumaNodes % (8 * sizeof(unsigned long)) == 0);

}  // namespace

std::vector<int> parse_node_list(const std::string& text) {
  std::vector<int> nodes;
  std::string s = text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  if (s.empty()) return nodes;
  std::stringstream in(s);
  std::string part;
  auto bad = [&] { return Error(ErrorCode::kInvalidArgument, "cannot parse the NUMA node list '" + s + "'"); };
  auto number = [&](const std::string& t) {
    if (t.empty() || t.size() > 4 || t.find_first_not_of("0123456789") != std::string::npos) throw bad();
    int v = std::stoi(t);
    if (v >= kMaxNumaNodes) throw bad();
    return v;
  };
  while (std::getline(in, part, ',')) {
    size_t dash = part.find('-');
    int lo = number(part.substr(0, dash));
    int hi = dash == std::string::npos ? lo : number(part.substr(dash + 1));
    if (hi < lo || (!nodes.empty() && lo <= nodes.back())) throw bad();
    for (int n = lo; n <= hi; ++n) nodes.push_back(n);
  }
  return nodes;
}

std::vector<int> numa_nodes_with_memory() {
  std::ifstream in("/sys/devices/system/node/has_memory");
  if (!in) return {0};
  std::stringstream text;
  text << in.rdbuf();
  std::vector<int> nodes = parse_node_list(text.str());
  if (nodes.empty()) return {0};
  return nodes;
}

void bind_to_node(void* base, size_t bytes, int node) {
  if (node < 0 || node >= kMaxNumaNodes) {
    throw Error(ErrorCode::kInvalidArgument,
                "NUMA node " + std::to_string(node) + " is outside [0, " + std::to_string(kMaxNumaNodes) + ")");
  }
  if (reinterpret_cast<uintptr_t>(base) % 4096 != 0) {
    throw Error(ErrorCode::kInvalidArgument, "mbind needs a 4 KB aligned range to bind to NUMA node " + std::to_string(node));
  }
  if (bytes == 0) return;
  unsigned long mask[kMaskWords] = {};
  mask[node / (8 * sizeof(unsigned long))] = 1ul << (node % (8 * sizeof(unsigned long)));
  // maxnode counts one more than the bits the kernel reads (it decrements it first).
  long rc = syscall(SYS_mbind, base, bytes, kMpolBind, mask, static_cast<unsigned long>(kMaxNumaNodes) + 1, kMpolMfMove);
  if (rc != 0) {
    int err = errno;
    throw Error(ErrorCode::kIoError, "mbind(MPOL_BIND) of " + std::to_string(bytes) + " bytes to NUMA node " +
                                         std::to_string(node) + " failed: " + std::strerror(err) +
                                         (err == EINVAL ? " (does the node exist? nodes with memory: see "
                                                          "/sys/devices/system/node/has_memory)"
                                                        : ""));
  }
}

int node_of_page(const void* addr) {
  int node = -1;
  long rc = syscall(SYS_get_mempolicy, &node, nullptr, 0ul, const_cast<void*>(addr), kMpolFNode | kMpolFAddr);
  return rc == 0 ? node : -1;
}

}  // namespace calico::memory::tiers
