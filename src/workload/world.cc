// The executor: runs each task's program against the memory manager and the
// run queues, in simulated time. See world.h for the run-ahead rule.
#include "workload/world.h"

#include <algorithm>
#include <cmath>

#include "sim/check.h"
#include "sim/rng.h"

namespace mmsim::workload {

namespace {

// Costs are non-negative: round half up without a libm call (hot path).
Tick to_tick(double ns) { return Tick(static_cast<int64_t>(ns + 0.5)); }

bool is_pure(const Op& op) { return op.kind == OpKind::kSweep || op.kind == OpKind::kCount; }

}  // namespace

World::World(const topo::Topology& topo, const cost::CostProfile& costs, mm::MmConfig mm_config,
             const Workload& workload, WorldConfig config)
    : topo_(topo),
      costs_(costs),
      workload_(workload),
      config_(config),
      mm_(topo, costs, mm_config),
      memcg_(config.memcg, costs, mm_, topo.nr_cpus(), config.cgroups),
      rq_(topo),
      balancer_(config.numa, topo, mm_, *this),
      slices_(sched::SliceConfig::for_cpus(topo.nr_cpus())),
      llc_sets_(topo.nr_sockets()),
      llc_bytes_(topo.nr_sockets(), 0) {
  tasks_.emplace_back();  // pid 0 is the idle task
  if (memcg_.enabled()) mm_.set_memcg(&memcg_);
  // Each CPU's scheduler tick has its own phase: the seed's only role.
  sim::Rng rng(config.seed);
  tick_phase_.reserve(topo.nr_cpus());
  for (size_t c = 0; c < topo.nr_cpus(); ++c)
    tick_phase_.push_back(Tick(static_cast<int64_t>(rng.below(config.numa.tick_ns))));
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
}

const sched::Task& World::task(uint32_t pid) const { return tasks_.at(pid)->task; }

void World::record_error(const TaskExec& t, const std::string& what) {
  errors_.push_back("pid " + std::to_string(t.task.pid) + " (" + t.task.comm + ") at " +
                    std::to_string(t.clock.seconds()) + " s: " + what);
}

void World::run_checker(const char* when) {
  if (!config_.check_invariants) return;
  auto errors = mm_.check_invariants();
  for (auto& e : memcg_.check_invariants()) errors.push_back(std::move(e));
  for (auto& e : errors) {
    if (check_failures_.size() < 50) check_failures_.push_back(std::string(when) + ": " + e);
  }
}

RunResult World::run() {
  // Files, and what of them the page cache holds before the run.
  for (const auto& f : workload_.files) {
    mm::AddressSpace& as = mm_.create_file(f.name, f.pages, false);
    if (f.cached && !mm_.preload_file(as, NodeId(f.cached_node)))
      errors_.push_back("file " + f.name + ": memory ran out while caching it; the rest stays on disk");
  }
  mm::VmStat before = mm_.vmstat();

  auto proc = std::make_shared<Process>();
  proc->mm = mm_.mm_alloc();
  proc->mm->observer = this;
  proc->mm->memcg = memcg_.enabled() ? workload_.init_cgroup : 0;
  proc->regions.resize(workload_.regions.size());
  const uint32_t init = spawn(0, proc, workload_.init_program, Tick(0));
  tasks_[init]->task.comm = workload_.init_comm;
  timeline_base_ = before;
  if (config_.sample_interval.ns > 0) queue_.schedule(config_.sample_interval, this, kSample, 0, 0, 2);

  RunResult r;
  r.events = queue_.run(config_.time_limit);
  r.time_limit_hit = !queue_.empty() || live_tasks_ > 0;
  r.elapsed_s = (r.time_limit_hit ? config_.time_limit : last_exit_).seconds();
  run_checker("end of run");

  const mm::VmStat& after = mm_.vmstat();
  for (size_t i = 0; i < mm::VmStat::size(); ++i) {
    r.vmstat.emplace_back(std::string(mm::VmStat::name(i)), after.at(i) - before.at(i));
  }
  r.page_events = mm_.page_events();
  for (size_t pid = 1; pid < tasks_.size(); ++pid) {
    const TaskExec& t = *tasks_[pid];
    TaskResult tr;
    tr.pid = t.task.pid;
    tr.tgid = t.task.tgid;
    tr.ppid = t.ppid;
    tr.comm = t.task.comm;
    tr.program = workload_.programs[t.program].name;
    tr.cpu = t.task.cpu.v;
    tr.node = t.task.node.v;
    tr.times = t.task.times;
    tr.min_flt = t.task.min_flt;
    tr.maj_flt = t.task.maj_flt;
    tr.nvcsw = t.task.nvcsw;
    tr.nivcsw = t.task.nivcsw;
    tr.start_s = t.task.start_time.seconds();
    tr.exit_s = t.task.state == sched::TaskState::kDead ? t.task.exit_time.seconds() : r.elapsed_s;
    tr.counters = t.counters;
    if (const numa::TaskNuma* n = balancer_.find(t.task.pid)) {
      tr.numa.numa_scan_seq = n->scan_seq;
      tr.numa.numa_pages_migrated = n->pages_migrated;
      tr.numa.numa_preferred_nid = n->preferred_nid;
      tr.numa.total_numa_faults = n->total_faults;
      tr.numa.numa_group_id = n->group ? n->group->gid : 0;
      tr.numa.numa_scan_period_ms = n->scan_period_ms;
      const size_t nodes = topo_.nr_nodes();
      for (size_t node = 0; node < nodes; ++node) {
        std::array<int64_t, 4> f{n->faults[node * 2 + 1], n->faults[node * 2], 0, 0};
        if (n->group) f = {f[0], f[1], n->group->mem[node * 2 + 1], n->group->mem[node * 2]};
        tr.numa.numa_faults.push_back(f);
      }
    }
    r.tasks.push_back(std::move(tr));
  }
  r.errors = errors_;
  r.check_failures = check_failures_;
  r.timeline = timeline_;
  if (memcg_.enabled()) r.memcg = memcg_.cgroups();
  std::erase_if(r.timeline, [&](const Sample& smp) { return smp.t_s > r.elapsed_s + 1e-9; });
  return r;
}

uint32_t World::spawn(uint32_t parent_pid, std::shared_ptr<Process> proc, uint32_t program,
                      Tick at) {
  const uint32_t pid = static_cast<uint32_t>(tasks_.size());
  auto te = std::make_unique<TaskExec>();
  TaskExec& t = *te;
  tasks_.push_back(std::move(te));
  t.task.pid = pid;
  const bool new_mm = proc->tgid == 0;
  if (proc->tgid == 0) proc->tgid = pid;
  t.task.tgid = proc->tgid;
  t.ppid = parent_pid;
  t.task.comm = workload_.programs[program].name;
  t.proc = std::move(proc);
  t.program = program;
  t.counters.assign(workload_.counters.size(), 0);
  t.stack.push_back(Frame{&workload_.programs[program].ops, 0, nullptr, 0, Tick()});
  const NodeId parent_node = parent_pid ? exec(parent_pid).task.node : NodeId(0);
  t.task.cpu = rq_.select_cpu_for_new_task(parent_node);
  t.task.node = topo_.cpu_to_node(t.task.cpu);
  t.task.start_time = at;
  t.clock = at;
  mm::Mm& mm = *t.proc->mm;
  ++mm.users;
  balancer_.task_init(pid, mm, new_mm, at);
  if (tasks_by_mm_.size() <= mm.id()) tasks_by_mm_.resize(mm.id() + 1);
  tasks_by_mm_[mm.id()].push_back(pid);
  ++live_tasks_;
  rq_.add(t.task.cpu);
  t.task.state = sched::TaskState::kRunnable;
  t.task.state_since = at;
  if (rq_.current(t.task.cpu) == 0) {
    start_running(t, at);
  } else {
    rq_.queue(t.task.cpu).push_back(pid);
  }
  return pid;
}

void World::schedule_run(TaskExec& t, Tick at) {
  ++t.gen;
  queue_.schedule(at, this, kRunTask, t.task.pid, t.gen);
}

void World::start_running(TaskExec& t, Tick at) {
  const CpuId cpu = t.task.cpu;
  rq_.current(cpu) = t.task.pid;
  if (t.task.state == sched::TaskState::kRunnable) t.task.times.wait_ns += (at - t.task.state_since).ns;
  t.task.state = sched::TaskState::kRunning;
  t.task.state_since = at;
  t.clock = at;
  rq_.slice_end(cpu) = at + slices_.slice(rq_.nr_running(cpu));
  auto& mask = t.proc->mm->cpumask();
  if (std::find(mask.begin(), mask.end(), cpu) == mask.end()) mask.push_back(cpu);
  schedule_run(t, at);
}

void World::leave_cpu(TaskExec& t, sched::TaskState state) {
  const CpuId cpu = t.task.cpu;
  check(rq_.current(cpu) == t.task.pid, "leave_cpu of a task not on its CPU");
  auto& mask = t.proc->mm->cpumask();
  mask.erase(std::remove(mask.begin(), mask.end(), cpu), mask.end());
  t.task.state = state;
  t.task.state_since = t.clock;
  rq_.current(cpu) = 0;
  if (state == sched::TaskState::kRunnable) {
    ++t.task.nivcsw;
    rq_.queue(cpu).push_back(t.task.pid);
  } else {
    ++t.task.nvcsw;
    rq_.remove(cpu);
  }
  ++t.gen;  // drop any pending run event
  if (!rq_.queue(cpu).empty()) {
    TaskExec& next = exec(rq_.queue(cpu).front());
    rq_.queue(cpu).pop_front();
    // The switch costs the incoming task system time.
    const Tick at = t.clock;
    start_running(next, at);
    next.task.times.sys_ns += costs_.context_switch_ns;
    next.clock = at + to_tick(costs_.context_switch_ns);
    schedule_run(next, next.clock);
  }
}

void World::wake(TaskExec& t, Tick at) {
  const double slept = static_cast<double>((at - t.task.state_since).ns);
  if (t.task.state == sched::TaskState::kUninterruptible) {
    t.task.times.iowait_ns += slept;
  } else {
    t.task.times.sleep_ns += slept;
  }
  rq_.add(t.task.cpu);
  t.task.state = sched::TaskState::kRunnable;
  t.task.state_since = at;
  t.clock = at;
  if (rq_.current(t.task.cpu) == 0) {
    start_running(t, at);
  } else {
    rq_.queue(t.task.cpu).push_back(t.task.pid);
    // A woken task preempts a current one that has used up its slice.
    TaskExec& cur = exec(rq_.current(t.task.cpu));
    if (cur.seg.active && cur.seg.stop > rq_.slice_end(t.task.cpu)) {
      const Tick stop = std::max(rq_.slice_end(t.task.cpu), at);
      if (stop < cur.seg.stop) {
        cur.seg.stop = stop;
        schedule_run(cur, stop);
      }
    }
  }
}

void World::on_event(sim::EventQueue&, const sim::Event& e) {
  if (e.kind == kSample) {
    Sample smp;
    smp.t_s = e.time.seconds();
    for (size_t i = 0; i < kTimelineCounters.size(); ++i)
      smp.vm[i] = mm_.vmstat()[kTimelineCounters[i]] - timeline_base_[kTimelineCounters[i]];
    for (size_t pid = 1; pid < tasks_.size(); ++pid) {
      const TaskExec& x = *tasks_[pid];
      if (x.task.state == sched::TaskState::kUninterruptible || x.blocked_on) ++smp.tasks_in_d;
    }
    if (memcg_.enabled()) {
      const auto& g = memcg_.cgroups()[workload_.init_cgroup];
      smp.memcg = {g.cache, g.mapped_file, g.pgpgin};
    }
    timeline_.push_back(smp);
    if (live_tasks_ > 0) queue_.schedule(e.time + config_.sample_interval, this, kSample, 0, 0, 2);
    return;
  }
  if (e.kind == kMigrationCheck || e.kind == kMigrationEnd) {
    auto it = migrations_.find(static_cast<uint32_t>(e.arg0));
    if (it == migrations_.end()) return;
    if (e.kind == kMigrationCheck) {
      migration_check(it->second);
    } else {
      migration_end(it->second);
    }
    return;
  }
  TaskExec& t = exec(static_cast<uint32_t>(e.arg0));
  if (e.kind == kMoveEnd) {
    // The charge move is over: accounts move, moving_account drops.
    memcg_.finish_move(*t.proc->mm, static_cast<uint32_t>(e.arg1));
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
  // Cut every run-ahead segment of this mm that relies on the range.
  const Tick now = queue_.now();
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
    if (reach < x && migrations_.count(mig)) {
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
    t.task.state_since = x;
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
      if (body[j].kind == OpKind::kCount) t.counters[body[j].counter] += body[j].count * times;
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

Tick World::reach_time(const TaskExec& t, Vpn vpn, Tick now) const {
  const Segment& s = t.seg;
  for (const Piece& p : s.pieces) {
    if (vpn < p.start || vpn.v >= p.start.v + p.pages) continue;
    const double off = p.offset_ns + static_cast<double>(vpn.v - p.start.v) * (p.ns / static_cast<double>(p.pages));
    const double elapsed = static_cast<double>((now - s.t0).ns);
    double at;
    if (s.kind == Segment::Kind::kStretch) {
      at = off;
      if (at < elapsed) return Tick::max();  // already read
    } else {
      double delta = off - std::fmod(elapsed, s.unit_ns);
      if (delta < 0) delta += s.unit_ns;
      at = elapsed + delta;
    }
    const Tick reach = s.t0 + to_tick(at);
    return reach < s.stop ? reach : Tick::max();
  }
  return Tick::max();
}

bool World::start_segment(TaskExec& t) {
  Segment& s = t.seg;
  s.active = true;
  ++t.proc->mm->runahead_tasks;
  s.t0 = t.clock;
  s.id = next_segment_++;
  t.reaches.clear();
  s.stop = t.clock + to_tick(s.unit_ns * static_cast<double>(s.units));
  if (others_waiting(t)) s.stop = std::min(s.stop, std::max(rq_.slice_end(t.task.cpu), t.clock));
  s.stop = std::min(s.stop, std::max(numa_deadline(t), t.clock));
  if (s.stop <= horizon()) {
    apply_segment(t, s.stop);  // no migration can have begun meanwhile
    return true;
  }
  schedule_run(t, s.stop);
  return false;
}

Vpn World::op_start(const TaskExec& t, const Op& op) const {
  return Vpn(t.proc->regions[op.region].start.v + op.first_page);
}

uint64_t World::op_pages(const TaskExec& t, const Op& op) const {
  const uint64_t region = t.proc->regions[op.region].pages;
  if (op.first_page >= region) return 0;
  const uint64_t rest = region - op.first_page;
  return op.nr_pages ? std::min(op.nr_pages, rest) : rest;
}

double World::miss_fraction(TaskExec& t, const Op& op) {
  // Working-set model: the distinct bytes the tasks of a socket sweep. While
  // they fit the socket's LLC a sweep streams from cache; beyond it, the
  // fraction that does not fit comes from memory.
  const mm::Mm& mm = *t.proc->mm;
  const Vpn start = op_start(t, op);
  const mm::Vma* vma = mm.find_vma(start);
  if (!vma) return 0;
  std::pair<uint64_t, uint64_t> key;
  if (vma->file && !vma->anon_vma) {
    key = {uint64_t{1} << 40 | vma->file->id, vma->file_index(start)};
  } else {
    const uint64_t root = vma->avc.empty() ? (uint64_t{2} << 40 | mm.id()) : vma->avc.front()->id;
    key = {root, start.v};
  }
  const uint16_t socket = topo_.cpu(t.task.cpu).socket;
  bool known = false;
  for (const auto& fp : t.footprints) known |= (fp.socket == socket && fp.key == key);
  if (!known) {
    auto& entry = llc_sets_[socket][key];
    const uint64_t bytes = op_pages(t, op) * kPageSize;
    if (entry.second++ == 0) {
      entry.first = bytes;
      llc_bytes_[socket] += bytes;
    }
    t.footprints.push_back(Footprint{socket, key});
  }
  const double ws = static_cast<double>(llc_bytes_[socket]);
  const double llc = static_cast<double>(topo_.llc_bytes(socket));
  return ws <= llc ? 0.0 : 1.0 - llc / ws;
}

void World::drop_footprints(TaskExec& t) {
  for (const auto& fp : t.footprints) {
    auto& set = llc_sets_[fp.socket];
    auto it = set.find(fp.key);
    if (--it->second.second == 0) {
      llc_bytes_[fp.socket] -= it->second.first;
      set.erase(it);
    }
  }
  t.footprints.clear();
}

double World::page_cost_ns(const TaskExec& t, const Op& op, Vpn vpn, double miss_frac) const {
  const mm::Pte pte = t.proc->mm->pgtable().get(vpn);
  NodeId node = t.task.node;
  if (pte.maps_folio()) node = mm_.folios().folio(Pfn(pte.pfn)).node;
  return page_cost_on_node(t, op, node, miss_frac);
}

double World::range_cost_ns(TaskExec& t, const Op& op, Vpn from, Vpn to) {
  const double miss = op.kind == OpKind::kSweep ? miss_fraction(t, op) : 0.0;
  // A sweep served from the LLC costs the same on every node: no page walk.
  if (op.kind == OpKind::kSweep && miss == 0.0)
    return static_cast<double>(to.v - from.v) * page_cost_on_node(t, op, t.task.node, 0.0);
  // Pages per node over the range, then one cost per node.
  const size_t nodes = topo_.nr_nodes();
  node_pages_.assign(nodes, 0);
  const mm::PageTable& pt = t.proc->mm->pgtable();
  const auto& folios = mm_.folios();
  uint64_t local = 0;
  for (uint64_t v = from.v; v < to.v;) {
    const uint64_t table_end = ((v >> mm::kPteTableShift) + 1) << mm::kPteTableShift;
    const uint64_t end = std::min(table_end, to.v);
    const mm::PteTable* table = pt.table(Vpn(v));
    for (uint64_t x = v; x < end; ++x) {
      const mm::Pte pte = table ? table->get(x & (mm::kPtesPerTable - 1)) : mm::Pte{};
      if (pte.maps_folio()) {
        ++node_pages_[folios.folio(Pfn(pte.pfn)).node.v];
      } else {
        ++local;
      }
    }
    v = end;
  }
  node_pages_[t.task.node.v] += local;
  double sum = 0;
  for (size_t n = 0; n < nodes; ++n) {
    if (!node_pages_[n]) continue;
    sum += static_cast<double>(node_pages_[n]) * page_cost_on_node(t, op, NodeId(static_cast<uint16_t>(n)), miss);
  }
  return sum;
}

double World::page_cost_on_node(const TaskExec& t, const Op& op, NodeId node, double miss_frac) const {
  const double dist = topo_.distance(t.task.node, node) / 10.0;
  if (op.kind == OpKind::kTouch) return costs_.mem_latency_ns * dist;
  const double elems = static_cast<double>(kPageSize / op.elem_size);
  const double compute = op.compute_ns >= 0 ? op.compute_ns : costs_.sweep_elem_ns;
  return elems * compute + (kPageSize / 64.0) * miss_frac * costs_.dram_line_ns * dist;
}

void World::charge_sys(TaskExec& t, const mm::OpCost& c) {
  t.task.times.sys_ns += c.sys_ns;
  t.clock += to_tick(c.sys_ns);
}

// NUMA balancing ------------------------------------------------------------

Tick World::numa_deadline(const TaskExec& t) const {
  if (!balancer_.enabled()) return Tick::max();
  // The first scheduler tick of this CPU after the task's runtime passes
  // node_stamp + period (task_tick_numa), assuming it keeps running.
  const int64_t due = balancer_.next_tick_runtime(t.task.pid);
  if (runtime_ns(t) > due) return t.clock;  // this tick acts
  const int64_t crossing = t.clock.ns + (due - runtime_ns(t)) + 1;
  const int64_t tick = balancer_.config().tick_ns;
  const int64_t phase = tick_phase_[t.task.cpu.v].ns;
  const int64_t k = (crossing - phase + tick - 1) / tick;
  return Tick(phase + k * tick);
}

bool World::numa_tick(TaskExec& t) {
  mm::Mm& mm = *t.proc->mm;
  if (!balancer_.task_tick(t.task.pid, mm, t.clock)) return false;
  const double cost = balancer_.task_numa_work(t.task.pid, mm, t.task.cpu, t.clock);
  mm::OpCost c;
  c.sys_ns = cost;
  charge_sys(t, c);
  balancer_.scan_done(t.task.pid, cost);
  return true;
}

bool World::numa_hint_fault(TaskExec& t, Vpn vpn, Pfn pfn) {
  mm::Mm& mm = *t.proc->mm;
  mm::OpCost cost;
  const numa::HintDecision d = balancer_.do_numa_page(t.task.pid, mm, vpn, t.task.cpu, cost);
  charge_sys(t, cost);
  if (!d.target) {
    finish_hint_fault(t, d, d.page_node, d.flags);
    return true;
  }
  const mm::Vma* vma = mm.find_vma(vpn);
  if (migrating_.count(pfn.v) || !balancer_.migrate_allowed(pfn, *vma, *d.target, t.clock)) {
    finish_hint_fault(t, d, d.page_node, d.flags | numa::kTnfMigrateFail);
    return true;
  }
  // migrate_misplaced_page: the task stays in the kernel until it is done.
  const uint32_t id = next_migration_++;
  Migration& m = migrations_[id];
  m.id = id;
  m.folio = pfn;
  m.target = *d.target;
  m.pid = t.task.pid;
  m.begin = t.clock;
  m.hint = d;
  migrating_[pfn.v] = id;
  mm_.folios().folio(pfn).flags |= mm::Folio::kLocked;
  ++t.gen;
  t.blocked_on = 0;
  start_migration_pass(m, t.clock);
  return false;
}

void World::start_migration_pass(Migration& m, Tick at) {
  ++m.pass;
  m.pass_start = at;
  m.waiters.clear();
  const auto step = mm_.migrate_unmap(m.folio, exec(m.pid).task.cpu);
  // The walk replaces one PTE after another: a run-ahead task is caught only
  // if it reaches the page after its own PTE was replaced.
  m.unmap_offset.clear();
  for (const auto& [mm, vpn, offset] : step.unmapped) {
    m.unmap_offset.emplace_back(mm->id(), offset);
    if (!mm->runahead_tasks) continue;
    for (uint32_t pid : tasks_by_mm_[mm->id()]) {
      TaskExec& t = exec(pid);
      if (!t.seg.active || t.seg.hi <= vpn || t.seg.lo > vpn) continue;
      const Tick reach = reach_time(t, vpn, std::max(at, t.seg.t0) + to_tick(offset));
      if (reach == Tick::max()) continue;
      m.waiters.push_back(Waiter{pid, reach, true, t.seg.id, vpn, offset});
      t.reaches.emplace_back(m.id, reach);
    }
  }
  m.mappings = step.mappings;
  m.check = at + to_tick(step.cost_ns);
  queue_.schedule(m.check, this, kMigrationCheck, m.id, 0, 0);
}

void World::migration_check(Migration& m) {
  // The reference count must be the expected one: up to 4.20 every task
  // sleeping on the migration entry holds a reference (M5.3, M7).
  bool pinned = false;
  if (balancer_.config().waiter_pins_page) {
    for (const Waiter& w : m.waiters) {
      if (w.since > m.check) continue;
      const TaskExec& wt = exec(w.pid);
      if (!w.deferred || wt.blocked_on == m.id || (wt.seg.active && wt.seg.id == w.segment)) pinned = true;
    }
  }
  const double remap = static_cast<double>(m.mappings) * costs_.pte_set_ns;
  Tick end = m.check + to_tick(remap);
  m.success = false;
  if (!pinned) {
    if (auto fresh = mm_.folios().alloc_on(m.target)) {
      m.success = true;
      m.new_folio = *fresh;
      const NodeId cpu_node = exec(m.pid).task.node;
      const NodeId src = mm_.folios().folio(m.folio).node;
      const double copy = costs_.page_copy_ns *
                          (topo_.distance(cpu_node, src) + topo_.distance(cpu_node, m.target)) / 20.0;
      end += to_tick(copy);
    }
  }
  queue_.schedule(end, this, kMigrationEnd, m.id, static_cast<uint64_t>(pinned), 0);
}

void World::migration_end(Migration& m) {
  const Tick now = queue_.now();
  if (m.success) {
    mm_.migrate_remap(m.folio, m.new_folio);
    mm_.migrate_folio_finish(m.folio, m.new_folio);
    mm_.vmstat().add(mm::Vm::pgmigrate_success);
    mm_.vmstat().add(mm::Vm::numa_pages_migrated);
  } else {
    mm_.migrate_remap(m.folio, m.folio);
  }
  const bool retry = !m.success && m.pass < balancer_.config().migrate_passes &&
                     mm_.folios().free_pages(m.target) > 0;
  // Wake everyone who reached the migration entry before now.
  for (const Waiter& w : m.waiters) {
    TaskExec& wt = exec(w.pid);
    if (wt.blocked_on != m.id && w.deferred && wt.seg.active && wt.seg.id == w.segment &&
        w.since < now) {
      apply_segment(wt, now);  // cuts it where it first reached a migrating page
    }
    std::erase_if(wt.reaches, [&](const auto& r) { return r.first == m.id; });
    if (wt.blocked_on != m.id) continue;
    wt.blocked_on = 0;
    // If another pass follows, a woken task reads the page if it gets to run
    // before the walk replaces its PTE again.
    if (retry && costs_.context_switch_ns < w.offset_ns) wt.escape = w.vpn;
    if (wt.task.state == sched::TaskState::kUninterruptible) {
      wake(wt, now);
    } else {
      // Cut while running ahead: it waited on its CPU since it got there.
      wt.task.times.iowait_ns += static_cast<double>((now - wt.task.state_since).ns);
      ++wt.task.nvcsw;
      wt.clock = now;
      schedule_run(wt, now);
    }
  }
  m.waiters.clear();
  if (retry) {
    start_migration_pass(m, now);
    return;
  }
  const Pfn page = m.success ? m.new_folio : m.folio;
  mm_.folios().folio(page).flags &= static_cast<uint16_t>(~mm::Folio::kLocked);
  if (!m.success) mm_.vmstat().add(mm::Vm::pgmigrate_fail);
  migrating_.erase(m.folio.v);
  TaskExec& t = exec(m.pid);
  t.task.times.sys_ns += static_cast<double>((now - t.clock).ns);
  t.clock = now;
  const numa::HintDecision hint = m.hint;
  const bool ok = m.success;
  const NodeId target = m.target;
  migrations_.erase(m.id);
  finish_hint_fault(t, hint, ok ? target : hint.page_node,
                    hint.flags | (ok ? numa::kTnfMigrated : numa::kTnfMigrateFail));
  if (t.task.state == sched::TaskState::kRunning) schedule_run(t, t.clock);
}

bool World::wait_on_migration(TaskExec& t, Vpn vpn, Pfn pfn) {
  auto it = migrating_.find(pfn.v);
  if (it == migrating_.end()) return false;
  Migration& m = migrations_.at(it->second);
  double offset = 0;
  for (const auto& [mm_id, off] : m.unmap_offset) {
    if (mm_id == t.proc->mm->id()) offset = off;
  }
  m.waiters.push_back(Waiter{t.task.pid, t.clock, false, 0, vpn, offset});
  t.blocked_on = m.id;
  // migration_entry_wait: TASK_UNINTERRUPTIBLE on the page lock (iowait).
  leave_cpu(t, sched::TaskState::kUninterruptible);
  return true;
}

void World::finish_hint_fault(TaskExec& t, const numa::HintDecision& d, NodeId mem_node,
                              uint32_t flags) {
  const auto move = balancer_.task_numa_fault(t.task.pid, *t.proc->mm, d.last_cpupid, mem_node,
                                              t.task.node, 1, flags, t.clock, runtime_ns(t));
  if (move) move_task(t, *move);
}

void World::move_task(TaskExec& t, NodeId node) {
  // T7, simplified as the spec allows: an idle CPU on the preferred node if
  // the node loads stay within imbalance_pct (112%), else a swap with the
  // task there that gains most, if the gain beats SMALLIMP.
  std::vector<uint32_t> homed(topo_.nr_cpus(), 0);  // live tasks whose CPU it is
  for (size_t pid = 1; pid < tasks_.size(); ++pid) {
    const TaskExec& x = *tasks_[pid];
    if (x.task.state != sched::TaskState::kDead) ++homed[x.task.cpu.v];
  }
  const NodeId src = t.task.node;
  auto node_tasks = [&](NodeId n) {
    uint64_t sum = 0;
    for (CpuId c : topo_.node(n).cpus) sum += homed[c.v];
    return sum;
  };
  const uint64_t src_cpus = topo_.node(src).cpus.size(), dst_cpus = topo_.node(node).cpus.size();
  const uint64_t src_after = node_tasks(src) - 1, dst_after = node_tasks(node) + 1;
  if (dst_after * src_cpus * 100 <= src_after * dst_cpus * 112) {
    for (CpuId c : topo_.node(node).cpus) {
      if (homed[c.v] == 0) {
        migrate_task_to_cpu(t, c);
        return;
      }
    }
  }
  int64_t best_gain = 30;  // SMALLIMP
  TaskExec* best = nullptr;
  for (CpuId c : topo_.node(node).cpus) {
    const uint32_t other = rq_.current(c);
    if (!other || homed[c.v] != 1) continue;
    TaskExec& o = exec(other);
    if (o.blocked_on || in_kernel_migration(other)) continue;
    const int64_t gain = balancer_.task_weight(t.task.pid, node) - balancer_.task_weight(t.task.pid, src) +
                         balancer_.task_weight(other, src) - balancer_.task_weight(other, node);
    if (gain > best_gain) {
      best_gain = gain;
      best = &o;
    }
  }
  if (!best || homed[t.task.cpu.v] != 1) return;
  TaskExec& o = *best;
  if (o.seg.active && apply_segment(o, std::max(queue_.now(), o.seg.t0))) return;
  const CpuId mine = t.task.cpu, theirs = o.task.cpu;
  for (TaskExec* x : {&t, &o}) {
    auto& mask = x->proc->mm->cpumask();
    mask.erase(std::remove(mask.begin(), mask.end(), x->task.cpu), mask.end());
    drop_footprints(*x);
  }
  t.task.cpu = theirs;
  o.task.cpu = mine;
  for (TaskExec* x : {&t, &o}) {
    x->task.node = topo_.cpu_to_node(x->task.cpu);
    rq_.current(x->task.cpu) = x->task.pid;
    x->proc->mm->cpumask().push_back(x->task.cpu);
    ++x->task.nivcsw;
  }
  schedule_run(o, std::max(o.clock, queue_.now()));
}

bool World::in_kernel_migration(uint32_t pid) const {
  for (const auto& [id, mig] : migrations_) {
    if (mig.pid == pid) return true;
  }
  return false;
}

void World::migrate_task_to_cpu(TaskExec& t, CpuId cpu) {
  const CpuId old = t.task.cpu;
  if (rq_.nr_running(old) != 1) return;  // only a task alone on its CPU moves here
  auto& mask = t.proc->mm->cpumask();
  mask.erase(std::remove(mask.begin(), mask.end(), old), mask.end());
  drop_footprints(t);
  rq_.current(old) = 0;
  rq_.remove(old);
  t.task.cpu = cpu;
  t.task.node = topo_.cpu_to_node(cpu);
  rq_.add(cpu);
  rq_.current(cpu) = t.task.pid;
  rq_.slice_end(cpu) = t.clock + slices_.slice(1);
  mask.push_back(cpu);
  ++t.task.nivcsw;
}

bool World::fault(TaskExec& t, Vpn vpn, bool write) {
  mm::FaultCtx ctx{t.task.cpu, t.task.node, &t.task.min_flt, &t.task.maj_flt, t.proc->mm->memcg};
  mm::FaultResult r = mm_.handle_mm_fault(*t.proc->mm, vpn, write, ctx);
  charge_sys(t, r.cost);
  if (r.status == mm::FaultStatus::kSegv) {
    kill_task(t, "SIGSEGV: no access at page " + std::to_string(vpn.v));
    return false;
  }
  if (r.status == mm::FaultStatus::kOom) {
    kill_task(t, "out of memory");
    return false;
  }
  if (r.status == mm::FaultStatus::kNumaHint) return numa_hint_fault(t, vpn, r.pfn);
  if (r.status == mm::FaultStatus::kMigrationWait) {
    check(wait_on_migration(t, vpn, r.pfn), "a migration entry with no migration");
    return false;
  }
  if (r.cost.io_ns > 0) {
    // Waiting for the read: D state, which the kernel reports as iowait.
    leave_cpu(t, sched::TaskState::kUninterruptible);
    queue_.schedule(t.clock + to_tick(r.cost.io_ns), this, kWakeTask, t.task.pid);
    return false;
  }
  return true;
}

World::Step World::exec_pages(TaskExec& t, const Op& op) {
  const uint64_t pages = op_pages(t, op);
  mm::Mm& mm = *t.proc->mm;
  const Vpn base = op_start(t, op);
  const Vpn end(base.v + pages);
  const Tick h = horizon();  // only this task's I/O waits schedule events here
  const bool preemptible = others_waiting(t);
  const Tick deadline = numa_deadline(t);
  for (;;) {
    if (t.cursor >= pages) return Step::kNext;
    if (t.clock > config_.time_limit) return Step::kYield;
    if (preemptible && t.clock >= rq_.slice_end(t.task.cpu)) return Step::kContinue;
    if (t.clock >= deadline) return Step::kContinue;  // the NUMA tick is due
    const Vpn cur(base.v + t.cursor);
    const Vpn blocked = mm.pgtable().next_blocked(cur, end, op.write);
    if (blocked > cur) {
      // Pages the task can access without the kernel: pure user time.
      const double cost = range_cost_ns(t, op, cur, blocked);
      const Tick done = t.clock + to_tick(cost);
      if (done <= h && done <= deadline && !(preemptible && done > rq_.slice_end(t.task.cpu))) {
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
    } else if (!fault(t, blocked, op.write)) {
      return Step::kStopped;
    }
    t.escape = Vpn(UINT64_MAX);
    // The access that faulted now completes. (If the page is somehow still
    // blocked, stepping over it keeps the task from spinning.)
    const double cost = page_cost_ns(t, op, blocked,
                                     op.kind == OpKind::kSweep ? miss_fraction(t, op) : 0.0);
    t.clock += to_tick(cost);
    t.task.times.user_ns += cost;
    ++t.cursor;
  }
}

World::Step World::exec_fork(TaskExec& t, const Op& op, bool thread) {
  if (t.cursor >= op.count) return Step::kNext;
  if (t.clock > horizon()) return Step::kYield;
  mm::OpCost cost;
  cost.sys_ns = costs_.fork_base_ns;
  std::shared_ptr<Process> child_proc = t.proc;
  if (!thread) {
    child_proc = std::make_shared<Process>();
    child_proc->mm = mm_.mm_alloc();
    child_proc->mm->observer = this;
    child_proc->mm->memcg = t.proc->mm->memcg;  // a child starts in its parent's cgroup
    child_proc->regions = t.proc->regions;
    cost += mm_.dup_mmap(*t.proc->mm, *child_proc->mm, t.task.cpu);
  }
  charge_sys(t, cost);
  const uint32_t child = spawn(t.task.pid, child_proc, op.program, t.clock);
  ++t.live_children;
  exec(child).task.comm = workload_.programs[op.program].name;
  ++t.cursor;
  return Step::kContinue;
}

World::Step World::exec_op(TaskExec& t, const Op& op) {
  mm::Mm& mm = *t.proc->mm;
  switch (op.kind) {
    case OpKind::kCount:
      t.counters[op.counter] += op.count;
      return Step::kNext;
    case OpKind::kSweep:
      return exec_pages(t, op);
    case OpKind::kTouch:
      return exec_pages(t, op);
    case OpKind::kLoop:
      t.stack.push_back(Frame{&op.body, 0, &op, 0, t.clock + op.duration});
      return Step::kContinue;
    case OpKind::kFork:
      return exec_fork(t, op, false);
    case OpKind::kThreads:
      return exec_fork(t, op, true);
    case OpKind::kWait:
      if (t.live_children == 0) return Step::kNext;
      t.waiting = true;
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
      ++t.stack.back().pc;
      t.cursor = 0;
      ++t.gen;
      queue_.schedule(t.clock + to_tick(cost), this, kMoveEnd, t.task.pid, to, 0);
      return Step::kStopped;
    }
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
  // The rest are system calls: in time order.
  if (t.clock > horizon()) return Step::kYield;
  Region& region = t.proc->regions[op.region];
  mm::MmResult r;
  switch (op.kind) {
    case OpKind::kMap: {
      if (region.mapped) {
        record_error(t, "map: region " + workload_.regions[op.region].name + " is already mapped");
        return Step::kNext;
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
        record_error(t, "unmap: region " + workload_.regions[op.region].name + " is not mapped");
        return Step::kNext;
      }
      r = mm_.munmap(mm, region.start, region.pages, t.task.cpu);
      region.mapped = false;
      break;
    case OpKind::kMadvise:
      r = mm_.madvise_dontneed(mm, op_start(t, op), op_pages(t, op), t.task.cpu);
      break;
    case OpKind::kMlock: {
      mm::FaultCtx ctx{t.task.cpu, t.task.node, &t.task.min_flt, &t.task.maj_flt, t.proc->mm->memcg};
      r = mm_.mlock(mm, op_start(t, op), op_pages(t, op), ctx);
      break;
    }
    default:
      check(false, "unhandled op");
  }
  charge_sys(t, r.cost);
  if (r.error != mm::MmError::kOk) {
    static constexpr const char* kNames[] = {"ok", "EINVAL", "ENOMEM", "out of memory"};
    record_error(t, std::string("system call failed: ") + kNames[static_cast<int>(r.error)]);
  }
  if (op.kind != OpKind::kMap) run_checker("after a system call");
  if (r.cost.io_ns > 0) {
    ++t.stack.back().pc;
    t.cursor = 0;
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
  for (size_t j = 0; j < body.size(); ++j) {
    const Op& op = body[j];
    if (!is_pure(op)) return false;
    if (op.kind != OpKind::kSweep) continue;
    const Vpn from = op_start(t, op);
    const Vpn to(from.v + op_pages(t, op));
    if (to == from) continue;
    if (pt.next_blocked(from, to, op.write) != to) return false;
    const double cost = range_cost_ns(t, op, from, to);
    pieces.push_back(Piece{j, from, to.v - from.v, c, cost});
    c += cost;
    lo = std::min(lo, from.v);
    hi = std::max(hi, to.v);
  }
  if (c <= 0) return false;
  uint64_t k;
  if (f.loop->count) {
    k = f.loop->count - f.iter;
  } else {
    const double left = static_cast<double>((f.end - t.clock).ns);
    k = static_cast<uint64_t>(std::ceil(left / c));
  }
  if (k < 2) return false;
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
        exit_task(t);
        return;
      }
      ++f.iter;
      f.pc = 0;
      t.cursor = 0;
    }
    if (f.loop && f.pc == 0 && t.cursor == 0) {
      const bool done = f.loop->count ? f.iter >= f.loop->count : t.clock >= f.end;
      if (done) {
        t.stack.pop_back();
        ++t.stack.back().pc;
        continue;
      }
    }
    // Preemption at the end of the slice, when someone is waiting.
    const CpuId cpu = t.task.cpu;
    if (t.clock >= rq_.slice_end(cpu)) {
      if (others_waiting(t)) {
        if (t.clock > horizon()) {
          schedule_run(t, t.clock);
          return;
        }
        leave_cpu(t, sched::TaskState::kRunnable);
        return;
      }
      rq_.slice_end(cpu) = t.clock + slices_.slice(rq_.nr_running(cpu));
    }
    if (f.loop && f.pc == 0 && t.cursor == 0 && try_fast_forward(t)) {
      if (!start_segment(t)) return;
      continue;
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

void World::kill_task(TaskExec& t, std::string why) {
  record_error(t, why);
  t.stack.resize(1);
  t.stack.back().pc = t.stack.back().ops->size();
  exit_task(t);
}

void World::exit_task(TaskExec& t) {
  if (t.seg.active) apply_segment(t, t.clock);
  mm::Mm& mm = *t.proc->mm;
  t.task.times.sys_ns += costs_.exit_base_ns;
  t.clock += to_tick(costs_.exit_base_ns);
  if (--mm.users == 0) {
    charge_sys(t, mm_.exit_mmap(mm, t.task.cpu));
    run_checker("after exit_mmap");
  }
  drop_footprints(t);
  balancer_.task_exit(t.task.pid);
  auto& list = tasks_by_mm_[mm.id()];
  list.erase(std::remove(list.begin(), list.end(), t.task.pid), list.end());
  t.task.exit_time = t.clock;
  last_exit_ = std::max(last_exit_, t.clock);
  leave_cpu(t, sched::TaskState::kDead);
  --live_tasks_;
  const auto proc = std::move(t.proc);
  t.proc = nullptr;
  if (t.ppid) {
    TaskExec& parent = exec(t.ppid);
    if (--parent.live_children == 0 && parent.waiting) {
      parent.waiting = false;
      ++parent.stack.back().pc;
      parent.cursor = 0;
      wake(parent, t.clock);
    }
  }
}

}  // namespace mmsim::workload
