// NUMA placement with the raw mbind / get_mempolicy syscalls (libnuma-dev is not needed:
// the constants below are the kernel's ABI, include/uapi/linux/mempolicy.h).
//
// Entry points: numa_nodes_with_memory(), bind_to_node(), node_of_page().
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace calico::memory::tiers {

// The nodes listed in /sys/devices/system/node/has_memory, ascending. A kernel without
// NUMA support has no such file: then {0}, the one node every machine has.
std::vector<int> numa_nodes_with_memory();

// "0", "0-1,3": the list format of sysfs, parsed. Throws Error(kInvalidArgument) on text
// that is not such a list (the file is the kernel's, but we still do not trust it).
std::vector<int> parse_node_list(const std::string& text);

// mbind(MPOL_BIND, {node}, MPOL_MF_MOVE) on [base, base + bytes): the range's pages are
// allocated on `node` from now on, and pages already present are moved there. Pre: base is
// 4 KB aligned. Does not consult sysfs: the kernel decides.
// Errors: kInvalidArgument for a node outside [0, kMaxNumaNodes) or a misaligned base;
// kIoError naming the node, the range and errno when the kernel refuses (EINVAL for a node
// that does not exist, EPERM without CAP_SYS_NICE under some container profiles, EIO when
// a present page could not be moved).
void bind_to_node(void* base, size_t bytes, int node);

// The node of the page holding `addr` (get_mempolicy with MPOL_F_NODE | MPOL_F_ADDR), or
// -1 when the kernel cannot say (the page is not present, or no NUMA support).
int node_of_page(const void* addr);

}  // namespace calico::memory::tiers
