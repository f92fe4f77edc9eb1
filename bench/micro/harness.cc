// The microbenchmark harness: see harness.h.
#include "micro/harness.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <thread>

#include "calico/error.h"
#include "common/machine.h"
#include "calico/variants.h"

namespace calico::bench::micro {

using Clock = std::chrono::steady_clock;

std::vector<std::string> select_translations(const std::vector<std::string>& requested, bool allow_direct,
                                             const char* experiment) {
  const std::vector<std::string> known = variants::translation_names();
  std::vector<std::string> out;
  for (const std::string& name : requested.empty() ? known : requested) {
    // with_pool_type throws kInvalidArgument naming the known translations.
    variants::with_pool_type(name, []<class Pool>() {});
    if (std::find(out.begin(), out.end(), name) != out.end()) continue;
    if (name == "direct" && !allow_direct) {
      fmt::print("note: {} skips 'direct' (it cannot evict, so it has no translation memory to measure)\n",
                 experiment);
      continue;
    }
    out.push_back(name);
  }
  if (out.empty()) throw Error(ErrorCode::kInvalidArgument, std::string(experiment) + ": no translation to run");
  return out;
}

void check_memory_budget(uint64_t bytes, const std::string& what) {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  uint64_t available = 0;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") available = kb * 1024;
  }
  if (available != 0 && static_cast<double>(bytes) > 0.85 * static_cast<double>(available)) {
    throw std::runtime_error(fmt::format(
        "{} needs about {} MB resident (every variant's pool at once) but only {} MB are available; "
        "pass fewer --translations or smaller sizes",
        what, bytes >> 20, available >> 20));
  }
}

void print_banner(const std::string& title, const std::string& configuration) {
  fmt::print("\n=== {} ===\n{}\nmachine: {}, {} cores, {} MB; build: {}\n", title, configuration, cpu_model(),
             std::thread::hardware_concurrency(), memory_bytes() >> 20, build_flags());
  std::fflush(stdout);
}

