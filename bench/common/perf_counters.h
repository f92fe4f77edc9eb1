// PerfCounters: the hardware counters of the microbenchmark tables ([Calico] Tables 2-4, 6:
// cycles, instructions, LLC references and misses, dTLB load misses) for the calling thread,
// through perf_event_open(2), user space only.
//
// Many VMs and containers refuse perf_event_open (no PMU, perf_event_paranoid, seccomp):
// then available() is false, why() says so, stop() returns a sample with every counter
// empty, and reports print "n/a" / JSON null. Counters the CPU lacks are empty on their own.
// Multiplexed counters are scaled by time_enabled / time_running.
//
// Usage: PerfCounters pc; pc.start(); work(); PerfSample s = pc.stop();
// One object per thread; not thread-safe. The open function is a parameter so that tests
// can exercise the fallback on machines where the counters work.
#pragma once

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>

#include <fmt/format.h>

namespace calico::bench {

enum PerfEvent { kCycles, kInstructions, kLlcReferences, kLlcMisses, kDtlbMisses, kPerfEvents };
inline constexpr std::array<const char*, kPerfEvents> kPerfEventNames = {"cycles", "instructions", "llc_references",
                                                                        "llc_misses", "dtlb_misses"};

struct PerfSample {
  std::array<std::optional<double>, kPerfEvents> value{};

  PerfSample& operator+=(const PerfSample& o) {
    for (size_t i = 0; i < kPerfEvents; ++i) {
      value[i] = value[i] && o.value[i] ? std::optional<double>(*value[i] + *o.value[i]) : std::nullopt;
    }
    return *this;
  }
  bool any() const {
    for (const auto& v : value) {
      if (v) return true;
    }
    return false;
  }
  // Per operation; empty stays empty. IPC is instructions / cycles.
  std::optional<double> per_op(PerfEvent e, double ops) const {
    return value[e] && ops > 0 ? std::optional<double>(*value[e] / ops) : std::nullopt;
  }
  std::optional<double> ipc() const {
    return value[kCycles] && value[kInstructions] && *value[kCycles] > 0
               ? std::optional<double>(*value[kInstructions] / *value[kCycles])
               : std::nullopt;
  }
};

// "n/a" for an empty value, else the value with `decimals`.
inline std::string format_counter(std::optional<double> v, int decimals = 1) {
  return v ? fmt::format("{:.{}f}", *v, decimals) : std::string("n/a");
}
inline std::string json_counter(std::optional<double> v) { return v ? fmt::format("{:.4g}", *v) : "null"; }

class PerfCounters {
 public:
  using OpenFn = long (*)(perf_event_attr*, pid_t, int, int, unsigned long);
  static long sys_perf_event_open(perf_event_attr* a, pid_t pid, int cpu, int group, unsigned long flags) {
    return syscall(SYS_perf_event_open, a, pid, cpu, group, flags);
  }

  explicit PerfCounters(OpenFn open_fn = &sys_perf_event_open) {
    auto cache = [](uint64_t cache, uint64_t op, uint64_t result) { return cache | (op << 8) | (result << 16); };
    const std::array<std::pair<uint32_t, uint64_t>, kPerfEvents> config = {{
        {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES},
        {PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS},
        {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES},
        {PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES},
        {PERF_TYPE_HW_CACHE,
         cache(PERF_COUNT_HW_CACHE_DTLB, PERF_COUNT_HW_CACHE_OP_READ, PERF_COUNT_HW_CACHE_RESULT_MISS)},
    }};
    for (size_t i = 0; i < kPerfEvents; ++i) {
      perf_event_attr a;
      std::memset(&a, 0, sizeof a);
      a.size = sizeof a;
      a.type = config[i].first;
      a.config = config[i].second;
      a.disabled = 1;
      a.exclude_kernel = 1;
      a.exclude_hv = 1;
      a.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
      errno = 0;
      long fd = open_fn(&a, 0, -1, -1, 0);
      if (fd >= 0) {
        fds_[i] = static_cast<int>(fd);
      } else if (why_.empty()) {
        why_ = fmt::format("perf_event_open({}): {}", kPerfEventNames[i], std::strerror(errno ? errno : ENOSYS));
      }
    }
    if (available()) why_.clear();
  }
  ~PerfCounters() {
    for (int fd : fds_) {
      if (fd >= 0) close(fd);
    }
  }
  PerfCounters(const PerfCounters&) = delete;
  PerfCounters& operator=(const PerfCounters&) = delete;

  // True when at least one counter opened.
  bool available() const {
    for (int fd : fds_) {
      if (fd >= 0) return true;
    }
    return false;
  }
  // Why no counter is available (empty when one is).
  const std::string& why() const { return why_; }

  void start() {
    for (int fd : fds_) {
      if (fd < 0) continue;
      ioctl(fd, PERF_EVENT_IOC_RESET, 0);
      ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    }
  }
  PerfSample stop() {
    PerfSample s;
    for (size_t i = 0; i < kPerfEvents; ++i) {
      if (fds_[i] < 0) continue;
      ioctl(fds_[i], PERF_EVENT_IOC_DISABLE, 0);
      uint64_t v[3];  // value, time enabled, time running
      if (read(fds_[i], v, sizeof v) != static_cast<ssize_t>(sizeof v) || v[2] == 0) continue;
      s.value[i] = static_cast<double>(v[0]) * static_cast<double>(v[1]) / static_cast<double>(v[2]);
    }
    return s;
  }

 private:
  std::array<int, kPerfEvents> fds_{-1, -1, -1, -1, -1};
  std::string why_;
};

}  // namespace calico::bench
