// Models automatic NUMA balancing (kernel/sched/fair.c task_tick_numa,
// task_numa_work, task_numa_fault, task_numa_placement, task_numa_group,
// update_task_scan_period, should_numa_migrate_memory; mm/memory.c
// do_numa_page; mm/mempolicy.c mpol_misplaced; mm/migrate.c
// migrate_misplaced_page's refusals). It keeps the per-task and per-group
// state and makes the decisions; the executor runs them in simulated time.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "mm/memory_manager.h"
#include "numa/config.h"
#include "sim/types.h"
#include "topo/topology.h"

namespace mmsim::numa {

// Flags of a hinting fault (TNF_*).
enum : uint32_t {
  kTnfMigrated = 1,
  kTnfNoGroup = 2,
  kTnfShared = 4,
  kTnfFaultLocal = 8,
  kTnfMigrateFail = 16,
};

inline constexpr uint32_t kCpupidUnset = ~0u;
// last_cpupid: the CPU and the low 8 bits of the PID of the last faulter.
inline uint32_t make_cpupid(CpuId cpu, uint32_t pid) {
  return (uint32_t{cpu.v} << 8) | (pid & 0xff);
}
inline CpuId cpupid_cpu(uint32_t cpupid) { return CpuId(static_cast<uint16_t>(cpupid >> 8)); }
inline bool cpupid_match_pid(uint32_t pid, uint32_t cpupid) {
  return cpupid != kCpupidUnset && (cpupid & 0xff) == (pid & 0xff);
}

struct NumaGroup {
  uint32_t gid = 0;
  int nr_tasks = 0;
  std::vector<int64_t> mem;  // [node][priv] decayed memory faults
  std::vector<int64_t> cpu;  // [node][priv] decayed CPU faults
  int64_t total_faults = 0;
  int active_nodes = 1;
  int64_t max_faults_cpu = 0;
};

// The NUMA fields of task_struct.
struct TaskNuma {
  int64_t scan_period_ms = 0;
  int64_t scan_period_max_ms = 0;
  int64_t node_stamp_ns = 0;  // in the task's runtime
  int64_t last_tick_ns = -1;  // when task_tick last ran (simulated time)
  // next_tick's last answer while due: the same while the task runs on (its
  // runtime and the clock advance together), asked at every step.
  mutable int64_t tick_memo_phase = -1, tick_memo_ns = 0;
  int scan_seq = 0;
  int preferred_nid = -1;
  std::vector<int64_t> faults;      // [MEM, CPU, MEMBUF, CPUBUF][node][priv]
  int64_t locality[3] = {0, 0, 0};  // remote, local, failed migrations
  int64_t total_faults = 0;
  std::shared_ptr<NumaGroup> group;
  Tick migrate_retry;
  int64_t last_runtime_ns = 0;
  Tick last_placement;
  uint64_t pages_migrated = 0;
  // Whether the task's own memory policy has MPOL_F_MOF (the default policy
  // does; a set_mempolicy without MPOL_F_NUMA_BALANCING does not).
  bool policy_mof = true;
};

// What the executor knows that the balancer asks about.
class TaskView {
 public:
  virtual ~TaskView() = default;
  virtual uint32_t current_pid(CpuId cpu) const = 0;  // 0 when idle
  virtual uint32_t mm_id(uint32_t pid) const = 0;
  virtual NodeId task_node(uint32_t pid) const = 0;
};

// The NUMA fields of /proc/<pid>/sched for one task.
struct ProcSchedNuma {
  int numa_scan_seq = 0;
  uint64_t numa_pages_migrated = 0;
  int numa_preferred_nid = -1;
  int64_t total_numa_faults = 0;
  uint32_t numa_group_id = 0;
  int64_t numa_scan_period_ms = 0;
  // Per node: task_private, task_shared, group_private, group_shared.
  std::vector<std::array<int64_t, 4>> numa_faults;
};

struct HintDecision {
  std::optional<NodeId> target;  // migrate there (mpol_misplaced)
  uint32_t flags = 0;
  uint32_t last_cpupid = kCpupidUnset;
  NodeId page_node;
  Vpn vpn{0};  // the faulting page
  // Pages task_numa_fault counts: the folio's (512 for a THP); 0 when the
  // fault counts nothing (a page of a PTE-mapped THP up to 6.9, which
  // do_numa_page only makes accessible again).
  int pages = 1;
};

class Balancer {
 public:
  Balancer(const NumaConfig& cfg, const topo::Topology& topo, mm::MemoryManager& mm,
           const TaskView& view);

  const NumaConfig& config() const { return cfg_; }
  const topo::Topology& topology() const { return topo_; }
  bool enabled() const { return cfg_.enabled; }

