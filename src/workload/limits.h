// What one run may use: the bounds that keep a scenario from exhausting the
// host (memory, time) however it is written. The README's "Limits" section
// lists them; tests/hostile exercises each.
#pragma once

#include <cstdint>

#include "sim/types.h"

namespace mmsim::workload {

// Settable in a scenario's [limits] table, up to the ceilings below.
struct Limits {
  // Tasks (processes and threads) a run may create in all, counting those
  // that have exited: each keeps its result. [limits] tasks.
  uint64_t tasks = 100'000;
  // Rows of the timeline (scenario.sample_interval). [limits] timeline_rows.
  uint64_t timeline_rows = 100'000;
  // Simulated memory in use at once (page cache and anonymous): each page
  // costs the host about 60 bytes. [limits] memory.
  uint64_t memory_bytes = uint64_t{256} << 30;
  // PTE tables of all processes at once (each maps 2 MiB and costs the host
  // about 4.2 KB). [limits] page_tables.
  uint64_t page_tables = 262'144;
  // Program operations a run executes in all, one per op each time it runs
  // (a loop stretch run at once counts as its loop op): the bound on a long
  // loop of cheap system calls, which the host takes about 0.3 us each to
  // simulate (10^9: minutes). [limits] ops.
  uint64_t ops = 1'000'000'000;
};
inline constexpr uint64_t kMaxTasksCeiling = 10'000'000;
inline constexpr uint64_t kMaxTimelineRowsCeiling = 10'000'000;
inline constexpr uint64_t kMaxMemoryCeiling = uint64_t{16} << 40;
inline constexpr uint64_t kMaxPageTablesCeiling = 16'777'216;
inline constexpr uint64_t kMaxOpsCeiling = 1'000'000'000'000;

// Fixed bounds, checked when a scenario is loaded.
inline constexpr int kMaxLoopDepth = 16;        // loops inside loops
inline constexpr uint64_t kMaxCounters = 1024;  // distinct counter names
// The longest duration anywhere (a loop, a sleep, time_limit): 2^62 ns, about
// 146 years, so that a time plus a duration never overflows the clock.
inline constexpr int64_t kMaxDurationNs = int64_t{1} << 62;
// A file's size: ext4's largest file with 4 KiB blocks (16 TiB).
inline constexpr uint64_t kMaxFileBytes = uint64_t{1} << 44;
// A mapping's size: the user address space (TASK_SIZE_MAX, 128 TiB less a page).
inline constexpr uint64_t kMaxMapBytes = kTaskSizePages * kPageSize;
// The machine's memory is at most 16 TiB less 8 KiB (32-bit page frame
// numbers): topo::validate_machine_spec checks it.

// compare --jobs: at most this many simulations per host CPU.
inline constexpr unsigned kMaxJobsPerCpu = 4;

}  // namespace mmsim::workload
