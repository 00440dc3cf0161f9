// What a run produced, in the kernel's vocabulary: per-task times and faults
// (/proc/<pid>/stat), NUMA fields (/proc/<pid>/sched), vmstat changes, memcg
// state, a timeline of counters, and how the simulation itself went.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cost/bandwidth.h"
#include "memcg/memcg.h"
#include "mm/vmstat.h"
#include "numa/balancer.h"
#include "sched/task.h"

namespace mmsim::workload {

// The time metrics every run reports beside its named counters (a counter
// may not take one of these names).
inline constexpr std::array<const char*, 4> kTimeMetrics = {"elapsed_s", "user_s", "sys_s",
                                                            "iowait_s"};

// Counters sampled over time (RunResult::timeline), as changes since the
// run's start (for the nr_* gauges too: pages freed or put on a list since).
inline constexpr std::array<mm::Vm, 21> kTimelineCounters = {mm::Vm::pgfault,
                                                             mm::Vm::numa_pte_updates,
                                                             mm::Vm::numa_hint_faults,
                                                             mm::Vm::numa_hint_faults_local,
                                                             mm::Vm::numa_pages_migrated,
                                                             mm::Vm::pgmigrate_success,
                                                             mm::Vm::pgmigrate_fail,
                                                             mm::Vm::nr_free_pages,
                                                             mm::Vm::nr_inactive_file,
                                                             mm::Vm::nr_active_file,
                                                             mm::Vm::nr_inactive_anon,
                                                             mm::Vm::nr_active_anon,
                                                             mm::Vm::pgscan_kswapd,
                                                             mm::Vm::pgsteal_kswapd,
                                                             mm::Vm::pgsteal_direct,
                                                             mm::Vm::pswpout,
                                                             mm::Vm::workingset_refault_file,
                                                             mm::Vm::pgpromote_candidate,
                                                             mm::Vm::pgpromote_success,
                                                             mm::Vm::pgdemote_kswapd,
                                                             mm::Vm::pgdemote_direct};

struct Sample {
  double t_s = 0;
  std::array<int64_t, kTimelineCounters.size()> vm{};
  uint32_t tasks_in_d = 0;          // tasks waiting in D state at that moment
  std::vector<uint64_t> node_used;  // pages in use on each node (not in the JSON)
  // memory.stat of the first process's memcg: cache, mapped_file (pages), pgpgin
  std::array<int64_t, 3> memcg{};
};

struct TaskResult {
  uint32_t pid = 0;
  uint32_t tgid = 0;
  uint32_t ppid = 0;
  std::string comm;
  std::string program;
  uint16_t cpu = 0;
  uint16_t node = 0;
  bool node_known = true;  // a host run's task knows it if it ended normally
  // Of the pages its last sweep or touch covered, the share mapped on the
  // node it ended on, in % of those mapped (-1: no such op, or unknown).
  double local_pct = -1;
  sched::TaskTimes times;
  uint64_t min_flt = 0;
  uint64_t maj_flt = 0;
  uint64_t nvcsw = 0;
  uint64_t nivcsw = 0;
  double start_s = 0;
  double exit_s = 0;
  std::vector<uint64_t> counters;  // by Workload::counters index
  numa::ProcSchedNuma numa;
};

// A task's result from its scheduler state, its program's counters and its
// NUMA fields; `end_s` stands for the exit time of a task still alive.
TaskResult task_result(const sched::Task& task, std::string program, std::vector<uint64_t> counters,
                       std::optional<numa::ProcSchedNuma> numa, double end_s);

struct RunResult {
  double elapsed_s = 0;  // simulated time until the last task exited
  bool time_limit_hit = false;
  // [run] convergence: when each process's tasks of that program first
  // were all on one node, which ended the run; -1: never, or no convergence
  // program was given.
  double converged_s = -1;
  std::vector<TaskResult> tasks;                        // by pid
  std::vector<std::pair<std::string, int64_t>> vmstat;  // change over the run
  std::vector<std::string> errors;                      // segfaults, OOM, failed syscalls
  std::vector<std::string> check_failures;
  // Set when the run stopped at one of the scenario's [limits]: what was
  // exceeded, as one line naming the limit. The other fields are then partial.
  std::string limit_error;
  uint64_t events = 0;
  uint64_t page_events = 0;  // faults + PTEs zapped/copied: the speed denominator
  // CPU time of each node's kswapd (kernel threads are not tasks here: their
  // time is not taken from the tasks' CPUs).
  std::vector<double> kswapd_s;
  // khugepaged's CPU time (not taken from the tasks' CPUs either), and its
  // /sys/kernel/mm/transparent_hugepage/khugepaged/ counts.
  double khugepaged_s = 0;
  uint64_t khugepaged_pages_collapsed = 0;
  uint64_t khugepaged_full_scans = 0;
  // The memories and links streams saturated (cost::Bandwidth), in resource
  // order (none: nothing was).
  std::vector<cost::Bandwidth::Saturation> bandwidth;
  std::vector<Sample> timeline;
  std::vector<memcg::MemCgroup> memcg;  // final state of every memcg (empty: off)
  // Kernel metadata lines the cache model priced, by array: accesses that hit
  // the line last touched, the others, and what those cost beyond L1 hits.
  struct MetadataLines {
    std::string array;
    uint64_t hits = 0, misses = 0;
    uint64_t streamed = 0;  // of the misses: the next line, prefetched
    double miss_ns = 0;
  };
  std::vector<MetadataLines> metadata;
};

// The vmstat counters' changes between two snapshots, by name: those the
// kernel modelled has (VmStat::shown).
std::vector<std::pair<std::string, int64_t>> vmstat_delta(const mm::VmStat& before,
                                                          const mm::VmStat& after);

}  // namespace mmsim::workload
