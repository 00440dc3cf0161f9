// One simulation: a machine, its memory manager, the tasks and their
// programs, driven by one event queue. Single-threaded and deterministic.
//
// Tasks execute their programs directly, advancing a clock of their own.
// Work that needs the kernel (faults, mmap, fork...) runs only when the task
// is not ahead of any pending event, so effects happen in time order. Pure
// user work (sweeps over pages that are present and accessible) may run ahead
// as a "segment" of known cost; if the kernel revokes a PTE the segment covers
// (PteObserver), the segment is cut at that moment, as the task would have
// faulted then. So cost grows with kernel events, not with memory accesses.
#pragma once

#include <array>
#include <map>
#include <unordered_map>
#include <memory>
#include <string>
#include <vector>

#include "cost/cost_profile.h"
#include "mm/memory_manager.h"
#include "memcg/memcg.h"
#include "numa/balancer.h"
#include "sched/task.h"
#include "sim/event_queue.h"
#include "topo/topology.h"
#include "workload/program.h"

namespace mmsim::workload {

struct WorldConfig {
  uint64_t seed = 1;
  Tick time_limit = seconds(3600);  // the run stops here if tasks are still alive
  bool check_invariants = false;    // run the DEBUG_VM-like checker (tests: on)
  bool fast_forward = true;         // off: run loops pass by pass (tests compare)
  numa::NumaConfig numa;            // automatic NUMA balancing
  Tick sample_interval;             // > 0: record a timeline of counters
  memcg::MemcgConfig memcg;         // memory cgroups (protocol kNone: off)
  std::vector<memcg::CgroupSpec> cgroups;
};

// Counters sampled over time (RunResult::timeline).
inline constexpr std::array<mm::Vm, 7> kTimelineCounters = {
    mm::Vm::pgfault,           mm::Vm::numa_pte_updates, mm::Vm::numa_hint_faults,
    mm::Vm::numa_hint_faults_local, mm::Vm::numa_pages_migrated, mm::Vm::pgmigrate_success,
    mm::Vm::pgmigrate_fail};
struct Sample {
  double t_s = 0;
  std::array<int64_t, kTimelineCounters.size()> vm{};
  uint32_t tasks_in_d = 0;  // tasks waiting in D state at that moment
  // memory.stat of the first process's memcg: cache, mapped_file (pages), pgpgin
  std::array<int64_t, 3> memcg{};
};

// The /proc/<pid>/sched NUMA fields of a task.
struct TaskNumaResult {
  int numa_scan_seq = 0;
  uint64_t numa_pages_migrated = 0;
  int numa_preferred_nid = -1;
  int64_t total_numa_faults = 0;
  uint32_t numa_group_id = 0;
  int64_t numa_scan_period_ms = 0;
  // Per node: task_private, task_shared, group_private, group_shared.
  std::vector<std::array<int64_t, 4>> numa_faults;
};

struct TaskResult {
  uint32_t pid = 0;
  uint32_t tgid = 0;
  uint32_t ppid = 0;
  std::string comm;
  std::string program;
  uint16_t cpu = 0;
  uint16_t node = 0;
  sched::TaskTimes times;
  uint64_t min_flt = 0;
  uint64_t maj_flt = 0;
  uint64_t nvcsw = 0;
  uint64_t nivcsw = 0;
  double start_s = 0;
  double exit_s = 0;
  std::vector<uint64_t> counters;  // by Workload::counters index
  TaskNumaResult numa;
};

struct RunResult {
  double elapsed_s = 0;  // simulated time until the last task exited
  bool time_limit_hit = false;
  std::vector<TaskResult> tasks;  // by pid
  std::vector<std::pair<std::string, int64_t>> vmstat;  // change over the run
  std::vector<std::string> errors;  // segfaults, OOM, failed syscalls
  std::vector<std::string> check_failures;
  uint64_t events = 0;
  uint64_t page_events = 0;  // faults + PTEs zapped/copied: the speed denominator
  std::vector<Sample> timeline;
  std::vector<memcg::MemCgroup> memcg;  // final state of every memcg (empty: off)
};

class World final : public sim::EventHandler, public mm::PteObserver, public numa::TaskView {
 public:
  World(const topo::Topology& topo, const cost::CostProfile& costs, mm::MmConfig mm_config,
        const Workload& workload, WorldConfig config);
  ~World() override;
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  RunResult run();

  mm::MemoryManager& memory() { return mm_; }
  const sched::Task& task(uint32_t pid) const;

