// A scenario's workload as a plan: what mmsim-exec, the native executor,
// performs with real system calls. mmsim writes it (native/plan_build.h turns
// a loaded scenario into one); mmsim-exec reads it. The text format is
// line-based and versioned so that the executor needs no TOML library and
// links statically (it boots in a bare initramfs under `mmsim validate`).
//
// This layer depends on nothing but the C++ standard library: mmsim-exec
// links only it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mmsim::plan {

// 2: sweeps say which build of the loop runs; 3: sweeps and touches say
// whether the task takes only its own slice; 4: the mempolicy op, memset
// sweeps, and pins and policies by the task's share of the nodes.
inline constexpr int kPlanVersion = 4;
// The report's format (write_report): 2 adds a task's node and local_pct.
inline constexpr int kReportVersion = 2;

enum class OpKind : uint8_t {
  kMap,        // mmap(2), then mbind(2) when the policy is not default
  kUnmap,      // munmap(2) of the region's mapping
  kFork,       // fork(2) `count` children, each running `program`
  kThreads,    // pthread_create `count` threads, each running `program`
  kWait,       // wait for every child process and thread this task started
  kLoop,       // `body` `count` times, or until `duration_ns` has passed
  kSweep,      // read or write every elem_size-byte element of the range
  kTouch,      // one access (read or write) to each page of the range
  kMadvise,    // madvise(2) over the range: MADV_DONTNEED, MADV_HUGEPAGE or MADV_NOHUGEPAGE
  kMlock,      // mlock(2) over the range (populates it)
  kSleep,      // nanosleep(2) for duration_ns
  kCount,      // add `count` to the task's counter `counter`
  kCgroup,     // move this process into cgroup `cgroup` (0: the run's root)
  kPin,        // sched_setaffinity(0, ...) to `cpus`, or to the CPUs of `nodes`
  kMempolicy,  // set_mempolicy(2): `policy` over `nodes` for the task itself
};

// A pin's or a mempolicy's nodes by the task's place among the tasks its
// threads or fork op started (util::node_share over the nodes with CPUs):
// its own share, or the share of the task at the other end; or every node
// with CPUs.
enum class NodeShare : uint8_t { kNone, kOwn, kMirror, kAll };

enum class Policy : uint8_t { kDefault, kBind, kPreferred, kInterleave };
enum class Advice : uint8_t { kDontneed, kHugepage, kNohugepage };

struct Op {
  OpKind kind = OpKind::kCount;
  uint32_t region = 0;  // kMap, kUnmap, kSweep, kTouch, kMadvise, kMlock
  // kMap
  uint64_t pages = 0;
  bool shared = false;
  bool writable = false;
  bool exec = false;
  int32_t file = -1;  // index into Plan::files; -1: anonymous
  uint64_t file_offset_pages = 0;
  Policy policy = Policy::kDefault;
  // kMap, kMempolicy: kBind, kPreferred (one node), kInterleave; kPin: the
  // nodes whose CPUs (/sys/devices/system/node/nodeN/cpulist, read when the
  // op runs)
  std::vector<uint16_t> nodes;
  // kPin, kMempolicy: the nodes by the task's share instead (nodes empty)
  NodeShare node_share = NodeShare::kNone;
  // kFork, kThreads: the program; kLoop: iterations (0: use duration_ns);
  // kFork, kThreads: how many; kCount: the increment
  uint32_t program = 0;
  uint64_t count = 0;
  int64_t duration_ns = 0;  // kLoop (when count is 0), kSleep
  std::vector<Op> body;     // kLoop
  // kSweep, kTouch, kMadvise, kMlock: pages [first_page, first_page + nr_pages)
  // of the region's mapping; nr_pages 0: to its end
  uint64_t first_page = 0;
  uint64_t nr_pages = 0;
  Advice advice = Advice::kDontneed;  // kMadvise
  bool write = false;                 // kSweep, kTouch
  // kSweep, kTouch: only the task's own slice of the range (the i-th of n
  // equal slices, rounded down, for the i-th of the n tasks its threads or
  // fork op started; the whole range for the first task)
  bool own_slice = false;
  uint32_t elem_size = 4;    // kSweep: 1, 2, 4 or 8 bytes
  double compute_ns = -1;    // kSweep: per element; < 0: none beyond the loop itself
  bool unoptimised = false;  // kSweep: run the loop built at -O0 (tools/exec/sweep_O0.cc)
  bool memset = false;       // kSweep: memset(3) the range (a write; no elements)
  uint32_t counter = 0;      // kCount: index into Plan::counters
  uint32_t cgroup = 0;       // kCgroup: index into Plan::cgroups + 1
  // kPin: the CPUs; exactly one of cpus and nodes is non-empty
  std::vector<uint32_t> cpus;
};

