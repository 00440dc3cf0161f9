// Automatic NUMA balancing (kernel/sched/fair.c, mm/memory.c do_numa_page,
// mm/mempolicy.c mpol_misplaced, mm/migrate.c), in our own words.
#include "numa/balancer.h"

#include <fmt/format.h>

#include <algorithm>

#include "numa/skip_rules.h"
#include "sim/check.h"

namespace mmsim::numa {

namespace {

// The numa_faults arrays' stats (NUMA_MEM, NUMA_CPU, NUMA_MEMBUF, NUMA_CPUBUF).
constexpr int kMem = 0, kCpu = 1, kMemBuf = 2, kCpuBuf = 3;
constexpr int64_t kPeriodSlots = kNumaPeriodSlots;
constexpr int64_t kPeriodThreshold = kNumaPeriodThreshold;

}  // namespace

Balancer::Balancer(const NumaConfig& cfg, const topo::Topology& topo, mm::MemoryManager& mm,
                   const TaskView& view)
    : cfg_(cfg),
      topo_(topo),
      mm_(mm),
      view_(view),
      nodes_(topo.nr_nodes()),
      ratelimit_window_end_(topo.nr_nodes()),
      ratelimit_pages_(topo.nr_nodes(), 0),
      promote_(topo.nr_nodes()) {}

void Balancer::task_init(uint32_t pid, mm::Mm& mm, bool new_mm, Tick now, uint32_t parent) {
  if (tasks_.size() <= pid) tasks_.resize(pid + 1);
  auto t = std::make_unique<TaskNuma>();
  t->scan_period_ms = cfg_.numa_balancing_scan_delay_ms;
  t->node_stamp_ns = 0;
  // A new thread (CLONE_VM): node_stamp = min(task_scan_max(parent), parent's
  // period x mm_users in ns) + 2 ticks. task_scan_max is in milliseconds but
  // taken as nanoseconds there, so it is the minimum: some 60 us + 2 ticks.
  if (cfg_.thread_scan_stagger && !new_mm && parent != 0 && find(parent)) {
    const TaskNuma& p = task(parent);
    // mm_users before the new thread's (the caller has counted it already).
    // min_t(unsigned int) truncates both to 32 bits.
    const int64_t users_ns = p.scan_period_ms * static_cast<int64_t>(mm.users - 1) * 1000000;
    const auto u32 = [](int64_t v) { return static_cast<int64_t>(static_cast<uint32_t>(v)); };
    t->node_stamp_ns = std::min(u32(task_scan_max(parent, mm)), u32(users_ns)) + 2 * cfg_.tick_ns();
  }
  t->faults.assign(4 * nodes_ * 2, 0);
  if (new_mm) {
    mm.numa_next_scan = now + milliseconds(cfg_.numa_balancing_scan_delay_ms);
    mm.numa_scan_seq = 0;
    mm.numa_scan_offset = 0;
  }
  t->scan_seq = mm.numa_scan_seq;
  tasks_[pid] = std::move(t);
}

void Balancer::task_exit(uint32_t pid) {
  TaskNuma& t = task(pid);
  if (t.group) {
    NumaGroup& g = *t.group;
    for (size_t n = 0; n < nodes_; ++n) {
      for (int p = 0; p < 2; ++p) {
        g.mem[n * 2 + p] -= t.faults[idx(kMem, static_cast<int>(n), p)];
        g.cpu[n * 2 + p] -= t.faults[idx(kCpu, static_cast<int>(n), p)];
      }
    }
    g.total_faults -= t.total_faults;
    --g.nr_tasks;  // the task keeps its pointer so that reports can name the group
  }
}

// task_scan_min/max/start ---------------------------------------------------

int64_t Balancer::task_scan_min(uint32_t, const mm::Mm& mm) const {
  const int64_t scan_pages = cfg_.scan_size_pages();
  int64_t rss = static_cast<int64_t>(mm_rss_pages(mm));
  if (rss == 0) rss = scan_pages;
  const int64_t windows = (rss + scan_pages - 1) / scan_pages;
  const int64_t floor =
      1000 / std::max<int64_t>(1, kMaxScanWindow / cfg_.numa_balancing_scan_size_mb);
  return std::max(floor, int64_t{cfg_.numa_balancing_scan_period_min_ms} / windows);
}

int64_t Balancer::group_scaled(const NumaGroup& g, int64_t period) const {
  // Grouped tasks share the scanning: scale by members and the shared ratio.
  int64_t shared = 0, priv = 0;
  for (size_t n = 0; n < nodes_; ++n) {
    shared += g.mem[n * 2];
    priv += g.mem[n * 2 + 1];
  }
  return period * g.nr_tasks * (shared + 1) / (priv + shared + 1);
}

int64_t Balancer::task_scan_max(uint32_t pid, const mm::Mm& mm) const {
  const int64_t smin = task_scan_min(pid, mm);
  const int64_t scan_pages = cfg_.scan_size_pages();
  int64_t rss = static_cast<int64_t>(mm_rss_pages(mm));
  if (rss == 0) rss = scan_pages;
  const int64_t windows = (rss + scan_pages - 1) / scan_pages;
  int64_t smax = int64_t{cfg_.numa_balancing_scan_period_max_ms} / windows;
  const TaskNuma* t = find(pid);
  if (t && t->group) smax = std::max(smax, group_scaled(*t->group, smax));
  return std::max(smin, smax);
}

int64_t Balancer::task_scan_start(uint32_t pid, const mm::Mm& mm) const {
  // Before 4.14 the first tick's period is task_scan_min itself.
  int64_t period = task_scan_min(pid, mm);
  if (!cfg_.scan_start_group_scaled) return period;
  const TaskNuma* t = find(pid);
  if (t && t->group) period = std::max(period, group_scaled(*t->group, period));
  return period;
}

// task_tick_numa, task_numa_work ---------------------------------------------

int64_t Balancer::next_tick_runtime(uint32_t pid) const {
  const TaskNuma& t = *tasks_[pid];
  return t.node_stamp_ns + t.scan_period_ms * 1000000;
}

Tick Balancer::next_tick(uint32_t pid, int64_t runtime_ns, Tick now, Tick phase) const {
  const int64_t due = next_tick_runtime(pid);
  const int64_t tick = cfg_.tick_ns();
  if (runtime_ns > due) {
    // This tick acts, unless one acted at this very time: task_tick_numa
    // runs once per scheduler tick, so a node_stamp that lags the runtime
    // (a scan period shorter than a tick, or of 0 ms: task_scan_min's floor
    // is 0 for scan sizes under 3 MB) catches up one tick at a time.
    if (tasks_[pid]->last_tick_ns != now.ns) return now;
    return Tick(phase.ns + ((now.ns - phase.ns) / tick + 1) * tick);
  }
  const int64_t crossing = now.ns + (due - runtime_ns) + 1;
  const TaskNuma& t = *tasks_[pid];
  // The first tick at or after the crossing: the last answer's, while the
  // crossing stays in the tick period before it (no division).
  if (phase.ns == t.tick_memo_phase && crossing <= t.tick_memo_ns &&
      crossing > t.tick_memo_ns - tick)
    return Tick(t.tick_memo_ns);
  const int64_t k = (crossing - phase.ns + tick - 1) / tick;
  t.tick_memo_phase = phase.ns;
  t.tick_memo_ns = phase.ns + k * tick;
  return Tick(t.tick_memo_ns);
}

bool Balancer::task_tick(uint32_t pid, const mm::Mm& mm, Tick now) {
  TaskNuma& t = task(pid);
  t.last_tick_ns = now.ns;
  const int64_t period_ns = t.scan_period_ms * 1000000;
  if (t.node_stamp_ns == 0) t.scan_period_ms = task_scan_start(pid, mm);
  t.node_stamp_ns += period_ns;
  return now >= mm.numa_next_scan;
}

double Balancer::task_numa_work(uint32_t pid, mm::Mm& mm, CpuId cpu, Tick now) {
  TaskNuma& t = task(pid);
  if (scan_sink_) {
    scan_sink_(pid, cpu, now, "task_numa_work",
               fmt::format("numa_scan_seq={} numa_scan_period={} numa_preferred_nid={} "
                           "node_stamp={}",
                           mm.numa_scan_seq, t.scan_period_ms, t.preferred_nid, t.node_stamp_ns));
  }
  const double cost = scan(pid, t, mm, cpu, now);
  if (scan_sink_) scan_sink_(pid, cpu, now + to_tick(cost), "task_numa_work_ret", "");
  return cost;
}

double Balancer::scan(uint32_t pid, TaskNuma& t, mm::Mm& mm, CpuId cpu, Tick now) {
  if (now < mm.numa_next_scan) return 0;
  // One scanner per mm per window (the cmpxchg on numa_next_scan).
  mm.numa_next_scan = now + milliseconds(t.scan_period_ms);
  t.node_stamp_ns += 2 * cfg_.tick_ns();

  int64_t pages = cfg_.scan_size_pages();
  int64_t virtpages = pages * kVirtpagesPerPage;
  double cost = 0;

  uint64_t start = 0;
  auto& vmas = mm.vmas();
  auto first = vmas.end();
  // From the offset (a retry: from there again).
  auto from_offset = [&] {
    start = mm.numa_scan_offset;
    first = std::find_if(vmas.begin(), vmas.end(), [&](const auto& v) { return v->end.v > start; });
    if (first == vmas.end()) {
      ++mm.numa_scan_seq;  // reset_ptenuma_scan
      mm.numa_scan_offset = 0;
      start = 0;
      first = vmas.begin();
    }
  };
  from_offset();
  const VmaScanFilter per_vma = cfg_.vma_scan_filter;
  bool pids_skipped = false, pids_forced = false;
  bool stopped = false;
retry_pids:
  auto it = first;
  for (; it != vmas.end(); ++it) {
    mm::Vma& vma = **it;
    // VMAs task_numa_work never scans.
    // vma_policy_mof: the VMA's policy, else the scanning task's.
    if (vma.policy.mode != mm::MemPolicy::Mode::kDefault) continue;  // no MPOL_F_MOF
    if (!t.policy_mof) continue;
    if (cfg_.skip_shmem_default_policy && vma.file && vma.file->shmem) continue;
    if (vma.file && (vma.flags & (mm::Vma::kRead | mm::Vma::kWrite)) == mm::Vma::kRead) continue;
    if (!(vma.flags & (mm::Vma::kRead | mm::Vma::kWrite | mm::Vma::kExec))) continue;
    if (vma.flags & mm::Vma::kPfnMap) continue;  // vma_migratable
    if (per_vma != VmaScanFilter::kNone) {
      const VmaVerdict v = vma_scan_verdict(pid, mm, vma, now, pids_forced);
      if (v == VmaVerdict::kSkipPids) pids_skipped = true;
      if (v != VmaVerdict::kScan) continue;
    }
    // A private mapping of a single-user mm is aimed at this CPU's node.
    std::optional<NodeId> target_node;
    if (!(vma.flags & mm::Vma::kShared) && mm.users == 1) target_node = topo_.cpu_to_node(cpu);
    const ProtNumaFilter filter(cfg_, target_node, mm_.tiers(), jiffies_ms(now));
    uint64_t end;
    do {
      start = std::max(start, vma.start.v);
      end = start + static_cast<uint64_t>(pages);
      end = (end + kScanChunkPages - 1) / kScanChunkPages * kScanChunkPages;
      end = std::min(end, vma.end.v);
      if (scan_sink_) {
        scan_sink_(pid, cpu, now + to_tick(cost), "change_prot_numa",
                   fmt::format("vm_start={:#x} vm_end={:#x} start={:#x} end={:#x}",
                               vma.start.v << kPageShift, vma.end.v << kPageShift,
                               start << kPageShift, end << kPageShift));
      }
      const mm::ProtNumaResult pr =
          mm_.change_prot_numa(mm, vma, Vpn(start), Vpn(end), filter, cpu);
      if (scan_sink_)
        scan_sink_(pid, cpu, now + to_tick(cost), "change_prot_numa_ret",
                   fmt::format("updated={}", pr.updated));
      cost += pr.cost_ns;
      if (pr.updated) pages -= static_cast<int64_t>(end - start);
      virtpages -= static_cast<int64_t>(end - start);
      start = end;
      if (pages <= 0 || virtpages <= 0) {
        stopped = true;
        break;
      }
    } while (end != vma.end.v);
    if (stopped) break;
    vma.numab.prev_scan_seq = mm.numa_scan_seq;  // done with it for this sequence
    if (pids_forced) break;                      // one VMA at a time
  }
  if (it == vmas.end() && per_vma == VmaScanFilter::kPidsSeq && !pids_forced && pids_skipped) {
    // Every VMA left was skipped for its pids: one goes anyway.
    pids_forced = true;
    from_offset();
    goto retry_pids;
  }
  if (it != vmas.end()) {
    mm.numa_scan_offset = start;
  } else {
    ++mm.numa_scan_seq;
    mm.numa_scan_offset = 0;
  }
  return cost;
}

namespace {

// hash_32(pid, ilog2(BITS_PER_LONG)): the pid's bit in a 64-bit set.
uint64_t pid_bit(uint32_t pid) { return uint64_t{1} << ((pid * 0x61C88647u) >> 26); }

}  // namespace

Balancer::VmaVerdict Balancer::vma_scan_verdict(uint32_t pid, mm::Mm& mm, mm::Vma& vma, Tick now,
                                                bool pids_forced) const {
  mm::VmaNumab& st = vma.numab;
  const Tick delay = milliseconds(cfg_.numa_balancing_scan_delay_ms);
  if (!st.made) {
    st.made = true;
    st.start_scan_seq = mm.numa_scan_seq;
    st.next_scan = now + delay;
    st.pids_active_reset = st.next_scan + Tick(4 * delay.ns);
    st.prev_scan_seq = mm.numa_scan_seq - 1;
  }
  // New VMAs of a short-lived task are not worth scanning yet.
  if (mm.numa_scan_seq != 0 && now < st.next_scan) return VmaVerdict::kSkip;
  if (mm.numa_scan_seq != 0 && now > st.pids_active_reset) {
    st.pids_active_reset = st.pids_active_reset + Tick(4 * delay.ns);
    st.pids_active[0] = st.pids_active[1];
    st.pids_active[1] = 0;
  }
  const bool seq = cfg_.vma_scan_filter == VmaScanFilter::kPidsSeq;
  if (seq && st.prev_scan_seq == mm.numa_scan_seq) {
    mm.numa_scan_offset = vma.end.v;  // scanned whole this sequence
    return VmaVerdict::kSkip;
  }
  if (pids_forced) return VmaVerdict::kScan;
  // vma_is_accessed: every VMA in the first two sequences (the mm's up to
  // 6.6, the VMA's own from 6.7), then a task that faulted in it lately.
  const int since = mm.numa_scan_seq - (seq ? st.start_scan_seq : 0);
  if (since < 2) return VmaVerdict::kScan;
  if ((st.pids_active[0] | st.pids_active[1]) & pid_bit(pid)) return VmaVerdict::kScan;
  if (seq) {
    // A scan that has begun in it goes on; so does one of a VMA no
    // sequence has scanned for more sequences than the mm has threads.
    if (mm.numa_scan_offset > vma.start.v) return VmaVerdict::kScan;
    if (mm.numa_scan_seq > st.prev_scan_seq + std::max(1, mm.users)) return VmaVerdict::kScan;
  }
  return VmaVerdict::kSkipPids;
}

void Balancer::vma_set_access_pid_bit(uint32_t pid, mm::Vma& vma) {
  if (cfg_.vma_scan_filter != VmaScanFilter::kNone && vma.numab.made)
    vma.numab.pids_active[1] |= pid_bit(pid);
}

void Balancer::trace_misplaced(uint32_t pid, CpuId cpu, Tick now, Vpn vpn) const {
  if (scan_sink_)
    scan_sink_(pid, cpu, now, "mpol_misplaced", fmt::format("addr=0x{:x}", vpn.v << kPageShift));
}

void Balancer::scan_done(uint32_t pid, double scan_cost_ns) {
  // task_numa_work charges the scan 32 times over against the next scan's
  // runtime, as far as sum_exec_runtime saw it: that moves only at
  // update_curr, here the scheduler ticks inside the scan (it began at the
  // tick that queued it). A scan shorter than a tick costs nothing.
  const int64_t tick = cfg_.tick_ns();
  const int64_t seen = static_cast<int64_t>(scan_cost_ns) / tick * tick;
  task(pid).node_stamp_ns += kScanOverheadFactor * seen;
}

// do_numa_page, should_numa_migrate_memory -----------------------------------

HintDecision Balancer::do_numa_page(uint32_t pid, mm::Mm& mm, Vpn vpn, CpuId cpu, Tick now) {
  HintDecision d;
  d.vpn = vpn;
  const bool pmd_mapped = mm.pgtable().table(vpn)->huge();
  // Up to 5.12 the PTE is present again before any migration (whose unmap
  // then flushes it); from 5.13 only when nothing moves.
  if (!cfg_.hint_pte_kept_for_migration) restore_numa_mapping(mm, vpn);
  const mm::Pte pte = mm_.numa_pte_restored(mm, vpn);
  const Pfn head = mm_.folio_head(Pfn(pte.pfn));
  mm::Folio& folio = mm_.folios().folio(head);
  d.page_node = folio.node;
  mm::Vma* vma = mm.find_vma(vpn);
  if (folio.large() && !pmd_mapped && !cfg_.pte_mapped_thp_hinting) {
    // A page of a PTE-mapped THP (its PMD was split after the scan marked
    // it): up to 6.9 do_numa_page maps it again and counts nothing.
    mm_.restore_numa_pte(mm, vpn);
    d.pages = 0;
    return d;
  }
  d.pages = static_cast<int>(folio.nr_pages());
  vma_set_access_pid_bit(pid, *vma);  // numa_migrate_prep
  if (!pte.writable()) d.flags |= kTnfNoGroup;
  if (folio.mapcount > 1 && (vma->flags & mm::Vma::kShared)) d.flags |= kTnfShared;
  // In memory-tiering mode a slow-tier folio's field holds its access
  // time, not a cpupid.
  const bool stamped = cfg_.hot_page_selection() && !mm_.tiers().toptier(folio.node);
  d.last_cpupid = stamped ? kCpupidUnset : folio.last_cpupid;
  const NodeId this_node = topo_.cpu_to_node(cpu);
  mm_.vmstat().add(mm::Vm::numa_hint_faults);
  if (folio.node == this_node) {
    mm_.vmstat().add(mm::Vm::numa_hint_faults_local);
    d.flags |= kTnfFaultLocal;
  }
  // mpol_misplaced, default policy (MPOL_F_MOF | MPOL_F_MORON): this CPU's
  // node, if the two-stage filter agrees. The VMA's policy, else the
  // faulting task's, without MPOL_F_MOF moves nothing.
  const bool mof = vma->policy.mode == mm::MemPolicy::Mode::kDefault && task(pid).policy_mof;
  if (mof && should_numa_migrate_memory(pid, folio, folio.node, this_node, cpu, now) &&
      folio.node != this_node) {
    d.target = this_node;
  } else if (cfg_.hint_pte_kept_for_migration) {
    restore_numa_mapping(mm, vpn);  // up to 5.12 already done above
  }
  return d;
}

void Balancer::restore_numa_mapping(mm::Mm& mm, Vpn vpn, bool writable) {
  const bool pmd_mapped = mm.pgtable().table(vpn)->huge();
  const mm::Pte pte = mm_.restore_numa_pte(mm, vpn, writable);
  const Pfn head = mm_.folio_head(Pfn(pte.pfn));
  const mm::Folio& folio = mm_.folios().folio(head);
  if (!folio.large() || pmd_mapped || !cfg_.pte_mapped_thp_hinting) return;
  // numa_rebuild_large_mapping (6.10+): the folio's other hinting PTEs in
  // this page table too.
  const mm::Vma* vma = mm.find_vma(vpn);
  const uint64_t table = vpn.v & ~uint64_t{mm::kPtesPerTable - 1};
  const uint64_t lo = std::max({folio.index(), vma->start.v, table});
  const uint64_t hi =
      std::min({folio.index() + folio.nr_pages(), vma->end.v, table + mm::kPtesPerTable});
  for (uint64_t p = lo; p < hi; ++p) {
    const mm::Pte other = mm.pgtable().get(Vpn(p));
    if (other.protnone() && mm_.folio_head(Pfn(other.pfn)) == head)
      mm_.restore_numa_pte(mm, Vpn(p), writable);
  }
}

void Balancer::restore_after_failed_migration(mm::Mm& mm, const HintDecision& d, Pfn folio) {
  const mm::Pte pte = mm.pgtable().get(d.vpn);
  if (pte.protnone() && mm_.folio_head(Pfn(pte.pfn)) == folio)
    restore_numa_mapping(mm, d.vpn, mm_.config().prot_numa_savedwrite);
}

bool Balancer::should_numa_migrate_memory(uint32_t pid, mm::Folio& folio, NodeId src, NodeId dst,
                                          CpuId cpu, Tick now) {
  const TaskNuma& t = task(pid);
  // Memory tiering (6.1+): a slow-tier page is promoted by hotness, not by
  // who shares it. (5.18-6.0 decide as for any page.)
  if (cfg_.hot_page_selection() && !mm_.tiers().toptier(src))
    return promote_hot_page(folio, folio.nr_pages(), dst, now);
  const uint32_t last = folio.last_cpupid;
  folio.last_cpupid = make_cpupid(cpu, pid);
  const bool unset = last == kCpupidUnset;
  // A slow-tier page whose field was left unset by the tiering mode (since
  // switched off) waits for a real cpupid.
  if (cfg_.promote_hot_threshold && !mm_.tiers().toptier(src) && unset) return false;
  // 2: early in the task's life, or a repeat fault by this task.
  if ((t.preferred_nid == -1 || t.scan_seq <= kNumaScanSeqEarly) &&
      (unset || cpupid_match_pid(pid, last))) {
    return true;
  }
  // 3: the two-stage filter: the previous fault came from another node.
  if (!unset && topo_.cpu_to_node(cpupid_cpu(last)) != dst) return false;
  // 4: private.
  if (cpupid_match_pid(pid, last)) return true;
  // 5: no group.
  if (!t.group) return true;
  const NumaGroup& g = *t.group;
  // 6 and 7: group CPU faults with 3/4 hysteresis.
  if (group_faults_cpu(g, dst.v) > group_faults_cpu(g, src.v) * kActiveNodeFraction) return true;
  return group_faults_cpu(g, dst.v) * group_faults_mem(g, src.v) * 3 >
         group_faults_cpu(g, src.v) * group_faults_mem(g, dst.v) * 4;
}

uint32_t Balancer::jiffies_ms(Tick now) const {
  const int64_t jiffies = now.ns / cfg_.tick_ns();
  return static_cast<uint32_t>(jiffies * 1000 / cfg_.tick_hz);
}

bool Balancer::promote_hot_page(mm::Folio& folio, uint32_t nr, NodeId dst, Tick now) {
  PromoteState& p = promote_[dst.v];
  const uint32_t now_ms = jiffies_ms(now);
  // pgdat_free_space_enough: with plenty free above the promo watermark
  // everything goes up, and the threshold starts over.
  const mm::FolioAllocator& fa = mm_.folios();
  const uint64_t enough =
      std::max<uint64_t>(uint64_t{1} << (30 - kPageShift), fa.capacity_pages(dst) >> 4);
  if (fa.free_pages(dst) > fa.watermarks(dst).promo + enough) {
    p.threshold_ms = 0;
    return true;
  }
  // numa_promotion_adjust_threshold: once per scan_period_max, the
  // threshold steps down by 1/8 of the default when the candidates of the
  // period beat the rate limit's by 10%, and up when they fall 10% short.
  const int64_t def_th = cfg_.numa_balancing_hot_threshold_ms;
  const uint64_t rate_limit = static_cast<uint64_t>(cfg_.numa_balancing_promote_rate_limit_mbps)
                              << (20 - kPageShift);
  const auto period = static_cast<uint32_t>(cfg_.numa_balancing_scan_period_max_ms);
  if (now_ms - p.th_start_ms > period) {
    p.th_start_ms = now_ms;
    const uint64_t ref_cand = rate_limit * period / 1000;
    const uint64_t diff = p.candidates - p.th_nr_cand;
    const int64_t unit = def_th * 2 / 16;
    int64_t th = p.threshold_ms ? p.threshold_ms : def_th;
    if (diff > ref_cand * 11 / 10) {
      th = std::max(th - unit, unit);
    } else if (diff < ref_cand * 9 / 10) {
      th = std::min(th + unit, def_th * 2);
    }
    p.th_nr_cand = p.candidates;
    p.threshold_ms = th;
  }
  const int64_t th = p.threshold_ms ? p.threshold_ms : def_th;
  // numa_hint_fault_latency: now less the scan's stamp, which now replaces.
  const uint32_t latency = (now_ms - folio.last_cpupid) & kAccessTimeMask;
  folio.last_cpupid = now_ms & kAccessTimeMask;
  if (latency >= th) return false;
  // numa_promotion_rate_limit: counted as candidate pages; refused once
  // this second's candidates reach the limit.
  p.candidates += nr;
  mm_.vmstat().add(mm::Vm::pgpromote_candidate, nr);
  if (now_ms - p.rl_start_ms > 1000) {
    p.rl_start_ms = now_ms;
    p.rl_nr_cand = p.candidates;
  }
  return p.candidates - p.rl_nr_cand < rate_limit;
}

bool Balancer::migrate_allowed(Pfn pfn, const mm::Vma& vma, NodeId target, Tick now) {
  const mm::Folio& f = mm_.folios().folio(pfn);
  const uint32_t nr = f.nr_pages();
  // numamigrate_isolate_page and migrate_misplaced_page: shared library pages and dirty file pages
  // stay (page-cache pages only: shmem is swap-backed, as page_is_file_cache tells).
  // 3.8-3.12: no page mapped more than once moves.
  if (cfg_.skip_shared && mm_.folio_mapcount(pfn) != 1) return false;
  const bool file_cache = !f.test(mm::Folio::kAnon) && !f.test(mm::Folio::kShmem);
  if (file_cache && f.mapcount != 1 && (vma.flags & mm::Vma::kExec)) return false;
  if (cfg_.skip_dirty_file && file_cache && f.test(mm::Folio::kDirty)) return false;
  // A folio under writeback cannot move (migrate_folio_unmap's EBUSY for an
  // asynchronous migration). SIMPLIFICATION: refused here, before its
  // isolation, so no pgmigrate_fail is counted.
  if (file_cache && mm_.writeback().under_writeback(pfn)) return false;
  // numamigrate_update_ratelimit (3.8-4.18): per destination node, a window
  // of 100 ms, a THP counting its pages.
  if (cfg_.migrate_rate_limit) {
    if (now > ratelimit_window_end_[target.v]) {
      ratelimit_pages_[target.v] = 0;
      ratelimit_window_end_[target.v] = now + milliseconds(kRatelimitWindowMs);
    }
    if (ratelimit_pages_[target.v] > static_cast<uint64_t>(cfg_.ratelimit_pages)) return false;
    ratelimit_pages_[target.v] += nr;
  }
  // From here on, migrate_misplaced_transhuge_page (up to 5.12) counts a
  // refused THP as failed.
  auto refuse = [&] {
    if (f.large() && cfg_.thp_migrate_legacy) mm_.vmstat().add(mm::Vm::pgmigrate_fail, nr);
    return false;
  };
  // numamigrate_isolate_page: a THP mapped more than once stays (up to 6.1).
  if (f.large() && cfg_.thp_migrate_refuse_mapped && mm_.folio_mapcount(pfn) > 1) return refuse();
  // migrate_balanced_pgdat: the destination must stay above its high
  // watermark with the folio's pages taken; in memory-tiering mode its
  // kswapd is woken to make room.
  const uint64_t high = mm_.folios().watermarks(target).high;
  if (mm_.folios().free_pages(target) <= high + nr) {
    if (cfg_.tiering()) mm_.wake_kswapd(target);
    return refuse();
  }
  // isolate_lru_page: isolation fails for a folio off the LRU or already being migrated.
  if (!f.test(mm::Folio::kLru) || f.test(mm::Folio::kLocked)) return refuse();
  return true;
}

// task_numa_fault, task_numa_placement, update_task_scan_period ------------

std::optional<NodeId> Balancer::task_numa_fault(uint32_t pid, CpuId cpu, const mm::Mm& mm,
                                                uint32_t last_cpupid, NodeId mem_node,
                                                NodeId cpu_node, int pages, uint32_t flags,
                                                Tick now, int64_t runtime_ns) {
  if (scan_sink_) {
    const auto cpupid = last_cpupid == kCpupidUnset ? -1 : static_cast<int64_t>(last_cpupid);
    scan_sink_(pid, cpu, now, "task_numa_fault",
               fmt::format("last_cpupid={} mem_node={} pages={} flags=0x{:x}", cpupid, mem_node.v,
                           pages, flags));
  }
  // No statistics from a fault on a slow-tier page in tiering mode, or
  // from one without a cpupid: it says nothing about where the task runs.
  if (cfg_.promote_hot_threshold && !mm_.tiers().toptier(mem_node) &&
      (cfg_.tiering() || last_cpupid == kCpupidUnset)) {
    return std::nullopt;
  }
  TaskNuma& t = task(pid);
  int priv = last_cpupid == kCpupidUnset ? 1 : (cpupid_match_pid(pid, last_cpupid) ? 1 : 0);
  if (!priv && !(flags & kTnfNoGroup)) task_numa_group(pid, last_cpupid, flags, priv);
  bool local = flags & kTnfFaultLocal;
  if (!priv && !local && t.group && t.group->active_nodes > 1) {
    const NumaGroup& g = *t.group;
    auto active = [&](NodeId n) {
      return group_faults_cpu(g, n.v) * kActiveNodeFraction > g.max_faults_cpu;
    };
    if (active(cpu_node) && active(mem_node)) local = true;
  }
  std::optional<NodeId> move;
  auto migrate_preferred = [&]() {
    // numa_migrate_preferred: retry every min(period / 16, 1 s).
    if (t.preferred_nid == -1) return;
    t.migrate_retry =
        now + milliseconds(std::min<int64_t>(t.scan_period_ms / 16, kMigrateRetryMaxMs));
    if (view_.task_node(pid).v != t.preferred_nid)
      move = NodeId(static_cast<uint16_t>(t.preferred_nid));
  };
  const int64_t period_before = t.scan_period_ms;
  const int64_t locality_before[3] = {t.locality[0], t.locality[1], t.locality[2]};
  if (cfg_.placement_every_fault) {
    task_numa_placement(pid, mm, now, runtime_ns);
    if (now > t.migrate_retry) migrate_preferred();
  } else if (now > t.migrate_retry) {
    task_numa_placement(pid, mm, now, runtime_ns);
    migrate_preferred();
  }
  if (scan_sink_ && t.scan_period_ms != period_before) {
    scan_sink_(pid, cpu, now, "update_task_scan_period",
               fmt::format("numa_scan_period={} remote={} local={} failed={}", t.scan_period_ms,
                           locality_before[0], locality_before[1], locality_before[2]));
  }
  if (flags & kTnfMigrated) t.pages_migrated += static_cast<uint64_t>(pages);
  if (flags & kTnfMigrateFail) t.locality[2] += pages;
  t.faults[idx(kMemBuf, mem_node.v, priv)] += pages;
  t.faults[idx(kCpuBuf, cpu_node.v, priv)] += pages;
  t.locality[local ? 1 : 0] += pages;
  return move;
}

void Balancer::task_numa_placement(uint32_t pid, const mm::Mm& mm, Tick now, int64_t runtime_ns) {
  TaskNuma& t = task(pid);
  // task_numa_placement: once per completed pass over the address space.
  if (t.scan_seq == mm.numa_scan_seq) return;
  t.scan_seq = mm.numa_scan_seq;
  t.scan_period_max_ms = task_scan_max(pid, mm);

  const int64_t total_faults = t.locality[0] + t.locality[1];
  // numa_get_avg_runtime: the share of wall time the task ran since last time.
  int64_t runtime, period;
  if (t.last_placement.ns) {
    runtime = runtime_ns - t.last_runtime_ns;
    period = (now - t.last_placement).ns;
  } else {
    runtime = 1;  // no history: count it as running all the time
    period = 1;
  }
  t.last_runtime_ns = runtime_ns;
  t.last_placement = now;

  int64_t fault_types[2] = {0, 0};
  int64_t max_faults = 0;
  int max_nid = -1;
  NumaGroup* g = t.group.get();
  for (size_t n = 0; n < nodes_; ++n) {
    const int nid = static_cast<int>(n);
    int64_t faults = 0, group_faults = 0;
    for (int p = 0; p < 2; ++p) {
      int64_t& mem = t.faults[idx(kMem, nid, p)];
      int64_t& membuf = t.faults[idx(kMemBuf, nid, p)];
      int64_t& cpu = t.faults[idx(kCpu, nid, p)];
      int64_t& cpubuf = t.faults[idx(kCpuBuf, nid, p)];
      const int64_t diff = membuf - mem / 2;
      fault_types[p] += membuf;
      membuf = 0;
      // runshare x 65536, weighted by this node's CPU faults.
      int64_t f_weight =
          static_cast<int64_t>((static_cast<__int128>(runtime) << 16) / (period + 1));
      f_weight = f_weight * cpubuf / (total_faults + 1);
      const int64_t f_diff = f_weight - cpu / 2;
      cpubuf = 0;
      mem += diff;
      cpu += f_diff;
      faults += mem;
      t.total_faults += diff;
      if (g) {
        g->mem[n * 2 + p] += diff;
        g->cpu[n * 2 + p] += f_diff;
        g->total_faults += diff;
        group_faults += g->mem[n * 2 + p];
      }
    }
    const int64_t score = g ? group_faults : faults;
    if (score > max_faults) {
      max_faults = score;
      max_nid = nid;
    }
  }
  if (g) count_active_nodes(*g);
  if (max_faults && max_nid != t.preferred_nid) t.preferred_nid = max_nid;
  update_task_scan_period(pid, mm, fault_types[0], fault_types[1], now);
}

void Balancer::update_task_scan_period(uint32_t pid, const mm::Mm& mm, int64_t shared, int64_t priv,
                                       Tick now) {
  TaskNuma& t = task(pid);
  const int64_t remote = t.locality[0];
  const int64_t local = t.locality[1];
  // Nothing useful, or a failed migration: back off. Up to 6.11 the
  // locality counts are kept (so a failed migration backs off again at the
  // next placement); 6.12 clears them.
  if (local + shared == 0 || t.locality[2]) {
    t.scan_period_ms = std::min(t.scan_period_max_ms, t.scan_period_ms << 1);
    // The kernel writes mm->numa_next_scan here (its mm is shared by threads).
    const_cast<mm::Mm&>(mm).numa_next_scan = now + milliseconds(t.scan_period_ms);
    if (cfg_.backoff_resets_locality) t.locality[0] = t.locality[1] = t.locality[2] = 0;
    return;
  }
  const int64_t slot = (t.scan_period_ms + kPeriodSlots - 1) / kPeriodSlots;
  const int64_t lr = local + remote ? local * kPeriodSlots / (local + remote) : 0;
  int64_t diff;
  if (cfg_.scan_period_update == ScanPeriodUpdate::k414) {
    const int64_t ps = priv + shared ? priv * kPeriodSlots / (priv + shared) : 0;
    if (ps >= kPeriodThreshold) {
      diff = std::max<int64_t>(1, ps - kPeriodThreshold) * slot;
    } else if (lr >= kPeriodThreshold) {
      diff = std::max<int64_t>(1, lr - kPeriodThreshold) * slot;
    } else {
      diff = -(kPeriodThreshold - std::max(lr, ps)) * slot;
    }
  } else {
    if (lr >= kPeriodThreshold) {
      diff = std::max<int64_t>(1, lr - kPeriodThreshold) * slot;
    } else {
      diff = -(kPeriodThreshold - lr) * slot;
      const int64_t ratio = (priv * kPeriodSlots + priv + shared) / (priv + shared + 1);
      diff = diff * ratio / kPeriodSlots;
    }
  }
  t.scan_period_ms =
      std::clamp(t.scan_period_ms + diff, task_scan_min(pid, mm), task_scan_max(pid, mm));
  t.locality[0] = t.locality[1] = t.locality[2] = 0;
}

void Balancer::count_active_nodes(NumaGroup& g) const {
  int64_t max = 0;
  for (size_t n = 0; n < nodes_; ++n) max = std::max(max, group_faults_cpu(g, static_cast<int>(n)));
  int active = 0;
  for (size_t n = 0; n < nodes_; ++n) {
    if (group_faults_cpu(g, static_cast<int>(n)) * kActiveNodeFraction > max) ++active;
  }
  g.max_faults_cpu = max;
  g.active_nodes = active;
}

void Balancer::task_numa_group(uint32_t pid, uint32_t cpupid, uint32_t flags, int& priv) {
  TaskNuma& t = task(pid);
  if (!t.group) {
    // A group of its own on the first attempt (gid = pid).
    auto g = std::make_shared<NumaGroup>();
    g->gid = pid;
    g->nr_tasks = 1;
    g->mem.assign(nodes_ * 2, 0);
    g->cpu.assign(nodes_ * 2, 0);
    for (size_t n = 0; n < nodes_; ++n) {
      for (int p = 0; p < 2; ++p) {
        g->mem[n * 2 + p] = t.faults[idx(kMem, static_cast<int>(n), p)];
        g->cpu[n * 2 + p] = t.faults[idx(kCpu, static_cast<int>(n), p)];
      }
    }
    g->total_faults = t.total_faults;
    t.group = g;
  }
  const uint32_t other = view_.current_pid(cpupid_cpu(cpupid));
  if (other == 0 || other == pid || !cpupid_match_pid(other, cpupid)) return;
  const TaskNuma* ot = find(other);
  if (!ot || !ot->group) return;
  std::shared_ptr<NumaGroup> grp = ot->group;
  std::shared_ptr<NumaGroup> mine = t.group;
  if (grp == mine) return;
  // Join only a larger group (ties broken by address, here by gid).
  if (mine->nr_tasks > grp->nr_tasks) return;
  if (mine->nr_tasks == grp->nr_tasks && mine->gid > grp->gid) return;
  bool join = view_.mm_id(other) == view_.mm_id(pid) || (flags & kTnfShared);
  priv = !join;
  if (!join) return;
  for (size_t n = 0; n < nodes_; ++n) {
    for (int p = 0; p < 2; ++p) {
      const int64_t m = t.faults[idx(kMem, static_cast<int>(n), p)];
      const int64_t c = t.faults[idx(kCpu, static_cast<int>(n), p)];
      mine->mem[n * 2 + p] -= m;
      mine->cpu[n * 2 + p] -= c;
      grp->mem[n * 2 + p] += m;
      grp->cpu[n * 2 + p] += c;
    }
  }
  mine->total_faults -= t.total_faults;
  grp->total_faults += t.total_faults;
  --mine->nr_tasks;
  ++grp->nr_tasks;
  t.group = grp;
}

std::optional<ProcSchedNuma> Balancer::proc_sched(uint32_t pid) const {
  const TaskNuma* n = find(pid);
  if (!n) return std::nullopt;
  ProcSchedNuma p;
  p.numa_scan_seq = n->scan_seq;
  p.numa_pages_migrated = n->pages_migrated;
  p.numa_preferred_nid = n->preferred_nid;
  p.total_numa_faults = n->total_faults;
  p.numa_group_id = n->group ? n->group->gid : 0;
  p.numa_scan_period_ms = n->scan_period_ms;
  for (size_t node = 0; node < nodes_; ++node) {
    const int nid = static_cast<int>(node);
    std::array<int64_t, 4> f{n->faults[idx(kMem, nid, 1)], n->faults[idx(kMem, nid, 0)], 0, 0};
    if (n->group) f = {f[0], f[1], n->group->mem[node * 2 + 1], n->group->mem[node * 2]};
    p.numa_faults.push_back(f);
  }
  return p;
}

int64_t Balancer::task_weight(uint32_t pid, NodeId node) const {
  const TaskNuma* t = find(pid);
  if (!t) return 0;
  if (t->group) {
    const NumaGroup& g = *t->group;
    if (g.total_faults <= 0) return 0;
    return 1000 * group_faults_mem(g, node.v) / g.total_faults;
  }
  if (t->total_faults <= 0) return 0;
  const int64_t f = t->faults[(static_cast<size_t>(kMem) * nodes_ + node.v) * 2] +
                    t->faults[(static_cast<size_t>(kMem) * nodes_ + node.v) * 2 + 1];
  return 1000 * f / t->total_faults;
}

}  // namespace mmsim::numa
