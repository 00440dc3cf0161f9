// One simulation: a machine, its memory manager, the tasks and their
// programs, driven by one event queue. Single-threaded and deterministic.
//
// The World is the event loop and the interpreter of the tasks' programs; the
// mechanisms live in their layers (mm faults and rmap, sched run queues,
// migrate's timed migration, numa's balancing decisions, memcg accounting,
// AccessCost for user memory accesses) and the World dispatches to them.
//
// Tasks execute their programs directly, advancing a clock of their own.
// Work that needs the kernel (faults, mmap, fork...) runs only when the task
// is not ahead of any pending event, so effects happen in time order. Pure
// user work (sweeps over pages that are present and accessible) may run ahead
// as a "segment" of known cost; if the kernel revokes a PTE the segment covers
// (PteObserver), the segment is cut at that moment, as the task would have
// faulted then. So cost grows with kernel events, not with memory accesses.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cost/cost_profile.h"
#include "memcg/memcg.h"
#include "migrate/migrator.h"
#include "mm/memory_manager.h"
#include "numa/balancer.h"
#include "reclaim/vmscan.h"
#include "sched/task.h"
#include "sim/event_queue.h"
#include "sim/host_cpus.h"
#include "sim/noise.h"
#include "topo/topology.h"
#include "workload/access_cost.h"
#include "workload/limits.h"
#include "workload/program.h"
#include "workload/result.h"
#include "workload/timeline.h"