struct Program {
  std::string name;  // also the comm of the tasks that run it (prctl PR_SET_NAME)
  std::vector<Op> ops;
};

// A file of the scenario, created in the executor's scratch directory.
struct File {
  std::string name;  // [A-Za-z0-9_.+-], a plain file name
  uint64_t pages = 0;
  bool cached = false;  // read in (page cache) before the run starts
  // On a tmpfs (the executor's --tmpfs directory, /dev/shm by default), not
  // the scratch directory: written as `fs=tmpfs`, absent for a disk file.
  // cached: written in full before the run; else a sparse file (holes).
  bool tmpfs = false;
};

struct Plan {
  std::string scenario;  // the scenario's name, for messages
  uint64_t page_size = 4096;
  int64_t time_limit_ns = 0;  // > 0: every task is stopped at this time
  std::vector<File> files;
  std::vector<std::string> regions;   // names; ops refer to them by index
  std::vector<std::string> counters;  // names; ops refer to them by index
  std::vector<std::string> cgroups;   // paths below the run's cgroup root, "/a/b"
  std::vector<Program> programs;
  uint32_t init_program = 0;
  uint32_t init_cgroup = 0;  // 0: stay in the run's root cgroup
};

// The plan as text (format version kPlanVersion): deterministic, one line per
// item, fields as key=value. Names are written escaped (no spaces or
// control characters in the text).
std::string write_plan(const Plan& plan);

// Parses write_plan's text. On failure, returns nullopt and sets *error to
// "line N: what is wrong".
std::optional<Plan> read_plan(std::string_view text, std::string* error);

// The names of the ops as the scenario language spells them ("map", ...).
std::string_view op_name(OpKind kind);

// What mmsim-exec reports of one task (a process or a thread), as it ended.
struct TaskResult {
  int64_t tid = 0;     // gettid(): the kernel's pid of the task
  int64_t tgid = 0;    // getpid(): its process
  int64_t parent = 0;  // tid of the task that started it (0 for the first)
  uint32_t program = 0;
  int64_t start_ns = 0, end_ns = 0;  // since the run's start (CLOCK_MONOTONIC)
  // getrusage(RUSAGE_THREAD) at its end
  int64_t user_ns = 0, sys_ns = 0;
  uint64_t minflt = 0, majflt = 0, nvcsw = 0, nivcsw = 0;
  // How it ended: "exit" (its program ran to the end), "time_limit" (stopped
  // at the plan's time limit), "killed by SIGSEGV" (reported by its parent,
  // with no rusage), or "error: <system call>: <errno name>" (a system call
  // the plan needs failed; the task stopped there).
  std::string end = "exit";
  std::vector<uint64_t> counters;  // one per Plan::counters
  // Where it ended: the node of its CPU when its program finished (getcpu;
  // -1: unknown), and of the pages its last sweep or touch covered, the
  // share on that node in % of those present (move_pages; -1: none).
  int64_t node = -1;
  double local_pct = -1;
};

// Kernel counters by name, in file order: /proc/vmstat, memory.stat.
using Counters = std::vector<std::pair<std::string, int64_t>>;

struct RunReport {
  int64_t elapsed_ns = 0;  // from the first task's start to the last task's end
  bool time_limit_hit = false;
  std::vector<TaskResult> tasks;  // in order of start
  // The host's counters over the run, from just before the first task
  // started to just after the last one ended (the files' set-up excluded):
  // every /proc/vmstat counter's change, in the kernel's order, and the
  // system-wide iowait time (/proc/stat). Empty and 0 where unreadable.
  Counters vmstat;
  int64_t iowait_ns = 0;
};

// The "name value" lines of such a file (a line of another shape is skipped).
Counters parse_counters(std::string_view text);
// after - before, by name, in after's order (a name new in after counts from 0).
Counters counters_delta(const Counters& before, const Counters& after);

// The report as text (the executor's output) and back; as write_plan and
// read_plan.
std::string write_report(const RunReport& report);
std::optional<RunReport> read_report(std::string_view text, std::string* error);

}  // namespace mmsim::plan
