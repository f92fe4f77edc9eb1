// Test support: running a helper executable (the second process of the persistence tests).
#pragma once

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>
#include <vector>

extern char** environ;

namespace calico::testing {

// The path of a helper executable built beside the running test binary (CMakeLists.txt puts
// page_tool, vector_tool and crash_tool in calico_tests' directory). Found at run time rather
// than compiled in, so the test objects do not name the build directory and ccache can reuse
// them in a clone at another path.
inline std::string helper_tool(const std::string& name) {
  std::string self(4096, '\0');
  ssize_t n = readlink("/proc/self/exe", self.data(), self.size() - 1);
  if (n <= 0) return name;
  self.resize(static_cast<size_t>(n));
  return self.substr(0, self.rfind('/') + 1) + name;
}

// Starts `program` with `args` in a new process; returns its pid, or -1.
inline pid_t start_process(const std::string& program, const std::vector<std::string>& args) {
  std::vector<std::string> all{program};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid;
  if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) return -1;
  return pid;
}

// Runs `program` with `args` in a new process, waits for it and returns its exit code
// (-1 when it could not start or did not exit normally).
inline int run_process(const std::string& program, const std::vector<std::string>& args) {
  pid_t pid = start_process(program, args);
  if (pid < 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace calico::testing
