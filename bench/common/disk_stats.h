// The block device's own read counters (/sys/dev/block/MAJ:MIN/stat, the numbers iostat
// reads) for the file system holding a path. Around a timed run they give the reads the
// device completed and the queue depth it saw: the summed time of its reads in flight over
// the wall time (iostat's aqu-sz, reads only). That is the depth to compare with fio's
// IOPS at a given iodepth, whoever issued the reads (Calico's rings or a peer's faults).
#pragma once

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstdint>
#include <fstream>
#include <optional>
#include <string>

namespace calico::bench {

struct DiskReadCounters {
  uint64_t reads = 0;       // reads completed (field 1)
  uint64_t read_ms = 0;     // milliseconds spent by reads, summed over reads (field 4)
};

// nullopt when the path's device has no stat file (e.g. tmpfs, overlay without a block device).
inline std::optional<DiskReadCounters> disk_read_counters(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  std::ifstream in("/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)) +
                   "/stat");
  DiskReadCounters c;
  uint64_t merged = 0, sectors = 0;
  if (!(in >> c.reads >> merged >> sectors >> c.read_ms)) return std::nullopt;
  return c;
}

}  // namespace calico::bench
