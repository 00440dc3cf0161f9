// Native mode: runs one of the project's benchmark programs (bench/programs)
// on the host's kernel and reports it as `mmsim run` reports a simulation,
// with the same counter names and JSON keys, so that the two diff directly.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "native/host.h"

namespace mmsim::native {

// What to run and how. Bench parameters left unset take the program's
// defaults; setting one the bench does not take is an error.
struct NativeOptions {
  std::string bench;  // "numa-shared-cow" or "mmap-fault-drop"

  // numa-shared-cow
  std::optional<double> seconds;  // default 10
  std::optional<int> procs;       // default 2
  // The build of the summing loop: "O0" (default: as the seed write-up's
  // program was built, plain gcc without optimisation) or "O2".
  std::optional<std::string> loop;

  // mmap-fault-drop
  std::optional<uint64_t> size;  // bytes; default 256 MiB
  std::optional<int> loops;      // default 10
  std::string file;              // default: a temp file under /var/tmp, removed afterwards

  // kernel.numa_balancing for the run (0 or 1); restored afterwards, also on
  // error or interrupt. Unset: left as it is.
  std::optional<int> numa_balancing;
  bool cgroup = false;  // run in a fresh memory cgroup and report its memory.stat
  std::string json;     // write the JSON report here (atomically) when not empty

  // Roots, replaceable so that tests can use fake trees.
  std::string sysctl_root = "/proc/sys";
  std::string cgroup_root = "/sys/fs/cgroup";
  // Where the mmsim-* bench executables are. Empty: bench/programs next to the
  // build tree of the running binary (found by walking up from /proc/self/exe).
  std::string bench_dir;
};

// One process of the benchmark, from wait4() rusage.
struct NativeTask {
  int pid = 0;
  int ppid = 0;
  std::string comm;
  double user_s = 0;
  double sys_s = 0;
  uint64_t minflt = 0;
  uint64_t majflt = 0;
  uint64_t nvcsw = 0;
  uint64_t nivcsw = 0;
  uint64_t counter = 0;  // this task's share of the bench's counter
};

// What one run measured.
struct NativeResult {
  std::string bench_path;
  std::vector<std::string> argv;        // as executed
  nlohmann::ordered_json params;        // the bench's parameters, by flag name
  nlohmann::ordered_json bench_output;  // the JSON line the bench printed
  std::string counter_name;             // "iterations" or "touches"
  uint64_t counter = 0;
  double wall_s = 0;                                    // steady clock, release to reap
  double user_s = 0, sys_s = 0;                         // the bench and its reaped children
  double iowait_s = 0;                                  // system-wide: /proc/stat iowait delta
  std::vector<std::pair<std::string, int64_t>> vmstat;  // every /proc/vmstat delta, in kernel order
  std::vector<NativeTask> tasks;
  std::optional<int> numa_balancing;  // the value in force during the run, if known
  std::string numa_balancing_before;  // as read before the run ("" if not read)
  bool numa_balancing_set = false;    // true: changed for the run and restored
  // The memory cgroup, when one was used.
  std::string memcg_hierarchy;  // "v1" or "v2"
  std::string memcg_path;
  std::vector<std::pair<std::string, uint64_t>> memcg_stat;  // memory.stat, in file order
  std::optional<uint64_t> memcg_peak_bytes;  // v1 memory.max_usage_in_bytes / v2 memory.peak
  // uname(2) and the CPU and node counts.
  std::string sysname, release, version, arch;
  int cpus = 0;
  int nodes = 0;
};

// The result of measure_native(): exit_code 0 with a result, else the code
// run_native() returns (the reason was written to `err`).
struct NativeOutcome {
  int exit_code = 0;
  std::optional<NativeResult> result;
};

// Runs the bench once and measures it. Blocks SIGINT, SIGTERM and SIGHUP for
// the duration (in the calling thread): on one, kills the bench's process
// group, reaps it, and returns 128 + the signal after cleaning up. Whatever
// happens it leaves the sysctl as it found it, removes the cgroup and any file
// it created, and leaves no process behind.
// REQUIRES: no other thread of the process reaps children meanwhile.
NativeOutcome measure_native(const NativeOptions& options, std::ostream& err);

// The report in `mmsim run --json` form: scenario, seed (null), machine,
// kernel, metrics, vmstat, tasks, sim, and memcg when a cgroup was used.
nlohmann::ordered_json native_json(const NativeOptions& options, const NativeResult& result);

// The summary in `mmsim run` form.
std::string native_summary_text(const NativeOptions& options, const NativeResult& result);

// measure_native(), then the summary on `out` and the JSON file if asked.
// Returns the exit code: 0, 1 (the bench failed, or a write), 2 (bad input),
// kExitHostSetup, or 128 + signal.
int run_native(const NativeOptions& options, std::ostream& out, std::ostream& err);

// A size in the project's grammar (util/units.h): bytes, or a number with
// K/M/G/T/P/E or KiB..EiB (powers of 1024) or KB..EB (powers of 1000).
// nullopt on malformed text; util::parse_size() also says why.
std::optional<uint64_t> parse_size(const std::string& text);

// The catalogue of benchmark programs: each one's name, executable (in
// bench/programs) and the counter it reports. Native mode, --predict and
// calibrate find them here.
struct BenchSpec {
  std::string name;
  std::string executable;
  std::string counter;
};
const std::vector<BenchSpec>& bench_specs();
// The benchmark of that name, or nullptr.
const BenchSpec* find_bench(const std::string& name);

// The bench names run_native() knows.
const std::vector<std::string>& bench_names();

}  // namespace mmsim::native