  // init_numa_balancing at fork/clone; `new_mm` when the child has its own
  // mm; `parent` the cloning task (0: none). A thread's scans are staggered
  // (4.19+): its node_stamp starts past 0, so it never takes
  // task_scan_start's period.
  void task_init(uint32_t pid, mm::Mm& mm, bool new_mm, Tick now, uint32_t parent = 0);
  void task_exit(uint32_t pid);
  // set_mempolicy: whether the task's policy now has MPOL_F_MOF.
  void set_task_policy_mof(uint32_t pid, bool mof) { task(pid).policy_mof = mof; }
  TaskNuma& task(uint32_t pid) { return *tasks_[pid]; }
  const TaskNuma* find(uint32_t pid) const {
    return pid < tasks_.size() ? tasks_[pid].get() : nullptr;
  }

  // task_tick_numa: the runtime (ns) at which it next acts.
  int64_t next_tick_runtime(uint32_t pid) const;
  // When task_tick_numa next acts for a task that has run `runtime_ns` by
  // `now` and keeps running on a CPU whose ticks fall at `phase` + k ticks:
  // the first tick after its runtime passes node_stamp + period.
  Tick next_tick(uint32_t pid, int64_t runtime_ns, Tick now, Tick phase) const;
  // task_tick_numa at that moment: advances node_stamp; true if
  // task_numa_work is due.
  bool task_tick(uint32_t pid, const mm::Mm& mm, Tick now);
  // task_numa_work: one scan pass over the mm from its offset. Returns the scan's CPU
  // cost in ns, which the caller charges (and passes to scan_done).
  double task_numa_work(uint32_t pid, mm::Mm& mm, CpuId cpu, Tick now);
  // Where task_numa_work reports itself, as the guest's kprobes do (mmsim
  // run --scan-trace): an event name and its arguments, "key=value" words,
  // for task `pid` on `cpu` at `now`. The events: task_numa_work (numa_scan_seq,
  // numa_scan_period, numa_preferred_nid, node_stamp) and task_numa_work_ret
  // for each call; change_prot_numa (vm_start, vm_end, start, end) and
  // change_prot_numa_ret (updated) for each range it marks; task_numa_fault
  // (last_cpupid, mem_node, pages, flags: the kernel's TNF_* bits) for each
  // hinting fault counted, as a kprobe on task_numa_fault shows it; and,
  // the model's own (the kernel's is inlined), update_task_scan_period
  // (numa_scan_period and the remote, local and failed counts it was
  // computed from) each time a task's period changes.
  using ScanSink = std::function<void(uint32_t pid, CpuId cpu, Tick now, std::string_view event,
                                      std::string_view args)>;
  void set_scan_sink(ScanSink sink) { scan_sink_ = std::move(sink); }
  // mpol_misplaced with the faulting address, as a kprobe on it shows it
  // (the fault's task_numa_fault follows): for reading a trace page by page.
  void trace_misplaced(uint32_t pid, CpuId cpu, Tick now, Vpn vpn) const;
  void scan_done(uint32_t pid, double scan_cost_ns);

  // The first half of do_numa_page (with mpol_misplaced and
  // should_numa_migrate_memory): counts the fault, swaps last_cpupid, picks
  // the target. Without a target it makes the mapping accessible again
  // (restore_numa_mapping); with one, from 5.13 (hint_pte_kept_for_migration),
  // the PROT_NONE entry stays for the migration to replace (a refused
  // migration must restore it). Its time is costs().pte_protect_ns.
  HintDecision do_numa_page(uint32_t pid, mm::Mm& mm, Vpn vpn, CpuId cpu, Tick now);
  // do_numa_page's out_map: the hinting PTE (or huge PMD) at vpn made
  // accessible again, and from 6.10 (pte_mapped_thp_hinting) the other
  // hinting PTEs of its PTE-mapped large folio in the same page table;
  // read-only unless `writable`.
  void restore_numa_mapping(mm::Mm& mm, Vpn vpn, bool writable = true);
  // do_numa_page after a migration of `folio` that unmapped nothing (no
  // destination page): out_map makes the hinting entry accessible again if
  // it is still the one the fault found; from 6.2 read-only, as the write
  // permission read before dropping the page-table lock is not trusted.
  void restore_after_failed_migration(mm::Mm& mm, const HintDecision& d, Pfn folio);
  // migrate_misplaced_page's refusals (numamigrate_isolate_page, the
  // 3.8-4.18 rate limit), and a THP's: may this folio (by its head) go to
  // `target` now?
  bool migrate_allowed(Pfn pfn, const mm::Vma& vma, NodeId target, Tick now);
  // task_numa_fault after the migration attempt, by task `pid` on `cpu`. Returns the node the
  // task should move to (numa_migrate_preferred), if any.
  std::optional<NodeId> task_numa_fault(uint32_t pid, CpuId cpu, const mm::Mm& mm,
                                        uint32_t last_cpupid, NodeId mem_node, NodeId cpu_node,
                                        int pages, uint32_t flags, Tick now, int64_t runtime_ns);
  // task_numa_migrate's score (task_weight/group_weight): 1000 x this task's (or group's) faults on
  // the node / total.
  int64_t task_weight(uint32_t pid, NodeId node) const;
  // What /proc/<pid>/sched shows of the task's NUMA state; nullopt for a pid
  // the balancer never saw.
  std::optional<ProcSchedNuma> proc_sched(uint32_t pid) const;