bool load_or_skip(const char* experiment, const std::string& translation, const Common& common,
                  const std::function<void()>& load) {
  try {
    load();
    return true;
  } catch (const std::exception& e) {
    fmt::print("SKIPPED {} on {}: {}\n", experiment, translation, e.what());
    std::fflush(stdout);
    if (!common.json_path.empty()) {
      std::ofstream(common.json_path, std::ios::app)
          << fmt::format(R"({{"experiment":"skipped","for":"{}","translation":"{}","reason":"{}","machine":{{{}}}}})",
                         experiment, json_escape(translation), json_escape(e.what()), machine_json())
          << "\n";
    }
    return false;
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::vector<Result> measure(const std::vector<Case>& cases, const Common& common) {
  if (common.repeat == 0) throw std::invalid_argument("repeat must be >= 1");
  std::optional<PerfCounters> perf;
  if (common.counters) perf.emplace();
  std::vector<Result> results(cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    results[i].c = &cases[i];
    results[i].failures = cases[i].run().failures;  // warm-up
    results[i].counters.value.fill(0.0);
  }
  const size_t n = cases.size();
  for (unsigned r = 0; r < common.repeat; ++r) {
    if (!common.quiet) std::fprintf(stderr, "  round %u of %u\n", r + 1, common.repeat);
    for (size_t k = 0; k < n; ++k) {
      Result& res = results[(k + r) % n];
      if (perf) perf->start();
      uint64_t ops = 0;
      double s = 0;      // the timed region: the cases' own, else the harness's
      double timed = 0;  // the cases' own timed regions, summed
      const auto t0 = Clock::now();
      do {
        RunOutcome o = res.c->run();
        ops += o.ops;
        res.failures += o.failures;
        timed += o.seconds;
        s = timed > 0 ? timed : std::chrono::duration<double>(Clock::now() - t0).count();
      } while (s < common.min_seconds);
      PerfSample sample = perf ? perf->stop() : PerfSample{};
      res.counters += sample;
      res.ops += ops;
      res.run_seconds.push_back(s);
      res.ns_per_op.push_back(ops ? s * 1e9 / static_cast<double>(ops) : 0);
    }
  }
  for (Result& res : results) res.median_ns = median(res.ns_per_op);
  if (perf && !perf->available() && !common.quiet) fmt::print("hardware counters: n/a ({})\n", perf->why());
  return results;
}

namespace {

// The baseline of `results[i]` named `name` (same workload), or null.
const Result* baseline_of(const std::vector<Result>& results, size_t i, const std::string& name) {
  const std::string& w = results[i].c->workload;
  const Result* first = nullptr;
  const Result* previous = nullptr;
  for (size_t j = 0; j < results.size(); ++j) {
    if (results[j].c->workload != w) continue;
    if (first == nullptr) first = &results[j];
    if (j < i) previous = &results[j];
    if (name != "first" && name != "previous" && results[j].c->translation == name) return &results[j];
  }
  if (name == "first") return first;
  if (name == "previous") return previous;
  return nullptr;
}


}  // namespace

// The median over rounds of base's time / r's time in the same round. Both ran in every
// round, interleaved, so a round's ratio cancels what the machine did in that round (this VM's
// round-to-round drift is 2-3x, shared by every variant); a ratio of medians would not.
double paired_speedup(const Result& base, const Result& r) {
  std::vector<double> ratios;
  for (size_t k = 0; k < std::min(base.ns_per_op.size(), r.ns_per_op.size()); ++k) {
    if (r.ns_per_op[k] > 0) ratios.push_back(base.ns_per_op[k] / r.ns_per_op[k]);
  }
  return ratios.empty() ? base.median_ns / r.median_ns : median(ratios);
}

uint64_t report(const ReportSpec& spec, const std::vector<Result>& results, const Common& common) {
  std::string head = fmt::format("{:<26}{:<22}{:>10}{:>10}", "workload", "translation", "ns/" + spec.op, "M/s");
  for (const std::string& b : spec.baselines) head += fmt::format("{:>12}", "vs " + b);
  head += fmt::format("{:>7}{:>11}{:>9}{:>9}{:>6}", "IPC", "instr/op", "LLC/op", "dTLB/op", "fail");
  fmt::print("\n{}\n", head);
  std::string json;
  uint64_t failures = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    failures += r.failures;
    const double ops = static_cast<double>(r.ops);
    std::string line = fmt::format("{:<26}{:<22}{:>10.1f}{:>10.3f}", r.c->workload, r.c->translation, r.median_ns,
                                   r.median_ns > 0 ? 1e3 / r.median_ns : 0.0);
    std::string speedups;
    for (const std::string& b : spec.baselines) {
      const Result* base = baseline_of(results, i, b);
      std::optional<double> x;
      if (base != nullptr && r.median_ns > 0) x = paired_speedup(*base, r);
      line += fmt::format("{:>12}", x ? fmt::format("{:.3f}x", *x) : std::string("-"));
      speedups += fmt::format("{}\"{}\":{}", speedups.empty() ? "" : ",", b, json_counter(x));
    }
    const PerfSample& c = r.counters;
    line += fmt::format("{:>7}{:>11}{:>9}{:>9}{:>6}", format_counter(c.ipc(), 2),
                        format_counter(c.per_op(kInstructions, ops), 0), format_counter(c.per_op(kLlcMisses, ops), 2),
                        format_counter(c.per_op(kDtlbMisses, ops), 2), r.failures);
    fmt::print("{}\n", line);

    std::string counters = "null";
    if (c.any()) {
      counters = fmt::format("{{\"ipc\":{}", json_counter(c.ipc()));
      for (size_t e = 0; e < kPerfEvents; ++e) {
        counters += fmt::format(",\"{}\":{}", kPerfEventNames[e], json_counter(c.per_op(static_cast<PerfEvent>(e), ops)));
      }
      counters += "}";
    }
    std::string runs, run_seconds;
    for (double ns : r.ns_per_op) runs += fmt::format("{}{:.3f}", runs.empty() ? "" : ",", ns);
    for (double sec : r.run_seconds) run_seconds += fmt::format("{}{:.3f}", run_seconds.empty() ? "" : ",", sec);
    json += fmt::format(
        R"({{"experiment":"{}","workload":"{}","translation":"{}","op":"{}","params":{{{}}},"case":{{{}}},)"
        R"("runs":{},"ops":{},"median_ns_per_op":{:.4f},"ops_per_s":{:.1f},"runs_ns_per_op":[{}],"runs_seconds":[{}],)"
        R"("speedup":{{{}}},"counters_per_op":{},"failures":{},"machine":{{{}}}}})"
        "\n",
        spec.experiment, json_escape(r.c->workload), json_escape(r.c->translation), spec.op, spec.params_json,
        r.c->details_json, r.ns_per_op.size(), r.ops, r.median_ns, r.median_ns > 0 ? 1e9 / r.median_ns : 0.0, runs,
        run_seconds, speedups, counters, r.failures, machine_json());
  }
  fmt::print("median of {} interleaved runs after a warm-up; vs X = median over rounds of X's time / this time in the same round (> 1: faster); "
             "self-check failures: {}\n",
             common.repeat, failures);
  std::fflush(stdout);
  if (!common.json_path.empty()) {
    std::ofstream out(common.json_path, std::ios::app);
    out << json;
    if (!out) throw std::runtime_error("cannot write " + common.json_path);
  }
  return failures;
}

}  // namespace calico::bench::micro
