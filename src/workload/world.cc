// The executor: runs each task's program against the memory manager, the
// scheduler and the balancer, in simulated time. See world.h for the
// run-ahead rule.
#include "workload/world.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <ostream>
#include <span>
#include <tuple>
#include <utility>

#include "numa/task_placement.h"
#include "sim/check.h"
#include "sim/rng.h"
#include "util/node_share.h"

namespace mmsim::workload {

namespace {

// Whether ops, or the body of a loop among them, hold a count op.
bool counts_anything(const std::vector<Op>& ops) {
  return std::any_of(ops.begin(), ops.end(), [](const Op& op) {
    return op.kind == OpKind::kCount || counts_anything(op.body);
  });
}

bool is_pure(const Op& op) { return op.kind == OpKind::kSweep || op.kind == OpKind::kCount; }

// The most pages a run-ahead stretch of a sweep covers (128 MiB): bounds the
// work of planning one, which grows with the page tables it covers.
constexpr uint64_t kMaxStretchPages = 32768;

// The noise stream of the guest's host (sim::HostCpus): 0 is the machine's,
// the tasks' are their pids (below 2^32).
constexpr uint64_t kHostStream = uint64_t{1} << 40;

}  // namespace

World::World(const topo::Topology& topo, const cost::CostProfile& costs, const Workload& workload,
             WorldConfig config)
    : costs_(costs),
      workload_(workload),
      config_(std::move(config)),
      mm_(topo, costs, config_.mm),
      vmscan_(mm_,
              [&] {
                reclaim::ReclaimConfig r = config_.reclaim;
                r.legacy_memcg = config_.memcg.hierarchy == memcg::Hierarchy::kV1;
                return r;
              }()),
      memcg_(config_.memcg, costs, mm_, vmscan_, topo.nr_cpus(), config_.cgroups),
      kswapd_gen_(topo.nr_nodes(), 0),
      sched_(topo, costs.context_switch_ns, *this),
      balancer_(config_.numa, topo, mm_, *this),
      migrator_(queue_, mm_, topo, costs,
                migrate::MigrateConfig{config_.numa.migrate_passes, config_.numa.waiter_pins_page,
                                       config_.numa.thp_migrate_legacy},
                *this),
      bandwidth_(topo, costs),
      access_(costs, mm_.folios(), mm_.cache(), bandwidth_),
      timeline_(queue_, config_.sample_interval, config_.limits.timeline_rows, mm_.vmstat(), memcg_,
                workload.init_cgroup, *this),
      noise_(config_.noise),
      limit_pages_(config_.limits.memory_bytes / kPageSize) {
  tasks_.emplace_back();  // pid 0 is the idle task
  sched_.set_numa_imbalance(config_.numa.numa_imbalance);
  if (config_.scan_trace) {
    balancer_.set_scan_sink(
        [this](uint32_t pid, CpuId cpu, Tick now, std::string_view event, std::string_view args) {
          // ftrace's line: TASK-PID [CPU] flags TIMESTAMP: EVENT: ARGS, the
          // time in ns and rising, as a scan's lines follow one another
          // (scan_trace_summary.py takes two alike lines at one time for one).
          scan_trace_last_ = std::max(now.ns, scan_trace_last_ + 1);
          *config_.scan_trace << fmt::format(
              "{:>16}-{:<7} [{:03}] ..... {}.{:09}: {}: {}\n", exec(pid).task.comm, pid, cpu.v,
              scan_trace_last_ / 1'000'000'000, scan_trace_last_ % 1'000'000'000, event, args);
        });
  }
  if (memcg_.enabled()) mm_.set_memcg(&memcg_);
  mm_.set_reclaim(&vmscan_);
  mm_.cache().set_page_cgroup_bytes(config_.page_cgroup_array_bytes);
  mm_.cache().set_bandwidth(&bandwidth_);
  // Each CPU's SMT sibling (itself when it has none; two threads a core).
  sibling_.reserve(topo.nr_cpus());
  for (const topo::Cpu& c : topo.cpus()) {
    CpuId sib = c.id;
    for (const topo::Cpu& o : topo.cpus()) {
      if (o.id != c.id && o.socket == c.socket && o.core == c.core) sib = o.id;
    }
    sibling_.push_back(sib);
  }
  socket_cpus_.resize(topo.nr_sockets());
  for (const topo::Cpu& c : topo.cpus()) socket_cpus_[c.socket].push_back(c.id);
  // The scheduler tick fires on every CPU at the same instants (the jiffy
  // grid), each CPU offset by its share of half a tick with skew_tick. Where
  // the grid lies against the run's start is noise.
  const int64_t tick = config_.numa.tick_ns();
  sim::Rng machine_rng = sim::noise_stream(config_.seed, 0);
  const int64_t grid = noise_.on() && config_.noise.tick_phase
                           ? static_cast<int64_t>(machine_rng.below(static_cast<uint64_t>(tick)))
                           : 0;
  tick_phase_.reserve(topo.nr_cpus());
  for (size_t c = 0; c < topo.nr_cpus(); ++c) {
    const int64_t skew = config_.numa.skew_tick ? static_cast<int64_t>(c) * (tick / 2) /
                                                      static_cast<int64_t>(topo.nr_cpus())
                                                : 0;
    tick_phase_.push_back(Tick((grid + skew) % tick));
  }
  const uint64_t shell =
      noise_.on() && config_.noise.launch_cpu ? machine_rng.below(topo.nr_cpus()) : 0;
  collector_cpu_ = sched_.launched_cpu(CpuId(static_cast<uint16_t>(shell)));
  if (noise_.round_robin()) {
    host_ =
        sim::HostCpus(static_cast<int>(config_.noise.host_cpus), static_cast<int>(topo.nr_cpus()),
                      config_.noise.host_slice_ns, config_.noise.host_slice_cv,
                      sim::noise_stream(config_.seed, kHostStream));
  }
}

uint32_t World::mm_id(uint32_t pid) const {
  const TaskExec& t = *tasks_[pid];
  return t.proc ? t.proc->mm->id() : 0;
}

World::~World() {
  // Tear down what is still alive (a time-limited run) without costs.
  for (auto& t : tasks_) {
    if (!t || !t->proc) continue;
    if (t->proc.use_count() == 1 && t->proc->mm) mm_.exit_mmap(*t->proc->mm, CpuId(0));
    t->proc.reset();
  }
  if (collector_) mm_.exit_mmap(*collector_->mm, collector_cpu_);
}

void World::record_error(const TaskExec& t, const std::string& what) {
  // A failing op in a long loop fails every iteration: keep the first ones.
  if (errors_.size() >= kMaxErrorsKept) {
    ++errors_not_kept_;
    return;
  }
  errors_.push_back("pid " + std::to_string(t.task.pid) + " (" + t.task.comm + ") at " +
                    std::to_string(t.clock.seconds()) + " s: " + what);
}

void World::run_checker(const char* when, bool always) {
  if (!config_.check_invariants) return;
  const uint64_t n = ++checker_calls_;
  const uint64_t stride = std::max<uint32_t>(config_.check_stride, 1);  // 0 means 1
  if (!always && n > stride && n % stride != 0) return;
  const uint64_t events = mm_.page_events() - checked_at_events_;
  if (!always && n > stride && stride > 1 && events < mm_.folios().in_use() / 16) return;
  checked_at_events_ = mm_.page_events();
  auto errors = mm_.check_invariants();
  for (auto& e : memcg_.check_invariants()) errors.push_back(std::move(e));
  for (auto& e : errors) {
    if (check_failures_.size() < 50) check_failures_.push_back(std::string(when) + ": " + e);
  }
}

std::vector<uint64_t> World::node_used_pages() const {
  std::vector<uint64_t> used;
  for (size_t n = 0; n < mm_.topology().nr_nodes(); ++n)
    used.push_back(mm_.folios().used_pages(NodeId(static_cast<uint16_t>(n))));
  return used;
}

uint32_t World::tasks_in_d() const {
  uint32_t n = 0;
  for (size_t pid = 1; pid < tasks_.size(); ++pid) {
    const TaskExec& x = *tasks_[pid];
    if (x.task.state == sched::TaskState::kUninterruptible || x.blocked_on) ++n;
  }
  return n;
}

RunResult World::run() {
  // Files, and what of them the page cache holds before the run.
  for (const auto& f : workload_.files) {
    // A cached tmpfs file was written before the run by its creator, outside
    // the scenario's cgroups: preload charges it to the root, as a cached
    // disk file's pages read in before the run (mmsim-exec writes it, drops
    // it from the cache and reads it back with read(2): PG_referenced).
    mm::AddressSpace& as = mm_.create_file(f.name, f.pages, f.tmpfs);
    const auto how =
        f.tmpfs ? mm::MemoryManager::Cached::kWritten : mm::MemoryManager::Cached::kRead;
    if (f.cached && !mm_.preload_file(as, NodeId(f.cached_node), how))
      errors_.push_back("file " + f.name +
                        ": memory ran out while caching it; the rest stays on disk");
  }

  // mmsim-exec's file, of which the image's text, .rodata and data VMAs
  // are private mappings: all of it in the page cache (on disk or, in a
  // guest's initramfs, shmem) since the executor was started, charged
  // outside the run's cgroup (the initramfs was unpacked at boot).
  exec_file_ = &mm_.create_file("mmsim-exec", kExecFilePages, workload_.executable_on_tmpfs);
  if (workload_.image_in_use) {
    mm_.preload_file(*exec_file_, NodeId(0), mm::MemoryManager::Cached::kWritten, memcg_.outside());
  }

  // mmsim-exec's collector forks the first task after it read the
  // counters (the collector's own faults come before, uncounted).
  collector_ = make_collector();
  const mm::VmStat before = mm_.vmstat();
  auto proc = std::make_shared<Process>();
  // The collector's fork: it allocates the child's page tables, in its own
  // (the root) memcg.
  mm::FaultCtx collector_ctx = collector_fault_ctx();
  proc->mm = mm_.mm_alloc(&collector_ctx);
  proc->mm->observer = this;
  proc->mm->memcg = memcg_.enabled() ? workload_.init_cgroup : 0;
  mm_.dup_mmap(*collector_->mm, *proc->mm, collector_ctx);
  proc->image = collector_->image;
  proc->regions.resize(workload_.regions.size());
  const uint32_t init = spawn(0, std::move(proc), workload_.init_program, Tick(0));
  // The collector's own writes after the fork break its side of the
  // copy-on-write: those pages are the first process's alone from then on,
  // where the collector had faulted them.
  if (workload_.image_in_use)
    collector_faults(*collector_->mm, collector_->image.collector_writes, true, collector_ctx);
  tasks_[init]->task.comm = workload_.init_comm;
  timeline_.start(before);
  // The memcg stats' periodic flush: at the run's start (its cgroups are
  // new, all zero) and every FLUSH_TIME from then on.
  if (memcg_.periodic_stats_flush()) {
    memcg_.flush_stats();
    queue_.schedule(memcg::Controller::kStatsFlushTime, this, kStatsFlush);
  }

  RunResult r;
  if (config_.progress) queue_.on_progress(config_.progress);
  sched_.set_trace(config_.trace);
  r.events = queue_.run(config_.time_limit);
  if (timeline_.full()) {
    stop_at_limit(fmt::format(
        "limits.timeline_rows: the timeline went past {} rows (scenario.sample_interval is {:g} "
        "s); raise [limits] timeline_rows or sample less often",
        config_.limits.timeline_rows, config_.sample_interval.seconds()));
  }
  r.limit_error = limit_error_;
  // Kernel threads' events may outlive the last task (khugepaged sleeps
  // 10 s between passes): only a task still alive means the limit cut the run.
  r.time_limit_hit = live_tasks_ > 0 && !converged_;
  const Tick end = converged_ ? converged_at_ : r.time_limit_hit ? config_.time_limit : last_exit_;
  r.elapsed_s = end.seconds();
  if (converged_) r.converged_s = r.elapsed_s;
  // Every task gone: the collector reads their reports, then the counters.
  const bool completed = workload_.image_in_use && live_tasks_ == 0 && limit_error_.empty();
  if (completed) collector_after_run();
  run_checker("end of run", /*always=*/true);

  r.vmstat = vmstat_delta(before, mm_.vmstat());
  r.page_events = mm_.page_events();
  for (const auto& n : mm_.topology().nodes())
    r.kswapd_s.push_back(vmscan_.kswapd(n.id).cpu_ns * 1e-9);
  r.khugepaged_s = mm_.khugepaged_stats().cpu_ns * 1e-9;
  r.khugepaged_pages_collapsed = mm_.khugepaged_stats().pages_collapsed;
  r.khugepaged_full_scans = mm_.khugepaged_stats().full_scans;
  r.bandwidth = bandwidth_.saturations(end.ns);
  for (size_t pid = 1; pid < tasks_.size(); ++pid) {
    const TaskExec& t = *tasks_[pid];
    r.tasks.push_back(task_result(t.task, workload_.programs[t.program].name, t.counters,
                                  balancer_.proc_sched(t.task.pid), r.elapsed_s));
    r.tasks.back().local_pct = t.proc ? local_pct(t) : t.local_pct;  // alive: as it stands
    if (t.rusage_flt) std::tie(r.tasks.back().min_flt, r.tasks.back().maj_flt) = *t.rusage_flt;
  }
  r.errors = errors_;
  if (errors_not_kept_) r.errors.push_back(fmt::format("... and {} more errors", errors_not_kept_));
  r.timeline = timeline_.samples_until(r.elapsed_s);
  if (config_.trace) finish_trace(r);
  const auto& meta = mm_.cache().meta_stats();
  for (size_t a = 0; a < meta.size(); ++a) {
    r.metadata.push_back(
        {cost::kMetaNames[a], meta[a].hits, meta[a].misses, meta[a].streamed, meta[a].miss_ns});
  }
  if (completed) {
    // The counters read, mmsim-exec exits; only then does its launcher read
    // the cgroup files: the collector's anonymous pages and page tables are
    // uncharged by then, the page cache it charged stays.
    mm_.exit_mmap(*collector_->mm, collector_cpu_);
    collector_.reset();
    run_checker("after the collector's exit", /*always=*/true);
  }
  r.check_failures = check_failures_;
  if (memcg_.enabled()) r.memcg = memcg_.files_view();
  return r;
}

uint32_t World::spawn(uint32_t parent_pid, std::shared_ptr<Process> proc, uint32_t program, Tick at,
                      uint64_t slice_index, uint64_t slices) {
  const bool new_mm = proc->tgid == 0;
  mm::Mm& mm = *proc->mm;
  const uint32_t pid = static_cast<uint32_t>(sched_.nr_tasks());
  if (new_mm) proc->tgid = pid;
  // The first task's parent is mmsim-exec's collector, running on its CPU
  // as it forks: a busy CPU for select_task_rq.
  const std::optional<CpuId> collector_cpu =
      parent_pid ? std::nullopt : std::optional<CpuId>(collector_cpu_);
  const NodeId parent_node =
      parent_pid ? sched_.task(parent_pid).node : mm_.topology().cpu_to_node(collector_cpu_);
  // fork and clone copy the parent's affinity (dup_task_struct).
  std::vector<CpuId> allowed =
      parent_pid ? sched_.task(parent_pid).cpus_allowed : std::vector<CpuId>{};
  sched::Task& task = sched_.new_task(proc->tgid, parent_pid, workload_.programs[program].name, mm,
                                      parent_node, at, std::move(allowed), collector_cpu);
  check(task.pid == pid, "the scheduler and the executor number tasks alike");
  tasks_.push_back(std::make_unique<TaskExec>(task));
  TaskExec& t = *tasks_.back();
  t.proc = std::move(proc);
  t.program = program;
  t.slice_index = slice_index;
  t.slices = slices;
  if (parent_pid) {  // copied by fork and clone (dup_task_struct)
    t.mempolicy = exec(parent_pid).mempolicy;
    t.il_next = exec(parent_pid).il_next;
  }
  t.counters.assign(workload_.counters.size(), 0);
  t.counts = counts_anything(workload_.programs[program].ops);
  t.stack.push_back(Frame{&workload_.programs[program].ops, 0, nullptr, 0, Tick()});
  t.noise_rng = sim::noise_stream(config_.seed, pid);
  ++mm.users;
  balancer_.task_init(pid, mm, new_mm, at, parent_pid);
  balancer_.set_task_policy_mof(pid, t.mempolicy.mode == mm::MemPolicy::Mode::kDefault);
  if (tasks_by_mm_.size() <= mm.id()) tasks_by_mm_.resize(mm.id() + 1);
  tasks_by_mm_[mm.id()].push_back(pid);
  ++live_tasks_;
  // The child first runs after its fork or clone latency (noise).
  const Tick start = parent_pid ? at + to_tick(noise_.start_delay_ns(t.noise_rng, new_mm)) : at;
  t.clock = start;
  sched_.wake_up_new_task(task, start);
  return pid;
}

void World::schedule_run(TaskExec& t, Tick at) {
  ++t.gen;
  queue_.schedule(at, this, kRunTask, t.task.pid, t.gen);
}

void World::run_from(sched::Task& task, Tick at) {
  TaskExec& t = exec(task.pid);
  t.clock = at;
  schedule_run(t, at);
}

void World::moved(sched::Task& task) {
  // Its cache footprints were the old CPU's.
  drop_footprints(task.pid, change_time());
}

Tick World::change_time() const {
  return acting_ ? std::max(queue_.now(), acting_->clock) : queue_.now();
}

void World::cut_to_reprice(TaskExec& s, Tick at) {
  if (!s.seg.active || at >= s.seg.stop) return;
  // (Not before the queue's time: the change may come from a task that runs
  // behind it.)
  if (!apply_segment(s, std::max({at, s.seg.t0, queue_.now()}))) schedule_run(s, s.clock);
}

void World::occupancy_changed(CpuId cpu, bool busy, Tick at) {
  const int before = busy_cpus_;
  busy_cpus_ += busy ? 1 : -1;
  noise_.set_busy(busy_cpus_);
  host_.set_busy(cpu.v, busy, static_cast<double>(at.ns));
  // A guest's vCPUs sharing the host's cores, and its interruptions growing
  // with the busy count: every running segment priced at a busy count that
  // prices otherwise is cut, its rest priced at this one.
  if (!noise_.prices_alike(busy_cpus_, before)) {
    for (size_t c = 0; c < sibling_.size(); ++c) {
      const uint32_t pid = sched_.current(CpuId(static_cast<uint16_t>(c)));
      if (pid && !noise_.prices_alike(exec(pid).seg.priced_busy, busy_cpus_))
        cut_to_reprice(exec(pid), at);
    }
  }
  const CpuId sib = sibling_[cpu.v];
  if (sib == cpu) return;
  const uint32_t pid = sched_.current(sib);
  if (pid == 0) return;
  TaskExec& s = exec(pid);
  if (s.seg.sibling_busy != busy) cut_to_reprice(s, at);
}

void World::reprice_sockets(Tick at) {
  for (const uint16_t socket : access_.take_changed_sockets()) {
    for (const CpuId c : socket_cpus_[socket]) {
      if (const uint32_t pid = sched_.current(c)) cut_to_reprice(exec(pid), at);
    }
  }
}

void World::drop_footprints(uint32_t pid, Tick at) {
  access_.drop_footprints(pid);
  reprice_sockets(at);
}

void World::preempt(sched::Task& current, Tick slice_end, Tick at) {
  TaskExec& cur = exec(current.pid);
  if (cur.seg.active && cur.seg.stop > slice_end) {
    const Tick stop = std::max(slice_end, at);
    if (stop < cur.seg.stop) {
      cur.seg.stop = stop;
      schedule_run(cur, stop);
    }
  }
}

void World::leave_cpu(TaskExec& t, sched::TaskState state) {
  ++t.gen;  // drop any pending run event
  bandwidth_.clear_demand(t.task.pid);
  sched_.leave_cpu(t.task, state, t.clock);
}

void World::wake(TaskExec& t, Tick at) {
  // A task that ran ahead of the queue may have gone to sleep (on a
  // migration entry) at a clock later than the event that ends the wait: it
  // never waited, and goes on from where it stopped.
  at = std::max(at, t.task.state_since) + to_tick(noise_.wakeup_delay_ns(t.noise_rng));
  t.clock = at;
  sched_.wake(t.task, at);
}

void World::finish_trace(const RunResult& r) const {
  sim::Trace& trace = *config_.trace;
  const topo::Topology& topo = mm_.topology();
  for (size_t c = 0; c < topo.nr_cpus(); ++c) {
    const CpuId cpu(static_cast<uint16_t>(c));
    trace.name_cpu(cpu.v, topo.cpu_to_node(cpu).v);
  }
  for (size_t pid = 1; pid < tasks_.size(); ++pid) {
    const sched::Task& t = tasks_[pid]->task;
    trace.name_task(t.pid, t.tgid, t.comm);
  }
  // Counter tracks from the timeline: a counter's change over the interval
  // that ends at the sample, a gauge as it is.
  std::array<int64_t, kTimelineCounters.size()> prev{};
  for (const Sample& s : r.timeline) {
    const Tick at(std::llround(s.t_s * 1e9));
    for (size_t i = 0; i < kTimelineCounters.size(); ++i) {
      const std::string_view name = mm::kVmNames[static_cast<size_t>(kTimelineCounters[i])];
      const bool gauge = name.starts_with("nr_");
      trace.counter(gauge ? fmt::format("{} (change since the start)", name)
                          : fmt::format("{} (per interval)", name),
                    at, static_cast<double>(gauge ? s.vm[i] : s.vm[i] - prev[i]));
      prev[i] = s.vm[i];
    }
    trace.counter("tasks in D", at, s.tasks_in_d);
    for (size_t n = 0; n < s.node_used.size(); ++n)
      trace.counter(fmt::format("node {} pages in use", n), at,
                    static_cast<double>(s.node_used[n]));
    if (memcg_.enabled()) trace.counter("memcg cache (pages)", at, static_cast<double>(s.memcg[0]));
  }
}

void World::start_kthreads(Tick at) {
  // (Every fault asks: most have woken nobody.)
  if (vmscan_.wakeups_pending()) wake_kswapds(at);
  mm::Writeback& wb = mm_.writeback();
  wb.stamp(at);
  if (wb.take_wakeup() && !flusher_pending_) {
    flusher_pending_ = true;
    queue_.schedule(at + to_tick(costs_.context_switch_ns), this, kFlusher);
  }
  if (wb.take_timer_request()) {
    const int64_t cs = mm_.config().dirty_writeback_centisecs;
    queue_.schedule(at + milliseconds(cs * 10), this, kKupdate);
  }
  // A registration wakes khugepaged only from its untimed sleep: asleep
  // between passes, it waits out its time.
  if (mm_.khugepaged_take_wakeup() && !khugepaged_pending_) {
    khugepaged_pending_ = true;
    queue_.schedule(at + to_tick(costs_.context_switch_ns), this, kKhugepaged);
  }
}

void World::wake_kswapds(Tick at) {
  for (NodeId n : vmscan_.take_wakeups()) {
    if (!vmscan_.kswapd_wake(n, at)) continue;
    // The wakeup puts it on an idle CPU of its node (of the machine for a
    // node without CPUs, kswapd's cpumask then) if there is one
    // (select_idle_sibling), else on the first, beside the task there: its
    // TLB flushes reach a running task by IPI, as they would.
    std::vector<CpuId> cpus = mm_.topology().node(n).cpus;
    if (cpus.empty()) {
      for (const auto& c : mm_.topology().cpus()) cpus.push_back(c.id);
    }
    const auto idle =
        std::find_if(cpus.begin(), cpus.end(), [&](CpuId c) { return sched_.current(c) == 0; });
    vmscan_.set_kswapd_cpu(n, idle != cpus.end() ? *idle : cpus.front());
    // It runs once the scheduler has switched to it.
    queue_.schedule(at + to_tick(costs_.context_switch_ns), this, kKswapd, n.v, ++kswapd_gen_[n.v]);
  }
}

void World::khugepaged_event(Tick now) {
  khugepaged_pending_ = false;
  if (live_tasks_ == 0) return;  // the run is over
  const uint64_t collapsed = mm_.khugepaged_stats().pages_collapsed;
  const mm::MemoryManager::KhugepagedStep step = mm_.khugepaged_run();
  run_checker("after khugepaged");
  if (config_.trace)
    config_.trace->kthread(
        "khugepaged", now, now + std::max(to_tick(step.ns), Tick(1)), "khugepaged pass",
        fmt::format("\"collapsed\":{}", mm_.khugepaged_stats().pages_collapsed - collapsed));
  using Next = mm::MemoryManager::KhugepagedStep::Next;
  if (step.next != Next::kIdle) {
    // SIMPLIFICATION: like kswapd, khugepaged takes no task's CPU time.
    const mm::MmConfig& c = mm_.config();
    const int64_t ms =
        step.next == Next::kScanSleep ? c.khugepaged_scan_sleep_ms : c.khugepaged_alloc_sleep_ms;
    const Tick end = now + std::max(to_tick(step.ns), Tick(1));
    // SIMPLIFICATION: a sleep of 0 is one scheduler tick. The kernel's
    // khugepaged then runs passes back to back on a CPU of its own, which
    // here would be an event every few hundred ns of simulated time.
    const Tick sleep =
        std::max(to_tick(static_cast<double>(ms) * 1e6), Tick(config_.numa.tick_ns()));
    khugepaged_pending_ = true;
    queue_.schedule(end + sleep, this, kKhugepaged);
  }
  start_kthreads(now);  // its allocation may have woken a kswapd
}

void World::flusher_event(Tick now) {
  flusher_pending_ = false;
  if (live_tasks_ == 0) return;  // the run is over (its bios still end)
  // The flusher is a kworker on some idle CPU, else the first (its TLB
  // flushes leave from there). SIMPLIFICATION: like kswapd, it takes no
  // task's CPU time.
  CpuId cpu(0);
  for (const auto& c : mm_.topology().cpus()) {
    if (sched_.current(c.id) == 0) {
      cpu = c.id;
      break;
    }
  }
  const mm::Writeback::Step step = mm_.writeback().flusher_step(now, cpu);
  run_checker("after a flusher pass");
  const Tick end = now + std::max(to_tick(step.ns), Tick(1));
  if (config_.trace)
    config_.trace->kthread("flusher", now, end, "writeback pass",
                           fmt::format("\"bios\":{}", step.bios.size()));
  for (const mm::Writeback::Bio& b : step.bios)
    queue_.schedule(std::max(b.done, now), this, kBioEnd, b.id);
  if (step.more) {
    flusher_pending_ = true;
    queue_.schedule(end, this, kFlusher);
  }
  start_kthreads(now);
}

void World::kswapd_event(NodeId node, uint64_t gen, Tick now) {
  mm_.folios().hold(node, 0);              // the last pass is over: its pages are free
  if (gen != kswapd_gen_[node.v]) return;  // woken again since
  if (live_tasks_ == 0) return;            // the run is over
  const uint64_t before = mm_.folios().free_pages(node);
  const reclaim::Vmscan::Step step = vmscan_.kswapd_step(node, now);
  run_checker("after kswapd");
  // What a pass frees (or demotes) is free once the pass is over, not at its
  // start: held until then.
  const Tick end = now + std::max(to_tick(step.ns), Tick(1));
  const uint64_t after = mm_.folios().free_pages(node);
  if (config_.trace)
    config_.trace->kthread(fmt::format("kswapd{}", node.v), now, end, "kswapd pass",
                           fmt::format("\"pages_freed\":{}",
                                       static_cast<int64_t>(after) - static_cast<int64_t>(before)));
  if (after > before) {
    mm_.folios().hold(node, after - before);
    if (!step.run) queue_.schedule(end, this, kKswapdFreed, node.v, 0);
  }
  if (step.run) {
    queue_.schedule(end, this, kKswapd, node.v, gen);
  } else if (step.nap) {
    queue_.schedule(vmscan_.kswapd(node).nap_end, this, kKswapd, node.v, gen);
  }
  start_kthreads(now);
}

void World::check_convergence(Tick now) {
  // Re-judged only when some task has changed CPU, started or ended.
  if (converged_ || sched_.placements() == convergence_placements_) return;
  convergence_placements_ = sched_.placements();
  // tgid -> the node of its first live task of the program.
  std::vector<std::pair<uint32_t, uint16_t>> seen;
  uint64_t live = 0;
  for (size_t pid = 1; pid < tasks_.size(); ++pid) {
    const TaskExec& t = *tasks_[pid];
    if (!t.proc || t.program != workload_.convergence_program) continue;
    ++live;
    const auto it = std::find_if(seen.begin(), seen.end(),
                                 [&](const auto& s) { return s.first == t.task.tgid; });
    if (it == seen.end()) {
      seen.emplace_back(t.task.tgid, t.task.node.v);
    } else if (it->second != t.task.node.v) {
      return;
    }
  }
  // Judged with all of them alive, as perf's threads start together.
  if (live != workload_.convergence_tasks) return;
  converged_ = true;
  converged_at_ = now;
  queue_.stop();  // perf bench numa -m: the run ends there
}

void World::on_event(sim::EventQueue& q, const sim::Event& e) {
  dispatch(q, e);
  settle_bandwidth(e.time);
  if (workload_.convergence_program != UINT32_MAX) check_convergence(e.time);
}

void World::dispatch(sim::EventQueue&, const sim::Event& e) {
  if (e.kind == kKswapd) {
    kswapd_event(NodeId(static_cast<uint16_t>(e.arg0)), e.arg1, e.time);
    return;
  }
  if (e.kind == kKhugepaged) {
    khugepaged_event(e.time);
    return;
  }
  if (e.kind == kKswapdFreed) {
    mm_.folios().hold(NodeId(static_cast<uint16_t>(e.arg0)), 0);
    return;
  }
  if (e.kind == kFlusher) {
    flusher_event(e.time);
    return;
  }
  if (e.kind == kBioEnd) {
    mm_.writeback().end_bio(e.arg0);
    run_checker("after a write's end");
    return;
  }
  if (e.kind == kStatsFlush) {
    if (live_tasks_ == 0) return;  // the run is over
    memcg_.flush_stats();
    queue_.schedule(e.time + memcg::Controller::kStatsFlushTime, this, kStatsFlush);
    return;
  }
  if (e.kind == kKupdate) {
    if (live_tasks_ == 0) return;  // the run is over
    mm_.writeback().kupdate_timer();
    start_kthreads(e.time);
    return;
  }
  TaskExec& t = exec(static_cast<uint32_t>(e.arg0));
  if (e.kind == kMoveEnd) {
    // A task killed during its move finished the move as it exited.
    if (!t.moving) return;
    // The charge move is over: accounts move, moving_account drops.
    t.moving = false;
    memcg_.finish_move(*t.proc->mm, static_cast<uint32_t>(e.arg1));
    if (config_.trace) config_.trace->end("charge move", t.task.pid, "move charges", e.time, "");
    t.task.times.sys_ns += static_cast<double>((e.time - t.clock).ns);
    t.clock = e.time;
    run_checker("after a charge move");
    schedule_run(t, t.clock);
    return;
  }
  if (e.kind == kWakeTask) {
    wake(t, e.time);
    return;
  }
  if (e.arg1 != t.gen || t.task.state != sched::TaskState::kRunning || t.blocked_on) return;
  t.clock = std::max(t.clock, e.time);
  if (t.seg.active && apply_segment(t, e.time)) return;  // it reached a migrating page
  run_task(t);
}

void World::on_pte_revoked(mm::Mm& mm, Vpn start, Vpn end) {
  // Cut every run-ahead segment of this mm that relies on the range, when
  // the kernel changed it: at the clock of the task doing so, which may run
  // ahead of the queue, or else (kswapd) the queue's time.
  const Tick now = change_time();
  for (uint32_t pid : tasks_by_mm_[mm.id()]) {
    TaskExec& t = exec(pid);
    if (!t.seg.active || t.seg.hi <= start || t.seg.lo >= end) continue;
    if (!apply_segment(t, std::max(now, t.seg.t0))) schedule_run(t, t.clock);
  }
}

bool World::apply_segment(TaskExec& t, Tick at) {
  Segment& s = t.seg;
  check(s.active, "no segment to apply");
  Tick x = std::clamp(at, s.t0, s.stop);
  // A page it relied on went into migration, and it got there first: it
  // stops at that page and waits for the migration (D state).
  uint32_t blocked = 0;
  for (const auto& [mig, reach] : t.reaches) {
    if (reach < x && migrator_.active(mig)) {
      x = reach;
      blocked = mig;
    }
  }
  t.reaches.clear();
  const double elapsed = static_cast<double>((x - s.t0).ns);
  s.active = false;
  --t.proc->mm->runahead_tasks;
  t.task.times.user_ns += elapsed;
  t.clock = x;
  if (blocked) {
    t.blocked_on = blocked;
    // It waits where it reached the migrating page, on its CPU until the
    // queue catches up (its running time ends here in a trace).
    sched_.trace_state(t.task, x);
    t.task.state_since = x;
    if (config_.trace) {
      t.task.wait_detail =
          fmt::format("migration entry (migration {}, reached running ahead)", blocked);
      ++trace_waiters_[blocked];
    }
  }
  uint64_t done = s.unit_ns > 0 ? static_cast<uint64_t>(elapsed / s.unit_ns) : s.units;
  if (x == s.stop && s.stop == s.t0 + to_tick(s.unit_ns * static_cast<double>(s.units)))
    done = s.units;  // finished exactly: no rounding loss
  done = std::min(done, s.units);
  if (s.kind == Segment::Kind::kStretch) {
    t.cursor = s.p0 + done;
    return blocked != 0;
  }
  // A loop: whole iterations, then the position inside the body.
  Frame& f = t.stack.back();
  const std::vector<Op>& body = *f.ops;
  auto count_body = [&](size_t upto, uint64_t times) {
    for (size_t j = 0; j < upto; ++j) {
      if (body[j].kind == OpKind::kCount) count(t, body[j].counter, mul_sat(body[j].count, times));
    }
  };
  f.iter += done;
  count_body(body.size(), done);
  f.pc = 0;
  t.cursor = 0;
  if (done == s.units) return blocked != 0;
  const double rem = elapsed - static_cast<double>(done) * s.unit_ns;
  for (const Piece& p : s.pieces) {
    if (rem < p.offset_ns + p.ns) {
      count_body(p.op, 1);
      f.pc = p.op;
      const double per_page = p.ns / static_cast<double>(p.pages);
      t.cursor = std::min<uint64_t>(p.pages, static_cast<uint64_t>((rem - p.offset_ns) / per_page));
      return blocked != 0;
    }
  }
  count_body(body.size(), 1);
  f.pc = body.size();
  return blocked != 0;
}

Tick World::reach_time(const TaskExec& t, Vpn lo, Vpn hi, Tick now) const {
  const Segment& s = t.seg;
  const double elapsed = static_cast<double>((now - s.t0).ns);
  Tick first = Tick::max();
  for (const Piece& p : s.pieces) {
    // The pages of [lo, hi) this piece reads, from a.
    const uint64_t a = std::max(lo.v, p.start.v);
    const uint64_t b = std::min(hi.v, p.start.v + p.pages);
    if (a >= b) continue;
    const double per = p.ns / static_cast<double>(p.pages);
    auto offset = [&](uint64_t v) {
      return p.offset_ns + static_cast<double>(v - p.start.v) * per;
    };
    const double off = offset(a);
    double at;
    if (s.kind == Segment::Kind::kStretch) {
      at = off;
      if (at < elapsed) {
        // Past a: the next page of the range it has not read yet, if any.
        if (!(per > 0)) continue;
        const double ahead = std::ceil((elapsed - off) / per);
        if (ahead >= static_cast<double>(b - a)) continue;  // already read
        at = offset(a + static_cast<uint64_t>(ahead));
      }
    } else {
      const double phase = std::fmod(elapsed, s.unit_ns);
      double delta = off - phase;
      if (delta < 0) {
        // Inside the range this round: its next page, else a next round.
        const double ahead = per > 0 ? std::ceil((phase - off) / per) : 0;
        if (per > 0 && ahead < static_cast<double>(b - a)) {
          delta = offset(a + static_cast<uint64_t>(ahead)) - phase;
        } else {
          delta += s.unit_ns;
        }
      }
      at = elapsed + delta;
    }
    first = std::min(first, s.t0 + to_tick(at));
  }
  return first < s.stop ? first : Tick::max();
}

double World::user_noise(TaskExec& t, double ns) {
  return noise_.on() ? host_wall_ns(t, ns * noise_.user_factor(t.noise_rng, ns) * host_share())
                     : ns;
}

void World::stretch_by_noise(TaskExec& t, double planned_ns, double& unit_ns,
                             std::vector<Piece>& pieces) {
  if (!noise_.on()) return;
  double f = noise_.user_factor(t.noise_rng, planned_ns) * host_share();
  // Round robin, the mean over the plan of when its work is done.
  if (host_.on() && planned_ns > 0) f = host_wall_ns(t, planned_ns * f) / planned_ns;
  unit_ns *= f;
  for (Piece& p : pieces) {
    p.offset_ns *= f;
    p.ns *= f;
  }
}

bool World::start_segment(TaskExec& t) {
  Segment& s = t.seg;
  s.active = true;
  ++t.proc->mm->runahead_tasks;
  s.t0 = t.clock;
  s.id = next_segment_++;
  s.sibling_busy = accessor(t).sibling_busy;
  s.priced_busy = busy_cpus_;
  t.reaches.clear();
  s.stop = t.clock + to_tick(s.unit_ns * static_cast<double>(s.units));
  if (others_waiting(t)) s.stop = std::min(s.stop, std::max(sched_.slice_end(t.task.cpu), t.clock));
  s.stop = std::min(s.stop, std::max(numa_deadline(t), t.clock));
  if (s.stop <= horizon()) {
    apply_segment(t, s.stop);  // no migration can have begun meanwhile
    return true;
  }
  schedule_run(t, s.stop);
  return false;
}

Vpn World::op_start(const TaskExec& t, const Op& op) const {
  const Vpn start(t.proc->regions[op.region].start.v + op.first_page);
  if (!op.own_slice) return start;
  return Vpn(start.v + t.slice_index * (range_pages(t, op) / t.slices));
}

uint64_t World::range_pages(const TaskExec& t, const Op& op) const {
  const Region& r = t.proc->regions[op.region];
  if (!r.mapped || op.first_page >= r.pages) return 0;
  const uint64_t rest = r.pages - op.first_page;
  return op.nr_pages ? std::min(op.nr_pages, rest) : rest;
}

uint64_t World::op_pages(const TaskExec& t, const Op& op) const {
  const uint64_t pages = range_pages(t, op);
  return op.own_slice ? pages / t.slices : pages;
}

bool World::op_in_region(const TaskExec& t, const Op& op) const {
  const Region& r = t.proc->regions[op.region];
  return r.mapped && op.first_page < r.pages && op.nr_pages <= r.pages - op.first_page;
}

void World::count(TaskExec& t, uint32_t counter, uint64_t n) {
  uint64_t& c = t.counters[counter];
  const uint64_t before = c;
  c = add_sat(c, n);
  if (c == UINT64_MAX && before != UINT64_MAX)
    record_error(t, "counter " + workload_.counters[counter] + " reached 2^64-1 and stays there");
}

void World::count_timeless(TaskExec& t, const std::vector<Op>& body, uint64_t times) {
  for (const Op& op : body) {
    if (op.kind == OpKind::kCount) count(t, op.counter, mul_sat(op.count, times));
    if (op.kind == OpKind::kLoop) count_timeless(t, op.body, mul_sat(op.count, times));
  }
}

void World::stop_at_limit(std::string why) {
  if (limit_error_.empty()) limit_error_ = std::move(why);
  queue_.stop();
}

AccessSpec World::access_of(const Op& op) {
  // A memset is a sweep of line-sized elements, each the core's stores of a
  // line (memset_line_ns) or its delivery as a stream, whichever is longer
  // (rep stosb and vector stores write whole lines; the RFO or write-back
  // traffic is priced as a read stream's).
  if (op.memset) return AccessSpec{false, static_cast<uint32_t>(cost::kLineBytes), -1, false, true};
  return AccessSpec{op.kind == OpKind::kTouch, op.elem_size, op.compute_ns, op.unoptimised};
}

Accessor World::accessor(const TaskExec& t) const {
  const CpuId sib = sibling_[t.task.cpu.v];
  const bool busy = sib != t.task.cpu && sched_.nr_running(sib) > 0;
  return Accessor{t.task.pid, t.task.cpu, t.task.node, busy};
}

void World::declare_footprint(TaskExec& t, const Op& op) {
  const Vpn start = op_start(t, op);
  const AccessSpec a = access_of(op);
  // (Asked only of a touch: a sweep's footprint does not depend on it.)
  const bool faults =
      a.touch && t.proc->mm->pgtable().next_blocked(start, Vpn(start.v + 1), op.write) == start;
  access_.add_footprint(accessor(t), *t.proc->mm, start, op_pages(t, op), a, faults);
  reprice_sockets(t.clock);
}

double World::range_cost_ns(TaskExec& t, const Op& op, Vpn from, Vpn to, Traffic* traffic) {
  declare_footprint(t, op);  // a no-op unless the task moved since its op began
  return access_.range_cost(access_of(op), accessor(t), t.proc->mm->pgtable(), from, to,
                            bandwidth_.enabled() ? traffic : nullptr);
}

void World::set_stream_demand(const TaskExec& t) {
  if (!bandwidth_.enabled()) return;
  if (!(traffic_.ns > 0)) {
    bandwidth_.clear_demand(t.task.pid);
    return;
  }
  for (double& b : traffic_.bytes) b /= traffic_.ns;  // bytes per ns
  bandwidth_.set_demand(t.task.pid, t.task.node, traffic_.bytes);
}

void World::settle_bandwidth(Tick at) {
  if (!bandwidth_.settle(at.ns)) return;
  for (size_t c = 0; c < sibling_.size(); ++c) {
    const uint32_t pid = sched_.current(CpuId(static_cast<uint16_t>(c)));
    if (pid && bandwidth_.affected(pid)) cut_to_reprice(exec(pid), at);
  }
}

void World::charge_sys(TaskExec& t, const mm::OpCost& c) {
  const double ns = host_wall_ns(t, noise_.kernel_op_ns(t.noise_rng, c.sys_ns) * host_share());
  t.task.times.sys_ns += ns;
  t.clock += to_tick(ns);
  check_memory_limits(0);
  start_kthreads(t.clock);
}

bool World::check_memory_limits(uint64_t more_pages) {
  if (mm_.folios().in_use() + more_pages > limit_pages_) {
    stop_at_limit(
        fmt::format("limits.memory: the run needs more than {} bytes of simulated memory in use; "
                    "raise [limits] "
                    "memory if it should go on (the host needs about 60 bytes per page)",
                    config_.limits.memory_bytes));
    return false;
  }
  if (mm_.nr_pte_tables() + (more_pages ? more_pages / mm::kPtesPerTable + 1 : 0) >
      config_.limits.page_tables) {
    stop_at_limit(
        fmt::format("limits.page_tables: the run needs more than {} page tables (each maps 2 MiB); "
                    "raise [limits] "
                    "page_tables if it should go on (the host needs about 4.2 KB per table)",
                    config_.limits.page_tables));
    return false;
  }
  return true;
}

// NUMA balancing ------------------------------------------------------------

Tick World::numa_deadline(const TaskExec& t) const {
  if (!balancer_.enabled()) return Tick::max();
  return balancer_.next_tick(t.task.pid, runtime_ns(t), t.clock, tick_phase_[t.task.cpu.v]);
}

bool World::numa_tick(TaskExec& t) {
  mm::Mm& mm = *t.proc->mm;
  if (!balancer_.task_tick(t.task.pid, mm, t.clock)) return false;
  const int64_t updates_before = mm_.vmstat()[mm::Vm::numa_pte_updates];
  const double cost = balancer_.task_numa_work(t.task.pid, mm, t.task.cpu, t.clock);
  if (mm_.vmstat()[mm::Vm::numa_pte_updates] != updates_before) {
    // Marked pages of the image, perhaps: each task touches its own again
    // (a stack, a heap in use) before its next op.
    for (const uint32_t pid : tasks_by_mm_[mm.id()]) exec(pid).touch_image = true;
  }
  if (config_.trace) {
    // One event a pass, with the hinting faults since the last: millions of
    // faults stay a few events a second per task.
    config_.trace->task_instant(
        t.task.pid, t.task.tgid, "NUMA scan pass", t.clock,
        fmt::format("\"pte_updates\":{},\"hint_faults_since_last\":{},\"local\":{},"
                    "\"migration_refused\":{}",
                    mm_.vmstat()[mm::Vm::numa_pte_updates] - updates_before, t.hint_faults,
                    t.hint_local, t.hint_refused));
    t.hint_faults = t.hint_local = t.hint_refused = 0;
  }
  mm::OpCost c;
  c.sys_ns = cost;
  charge_sys(t, c);
  balancer_.scan_done(t.task.pid, cost);
  return true;
}

bool World::numa_hint_fault(TaskExec& t, Vpn vpn, Pfn pfn) {
  mm::Mm& mm = *t.proc->mm;
  mm::OpCost cost;
  const numa::HintDecision d = balancer_.do_numa_page(t.task.pid, mm, vpn, t.task.cpu, t.clock);
  cost.sys_ns += costs_.pte_protect_ns;
  charge_sys(t, cost);
  ++t.hint_faults;
  if (d.page_node == t.task.node) ++t.hint_local;
  if (!d.target) {
    finish_hint_fault(t, d, d.page_node, d.flags);
    return true;
  }
  const mm::Vma* vma = mm.find_vma(vpn);
  pfn = mm_.folio_head(pfn);  // a page of a PTE-mapped THP moves with its folio
  if (migrator_.migrating(pfn) || !balancer_.migrate_allowed(pfn, *vma, *d.target, t.clock)) {
    balancer_.restore_numa_mapping(mm, vpn);  // TNF_MIGRATE_FAIL: out_map
    ++t.hint_refused;
    finish_hint_fault(t, d, d.page_node, d.flags | numa::kTnfMigrateFail);
    return true;
  }
  // migrate_misplaced_page: the task stays in the kernel until it is done.
  t.pending_hint = d;
  ++t.gen;
  t.blocked_on = 0;
  const uint32_t mig = migrator_.start(pfn, *d.target, t.task.pid, t.task.cpu, t.clock);
  if (config_.trace) {
    const mm::Folio& f = mm_.folios().folio(pfn);
    config_.trace->begin("migration", mig, "migration", t.clock,
                         fmt::format("\"pfn\":{},\"pages\":{},\"from_node\":{},"
                                     "\"to_node\":{},\"by_pid\":{}",
                                     pfn.v, f.nr_pages(), f.node.v, d.target->v, t.task.pid));
  }
  return false;
}

void World::on_unmapped(migrate::Migration& m, mm::Mm& mm, Vpn vpn, uint32_t pages,
                        double offset_ns, Tick at) {
  const Vpn end(vpn.v + pages);
  for (uint32_t pid : tasks_by_mm_[mm.id()]) {
    TaskExec& t = exec(pid);
    if (!t.seg.active || t.seg.hi <= vpn || t.seg.lo >= end) continue;
    const Tick reach = reach_time(t, vpn, end, std::max(at, t.seg.t0) + to_tick(offset_ns));
    if (reach == Tick::max()) continue;
    migrator_.add_waiter(m, migrate::Waiter{pid, reach, true, t.seg.id, vpn, offset_ns});
    t.reaches.emplace_back(m.id, reach);
  }
}

bool World::holds_reference(const migrate::Migration& m, const migrate::Waiter& w) {
  const TaskExec& wt = exec(w.pid);
  return !w.deferred || wt.blocked_on == m.id || (wt.seg.active && wt.seg.id == w.segment);
}

void World::release(const migrate::Migration& m, const migrate::Waiter& w, Tick now, bool retry) {
  TaskExec& wt = exec(w.pid);
  if (wt.blocked_on != m.id && w.deferred && wt.seg.active && wt.seg.id == w.segment &&
      w.since < now) {
    apply_segment(wt, now);  // cuts it where it first reached a migrating page
  }
  std::erase_if(wt.reaches, [&](const auto& r) { return r.first == m.id; });
  if (wt.blocked_on != m.id) return;
  wt.blocked_on = 0;
  // If another pass follows, a woken task reads the page if it gets to run
  // before the walk replaces its PTE again.
  if (retry && costs_.context_switch_ns < w.offset_ns) wt.escape = w.vpn;
  if (wt.task.state == sched::TaskState::kUninterruptible) {
    wake(wt, now);
  } else {
    // Cut while running ahead: it waited on its CPU since it got there.
    wt.task.times.iowait_ns += static_cast<double>((now - wt.task.state_since).ns);
    if (config_.trace) {
      config_.trace->task_state(wt.task.pid, wt.task.tgid, wt.task.cpu.v, wt.task.comm, "D",
                                wt.task.state_since, now, wt.task.wait_detail);
      wt.task.state_since = now;
    }
    ++wt.task.nvcsw;
    wt.clock = now;
    schedule_run(wt, now);
  }
}

void World::finished(const migrate::Migration& m, Tick now) {
  TaskExec& t = exec(m.pid);
  if (config_.trace) {
    const char* why = m.success ? ""
                      : m.nomem ? "no destination page (ENOMEM)"
                                : "references held to the end (EAGAIN)";
    config_.trace->end("migration", m.id, "migration", now,
                       fmt::format("\"result\":\"{}\",\"reason\":\"{}\",\"passes\":{},"
                                   "\"mappings\":{},\"waiters\":{}",
                                   m.success ? "migrated" : "failed", why, m.pass, m.mappings,
                                   trace_waiters_[m.id]));
    trace_waiters_.erase(m.id);
  }
  t.task.times.sys_ns += static_cast<double>((now - t.clock).ns);
  t.clock = now;
  const numa::HintDecision hint = t.pending_hint;
  // No destination page: nothing was unmapped, and the hinting entry is
  // still there for do_numa_page's out_map.
  if (m.nomem) balancer_.restore_after_failed_migration(*t.proc->mm, hint, m.folio);
  finish_hint_fault(t, hint, m.success ? m.target : hint.page_node,
                    hint.flags | (m.success ? numa::kTnfMigrated : numa::kTnfMigrateFail));
  if (t.task.state == sched::TaskState::kRunning) schedule_run(t, t.clock);
}

bool World::wait_on_migration(TaskExec& t, Vpn vpn, Pfn pfn) {
  const uint32_t id = migrator_.wait(t.task.pid, t.proc->mm->id(), vpn, pfn, t.clock);
  if (id == 0) return false;
  t.blocked_on = id;
  if (config_.trace) {
    t.task.wait_detail = fmt::format("migration entry at 0x{:x} (migration {})", vpn.v << 12, id);
    ++trace_waiters_[id];
  }
  // migration_entry_wait: TASK_UNINTERRUPTIBLE on the page lock (iowait).
  leave_cpu(t, sched::TaskState::kUninterruptible);
  return true;
}

void World::finish_hint_fault(TaskExec& t, const numa::HintDecision& d, NodeId mem_node,
                              uint32_t flags) {
  if (d.pages == 0) return;  // a page of a PTE-mapped THP: nothing counted
  balancer_.trace_misplaced(t.task.pid, t.task.cpu, t.clock, d.vpn);
  const auto move =
      balancer_.task_numa_fault(t.task.pid, t.task.cpu, *t.proc->mm, d.last_cpupid, mem_node,
                                t.task.node, d.pages, flags, t.clock, runtime_ns(t));
  if (move) move_task(t, *move);
}

void World::move_task(TaskExec& t, NodeId node) {
  const numa::TaskMove mv = numa::task_numa_migrate(
      balancer_, sched_, t.task.pid, node,
      [&](uint32_t pid) { return !exec(pid).blocked_on && !migrator_.task_migrating(pid); });
  switch (mv.kind) {
    case numa::TaskMove::Kind::kNone:
      return;
    case numa::TaskMove::Kind::kIdleCpu:
      if (sched_.move_to_idle_cpu(t.task, mv.cpu, t.clock)) drop_footprints(t.task.pid, t.clock);
      return;
    case numa::TaskMove::Kind::kSwap: {
      TaskExec& o = exec(mv.other);
      if (o.seg.active && apply_segment(o, std::max(queue_.now(), o.seg.t0))) return;
      access_.drop_footprints(t.task.pid);
      access_.drop_footprints(o.task.pid);
      reprice_sockets(t.clock);  // once, for both
      sched_.swap_cpus(t.task, t.clock, o.task, std::max(o.clock, queue_.now()));
      schedule_run(o, std::max(o.clock, queue_.now()));
      return;
    }
  }
}

mm::FaultCtx World::fault_ctx(TaskExec& t) {
  const uint32_t memcg = t.outside_cgroup ? 0 : t.proc->mm->memcg;
  return mm::FaultCtx{t.task.cpu, t.task.node,  &t.task.min_flt, &t.task.maj_flt,
                      memcg,      &t.mempolicy, &t.il_next};
}

bool World::fault(TaskExec& t, Vpn vpn, bool write) {
  mm::FaultCtx ctx = fault_ctx(t);
  mm::FaultResult r = mm_.handle_mm_fault(*t.proc->mm, vpn, write, ctx);
  charge_sys(t, r.cost);
  if (r.zero_filled) {
    // Another thread writing the page before t's clock finds it under way.
    // Only a task's latest fault can still be: it faulted in time order,
    // each fault after its last one ended (see fault_in_flight).
    std::vector<FaultInFlight>& v = t.proc->faults_in_flight;
    std::erase_if(
        v, [&](const FaultInFlight& f) { return f.done <= queue_.now() || f.pid == t.task.pid; });
    v.push_back(FaultInFlight{Vpn(vpn.v & ~uint64_t{r.zero_filled - 1}), r.zero_filled, t.task.pid,
                              t.clock});
  }
  if (r.status == mm::FaultStatus::kSegv) {
    kill_task(t, "SIGSEGV: no access at page " + std::to_string(vpn.v));
    return false;
  }
  if (r.status == mm::FaultStatus::kSigbus) {
    kill_task(t, "SIGBUS: page " + std::to_string(vpn.v) + " is beyond the end of its file");
    return false;
  }
  if (r.status == mm::FaultStatus::kOom) {
    kill_task(t, oom_reason());
    return false;
  }
  if (r.status == mm::FaultStatus::kNumaHint) return numa_hint_fault(t, vpn, r.pfn);
  if (r.status == mm::FaultStatus::kMigrationWait) {
    check(wait_on_migration(t, vpn, r.pfn), "a migration entry with no migration");
    return false;
  }
  const bool read = r.cost.io_ns > 0;
  if (const uint64_t dirtied = mm_.writeback().take_dirtied()) {
    // balance_dirty_pages_ratelimited: a dirtier past the freerun ceiling
    // sleeps (io_schedule_timeout, D state); then its write is retried.
    // SIMPLIFICATION: if the flusher cleaned the page meanwhile, the retry's
    // fault dirties it again without another pause, so a tiny limit
    // (dirty_ratio 0) cannot stall the task on one page forever.
    const bool retry = t.dirty_paused_page == vpn;
    t.dirty_paused_page = Vpn(UINT64_MAX);
    const double pause =
        mm_.writeback().balance_dirty_pages_ratelimited(t.dirty, t.proc->mm->memcg, dirtied);
    if (pause > 0 && !retry) {
      r.cost.io_ns += pause;
      t.dirty_paused_page = vpn;
    }
    start_kthreads(t.clock);
  }
  if (r.cost.io_ns > 0) {
    // Waiting for the read or throttled: D state, which the kernel reports as iowait.
    if (config_.trace)
      t.task.wait_detail = read ? fmt::format("page read at 0x{:x}", vpn.v << 12)
                                : std::string("balance_dirty_pages");
    leave_cpu(t, sched::TaskState::kUninterruptible);
    queue_.schedule(t.clock + to_tick(r.cost.io_ns), this, kWakeTask, t.task.pid);
    return false;
  }
  return true;
}

std::string World::oom_reason() const {
  // Dirty page cache and page cache under writeback cannot be reclaimed
  // until written: say how much there was.
  const mm::VmStat& vm = mm_.vmstat();
  const int64_t dirty = vm[mm::Vm::nr_dirty] + vm[mm::Vm::nr_writeback];
  if (dirty <= 0) return "out of memory";
  return fmt::format(
      "out of memory, with {} dirty or writeback page-cache pages that reclaim could not free",
      dirty);
}

std::optional<World::FaultInFlight> World::fault_in_flight(TaskExec& t, Vpn from, Vpn* to) {
  std::vector<FaultInFlight>& v = t.proc->faults_in_flight;
  if (v.empty()) return std::nullopt;
  std::erase_if(v, [now = queue_.now()](const FaultInFlight& f) { return f.done <= now; });
  std::optional<FaultInFlight> first;
  for (const FaultInFlight& f : v) {
    if (f.pid == t.task.pid || f.done <= t.clock) continue;
    const Vpn lo(std::max(f.lo.v, from.v));
    if (lo < *to && f.lo.v + f.pages > from.v) {
      *to = lo;
      first = f;
    }
  }
  return first;
}

void World::lose_fault_race(TaskExec& t, Vpn vpn, const FaultInFlight& f) {
  mm::FaultCtx ctx = fault_ctx(t);
  // The handler looks at the entry once its entry work is done: if the
  // other fault has set it by then (at its end), nothing is allocated.
  if (t.clock + to_tick(costs_.fault_entry_ns) >= f.done) {
    charge_sys(t, mm_.spurious_fault(ctx).cost);
    return;
  }
  charge_sys(t, mm_.lose_fault_race(*t.proc->mm, vpn, f.pages > 1, ctx).cost);
  // Under the page-table lock the first to get there wins, not the first
  // to start: a fault that began later but gets there sooner (the other
  // was stretched by an interruption: a guest's vCPU taken by its host)
  // maps its folio and goes on; the other finds the entry set and puts its
  // own back. From then on the entry is set for everyone.
  // SIMPLIFICATION: the folio left mapped is the first fault's: the counts
  // are the same (each allocated, charged and zeroed a folio, one freed),
  // only which node holds the page can differ.
  if (t.clock < f.done) {
    for (FaultInFlight& g : t.proc->faults_in_flight) {
      if (g.pid == f.pid && g.lo == f.lo) g.done = t.clock;
    }
  }
}

World::Step World::exec_pages(TaskExec& t, const Op& op) {
  const uint64_t pages = op_pages(t, op);
  const Region& region = t.proc->regions[op.region];
  if (!region.mapped) {
    // The program follows a pointer to memory it never mapped, or unmapped.
    kill_task(t, "SIGSEGV: region " + workload_.regions[op.region].name + " is not mapped");
    return Step::kStopped;
  }
  if (t.cursor >= pages && !op_in_region(t, op)) {
    // It went on past the region's end, into the unmapped gap after it.
    kill_task(t, fmt::format("SIGSEGV: page {} is past the end of region {} ({} pages)",
                             op.first_page + range_pages(t, op), workload_.regions[op.region].name,
                             region.pages));
    return Step::kStopped;
  }
  mm::Mm& mm = *t.proc->mm;
  const Vpn base = op_start(t, op);
  const Vpn end(base.v + pages);
  if (t.cursor == 0) declare_footprint(t, op);  // before its faults map the pages
  Tick h = horizon();  // the next event not this task's own; a fault may schedule one
  const bool preemptible = others_waiting(t);
  const Tick deadline = numa_deadline(t);
  for (;;) {
    if (t.cursor >= pages) return op_in_region(t, op) ? Step::kNext : Step::kContinue;
    if (t.clock > config_.time_limit) return Step::kYield;
    if (preemptible && t.clock >= sched_.slice_end(t.task.cpu)) return Step::kContinue;
    if (t.clock >= deadline) return Step::kContinue;  // the NUMA tick is due
    const Vpn cur(base.v + t.cursor);
    // A stretch plans at most kMaxStretchPages ahead: its planning costs a
    // few operations a page table, and a long sweep is one event per
    // stretch, however often the kernel cuts it (an event each too).
    Vpn blocked =
        mm.pgtable().next_blocked(cur, Vpn(std::min(end.v, cur.v + kMaxStretchPages)), op.write);
    // A write also stops at a page another thread is still zero-filling.
    const std::optional<FaultInFlight> race =
        op.write ? fault_in_flight(t, cur, &blocked) : std::nullopt;
    if (blocked > cur) {
      // Pages the task can access without the kernel: pure user time,
      // stretched by its noise (a loop's is drawn when its passes are
      // counted: try_fast_forward).
      traffic_.clear();
      const double cost = user_noise(t, range_cost_ns(t, op, cur, blocked, &traffic_));
      set_stream_demand(t);
      const Tick done = t.clock + to_tick(cost);
      if (done <= h && done <= deadline && !(preemptible && done > sched_.slice_end(t.task.cpu))) {
        t.clock = done;
        t.task.times.user_ns += cost;
        t.cursor += blocked.v - cur.v;
        continue;
      }
      Segment& s = t.seg;
      s.kind = Segment::Kind::kStretch;
      s.units = blocked.v - cur.v;
      s.unit_ns = cost / static_cast<double>(s.units);
      s.p0 = t.cursor;
      s.lo = cur;
      s.hi = blocked;
      s.pieces.assign(1, Piece{0, cur, s.units, 0.0, cost});
      return start_segment(t) ? Step::kContinue : Step::kStopped;
    }
    // The page needs the kernel: only in time order.
    if (t.clock > h) return Step::kYield;
    if (blocked == t.escape && mm.pgtable().get(blocked).migration()) {
      // Read between two migration passes (see migration_end).
      t.escape = Vpn(UINT64_MAX);
    } else if (race && mm.pgtable().get(blocked).present()) {
      lose_fault_race(t, blocked, *race);
    } else if (!fault(t, blocked, op.write)) {
      return Step::kStopped;
    }
    // The fault may have woken a kswapd, which runs beside this task from
    // now: the task goes no further ahead of it.
    h = horizon();
    t.escape = Vpn(UINT64_MAX);
    // The access that faulted now completes. (If the page is somehow still
    // blocked, stepping over it keeps the task from spinning.)
    const double cost =
        user_noise(t, access_.faulted_page_cost(access_of(op), accessor(t), mm.pgtable(), blocked));
    t.clock += to_tick(cost);
    t.task.times.user_ns += cost;
    ++t.cursor;
  }
}

// A process is more than the scenario's regions: what runs the scenario
// natively is mmsim-exec, a static binary, and its /proc/<pid>/maps (read on
// Debian 12 with glibc 2.36) holds its writable data and bss, a heap,
// [vvar], [vdso] and [stack], and for each thread an 8 MiB stack with a
// guard page and a malloc arena (132 KiB of a 64 MiB PROT_NONE
// reservation). These are VMAs NUMA balancing's task_numa_work walks: an
// empty one above the last region ends a scan sequence, and from 6.7 each
// one the scanning thread has not faulted in lately costs a call
// (docs/research/numa-scan-rate.md). The executable's read-only mappings
// are left out: task_numa_work skips them before any other test, as it
// skips [vvar] (VM_PFNMAP) and the PROT_NONE guards and reservations (mapped
// for the layout and merges they make).
// With `[run] process_image = "in-use"` (the default) they hold the pages
// mmsim-exec keeps resident (smaps): each task faults them in before its
// first op (a thread's top stack page is its creator's, in exec_fork), and
// touches them again after a NUMA scan pass changed PTEs in its mm, as a thread running on its
// stack and using the heap would. A marked thread stack then charges its whole VMA to the scan's
// budget, as in the kernel (a guest's trace shows it: validate --scan-trace). "mapped" leaves the
// VMAs empty.
void World::map_process_image(Process& proc) {
  struct Image {
    uint64_t addr;
    uint64_t pages;
    uint32_t flags;
    const char* name;
    // Its pages in use, one character a page from its start: 'w' written by
    // the process's tasks as they start, 'r' only read (shared with the
    // collector, which wrote it, from the fork on), 't' written by the task
    // that creates the process's first thread (glibc's locks, in the bss's
    // first page), 'c' written by the collector after the fork (the
    // process's copy is its own from then on, where the collector faulted
    // it), '.' not in use. Of the pages written at the start, a task
    // touches again after a scan pass marks them: 'W' (every task: the
    // page of [stack] that holds the executor's run state), 'L' (every
    // task reads it, then writes it: the region table's mutex, taken at
    // each access op, and the op list), 'S' (every task reads it: the data
    // page __pthread_mutex_lock reads), 'C' (a main-arena task whose
    // program counts: its counters), 'T' (the tasks of a threaded process:
    // the threads' state) and 'M' (the main thread's frames); 't' pages
    // too, by the tasks of a threaded process. From page_fault_user traces
    // of 6.12 guests (validate/anon-migrate-pinned.toml, one task, and
    // anon-migrate-threads.toml, a main thread and two threads; with
    // task_numa_fault kprobed, each fault's ip symbolised): every write of
    // the first task and of the collector after the fork, every hinting
    // fault on an image page. Earlier, /proc/PID/pagemap (present,
    // exclusively mapped) and smaps on a Debian 12 host gave the pages in
    // use. 6.1 never scans the data VMA, a private mapping of a file on
    // the initramfs's shmem.
    std::string_view use;
    // A private mapping of mmsim-exec's file (its .data after the RELRO
    // part), not anonymous memory: where the file lives decides whether
    // NUMA balancing scans it (numa.skip_shmem_default_policy).
    bool from_file = false;
    // Its pages in the task's report at its program's end (Task::report:
    // getrusage, move_pages' vectors for local_pct, the report's text), one
    // character a page: 'r' malloc's state, read by every task's report and
    // written by a thread as it exits (__malloc_arena_thread_freeres); 'x'
    // the same, also written by a main-arena task's report; 'w' written by
    // that report (a page shared with the collector until then, or one
    // past the heap's old top); 'h' read, then written, by it. A thread's
    // report allocates from its own arena instead: 5 fresh pages after the
    // arena's first. From page_fault_user traces of 6.12 guests
    // (validate/anon-migrate-pinned.toml, one task, and
    // anon-migrate-threads.toml, a main thread and two threads): each
    // fault after the last pass, its address and the symbol of its ip.
    // SIMPLIFICATION: the main thread of a threaded process touches the
    // heap one page higher (its threads' state sits below).
    std::string_view report = {};
    // Its first page's offset in mmsim-exec's file (from_file only).
    uint64_t pgoff = 0;
    // Its pages the collector writes after the tasks have exited, one
    // character a page: 'w'. From a page_fault_user trace of a 6.12 guest
    // (validate/mempolicy-placement.toml): 21 faults between the task's
    // exit and the collector's last read of the counters, 3 on [stack]
    // pages and 2 on bss pages and 4 on heap pages that it had written
    // before the fork (write-protect faults: the pages are its own again),
    // 11 on fresh pages at the heap's top (the report's text, parsed), and
    // 1 instruction fetch. SIMPLIFICATION: how much the heap grows depends
    // on the report's size; these are one plan's.
    std::string_view after = {};
  };
  constexpr uint32_t kRw = mm::Vma::kRead | mm::Vma::kWrite;
  // Addresses as a non-PIE static binary has them, with the heap and
  // [stack] at fixed stand-ins for their randomised places: the heap low,
  // [stack] at the top. The bss's first page holds glibc's locks (stdio's,
  // the exit functions'), which it takes only with threads.
  // The file-backed VMAs are the ELF's PT_LOAD segments as `readelf -l`
  // shows them for mmsim-exec (Debian 12, g++ 12, -static): the headers'
  // page, the text (R E), .rodata and .eh_frame (R), and .data after the
  // RELRO part. SIMPLIFICATION: the RELRO part (6 pages, read-only after
  // the collector's start wrote it: anonymous copies fork copies) is left
  // out; no task faults it.
  static constexpr Image kImage[] = {
      {0x400000, 1, mm::Vma::kRead, "mmsim-exec", "", true, "", 0},
      {0x401000, 0xf7, mm::Vma::kRead | mm::Vma::kExec, "mmsim-exec text", "", true, "", 0x1},
      {0x4f8000, 0x5d, mm::Vma::kRead, "mmsim-exec rodata", "", true, "", 0xf8},
      {0x55b000, 3, kRw, "mmsim-exec data", "wSc", true, "xw.", 0x15b},
      {0x55f000, 6, kRw, "mmsim-exec bss", "t...ww", false, "....r.", 0, "....ww"},
      {0x1000000, 38, kRw, "[heap]", "rr.................LCTrrrrr...........", false,
       ".w...................hww..wwww........", 0, "...................wwww....wwwwwwwwwww"},
      {0x7ffffffde000, 33, kRw, "[stack]", "............rr..............MWrrr", false, "", 0,
       "............................www.."},
  };
  auto map = [&](const Image& i) {
    mm::MmapArgs a;
    a.addr = Vpn(i.addr >> kPageShift);
    a.pages = i.pages;
    a.vm_flags = i.flags;
    a.name = i.name;
    if (i.from_file) {
      a.file = exec_file_;
      a.pgoff = i.pgoff;
    }
    const Vpn at = mm_.mmap(*proc.mm, a, CpuId(0)).addr;
    check(i.use.empty() || i.use.size() == i.pages, "an image VMA's use has a page each");
    const bool stack = std::string_view(i.name) == "[stack]";
    ImagePages& img = proc.image;
    for (uint64_t k = 0; k < i.use.size(); ++k) {
      const Vpn v(at.v + k);
      const char c = i.use[k];
      if (std::string_view("wWMLCTS").find(c) != std::string_view::npos)
        (stack ? img.stack_pages : img.pages).push_back(v);
      if (c == 'r') (stack ? img.stack_read_pages : img.read_pages).push_back(v);
      if (c == 't') img.thread_pages.push_back(v);
      if (c == 'T') img.thread_hot_pages.push_back(v);
      if (c == 'W') img.hot_pages.push_back(v);
      if (c == 'M') img.main_hot_pages.push_back(v);
      if (c == 'L') img.hot_rw_pages.push_back(v);
      if (c == 'S') img.hot_read_pages.push_back(v);
      if (c == 'C') img.count_pages.push_back(v);
      if (c == 'c') img.collector_writes.push_back(v);
    }
    check(i.after.empty() || i.after.size() == i.pages, "an image VMA's `after` has a page each");
    for (uint64_t k = 0; k < i.after.size(); ++k) {
      if (i.after[k] == 'w') img.collector_after_writes.push_back(Vpn(at.v + k));
    }
    check(i.report.empty() || i.report.size() == i.pages, "an image VMA's report has a page each");
    for (uint64_t k = 0; k < i.report.size(); ++k) {
      const Vpn v(at.v + k);
      const char c = i.report[k];
      if (c == 'r' || c == 'x') img.report_state.push_back(v);
      if (c == 'h') img.report_heap_read.push_back(v);
      if (c == 'x' || c == 'w' || c == 'h') img.report_writes.push_back(v);
    }
  };
  for (const Image& i : kImage) map(i);
  // The pages of mmsim-exec's text and .rodata the tasks run or read, each
  // in a 64 KiB fault-around window of its own. fork copies no PTE of a
  // read-only file VMA (it has no anon_vma: vma_needs_copy), so every
  // process faults them anew, and each fault maps its window's cached
  // pages (do_fault_around). From page_fault_user traces of 6.12 guests
  // (validate/anon-migrate-pinned.toml and anon-migrate-threads.toml, each
  // fault's ip symbolised; the same pages in every run): at a task's
  // start, ten text pages (instruction fetches) and two of .rodata; as a
  // process makes its first thread, three text pages, and one the thread
  // runs as it starts (SIMPLIFICATION: faulted by the creator); in a
  // task's report, to_chars's text and the plan's strings; as a thread
  // exits, glibc's exit code at the text's end; and the collector's
  // instruction fetch after the tasks' exit (the report's parsing), in a
  // window its start did not map. Where the code lies moves
  // with each build of mmsim-exec; which windows, and how many, is what
  // the counters see.
  enum class Run : uint8_t { kStart, kFirstThread, kReport, kThreadExit, kCollectorAfter };
  static constexpr struct {
    uint64_t addr;
    Run when;
  } kCode[] = {
      {0x406000, Run::kStart},       {0x413000, Run::kStart},
      {0x42e000, Run::kStart},       {0x44c000, Run::kStart},
      {0x45c000, Run::kStart},       {0x462000, Run::kStart},
      {0x486000, Run::kStart},       {0x49c000, Run::kStart},
      {0x4ad000, Run::kStart},       {0x4b0000, Run::kStart},
      {0x4f8000, Run::kStart},       {0x51d000, Run::kStart},
      {0x47f000, Run::kFirstThread}, {0x4dd000, Run::kFirstThread},
      {0x4e1000, Run::kFirstThread}, {0x4c7000, Run::kFirstThread},
      {0x43d000, Run::kReport},      {0x525000, Run::kReport},
      {0x4f0000, Run::kThreadExit},  {0x433000, Run::kCollectorAfter},
  };
  ImagePages& img = proc.image;
  const std::array<std::vector<Vpn>*, 5> lists = {&img.code_start, &img.code_first_thread,
                                                  &img.code_report, &img.code_thread_exit,
                                                  &img.collector_after_code};
  for (const auto& c : kCode)
    lists[static_cast<size_t>(c.when)]->push_back(Vpn(c.addr >> kPageShift));
  // map_vdso: [vvar] (4 pages: the vDSO's data, pvclock, hvclock and time
  // namespace pages) and [vdso] (2) above it, in one range. The mmap area's
  // first (get_unmapped_area), which moves every later mapping 6 pages down,
  // from 6.9, and before it when the layout is not randomised (vdso_addr
  // then asks for no address); else beside the stack (a fixed stand-in
  // below it). Guest kprobe traces of mmap_region and map_vdso, 6.1 and
  // 6.12, randomised and not.
  constexpr uint64_t kVvarPages = 4, kVdsoPages = 2;
  const bool in_mmap_area = config_.mm.vdso_in_mmap_area || config_.mm.randomize_va_space == 0;
  const uint64_t vdso_at = in_mmap_area
                               ? proc.mm->get_unmapped_area(kVvarPages + kVdsoPages).v << kPageShift
                               : uint64_t{0x7ffffffd0000};
  map({vdso_at, kVvarPages, mm::Vma::kRead | mm::Vma::kPfnMap, "[vvar]", "", false});
  map({vdso_at + (kVvarPages << kPageShift), kVdsoPages, mm::Vma::kRead | mm::Vma::kExec, "[vdso]",
       "", false});
  // A task's start ends with an instruction fetch in [vdso] (its first
  // clock_gettime), once a process: fork copies no PTE of it (a special
  // mapping has no anon_vma) and its threads share the mm. The guests'
  // traces above. SIMPLIFICATION: the fault maps the shared zero page
  // where special_mapping_fault maps the vDSO's own (kernel) page: both
  // count a fault and allocate nothing (but a PTE table). NUMA balancing's
  // scan never marks the zero page; the vDSO's page it marks only before
  // 4.16, which stopped marking COW pages mapped more than once.
  img.code_start.push_back(Vpn((vdso_at >> kPageShift) + kVvarPages));
}

std::shared_ptr<World::Process> World::make_collector() {
  // mmsim-exec's top-level process reads the plan, makes the files, then
  // forks the first task and waits: the first process starts with the
  // collector's image, its pages shared copy-on-write. A page a task writes
  // becomes its own at the write (on the task's node, charged to its
  // memcg); one it only reads stays shared, which change_prot_numa leaves
  // unmarked from 4.16. The collector runs on collector_cpu_, in the root
  // memcg.
  auto c = std::make_shared<Process>();
  mm::FaultCtx ctx = collector_fault_ctx();
  c->mm = mm_.mm_alloc(&ctx);
  c->mm->observer = this;
  map_process_image(*c);
  if (!workload_.image_in_use) return c;
  const ImagePages& img = c->image;
  // It has run the code a task runs at its start (the same fork return).
  // Memory too short for even this (a hostile min_free_kbytes): the first
  // task faults what is missing and meets the shortage itself.
  if (!collector_faults(*c->mm, img.code_start, false, ctx)) return c;
  for (const auto* pages : {&img.pages, &img.read_pages, &img.thread_pages, &img.collector_writes,
                            &img.stack_pages, &img.stack_read_pages}) {
    if (!collector_faults(*c->mm, *pages, true, ctx)) return c;
  }
  return c;
}

bool World::collector_faults(mm::Mm& mm, std::span<const Vpn> pages, bool write,
                             mm::FaultCtx& ctx) {
  for (const Vpn v : pages) {
    if (mm_.handle_mm_fault(mm, v, write, ctx).status != mm::FaultStatus::kOk) return false;
  }
  return true;
}

void World::collector_after_run() {
  const ImagePages& img = collector_->image;
  mm::FaultCtx ctx = collector_fault_ctx();
  if (collector_faults(*collector_->mm, img.collector_after_code, false, ctx))
    collector_faults(*collector_->mm, img.collector_after_writes, true, ctx);
}

World::Step World::touch_pages(TaskExec& t, std::span<const Vpn> pages, bool write) {
  const mm::Mm& mm = *t.proc->mm;
  for (const Vpn v : pages) {
    const mm::Pte pte = mm.pgtable().get(v);
    if (write ? pte.writable() : pte.accessible()) continue;
    // The kernel's work: only in time order.
    if (t.clock > horizon()) return Step::kYield;
    if (!fault(t, v, write)) return Step::kStopped;
  }
  return Step::kNext;
}

World::Step World::touch_image(TaskExec& t) {
  auto touch = [&](std::span<const Vpn> pages, bool write) { return touch_pages(t, pages, write); };
  const bool threaded = t.proc->threaded;
  const bool main_thread = t.task.pid == t.proc->tgid;
  Step s = Step::kNext;
  const ImagePages& img = t.proc->image;
  if (!t.image_faulted) {
    // At its start: all it uses, the code it runs first. The collector's
    // child runs that code before it joins its cgroup (cgroup.procs), so
    // the collector's memcg, the root, counts those faults.
    t.outside_cgroup = t.task.ppid == 0;
    s = touch(img.code_start, false);
    t.outside_cgroup = false;
    if (s == Step::kNext) s = touch(img.pages, true);
    if (s == Step::kNext) s = touch(img.thread_pages, threaded);
    if (s == Step::kNext) s = touch(img.read_pages, false);
    if (s == Step::kNext && main_thread) s = touch(img.stack_pages, true);
    if (s == Step::kNext && main_thread) s = touch(img.stack_read_pages, false);
  } else {
    // After a scan pass: what it keeps touching, reads before writes.
    s = touch(img.hot_pages, true);
    if (s == Step::kNext) s = touch(img.hot_rw_pages, false);
    if (s == Step::kNext) s = touch(img.hot_read_pages, false);
    const bool counts = t.counts && main_thread;
    if (s == Step::kNext && counts) s = touch(img.count_pages, false);
    if (s == Step::kNext) s = touch(img.hot_rw_pages, true);
    if (s == Step::kNext && counts) s = touch(img.count_pages, true);
    if (s == Step::kNext && threaded) s = touch(img.thread_pages, true);
    if (s == Step::kNext && threaded) s = touch(img.thread_hot_pages, true);
    if (s == Step::kNext && main_thread) s = touch(img.main_hot_pages, true);
  }
  if (s == Step::kNext) s = touch(t.own_image_pages, true);
  if (s == Step::kNext) s = make_thread_arena(t);
  // The arena's first page: heap_info, the arena's state, and the
  // executor's counters, which its count ops write.
  if (s == Step::kNext && t.arena_page && (!t.image_faulted || t.counts))
    s = touch(std::span<const Vpn>(&*t.arena_page, 1), true);
  if (s == Step::kNext) {
    t.touch_image = false;
    t.image_faulted = true;
  }
  return s;
}

World::Step World::report(TaskExec& t) {
  // getrusage first: the task's fault counts leave out the report's.
  if (!t.rusage_flt) t.rusage_flt = std::pair(t.task.min_flt, t.task.maj_flt);
  const ImagePages& img = t.proc->image;
  const bool thread = t.task.pid != t.proc->tgid;
  // malloc reads its state first (the first pages the report faults). A
  // fault that ends the task (a kill) leaves it without a process.
  Step s = touch_pages(t, img.report_state, false);
  if (s != Step::kNext) return s;
  if (thread) {
    // A thread: move_pages' vectors and the text from its arena, past the
    // page its state is in (none of its own: it shares another's); then,
    // as it exits, its arena goes on the free list (main_arena's lock and
    // free_list, in malloc's state).
    if (t.arena_page) {
      constexpr uint64_t kReportPages = 5;
      std::array<Vpn, kReportPages> fresh;
      for (uint64_t k = 0; k < kReportPages; ++k) fresh[k] = Vpn(t.arena_page->v + 1 + k);
      s = touch_pages(t, fresh, true);
    }
    if (s == Step::kNext) s = touch_pages(t, img.code_report, false);
    if (s == Step::kNext) s = touch_pages(t, img.report_state, true);
    if (s == Step::kNext) s = touch_pages(t, img.code_thread_exit, false);
  } else {
    // A task of the main arena: chunks of its free lists, then the heap's
    // top, then the code that formats the report.
    s = touch_pages(t, img.report_heap_read, false);
    if (s == Step::kNext) s = touch_pages(t, img.report_writes, true);
    if (s == Step::kNext) s = touch_pages(t, img.code_report, false);
  }
  return s;
}

namespace {
// A thread stack block: 8 MiB and the guard page (glibc's default, under
// an 8 MiB RLIMIT_STACK).
constexpr uint64_t kStackBlockPages = ((8u << 20) >> kPageShift) + 1;
}  // namespace

bool World::map_thread_image(Process& proc, CpuId cpu, std::vector<Vpn>* pages, Vpn* block) {
  mm::Mm& mm = *proc.mm;
  // glibc 2.36's allocate_stack: the stack and its guard page (8 MiB and
  // 4 KiB) mapped PROT_NONE with MAP_STACK, then all but the guard at the
  // bottom made readable and writable. That mprotect merges the stack with
  // a compatible VMA just above it: before 6.7 (no VM_NOHUGEPAGE from
  // MAP_STACK) the first thread's stack joins the mapping made before it.
  constexpr uint32_t kRw = mm::Vma::kRead | mm::Vma::kWrite;
  mm::MmapArgs stack;
  stack.pages = kStackBlockPages;
  stack.name = "thread stack";
  stack.stack = true;
  const mm::MmResult s = mm_.mmap(mm, stack, cpu);
  if (s.error != mm::MmError::kOk) return false;
  mm_.mprotect(mm, Vpn(s.addr.v + 1), stack.pages - 1, kRw);
  // In use: the stack's top 2 pages (smaps, as for the process image).
  pages->assign({Vpn(s.addr.v + stack.pages - 1), Vpn(s.addr.v + stack.pages - 2)});
  *block = s.addr;
  return true;
}

World::Step World::make_thread_arena(TaskExec& t) {
  if (!t.needs_arena) return Step::kNext;
  if (t.clock > horizon()) return Step::kYield;
  t.needs_arena = false;
  t.arena_page = map_thread_arena(t);
  return Step::kNext;
}

std::optional<Vpn> World::map_thread_arena(TaskExec& t) {
  Process& proc = *t.proc;
  mm::Mm& mm = *proc.mm;
  const CpuId cpu = t.task.cpu;
  mm::OpCost cost;
  // glibc 2.36's new_heap, at the thread's first malloc (mmsim-exec's
  // first message, as the thread starts): first 64 MiB at the hint a past
  // arena left (aligned_heap_area, cleared by the try), kept if it comes
  // back 64 MiB-aligned; else a 128 MiB PROT_NONE mapping trimmed to the
  // 64 MiB-aligned 64 MiB inside it (HEAP_MAX_SIZE), which leaves the hint
  // when the mapping was aligned already (likely without address
  // randomisation: a guest's arenas lay 64 MiB apart then). Its first
  // 132 KiB are made writable. The trim's munmap drains the lru_add batch
  // of the CPU the thread starts on.
  constexpr uint32_t kRw = mm::Vma::kRead | mm::Vma::kWrite;
  constexpr uint64_t kHeapMax = (64u << 20) >> kPageShift;
  mm::MmapArgs arena;
  arena.name = "thread arena";
  std::optional<uint64_t> lo;
  if (const std::optional<Vpn> hint = std::exchange(proc.aligned_heap_area, std::nullopt)) {
    arena.addr = hint;
    arena.pages = kHeapMax;
    const mm::MmResult h = mm_.mmap(mm, arena, cpu);
    cost += h.cost;
    if (h.error == mm::MmError::kOk && h.addr.v % kHeapMax == 0) {
      lo = h.addr.v;
    } else if (h.error == mm::MmError::kOk) {
      cost += mm_.munmap(mm, h.addr, kHeapMax, cpu).cost;
    }
  }
  if (!lo) {
    arena.addr.reset();
    arena.pages = 2 * kHeapMax;
    const mm::MmResult a = mm_.mmap(mm, arena, cpu);
    cost += a.cost;
    if (a.error == mm::MmError::kOk) {
      lo = (a.addr.v + kHeapMax - 1) / kHeapMax * kHeapMax;
      if (*lo > a.addr.v) {
        cost += mm_.munmap(mm, a.addr, *lo - a.addr.v, cpu).cost;
      } else {
        proc.aligned_heap_area = Vpn(*lo + kHeapMax);
      }
      cost += mm_.munmap(mm, Vpn(*lo + kHeapMax), a.addr.v + kHeapMax - *lo, cpu).cost;
    }
  }
  // No room (vm.max_map_count): malloc takes an arena already made
  // (reused_arena), SIMPLIFICATION: with no page of its own touched.
  if (lo) cost += mm_.mprotect(mm, Vpn(*lo), (132u << 10) >> kPageShift, kRw).cost;
  charge_sys(t, cost);
  if (!lo) return std::nullopt;
  return Vpn(*lo);
}

void World::release_thread_stack(TaskExec& t) {
  // The thread's last frame is in the page below the top one (struct
  // pthread and the TLS): everything from the block's start to 4 pages
  // below that goes.
  constexpr uint64_t kKept = 2 + ((16u << 10) >> kPageShift);
  const mm::MmResult r =
      mm_.madvise_dontneed(*t.proc->mm, *t.stack_block, kStackBlockPages - kKept, t.task.cpu);
  charge_sys(t, r.cost);
  t.stack_block.reset();
}

World::Step World::exec_fork(TaskExec& t, const Op& op, bool thread) {
  if (t.cursor >= op.count) return Step::kNext;
  if (t.clock > horizon()) return Step::kYield;
  if (sched_.nr_tasks() - 1 >= config_.limits.tasks) {
    stop_at_limit(fmt::format(
        "limits.tasks: the run went past {} tasks created (processes and threads, counting "
        "those that exited); raise [limits] tasks if it should go on",
        config_.limits.tasks));
    return Step::kStopped;
  }
  mm::OpCost cost;
  cost.sys_ns = costs_.fork_base_ns;
  std::shared_ptr<Process> child_proc = t.proc;
  if (!thread) {
    child_proc = std::make_shared<Process>();
    const mm::FaultCtx parent_ctx = fault_ctx(t);  // the parent allocates the child's tables
    child_proc->mm = mm_.mm_alloc(&parent_ctx);
    child_proc->mm->observer = this;
    child_proc->mm->memcg = t.proc->mm->memcg;  // a child starts in its parent's cgroup
    child_proc->regions = t.proc->regions;
    cost += mm_.dup_mmap(*t.proc->mm, *child_proc->mm, parent_ctx);
  }
  std::vector<Vpn> own_pages = t.own_image_pages;  // fork: the child runs on the same stack
  if (!thread) {
    child_proc->image = t.proc->image;
    child_proc->threaded = t.proc->threaded;
    child_proc->aligned_heap_area = t.proc->aligned_heap_area;  // the parent's memory
  }
  Vpn stack_block;
  if (thread && !map_thread_image(*t.proc, t.task.cpu, &own_pages, &stack_block)) {
    // pthread_create fails (EAGAIN): a scenario cannot go on without its
    // thread, so the run stops, as at a limit.
    stop_at_limit(fmt::format(
        "threads: pthread_create of program {} fails with EAGAIN: the process has more than "
        "vm.max_map_count ({}) mappings, with each thread's stack and malloc arena",
        workload_.programs[op.program].name, mm_.config().max_map_count));
    return Step::kStopped;
  }
  charge_sys(t, cost);
  if (thread && workload_.image_in_use) {
    // pthread_create writes the new thread's struct pthread (2.3 KB in
    // glibc 2.36) and its TLS (208 bytes in mmsim-exec) at the top of its
    // stack: the top page is the creator's first touch, on the creator's
    // node, and the thread's faults on it after a scan marks it are remote
    // until it moves. The thread's frames begin below the static TLS
    // surplus, in the next page, which the thread touches first. (In a 6.1
    // guest, a thread whose faults between two placements were all remote
    // backed its scan period off: local + shared = 0.) A fresh anonymous
    // page: only a kill stops the fault.
    if (!fault(t, own_pages.front(), true)) return Step::kStopped;
    // The first thread: from now on glibc takes its locks, in the bss, and
    // the executor has written its threads' state in the heap.
    if (!t.proc->threaded) {
      t.proc->threaded = true;
      for (const Vpn v : t.proc->image.code_first_thread) {
        if (!t.proc->mm->pgtable().get(v).accessible() && !fault(t, v, false))
          return Step::kStopped;
      }
      for (const Vpn v : t.proc->image.thread_pages) {
        if (!t.proc->mm->pgtable().get(v).writable() && !fault(t, v, true)) return Step::kStopped;
      }
    }
  }
  const uint32_t child = spawn(t.task.pid, child_proc, op.program, t.clock, t.cursor, op.count);
  exec(child).own_image_pages = std::move(own_pages);
  if (thread) {
    exec(child).stack_block = stack_block;
    exec(child).needs_arena = true;
  }
  ++t.live_children;
  ++t.cursor;
  return Step::kContinue;
}

World::Step World::exec_op(TaskExec& t, const Op& op) {
  // Only an access op streams from memory.
  if (op.kind != OpKind::kSweep && op.kind != OpKind::kTouch && op.kind != OpKind::kCount &&
      op.kind != OpKind::kLoop)
    bandwidth_.clear_demand(t.task.pid);
  switch (op.kind) {
    case OpKind::kCount:
      count(t, op.counter, op.count);
      return Step::kNext;
    case OpKind::kSweep:
    case OpKind::kTouch:
      t.last_access = &op;
      return exec_pages(t, op);
    case OpKind::kLoop:
      t.stack.push_back(Frame{&op.body, 0, &op, 0, t.clock + op.duration, t.clock});
      return Step::kContinue;
    case OpKind::kFork:
      return exec_fork(t, op, false);
    case OpKind::kThreads:
      return exec_fork(t, op, true);
    case OpKind::kWait:
      if (t.live_children == 0) return Step::kNext;
      t.waiting = true;
      // Until its children end it reuses nothing: the lines it left in the
      // LLC are the running tasks' to evict (its next op declares its own
      // again).
      drop_footprints(t.task.pid, t.clock);
      leave_cpu(t, sched::TaskState::kSleeping);
      return Step::kStopped;
    case OpKind::kCgroup: {
      // Writing the pid to the cgroup: mem_cgroup_move_task. The charges of
      // the mm move as a timed operation during which moving_account > 0.
      if (t.clock > horizon()) return Step::kYield;
      const uint32_t to = op.cgroup;
      if (!memcg_.enabled() || to == t.proc->mm->memcg) {
        t.proc->mm->memcg = memcg_.enabled() ? to : 0;
        return Step::kNext;
      }
      const double cost = costs_.syscall_ns + memcg_.begin_move(*t.proc->mm, to);
      t.moving = true;
      t.moving_to = to;
      ++t.stack.back().pc;
      t.cursor = 0;
      ++t.gen;
      queue_.schedule(t.clock + to_tick(cost), this, kMoveEnd, t.task.pid, to, 0);
      if (config_.trace)
        config_.trace->begin("charge move", t.task.pid, "move charges", t.clock,
                             fmt::format("\"pid\":{},\"to_memcg\":{}", t.task.pid, to));
      return Step::kStopped;
    }
    case OpKind::kPin:
      return exec_pin(t, op);
    case OpKind::kMempolicy:
      return exec_mempolicy(t, op);
    case OpKind::kSleep: {
      if (t.cursor == 1) return Step::kNext;
      t.cursor = 1;
      leave_cpu(t, sched::TaskState::kSleeping);
      queue_.schedule(t.clock + op.duration, this, kWakeTask, t.task.pid);
      return Step::kStopped;
    }
    default:
      break;
  }
  return exec_syscall(t, op);
}

World::Step World::exec_pin(TaskExec& t, const Op& op) {
  // sched_setaffinity(0, ...): changes run queues, so only in time order.
  if (t.clock > horizon()) return Step::kYield;
  const topo::Topology& topo = mm_.topology();
  std::vector<CpuId> cpus;
  bool bad = false;  // a CPU or node the machine lacks (a host machine only)
  for (const CpuId c : op.cpus) {
    if (c.v < topo.nr_cpus()) {
      cpus.push_back(c);
    } else {
      bad = true;
    }
  }
  const std::vector<NodeId> nodes =
      op.node_share == NodeShare::kNone ? op.cpu_nodes : share_nodes(t, op.node_share);
  for (const NodeId n : nodes) {
    if (n.v >= topo.nr_nodes()) {
      bad = true;
      continue;
    }
    const auto& nc = topo.node(n).cpus;
    cpus.insert(cpus.end(), nc.begin(), nc.end());
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  charge_sys(t, mm::OpCost{.sys_ns = costs_.syscall_ns});
  if (cpus.empty()) {
    // The kernel refuses a mask with no online CPU (EINVAL) and keeps the old one.
    record_error(t, "sched_setaffinity failed: EINVAL (no CPU of this machine in the mask)");
    return Step::kNext;
  }
  if (bad) record_error(t, "sched_setaffinity: CPUs or nodes this machine lacks are ignored");
  // Moved: it runs again when its new CPU takes it (run_from), at the next op.
  if (!sched_.set_cpus_allowed(t.task, std::move(cpus), t.clock)) return Step::kNext;
  ++t.stack.back().pc;
  t.cursor = 0;
  drop_footprints(t.task.pid, t.clock);
  return Step::kStopped;
}

std::vector<NodeId> World::share_nodes(const TaskExec& t, NodeShare share) const {
  const topo::Topology& topo = mm_.topology();
  std::vector<NodeId> with_cpus;
  for (size_t n = 0; n < topo.nr_nodes(); ++n) {
    const NodeId id(static_cast<uint16_t>(n));
    if (!topo.node(id).cpus.empty()) with_cpus.push_back(id);
  }
  if (share == NodeShare::kAll) return with_cpus;
  const auto [first, last] =
      util::node_share(t.slice_index, t.slices, with_cpus.size(), share == NodeShare::kMirror);
  return {with_cpus.begin() + static_cast<ptrdiff_t>(first),
          with_cpus.begin() + static_cast<ptrdiff_t>(last)};
}

World::Step World::exec_mempolicy(TaskExec& t, const Op& op) {
  // set_mempolicy(2): the task's own policy, for its later allocations in
  // VMAs without one. A policy without MPOL_F_NUMA_BALANCING has no
  // MPOL_F_MOF: task_numa_work skips such VMAs while this task scans, and
  // mpol_misplaced moves nothing it faults on (balancer).
  if (t.clock > horizon()) return Step::kYield;
  charge_sys(t, mm::OpCost{.sys_ns = costs_.syscall_ns});
  mm::MemPolicy p = op.policy;
  if (op.node_share != NodeShare::kNone) p.nodes = share_nodes(t, op.node_share);
  t.mempolicy = std::move(p);
  t.il_next = 0;  // do_set_mempolicy: il_prev starts before the first node
  balancer_.set_task_policy_mof(t.task.pid, t.mempolicy.mode == mm::MemPolicy::Mode::kDefault);
  return Step::kNext;
}

World::Step World::exec_syscall(TaskExec& t, const Op& op) {
  mm::Mm& mm = *t.proc->mm;
  // The rest are system calls: in time order.
  if (t.clock > horizon()) return Step::kYield;
  Region& region = t.proc->regions[op.region];
  mm::MmResult r;
  switch (op.kind) {
    case OpKind::kMap: {
      if (region.mapped) {
        record_error(t, "map: region " + workload_.regions[op.region].name + " is already mapped");
        r.cost.sys_ns = costs_.syscall_ns;  // the call was made, and refused
        break;
      }
      mm::MmapArgs a;
      a.pages = op.pages;
      a.vm_flags = uint32_t{mm::Vma::kRead};
      if (op.writable) a.vm_flags |= mm::Vma::kWrite;
      if (op.shared) a.vm_flags |= mm::Vma::kShared;
      if (op.exec) a.vm_flags |= mm::Vma::kExec;
      a.file = op.file >= 0 ? mm_.file(static_cast<uint32_t>(op.file)) : nullptr;
      a.pgoff = op.file_offset_pages;
      a.policy = op.policy;
      a.name = workload_.regions[op.region].name;
      r = mm_.mmap(mm, a, t.task.cpu);
      if (r.error == mm::MmError::kOk) region = Region{r.addr, op.pages, true};
      break;
    }
    case OpKind::kUnmap:
      if (!region.mapped) {
        // munmap of a range where nothing is mapped succeeds, doing nothing.
        r.cost.sys_ns = costs_.syscall_ns;
        break;
      }
      r = mm_.munmap(mm, region.start, region.pages, t.task.cpu);
      region.mapped = false;
      break;
    case OpKind::kMadvise:
    case OpKind::kMlock:
      // A range that is not all mapped: madvise works on the mapped part and
      // mlock locks it, then both fail with ENOMEM (madvise_walk_vmas,
      // apply_vma_lock_flags).
      if (op_pages(t, op) > 0) {
        access_.add_meta_footprint(accessor(t), mm, op_start(t, op), op_pages(t, op));
        reprice_sockets(t.clock);
        if (op.kind == OpKind::kMadvise && op.advice == Op::Advice::kDontneed) {
          r = mm_.madvise_dontneed(mm, op_start(t, op), op_pages(t, op), t.task.cpu);
        } else if (op.kind == OpKind::kMadvise) {
          r = mm_.madvise_hugepage(mm, op_start(t, op), op_pages(t, op),
                                   op.advice == Op::Advice::kHugepage);
        } else {
          // mlock populates the whole range in one call: what it may add is
          // checked against the limits first.
          if (!check_memory_limits(op_pages(t, op))) return Step::kStopped;
          mm::FaultCtx ctx = fault_ctx(t);
          r = mm_.mlock(mm, op_start(t, op), op_pages(t, op), ctx);
        }
      } else {
        r.cost.sys_ns = costs_.syscall_ns;
      }
      if (r.error == mm::MmError::kOk && !op_in_region(t, op)) r.error = mm::MmError::kNoMem;
      break;
    default:
      check(false, "unhandled op");
  }
  charge_sys(t, r.cost);
  if (r.error == mm::MmError::kOom) {
    // A populate (mlock) that could not get a page even after reclaim: the
    // OOM killer takes the task, as for its own faults.
    kill_task(t, oom_reason());
    return Step::kStopped;
  }
  if (r.error != mm::MmError::kOk) {
    static constexpr const char* kNames[] = {"ok", "EINVAL", "ENOMEM", "out of memory"};
    static constexpr const char* kCalls[] = {"mmap", "munmap", "", "",        "",
                                             "",     "",       "", "madvise", "mlock"};
    record_error(t,
                 fmt::format("{} of region {} failed: {}", kCalls[static_cast<int>(op.kind)],
                             workload_.regions[op.region].name, kNames[static_cast<int>(r.error)]));
  }
  if (op.kind != OpKind::kMap) run_checker("after a system call");
  if (r.cost.io_ns > 0) {
    ++t.stack.back().pc;
    t.cursor = 0;
    if (config_.trace) t.task.wait_detail = "page reads of a system call";
    leave_cpu(t, sched::TaskState::kUninterruptible);
    queue_.schedule(t.clock + to_tick(r.cost.io_ns), this, kWakeTask, t.task.pid);
    return Step::kStopped;
  }
  return Step::kNext;
}

bool World::try_fast_forward(TaskExec& t) {
  if (!config_.fast_forward) return false;
  Frame& f = t.stack.back();
  const std::vector<Op>& body = *f.ops;
  double c = 0;
  uint64_t lo = UINT64_MAX, hi = 0;
  const mm::PageTable& pt = t.proc->mm->pgtable();
  std::vector<Piece> pieces;
  traffic_.clear();
  for (size_t j = 0; j < body.size(); ++j) {
    const Op& op = body[j];
    // A wait with no children returns at once (ECHILD), and the body makes none.
    if (op.kind == OpKind::kWait && t.live_children == 0) continue;
    if (!is_pure(op)) return false;
    if (op.kind != OpKind::kSweep) continue;
    if (!op_in_region(t, op)) return false;  // the pass by pass run ends in SIGSEGV
    const Vpn from = op_start(t, op);
    const Vpn to(from.v + op_pages(t, op));
    // Passes over more than a stretch are run stretch by stretch.
    if (to.v - from.v > kMaxStretchPages) return false;
    if (to == from) continue;
    if (pt.next_blocked(from, to, op.write) != to) return false;
    if (Vpn at = to; op.write && fault_in_flight(t, from, &at)) return false;
    const double cost = range_cost_ns(t, op, from, to, &traffic_);
    pieces.push_back(Piece{j, from, to.v - from.v, c, cost});
    c += cost;
    lo = std::min(lo, from.v);
    hi = std::max(hi, to.v);
  }
  if (c <= 0) return false;
  // The passes' noise first, so that a loop of a duration counts the passes
  // that fit once they are stretched.
  const double left = static_cast<double>((f.end - t.clock).ns);
  stretch_by_noise(
      t, f.loop->count ? c * static_cast<double>(f.loop->count - f.iter) : std::max(c, left), c,
      pieces);
  uint64_t k;
  if (f.loop->count) {
    k = f.loop->count - f.iter;
  } else {
    k = static_cast<uint64_t>(std::ceil(left / c));
  }
  if (k < 2) return false;
  set_stream_demand(t);
  Segment& s = t.seg;
  s.kind = Segment::Kind::kLoop;
  s.unit_ns = c;
  s.units = k;
  s.lo = Vpn(lo);
  s.hi = Vpn(hi);
  s.pieces = std::move(pieces);
  return true;
}

void World::run_task(TaskExec& t) {
  // The kernel work below runs for this task on its CPU, at its clock.
  mm_.cache().set_current(t.task.pid, t.task.cpu);
  acting_ = &t;
  const struct Done {
    const TaskExec*& acting;
    ~Done() { acting = nullptr; }
  } done{acting_};
  for (;;) {
    if (t.task.state != sched::TaskState::kRunning || t.blocked_on) return;
    if (t.clock > config_.time_limit) {
      // Past the run's time limit: park the task where the run will stop.
      schedule_run(t, t.clock);
      return;
    }
    if (t.clock >= numa_deadline(t)) {
      // task_tick_numa; its scan work changes PTEs, so only in time order.
      if (t.clock > horizon()) {
        schedule_run(t, t.clock);
        return;
      }
      numa_tick(t);
      continue;
    }
    Frame& f = t.stack.back();
    if (f.pc >= f.ops->size()) {
      if (!f.loop) {
        if (workload_.image_in_use) {
          // Again after a yield: the pages it has touched fault no more.
          const Step s = report(t);
          if (s == Step::kYield) schedule_run(t, t.clock);
          if (s != Step::kNext) return;
        }
        exit_task(t);
        return;
      }
      if (t.clock == f.iter_start) {
        // Costs of zero (e.g. a zero mem_latency_ns) make an iteration that
        // takes no time: the loop would never reach its end.
        stop_at_limit(fmt::format(
            "costs: an iteration of a loop in program {} took no simulated time with these costs "
            "(a cost of 0 such as mem_latency_ns, or sleeps of 0?); every loop must advance the "
            "clock",
            workload_.programs[t.program].name));
        return;
      }
      ++f.iter;
      f.pc = 0;
      t.cursor = 0;
      f.iter_start = t.clock;
    }
    if (f.loop && f.pc == 0 && t.cursor == 0) {
      bool done = f.loop->count ? f.iter >= f.loop->count : t.clock >= f.end;
      if (!done && !takes_time(*f.loop)) {
        // Only counts: every remaining iteration at once (the loader refuses
        // such a body in a loop bounded by time, which would never end).
        count_timeless(t, *f.ops, f.loop->count - f.iter);
        done = true;
      }
      if (done) {
        t.stack.pop_back();
        ++t.stack.back().pc;
        continue;
      }
    }
    // Preemption at the end of the slice, when someone is waiting.
    const CpuId cpu = t.task.cpu;
    if (t.clock >= sched_.slice_end(cpu)) {
      if (others_waiting(t)) {
        if (t.clock > horizon()) {
          schedule_run(t, t.clock);
          return;
        }
        leave_cpu(t, sched::TaskState::kRunnable);
        return;
      }
      sched_.renew_slice(cpu, t.clock);
    }
    if (t.needs_arena && t.cursor == 0 && !workload_.image_in_use) {
      if (make_thread_arena(t) == Step::kYield) schedule_run(t, t.clock);
      if (t.needs_arena) return;
      continue;
    }
    if (t.touch_image && t.cursor == 0 && workload_.image_in_use) {
      const Step s = touch_image(t);
      if (s == Step::kYield) schedule_run(t, t.clock);
      if (s != Step::kNext) return;
      continue;
    }
    if (f.loop && f.pc == 0 && t.cursor == 0 && try_fast_forward(t)) {
      if (!start_segment(t)) return;
      continue;
    }
    if (++ops_ > config_.limits.ops) {
      stop_at_limit(fmt::format(
          "limits.ops: the run executed more than {} program operations; raise [limits] ops if it "
          "should go on (the host takes about 0.3 us to simulate each)",
          config_.limits.ops));
      return;
    }
    const Op& op = (*f.ops)[f.pc];
    const Step s = exec_op(t, op);
    switch (s) {
      case Step::kNext:
        ++t.stack.back().pc;
        if (op.kind != OpKind::kLoop) t.cursor = 0;
        break;
      case Step::kContinue:
        if (op.kind == OpKind::kLoop) t.cursor = 0;
        break;
      case Step::kYield:
        schedule_run(t, t.clock);
        return;
      case Step::kStopped:
        return;
    }
  }
}

void World::kill_task(TaskExec& t, const std::string& why) {
  record_error(t, why);
  t.stack_block.reset();  // a killed thread does not run start_thread's end
  t.stack.resize(1);
  t.stack.back().pc = t.stack.back().ops->size();
  exit_task(t);
}

double World::local_pct(const TaskExec& t) const {
  if (!t.last_access) return -1;
  const Vpn from = op_start(t, *t.last_access);
  const Vpn to(from.v + op_pages(t, *t.last_access));
  std::vector<uint64_t> by_node;
  access_.pages_by_node(t.proc->mm->pgtable(), from, to, by_node);
  uint64_t mapped = 0;
  for (const uint64_t n : by_node) mapped += n;
  if (mapped == 0) return -1;
  return 100.0 * static_cast<double>(by_node[t.task.node.v]) / static_cast<double>(mapped);
}

void World::exit_task(TaskExec& t) {
  if (t.seg.active) apply_segment(t, t.clock);
  t.local_pct = local_pct(t);
  mm::Mm& mm = *t.proc->mm;
  if (t.moving) {
    // Killed (its thread group was) while moving its charges: the move,
    // which a signal does not interrupt (mem_cgroup_move_task), completes
    // first; its kMoveEnd event is then stale.
    t.moving = false;
    memcg_.finish_move(mm, t.moving_to);
  }
  // A thread that is not the last hands its stack back (start_thread); the
  // last one ends the process instead.
  if (t.stack_block && mm.users > 1) release_thread_stack(t);
  t.task.times.sys_ns += costs_.exit_base_ns;
  t.clock += to_tick(costs_.exit_base_ns);
  if (--mm.users == 0) {
    charge_sys(t, mm_.exit_mmap(mm, t.task.cpu));
    run_checker("after exit_mmap");
  }
  drop_footprints(t.task.pid, t.clock);
  balancer_.task_exit(t.task.pid);
  auto& list = tasks_by_mm_[mm.id()];
  list.erase(std::remove(list.begin(), list.end(), t.task.pid), list.end());
  t.task.exit_time = t.clock;
  last_exit_ = std::max(last_exit_, t.clock);
  leave_cpu(t, sched::TaskState::kDead);
  --live_tasks_;
  const auto proc = std::move(t.proc);
  t.proc = nullptr;
  if (t.task.ppid) {
    TaskExec& parent = exec(t.task.ppid);
    if (--parent.live_children == 0 && parent.waiting) {
      parent.waiting = false;
      ++parent.stack.back().pc;
      parent.cursor = 0;
      wake(parent, t.clock);
    }
  }
}

}  // namespace mmsim::workload
