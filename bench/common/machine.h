// Machine and build description printed and recorded by every bench run (STYLE.md 10).
#pragma once

#include <fstream>
#include <string>
#include <string_view>
#include <thread>

#include <fmt/format.h>

namespace calico::bench {

inline std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "unknown";
}

inline uint64_t memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  in >> key >> kb;
  return kb * 1024;
}

inline std::string build_flags() {
#ifdef NDEBUG
  const char* ndebug = "NDEBUG";
#else
  const char* ndebug = "asserts";
#endif
  return fmt::format("{} {} checks={} {}", __VERSION__, ndebug, CALICO_CHECKS_LEVEL,
#if defined(__OPTIMIZE__)
                     "optimized"
#else
                     "unoptimized"
#endif
  );
}

// `s` with quotes and backslashes escaped, for a JSON string.
inline std::string json_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

// JSON object body (no braces) describing the machine.
inline std::string machine_json() {
  return fmt::format(R"("cpu":"{}","cores":{},"memory_bytes":{},"build":"{}")", json_escape(cpu_model()),
                     std::thread::hardware_concurrency(), memory_bytes(), json_escape(build_flags()));
}

}  // namespace calico::bench