namespace mmsim::workload {

struct WorldConfig {
  uint64_t seed = 1;
  Tick time_limit = seconds(3600);  // the run stops here if tasks are still alive
  bool check_invariants = false;    // run the DEBUG_VM-like checker (tests: on)
  // After the first check_stride kernel operations, the checker runs after
  // every check_stride-th one (always at the end of the run): a cheaper, less
  // precise check of long runs (the fuzzer's). Such a stride also spreads a
  // check's cost, which grows with the pages in use, over as many page
  // events: a check waits until page events since the last one reach 1/16
  // of the pages in use. 1 (or 0): after each operation.
  uint32_t check_stride = 1;
  bool fast_forward = true;  // off: run loops pass by pass (tests compare)
  // Called now and then with the simulated time and the events so far (a
  // progress display); it must not touch the world.
  std::function<void(Tick, uint64_t)> progress;
  // The run's trace (--trace), or nullptr. Not owned; it must outlive the run.
  sim::Trace* trace = nullptr;
  // The NUMA scan's trace (--scan-trace), or nullptr: task_numa_work's
  // calls and the ranges it marks, one line each, as the guest's kprobe
  // trace has them (tools/validate/scan_trace_summary.py reads both). Not
  // owned.
  std::ostream* scan_trace = nullptr;
  Tick sample_interval;  // > 0: record a timeline of counters
  Limits limits;
  mm::MmConfig mm;
  numa::NumaConfig numa;     // automatic NUMA balancing (enabled resolved)
  memcg::MemcgConfig memcg;  // memory cgroups (protocol none: off)
  reclaim::ReclaimConfig reclaim;
  // Bytes of a page's page_cgroup entry in its own array (3.18 and before);
  // 0 when there is none or it lives in struct page (3.19 on).
  uint32_t page_cgroup_array_bytes = 0;
  std::vector<memcg::CgroupSpec> cgroups;
  // Run-to-run variation; off unless asked for (a scenario asks by default).
  sim::NoiseConfig noise = [] {
    sim::NoiseConfig n;
    n.enabled = false;
    return n;
  }();
};

class World final : public sim::EventHandler,
                    public mm::PteObserver,
                    public numa::TaskView,
                    public sched::Executor,
                    public migrate::Executor,
                    public TimelineSampler::Source {
 public:
  World(const topo::Topology& topo, const cost::CostProfile& costs, const Workload& workload,
        WorldConfig config);
  ~World() override;
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  RunResult run();

  mm::MemoryManager& memory() { return mm_; }
  const sched::Task& task(uint32_t pid) const { return sched_.task(pid); }

  // sim::EventHandler
  void on_event(sim::EventQueue& q, const sim::Event& e) override;
  void dispatch(sim::EventQueue& q, const sim::Event& e);
  // mm::PteObserver
  void on_pte_revoked(mm::Mm& mm, Vpn start, Vpn end) override;
  // numa::TaskView
  uint32_t current_pid(CpuId cpu) const override { return sched_.current(cpu); }
  uint32_t mm_id(uint32_t pid) const override;
  NodeId task_node(uint32_t pid) const override { return sched_.task(pid).node; }
  // sched::Executor
  void run_from(sched::Task& task, Tick at) override;
  void preempt(sched::Task& current, Tick slice_end, Tick at) override;
  void moved(sched::Task& task) override;
  // Cuts the stretch of the task on the CPU's SMT sibling if it was priced
  // with the other state, so that it is priced again from `at`.
  void occupancy_changed(CpuId cpu, bool busy, Tick at) override;
  // migrate::Executor
  void on_unmapped(migrate::Migration& m, mm::Mm& mm, Vpn vpn, uint32_t pages, double offset_ns,
                   Tick at) override;
  bool holds_reference(const migrate::Migration& m, const migrate::Waiter& w) override;
  void release(const migrate::Migration& m, const migrate::Waiter& w, Tick now,
               bool retry) override;
  void finished(const migrate::Migration& m, Tick now) override;
  // TimelineSampler::Source
  uint32_t tasks_in_d() const override;
  bool tasks_alive() const override { return live_tasks_ > 0; }
  std::vector<uint64_t> node_used_pages() const override;

 private:
  struct Region {
    Vpn start;
    uint64_t pages = 0;
    bool mapped = false;
  };
  // A zero-fill fault of an anonymous page (or a THP's range) whose folio is
  // mapped in the page table at once but, in the kernel, only when the
  // faulting task has zeroed it, at `done`.
  struct FaultInFlight {
    Vpn lo;
    uint32_t pages = 0;
    uint32_t pid = 0;
    Tick done;
  };
  // The pages of a process's image in use (data, bss, heap, [stack]).
  struct ImagePages {
    // Those its tasks write, those they only read (shared with mmsim-exec's
    // collector, the first process's parent, until a write), and those the
    // creator of its first thread writes (glibc's locks, taken from then
    // on, and the executor's state for its threads).
    std::vector<Vpn> pages, read_pages, thread_pages;
    // Those of [stack], which only the process's first task (its main
    // thread) faults in: a thread runs on a stack of its own.
    std::vector<Vpn> stack_pages, stack_read_pages;
    // Those touched again after a scan pass marks them: by every task, and
    // by the main thread only; read then written, and read, by every task;
    // read then written by a main-arena task whose program counts; written
    // by the tasks of a threaded process.
    std::vector<Vpn> hot_pages, main_hot_pages, hot_rw_pages, hot_read_pages, count_pages,
        thread_hot_pages;
    // Those the collector writes after it forks the first process: that
    // process's copies are its own from then on, unfaulted.
    std::vector<Vpn> collector_writes;
    // Those the collector touches after the tasks have exited, as it reads
    // and parses their reports, before it reads the counters the last
    // time: pages it wrote before the fork (shared with the first process
    // until its exit, now its own again), fresh heap pages, and a window of
    // code (see map_process_image).
    std::vector<Vpn> collector_after_writes, collector_after_code;
    // Those a task touches as it reports at its program's end (see
    // World::report): malloc's state, which every task reads and a thread
    // writes as it exits (report_state); and, for a task of the main arena,
    // the heap pages its report's allocations read (report_heap_read) and
    // write (report_writes, with the state it writes).
    std::vector<Vpn> report_state, report_heap_read, report_writes;
    // Pages of the executable's text and .rodata its tasks read: at a
    // task's start, as the process makes its first thread, in a report,
    // and as a thread exits (see map_process_image).
    std::vector<Vpn> code_start, code_first_thread, code_report, code_thread_exit;
  };
  struct Process {
    uint32_t tgid = 0;
    std::shared_ptr<mm::Mm> mm;
    std::vector<Region> regions;
    // The pages of its image its tasks keep in use (see map_process_image):
    // copied whole by fork.
    ImagePages image;
    bool threaded = false;  // it has created a thread
    // Its tasks' latest zero-fill faults, one a task, that may still be under way.
    std::vector<FaultInFlight> faults_in_flight;
    // glibc's aligned_heap_area: where the next thread arena is tried first,
    // set when an arena's reservation happened to be 64 MiB-aligned.
    std::optional<Vpn> aligned_heap_area;
  };
  struct Frame {
    const std::vector<Op>* ops = nullptr;
    size_t pc = 0;
    const Op* loop = nullptr;  // the loop op whose body this is; nullptr at top level
    uint64_t iter = 0;
    Tick end;         // duration loops: no iteration starts at or after this
    Tick iter_start;  // when the current iteration started
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
    uint64_t id = 0;            // a new id for every segment
    bool sibling_busy = false;  // as priced (World::accessor)
    int priced_busy = 0;        // the busy CPUs it was priced at (sim::Noise::prices_alike)
  };
  // A task's program state; its sched state is the Scheduler's.
  struct TaskExec {
    explicit TaskExec(sched::Task& t) : task(t) {}
    sched::Task& task;
    std::shared_ptr<Process> proc;
    uint32_t program = 0;
    std::vector<Frame> stack;
    uint64_t cursor = 0;  // progress inside the current op
    // Which of how many tasks its threads or fork op started (own_slice).
    uint64_t slice_index = 0, slices = 1;
    // Its own memory policy (task_struct->mempolicy, set_mempolicy(2)): what
    // VMAs without a policy of their own allocate by. Inherited at fork and
    // clone.
    mm::MemPolicy mempolicy;
    // Where its interleave policy's round robin stands for allocations that
    // have no address (page tables: interleave_nodes, task->il_prev); reset
    // by set_mempolicy.
    uint64_t il_next = 0;
    // Its last sweep or touch, and at its exit the share of that range's
    // mapped pages on its node, in % (-1: none).
    const Op* last_access = nullptr;
    double local_pct = -1;
    Tick clock;
    uint64_t gen = 0;  // events carrying an older generation are stale
    Segment seg;
    std::vector<uint64_t> counters;
    uint32_t live_children = 0;
    bool waiting = false;
    uint32_t blocked_on = 0;  // migration id while waiting on a migration entry
    // A charge move in progress (kCgroup until kMoveEnd): its target memcg.
    bool moving = false;
    uint32_t moving_to = 0;
    sim::Rng noise_rng{0};                           // its stream of the run's noise
    Vpn escape{UINT64_MAX};                          // a page it read between two migration passes
    std::vector<std::pair<uint32_t, Tick>> reaches;  // (migration, when) for run-ahead
    // The hinting fault whose migration the task is in (migrate::Executor::finished).
    numa::HintDecision pending_hint;
    // Hinting faults since its last NUMA scan pass (for the trace): all,
    // on its own node, and refused a migration.
    uint64_t hint_faults = 0, hint_local = 0, hint_refused = 0;
    // The pages of its own it keeps in use (a thread's top 2 stack pages),
    // and whether it must touch those and its process's image pages before
    // its next op: at its start, and after a NUMA scan pass changed PTEs in
    // its mm.
    std::vector<Vpn> own_image_pages;
    bool touch_image = true;
    bool image_faulted = false;  // its first touch of the image is done
    // Its faults count in the root memcg: it has not joined its cgroup yet.
    bool outside_cgroup = false;
    // A thread's stack block (its guard page first), which glibc hands back
    // to the kernel, all but the top, when the thread ends.
    std::optional<Vpn> stack_block;
    // A thread makes its malloc arena at its first malloc, as it starts
    // (needs_arena until then); the arena's first page, if it got one.
    bool needs_arena = false;
    std::optional<Vpn> arena_page;
    bool counts = false;  // its program has a count op (writes its counters)
    // Its dirtying of page cache (balance_dirty_pages' ratelimit).
    mm::TaskDirty dirty;
    Vpn dirty_paused_page{UINT64_MAX};  // the page whose write fault it last paused after
    // Its fault counts as its end-of-program report's getrusage read them,
    // before the report faulted its pages.
    std::optional<std::pair<uint64_t, uint64_t>> rusage_flt;
  };
  enum class Step { kNext, kContinue, kYield, kStopped };
  enum EventKind : uint32_t {
    kRunTask = 1,
    kWakeTask = 2,
    kMoveEnd = 6,
    kKswapd = 7,
    kKswapdFreed = 8,
    kKhugepaged = 9,
    kFlusher = 10,     // a pass of the flusher
    kBioEnd = 11,      // a bio's write completes (arg0: its id)
    kKupdate = 12,     // the flusher's periodic wakeup
    kStatsFlush = 13,  // the memcg stats' periodic flush
  };

  TaskExec& exec(uint32_t pid) { return *tasks_[pid]; }
  const TaskExec& exec(uint32_t pid) const { return *tasks_[pid]; }
  uint32_t spawn(uint32_t parent_pid, std::shared_ptr<Process> proc, uint32_t program, Tick at,
                 uint64_t slice_index = 0, uint64_t slices = 1);
  void wake(TaskExec& t, Tick at);
  // Takes the task off its CPU into `state` at t.clock; runs the next one.
  void leave_cpu(TaskExec& t, sched::TaskState state);
  void schedule_run(TaskExec& t, Tick at);
  void run_task(TaskExec& t);
  Step exec_op(TaskExec& t, const Op& op);
  Step exec_pages(TaskExec& t, const Op& op);
  Step exec_fork(TaskExec& t, const Op& op, bool thread);
  // The mappings every process of the run has besides the scenario's
  // regions, and those each thread adds (see world.cc).
  void map_process_image(Process& proc);
  // mmsim-exec's collector: maps and faults in the image the first process
  // is then forked from (see world.cc). Its own faults come before the run.
  std::shared_ptr<Process> make_collector();
  // The collector's work once every task has exited (collector_after_*).
  void collector_after_run();
  // The collector faults `pages` of mm in turn; false at the first that
  // fails (memory short).
  bool collector_faults(mm::Mm& mm, std::span<const Vpn> pages, bool write, mm::FaultCtx& ctx);
  // False if the mm has no room for them (vm.max_map_count); else the
  // thread's pages in use in *pages and its stack block's start in *block.
  bool map_thread_image(Process& proc, CpuId cpu, std::vector<Vpn>* pages, Vpn* block);
  // The thread's malloc arena, on the CPU it runs on (glibc's new_heap,
  // see world.cc): its first page, or nullopt if the mm has no room.
  std::optional<Vpn> map_thread_arena(TaskExec& t);
  // Makes it if the task still needs one; kYield if it must wait for
  // the other tasks to reach its clock.
  Step make_thread_arena(TaskExec& t);
  // Faults in each of `pages` the task cannot yet read (or write), in order;
  // kYield when the kernel's work must wait for time order.
  Step touch_pages(TaskExec& t, std::span<const Vpn> pages, bool write);
  // mmsim-exec's Task::report at the program's end (see ImagePages).
  Step report(TaskExec& t);
  // glibc's advise_stack_range for a thread that ends while others run on:
  // MADV_DONTNEED from its stack block's start to 16 KiB
  // (PTHREAD_STACK_MIN) below the page its last frame is in.
  void release_thread_stack(TaskExec& t);
  // Touches what of the task's image pages it cannot use (first use, a
  // NUMA mark, a COW after fork): writes those it writes, reads those it
  // reads; kNext when all are usable.
  Step touch_image(TaskExec& t);
  Step exec_syscall(TaskExec& t, const Op& op);
  // The pin op: sched_setaffinity of the task itself.
  Step exec_pin(TaskExec& t, const Op& op);
  Step exec_mempolicy(TaskExec& t, const Op& op);
  // [run] convergence: once every task of the program has started and is
  // alive, whether each process's are all on one node; the first time they
  // are, stops the run at `now` (perf bench numa -m).
  void check_convergence(Tick now);
  // The share of the task's last access range mapped on its node, in %.
  double local_pct(const TaskExec& t) const;
  // The nodes of an op's NodeShare for this task (util::node_share over the
  // nodes with CPUs).
  std::vector<NodeId> share_nodes(const TaskExec& t, NodeShare share) const;
  bool try_fast_forward(TaskExec& t);
  // Runs the segment set up in t.seg: commits it at once when no other event
  // comes first, else schedules the task for its end. Returns whether the
  // task may go on executing now.
  bool start_segment(TaskExec& t);
  // Returns true if the task stopped at a page under migration (blocked_on).
  bool apply_segment(TaskExec& t, Tick at);
  // What a fault of t's charges and counts to: its CPU, node, fault
  // counters, memcg and own memory policy.
  static mm::FaultCtx fault_ctx(TaskExec& t);
  // mmsim-exec's collector's: its CPU and node, the root memcg, the default
  // policy.
  mm::FaultCtx collector_fault_ctx() const {
    return mm::FaultCtx{collector_cpu_, mm_.topology().cpu_to_node(collector_cpu_)};
  }
  bool fault(TaskExec& t, Vpn vpn, bool write);
  // The first page of [from, *to) another task of t's process is still
  // zero-filling at t's clock: lowers *to to it and returns that fault.
  std::optional<FaultInFlight> fault_in_flight(TaskExec& t, Vpn from, Vpn* to);
  // t's write to a page whose zero-fill f is under way: t's own fault loses
  // the race (mm's lose_fault_race) and goes on once f's folio is mapped.
  void lose_fault_race(TaskExec& t, Vpn vpn, const FaultInFlight& f);
  void exit_task(TaskExec& t);
  void kill_task(TaskExec& t, const std::string& why);
  // Why a task the OOM killer takes dies (its kill message).
  std::string oom_reason() const;
  void charge_sys(TaskExec& t, const mm::OpCost& c);
  // Starts the kswapds the allocator woke, and khugepaged if a first mm
  // registered with it, at `at`.
  void start_kthreads(Tick at);
  void wake_kswapds(Tick at);
  // One run of khugepaged (its event), and its next one scheduled.
  void khugepaged_event(Tick now);
  // The trace's task names, CPU names and counter tracks (from the timeline),
  // at the end of the run.
  void finish_trace(const RunResult& r) const;
  // One pass of the flusher (its event), its bios' ends and its next pass
  // scheduled.
  void flusher_event(Tick now);
  bool flusher_pending_ = false;  // a pass is in the queue
  // One step of a node's kswapd (its event), and the next one scheduled.
  void kswapd_event(NodeId node, uint64_t gen, Tick now);
  Tick horizon() const { return queue_.next_time(); }
  // The task whose kernel work runs now (run_task), if any.
  const TaskExec* acting_ = nullptr;
  bool others_waiting(const TaskExec& t) const { return sched_.others_waiting(t.task); }
  Vpn op_start(const TaskExec& t, const Op& op) const;
  // The op's pages inside its region (the region's mapped length bounds it).
  uint64_t op_pages(const TaskExec& t, const Op& op) const;
  // The pages of op's range in the region as mapped, before any slicing.
  uint64_t range_pages(const TaskExec& t, const Op& op) const;
  // Whether the op's range lies inside its mapped region.
  bool op_in_region(const TaskExec& t, const Op& op) const;
  // Adds n to a counter, saturating (and saying so) at 2^64-1.
  void count(TaskExec& t, uint32_t counter, uint64_t n);
  // Adds `times` runs of a body that takes no time (count ops, and loops of them).
  void count_timeless(TaskExec& t, const std::vector<Op>& body, uint64_t times);
  // Ends the run: it went past one of config_.limits.
  void stop_at_limit(std::string why);
  // False (and the run stopping) when memory in use plus `more_pages`, or
  // the page tables they may need, would pass config_.limits.
  bool check_memory_limits(uint64_t more_pages);
  static AccessSpec access_of(const Op& op);
  Accessor accessor(const TaskExec& t) const;
  // The op's footprint, for the cache model (once per task and socket).
  void declare_footprint(TaskExec& t, const Op& op);
  // Forgets a task's footprints at `at` (it exits, changes CPU or waits for
  // its children), re-pricing the stretches that relied on them.
  void drop_footprints(uint32_t pid, Tick at);
  // A stretch is priced when it is planned, with the state of the machine
  // then: its SMT sibling busy or idle, its socket's footprints. When either
  // changes at `at`, the stretches priced with the old state are cut there
  // and planned again (reprice_sockets: every running one on a socket whose
  // LLC hit fraction the footprints' changes moved).
  void reprice_sockets(Tick at);
  void cut_to_reprice(TaskExec& s, Tick at);
  // The time of a change made now: the acting task's clock (it may run
  // ahead of the queue), else the queue's.
  Tick change_time() const;
  // Prices [from, to) for op; with `traffic`, adds what it asks of memory.
  double range_cost_ns(TaskExec& t, const Op& op, Vpn from, Vpn to, Traffic* traffic = nullptr);
  // The task streams as traffic_ says from now (its uncontended rates), until
  // it prices another range, leaves its CPU or runs another kind of op.
  void set_stream_demand(const TaskExec& t);
  // After an event: the bandwidth factors that moved come into force, and
  // the running segments priced with the old ones are cut and priced again.
  void settle_bandwidth(Tick at);
  void run_checker(const char* when, bool always = false);
  // NUMA balancing.
  Tick numa_deadline(const TaskExec& t) const;
  bool numa_tick(TaskExec& t);
  bool numa_hint_fault(TaskExec& t, Vpn vpn, Pfn pfn);
  void finish_hint_fault(TaskExec& t, const numa::HintDecision& d, NodeId mem_node, uint32_t flags);
  bool wait_on_migration(TaskExec& t, Vpn vpn, Pfn pfn);
  // task_numa_migrate's decision, carried out.
  void move_task(TaskExec& t, NodeId node);
  Tick reach_time(const TaskExec& t, Vpn lo, Vpn hi, Tick now) const;
  // Scales user work planned for `planned_ns` (its unit cost and pieces) by
  // its noise: cost jitter and the interruptions that fall in it.
  void stretch_by_noise(TaskExec& t, double planned_ns, double& unit_ns,
                        std::vector<Piece>& pieces);
  // `ns` of user work with its noise.
  double user_noise(TaskExec& t, double ns);
  // The wall time per unit of work while the guest's vCPUs share the host's
  // cores (1 on a real machine, or while no more are busy than it has).
  double host_share() const { return noise_.host_share_factor(busy_cpus_); }
  // The wall time `ns` of work takes on `t`'s vCPU from its clock while the
  // host's CPUs run the busy vCPUs round robin (sim::HostCpus): `ns` while
  // its vCPU holds a host CPU throughout, and on a real machine.
  double host_wall_ns(const TaskExec& t, double ns) {
    if (!host_.on()) return ns;
    const double from = static_cast<double>(t.clock.ns);
    return host_.done_at(t.task.cpu.v, from, ns) - from;
  }
  int64_t runtime_ns(const TaskExec& t) const {
    return static_cast<int64_t>(t.task.times.user_ns + t.task.times.sys_ns);
  }
  void record_error(const TaskExec& t, const std::string& what);

  const cost::CostProfile& costs_;
  const Workload& workload_;
  WorldConfig config_;
  sim::EventQueue queue_;
  mm::MemoryManager mm_;
  reclaim::Vmscan vmscan_;
  memcg::Controller memcg_;
  std::vector<uint64_t> kswapd_gen_;  // by node: events of older generations are stale
  bool khugepaged_pending_ = false;   // khugepaged's next run is in the queue
  // With a trace: tasks that waited on each migration in flight (by id).
  std::unordered_map<uint32_t, uint32_t> trace_waiters_;
  int64_t scan_trace_last_ = -1;  // the scan trace's last time (ns)
  sched::Scheduler sched_;
  numa::Balancer balancer_;
  migrate::Migrator migrator_;
  cost::Bandwidth bandwidth_;
  AccessCost access_;
  Traffic traffic_;         // scratch: what the range or loop being priced asks of memory
  bool converged_ = false;  // check_convergence's state
  Tick converged_at_;
  uint64_t convergence_placements_ = UINT64_MAX;  // sched placements() last judged
  std::vector<CpuId> sibling_;                    // by CPU: its SMT sibling (itself if none)
  std::vector<std::vector<CpuId>> socket_cpus_;   // by socket: its CPUs
  TimelineSampler timeline_;
  sim::Noise noise_;
  sim::HostCpus host_;            // the guest's host, round robin (host_slice)
  int busy_cpus_ = 0;             // CPUs with a task on their run queue
  std::vector<Tick> tick_phase_;  // per CPU: when its scheduler tick fires
  uint64_t next_segment_ = 1;
  std::vector<std::unique_ptr<TaskExec>> tasks_;  // by pid; [0] unused
  std::shared_ptr<Process> collector_;            // the first process's parent
  mm::AddressSpace* exec_file_ = nullptr;         // mmsim-exec's file (the image's data)
  // Its size: the end of its last PT_LOAD segment's file part (readelf -l).
  static constexpr uint64_t kExecFilePages = 0x15e;
  // Where the collector runs: where mmsim native's exec lands, launched
  // from a shell on a CPU of the seed's ([noise] launch_cpu). The first
  // task's fork sees it busy there.
  CpuId collector_cpu_{0};
  std::vector<std::vector<uint32_t>> tasks_by_mm_;  // by mm id
  static constexpr size_t kMaxErrorsKept = 100;
  std::vector<std::string> errors_;  // the first kMaxErrorsKept
  uint64_t errors_not_kept_ = 0;
  std::vector<std::string> check_failures_;
  uint64_t checker_calls_ = 0;
  uint64_t checked_at_events_ = 0;  // page events at the last check
  uint64_t limit_pages_;            // config_.limits.memory_bytes in pages
  std::string limit_error_;         // the run went past one of config_.limits and stopped
  uint32_t live_tasks_ = 0;
  uint64_t ops_ = 0;  // program operations executed (limits.ops)
  Tick last_exit_;
};

}  // namespace mmsim::workload