  void on_event(sim::EventQueue& q, const sim::Event& e) override;
  void on_pte_revoked(mm::Mm& mm, Vpn start, Vpn end) override;
  uint32_t current_pid(CpuId cpu) const override { return rq_.current_const(cpu); }
  uint32_t mm_id(uint32_t pid) const override;
  NodeId task_node(uint32_t pid) const override { return tasks_[pid]->task.node; }

 private:
  struct Region {
    Vpn start;
    uint64_t pages = 0;
    bool mapped = false;
  };
  struct Process {
    uint32_t tgid = 0;
    std::shared_ptr<mm::Mm> mm;
    std::vector<Region> regions;
  };
  struct Frame {
    const std::vector<Op>* ops = nullptr;
    size_t pc = 0;
    const Op* loop = nullptr;  // the loop op whose body this is; nullptr at top level
    uint64_t iter = 0;
    Tick end;  // duration loops: no iteration starts at or after this
  };
  // One sweep of a segment: where it is in the pass, for finding when the
  // task reaches a given page.
  struct Piece {
    size_t op = 0;  // index in the loop body (kLoop)
    Vpn start;
    uint64_t pages = 0;
    double offset_ns = 0;  // time into the pass (kLoop) or segment (kStretch)
    double ns = 0;
  };
  // Pure user work running ahead of the other tasks.
  struct Segment {
    enum class Kind : uint8_t { kStretch, kLoop };
    bool active = false;
    Kind kind = Kind::kStretch;
    Tick t0, stop;
    double unit_ns = 0;  // per page (kStretch) or per loop iteration (kLoop)
    uint64_t units = 0;  // pages or iterations planned
    uint64_t p0 = 0;     // kStretch: first page (op cursor at the start)
    Vpn lo, hi;          // the pages the segment relies on
    std::vector<Piece> pieces;
    uint64_t id = 0;     // a new id for every segment
  };
  // A task that will reach, or has reached, a folio under migration.
  struct Waiter {
    uint32_t pid = 0;
    Tick since;            // when it touched the migration entry
    bool deferred = false;  // a run-ahead task that has not been cut yet
    uint64_t segment = 0;   // deferred: the segment it was in
    Vpn vpn;                // the page it waits for
    double offset_ns = 0;   // when the unmap walk replaced its PTE, into the pass
  };
  // A migration in progress (migrate_misplaced_page), pass by pass.
  struct Migration {
    uint32_t id = 0;
    Pfn folio;
    NodeId target;
    uint32_t pid = 0;  // the task migrating it (in the kernel meanwhile)
    Tick begin;        // start of the first pass
    Tick pass_start;
    Tick check;        // when this pass checks the reference count
    uint32_t pass = 0;
    bool success = false;
    Pfn new_folio;
    std::vector<Waiter> waiters;
    std::vector<std::pair<uint32_t, double>> unmap_offset;  // (mm id, ns into the unmap walk)
    uint64_t mappings = 0;
    // The hinting fault that started it.
    numa::HintDecision hint;
  };
  struct Footprint {
    uint16_t socket;
    std::pair<uint64_t, uint64_t> key;
  };
  struct TaskExec {
    sched::Task task;
    std::shared_ptr<Process> proc;
    uint32_t program = 0;
    uint32_t ppid = 0;
    std::vector<Frame> stack;
    uint64_t cursor = 0;  // progress inside the current op
    Tick clock;
    uint64_t gen = 0;  // events carrying an older generation are stale
    Segment seg;
    std::vector<uint64_t> counters;
    uint32_t live_children = 0;
    bool waiting = false;
    std::vector<Footprint> footprints;
    uint32_t blocked_on = 0;  // migration id while waiting on a migration entry
    Vpn escape{UINT64_MAX};   // a page it read between two migration passes
    std::vector<std::pair<uint32_t, Tick>> reaches;  // (migration, when) for run-ahead
  };
  enum class Step { kNext, kContinue, kYield, kStopped };
  enum EventKind : uint32_t { kRunTask = 1, kWakeTask = 2, kMigrationCheck = 3, kMigrationEnd = 4, kSample = 5, kMoveEnd = 6 };