  // task_scan_min, task_scan_max and task_scan_start, in ms.
  int64_t task_scan_min(uint32_t pid, const mm::Mm& mm) const;
  int64_t task_scan_max(uint32_t pid, const mm::Mm& mm) const;
  int64_t task_scan_start(uint32_t pid, const mm::Mm& mm) const;

 private:
  // task_numa_work's per-VMA filter (numa.vma_scan_filter), on a VMA that
  // passed the others: scan it, skip it, or skip it for its pids (which may
  // force a scan later in the pass).
  // task_numa_work's body, between the scan trace's entry and return.
  double scan(uint32_t pid, TaskNuma& t, mm::Mm& mm, CpuId cpu, Tick now);
  enum class VmaVerdict : uint8_t { kScan, kSkip, kSkipPids };
  VmaVerdict vma_scan_verdict(uint32_t pid, mm::Mm& mm, mm::Vma& vma, Tick now,
                              bool pids_forced) const;
  // vma_set_access_pid_bit: task `pid` took a hinting fault in the VMA.
  void vma_set_access_pid_bit(uint32_t pid, mm::Vma& vma);
  size_t idx(int stat, int node, int priv) const {
    return (static_cast<size_t>(stat) * nodes_ + static_cast<size_t>(node)) * 2 +
           static_cast<size_t>(priv);
  }
  bool should_numa_migrate_memory(uint32_t pid, mm::Folio& folio, NodeId src, NodeId dst, CpuId cpu,
                                  Tick now);
  // The memory-tiering branch (6.0+) for a slow-tier folio faulting towards
  // dst: free space, the adjusted hot threshold, the rate limit.
  bool promote_hot_page(mm::Folio& folio, uint32_t nr, NodeId dst, Tick now);
  // jiffies_to_msecs(jiffies).
  uint32_t jiffies_ms(Tick now) const;
  void task_numa_placement(uint32_t pid, const mm::Mm& mm, Tick now, int64_t runtime_ns);
  void update_task_scan_period(uint32_t pid, const mm::Mm& mm, int64_t shared, int64_t priv,
                               Tick now);
  void task_numa_group(uint32_t pid, uint32_t cpupid, uint32_t flags, int& priv);
  void count_active_nodes(NumaGroup& g) const;
  int64_t group_scaled(const NumaGroup& g, int64_t period) const;
  int64_t group_faults_cpu(const NumaGroup& g, int node) const {
    return g.cpu[node * 2] + g.cpu[node * 2 + 1];
  }
  int64_t group_faults_mem(const NumaGroup& g, int node) const {
    return g.mem[node * 2] + g.mem[node * 2 + 1];
  }
  uint64_t mm_rss_pages(const mm::Mm& mm) const { return mm.rss_anon + mm.rss_file + mm.rss_shmem; }

  NumaConfig cfg_;
  const topo::Topology& topo_;
  mm::MemoryManager& mm_;
  const TaskView& view_;
  size_t nodes_;
  std::vector<std::unique_ptr<TaskNuma>> tasks_;  // by pid
  ScanSink scan_sink_;                            // empty: no scan trace
  // numamigrate_update_ratelimit: per destination node, pages migrated in
  // the current 100 ms window.
  std::vector<Tick> ratelimit_window_end_;
  std::vector<uint64_t> ratelimit_pages_;
  // Memory tiering's per-node promotion state (pglist_data's nbp_*), in ms
  // of jiffies, with the node's pgpromote_candidate.
  struct PromoteState {
    int64_t threshold_ms = 0;  // 0: the default threshold
    uint32_t th_start_ms = 0;
    uint64_t th_nr_cand = 0;
    uint32_t rl_start_ms = 0;
    uint64_t rl_nr_cand = 0;
    uint64_t candidates = 0;
  };
  std::vector<PromoteState> promote_;
};

}  // namespace mmsim::numa