  TaskExec& exec(uint32_t pid) { return *tasks_[pid]; }
  uint32_t spawn(uint32_t parent_pid, std::shared_ptr<Process> proc, uint32_t program, Tick at);
  void start_running(TaskExec& t, Tick at);
  void wake(TaskExec& t, Tick at);
  // Takes the task off its CPU into `state` at t.clock; runs the next one.
  void leave_cpu(TaskExec& t, sched::TaskState state);
  void schedule_run(TaskExec& t, Tick at);
  void run_task(TaskExec& t);
  Step exec_op(TaskExec& t, const Op& op);
  Step exec_pages(TaskExec& t, const Op& op);
  Step exec_fork(TaskExec& t, const Op& op, bool thread);
  bool try_fast_forward(TaskExec& t);
  // Runs the segment set up in t.seg: commits it at once when no other event
  // comes first, else schedules the task for its end. Returns whether the
  // task may go on executing now.
  bool start_segment(TaskExec& t);
  // Returns true if the task stopped at a page under migration (blocked_on).
  bool apply_segment(TaskExec& t, Tick at);
  bool fault(TaskExec& t, Vpn vpn, bool write);
  void exit_task(TaskExec& t);
  void kill_task(TaskExec& t, std::string why);
  void charge_sys(TaskExec& t, const mm::OpCost& c);
  Tick horizon() const { return queue_.next_time(); }
  bool others_waiting(const TaskExec& t) { return !rq_.queue(t.task.cpu).empty(); }
  Vpn op_start(const TaskExec& t, const Op& op) const;
  uint64_t op_pages(const TaskExec& t, const Op& op) const;
  double page_cost_ns(const TaskExec& t, const Op& op, Vpn vpn, double miss_frac) const;
  double miss_fraction(TaskExec& t, const Op& op);
  double range_cost_ns(TaskExec& t, const Op& op, Vpn from, Vpn to);
  double page_cost_on_node(const TaskExec& t, const Op& op, NodeId node, double miss_frac) const;
  void drop_footprints(TaskExec& t);
  void run_checker(const char* when);
  // NUMA balancing.
  Tick numa_deadline(const TaskExec& t) const;
  bool numa_tick(TaskExec& t);
  bool numa_hint_fault(TaskExec& t, Vpn vpn, Pfn pfn);
  void start_migration_pass(Migration& m, Tick at);
  void migration_check(Migration& m);
  void migration_end(Migration& m);
  void finish_hint_fault(TaskExec& t, const numa::HintDecision& d, NodeId mem_node, uint32_t flags);
  bool wait_on_migration(TaskExec& t, Vpn vpn, Pfn pfn);
  void move_task(TaskExec& t, NodeId node);
  void migrate_task_to_cpu(TaskExec& t, CpuId cpu);
  bool in_kernel_migration(uint32_t pid) const;
  Tick reach_time(const TaskExec& t, Vpn vpn, Tick now) const;
  // Cuts a run-ahead task at the first migration entry it reached before `at`.
  bool cut_at_reached_migration(TaskExec& t, Tick at);
  int64_t runtime_ns(const TaskExec& t) const {
    return static_cast<int64_t>(t.task.times.user_ns + t.task.times.sys_ns);
  }
  void record_error(const TaskExec& t, const std::string& what);

  const topo::Topology& topo_;
  const cost::CostProfile& costs_;
  const Workload& workload_;
  WorldConfig config_;
  sim::EventQueue queue_;
  mm::MemoryManager mm_;
  memcg::Controller memcg_;
  sched::RunQueues rq_;
  numa::Balancer balancer_;
  std::vector<Tick> tick_phase_;  // per CPU: when its scheduler tick fires
  std::unordered_map<uint32_t, Migration> migrations_;  // by id
  std::unordered_map<uint32_t, uint32_t> migrating_;    // folio -> migration id
  uint32_t next_migration_ = 1;
  uint64_t next_segment_ = 1;
  sched::SliceConfig slices_;
  std::vector<std::unique_ptr<TaskExec>> tasks_;      // by pid; [0] unused
  std::vector<std::vector<uint32_t>> tasks_by_mm_;    // by mm id
  std::vector<std::map<std::pair<uint64_t, uint64_t>, std::pair<uint64_t, uint32_t>>> llc_sets_;
  std::vector<uint64_t> llc_bytes_;                   // per socket: distinct swept bytes
  std::vector<uint64_t> node_pages_;                  // scratch of range_cost_ns
  std::vector<std::string> errors_;
  std::vector<std::string> check_failures_;
  std::vector<Sample> timeline_;
  mm::VmStat timeline_base_;
  uint32_t live_tasks_ = 0;
  Tick last_exit_;
};

}  // namespace mmsim::workload
