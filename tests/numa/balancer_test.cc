// Tests of automatic NUMA balancing (src/numa/balancer.*) and the mm-side
// pieces it drives (change_prot_numa, restore_numa_pte, migrate_*), against
// the rules of kernel/sched/fair.c, mm/memory.c and mm/migrate.c (docs/kernel-rules.md).
#include "numa/balancer.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "numa/skip_rules.h"
#include "support/mm_fixture.h"

namespace mmsim::numa {
namespace {

using testing::kR;
using testing::kRW;
using testing::MmWorld;

constexpr int kNodes = 2;
constexpr int kPriv = 1;
constexpr int kShared = 0;

// What the scheduler would tell the balancer: who runs where, and in which mm.
class FakeTasks : public TaskView {
 public:
  uint32_t current_pid(CpuId cpu) const override {
    auto it = running_.find(cpu.v);
    return it == running_.end() ? 0 : it->second;
  }
  uint32_t mm_id(uint32_t pid) const override { return mm_of_.at(pid); }
  NodeId task_node(uint32_t pid) const override { return node_of_.at(pid); }

  void run(uint32_t pid, CpuId cpu, NodeId node, uint32_t mm_id) {
    running_[cpu.v] = pid;
    mm_of_[pid] = mm_id;
    node_of_[pid] = node;
  }

 private:
  std::map<uint16_t, uint32_t> running_;
  std::map<uint32_t, uint32_t> mm_of_;
  std::map<uint32_t, NodeId> node_of_;
};

// Balancing on, under the rules these tests were written for: every skip
// rule of change_prot_numa (shared COW 4.16+, dirty file 4.17+, target node
// 4.10+), the 4.14+ first scan and period arithmetic, placement on every
// fault (up to 4.18), sleepers pinning pages (up to 4.20) and no migration
// rate limit (4.19+). Tests of a rule's other side change that switch.
NumaConfig enabled_config() {
  NumaConfig c;
  c.enabled = true;
  c.skip_shared_cow = true;
  c.skip_dirty_file = true;
  c.skip_target_node = true;
  c.migrate_rate_limit = false;
  c.scan_start_group_scaled = true;
  c.scan_period_update = ScanPeriodUpdate::k414;
  c.placement_every_fault = true;
  c.waiter_pins_page = true;
  return c;
}

// The 2-node test machine, a balancer on it, and the tasks' mms. Every mm is
// unmapped when the world goes away.
struct NumaWorld {
  explicit NumaWorld(const NumaConfig& cfg = enabled_config())
      : balancer(cfg, w.topo, w.mgr, tasks) {}
  ~NumaWorld() {
    for (auto& mm : mms) w.teardown(*mm);
  }

  // A single-threaded process `pid` with a new mm, running on `cpu`, started at time 0.
  mm::Mm& process(uint32_t pid, uint16_t cpu = 0) {
    mms.push_back(w.mgr.mm_alloc());
    mm::Mm& mm = *mms.back();
    add_task(pid, mm, true, cpu);
    return mm;
  }
  // Another thread `pid` of mm (CLONE_VM), running on `cpu`, cloned by
  // `parent` (0: none).
  void thread(uint32_t pid, mm::Mm& mm, uint16_t cpu, uint32_t parent = 0) {
    add_task(pid, mm, false, cpu, parent);
  }
  // fork(): a child process `pid` whose mm is a copy of the parent's.
  mm::Mm& fork(mm::Mm& parent, uint32_t pid, uint16_t cpu = 0) {
    mms.push_back(w.mgr.mm_alloc());
    mm::Mm& child = *mms.back();
    w.mgr.dup_mmap(parent, child, CpuId(0));
    add_task(pid, child, true, cpu);
    return child;
  }
  uint16_t node1_cpu() const { return w.topo.node(NodeId(1)).cpus.front().v; }
  int64_t vm(mm::Vm item) const { return w.mgr.vmstat()[item]; }
  Pfn pfn_at(mm::Mm& mm, Vpn v) const { return Pfn(mm.pgtable().get(v).pfn); }
  mm::Folio& folio_at(mm::Mm& mm, Vpn v) { return w.mgr.folios().folio(pfn_at(mm, v)); }
  // Writes (or reads) pages [a, a + n) from cpu.
  void touch(mm::Mm& mm, Vpn a, uint64_t n, bool write, uint16_t cpu = 0) {
    for (uint64_t i = 0; i < n; ++i)
      ASSERT_EQ(w.fault(mm, Vpn(a.v + i), write, cpu), mm::FaultStatus::kOk);
  }
  // Marks [a, a + n) as hinting PTEs with no skip rule but those that always
  // hold, shared COW and dirty file pages (no target node).
  void mark(mm::Mm& mm, Vpn a, uint64_t n) {
    NumaConfig rules;
    rules.skip_shared_cow = true;
    rules.skip_dirty_file = true;
    const ProtNumaFilter filter(rules, std::nullopt, w.mgr.tiers(), 0);
    w.mgr.change_prot_numa(mm, *mm.find_vma(a), a, Vpn(a.v + n), filter, CpuId(0));
  }
  // One hinting fault's accounting (task_numa_fault) for a single page.
  void numa_fault(uint32_t pid, mm::Mm& mm, NodeId mem_node, NodeId cpu_node, uint32_t flags,
                  Tick now, uint32_t last_cpupid = kCpupidUnset) {
    balancer.task_numa_fault(pid, CpuId(0), mm, last_cpupid, mem_node, cpu_node, 1, flags, now, 0);
  }

  MmWorld w;
  FakeTasks tasks;
  Balancer balancer;
  std::vector<std::shared_ptr<mm::Mm>> mms;

 private:
  void add_task(uint32_t pid, mm::Mm& mm, bool new_mm, uint16_t cpu, uint32_t parent = 0) {
    ++mm.users;
    tasks.run(pid, CpuId(cpu), w.topo.cpu_to_node(CpuId(cpu)), mm.id());
    balancer.task_init(pid, mm, new_mm, Tick(0), parent);
  }
};

// TaskNuma::faults is laid out [MEM, CPU, MEMBUF, CPUBUF][node][priv].
int64_t mem_faults(const TaskNuma& t, int node, int priv) {
  return t.faults[(0 * kNodes + node) * 2 + priv];
}
int64_t membuf_faults(const TaskNuma& t, int node, int priv) {
  return t.faults[(2 * kNodes + node) * 2 + priv];
}

// First scan allowed for an mm created at time 0: now + scan_delay (S2).
constexpr Tick kFirstScan = milliseconds(1000);
// A 2 MiB-aligned address for mappings whose scan chunks the tests count.
constexpr Vpn kAligned{uint64_t{0x7e0000000}};

// P3b ------------------------------------------------------------------------

// A parent that wrote two pages of a private mapping, then forked; the child
// then wrote page 1, so the parent's page 0 has mapcount 2 and page 1 has 1.
struct ForkedCow {
  explicit ForkedCow(NumaWorld& n) : parent(n.process(1)), a(n.w.map(parent, 2, kRW)) {
    n.touch(parent, a, 2, true);
    child = &n.fork(parent, 2);
    n.touch(*child, Vpn(a.v + 1), 1, true);
  }
  mm::Mm& parent;
  Vpn a;
  mm::Mm* child = nullptr;
};

TEST(NumaTick, ANewThreadsFirstScanComesTwoTicksAndALittleAfterItsParents) {
  // init_numa_balancing staggers a thread: its node_stamp starts at
  // min(task_scan_max, period x mm_users in ns) + 2 ticks, and the first is
  // the smaller here (task_scan_max's milliseconds taken as nanoseconds).
  NumaConfig cfg = enabled_config();
  cfg.thread_scan_stagger = true;
  NumaWorld n(cfg);
  mm::Mm& mm = n.process(1);
  n.thread(2, mm, 1, 1);
  const int64_t parent = n.balancer.next_tick_runtime(1);
  const int64_t thread = n.balancer.next_tick_runtime(2);
  const int64_t two_ticks = 2 * enabled_config().tick_ns();
  EXPECT_GT(thread - parent, two_ticks);
  EXPECT_LT(thread - parent, two_ticks + 1000000);
}

TEST(NumaTick, BeforeTheStaggerANewThreadsFirstScanComesWithItsParents) {
  NumaConfig cfg = enabled_config();
  cfg.thread_scan_stagger = false;  // up to 4.18
  NumaWorld n(cfg);
  mm::Mm& mm = n.process(1);
  n.thread(2, mm, 1, 1);
  EXPECT_EQ(n.balancer.next_tick_runtime(2), n.balancer.next_tick_runtime(1));
}

TEST(NumaTick, AScanShorterThanATickDoesNotPutOffTheNextOne) {
  // task_numa_work's 32x charge is of sum_exec_runtime's change, which only
  // an update_curr (the next tick) would show.
  NumaWorld n;
  n.process(1);
  const int64_t due = n.balancer.next_tick_runtime(1);
  n.balancer.scan_done(1, 0.9 * static_cast<double>(enabled_config().tick_ns()));
  EXPECT_EQ(n.balancer.next_tick_runtime(1), due);
}

TEST(NumaTick, AScanSpanningTicksPutsOffTheNextBy32TimesTheTicksItSpans) {
  NumaWorld n;
  n.process(1);
  const int64_t tick = enabled_config().tick_ns();
  const int64_t due = n.balancer.next_tick_runtime(1);
  n.balancer.scan_done(1, 2.5 * static_cast<double>(tick));
  EXPECT_EQ(n.balancer.next_tick_runtime(1), due + 32 * 2 * tick);
}

TEST(NumaScan, SkipsSharedCowPteWhenRuleEnabled) {
  NumaWorld n;
  ForkedCow f(n);
  ASSERT_EQ(n.folio_at(f.parent, f.a).mapcount, 2);
  ASSERT_EQ(n.folio_at(f.parent, Vpn(f.a.v + 1)).mapcount, 1);

  // From node 1, so that P3e does not skip the node-0 pages.
  n.balancer.task_numa_work(1, f.parent, CpuId(n.node1_cpu()), kFirstScan);

  EXPECT_FALSE(f.parent.pgtable().get(f.a).protnone());
  EXPECT_TRUE(f.parent.pgtable().get(Vpn(f.a.v + 1)).protnone());
  EXPECT_EQ(n.vm(mm::Vm::numa_pte_updates), 1);
}

TEST(NumaScan, MarksSharedCowPteWhenRuleDisabled) {
  NumaConfig cfg = enabled_config();
  cfg.skip_shared_cow = false;
  NumaWorld n(cfg);
  ForkedCow f(n);

  n.balancer.task_numa_work(1, f.parent, CpuId(n.node1_cpu()), kFirstScan);

  EXPECT_TRUE(f.parent.pgtable().get(f.a).protnone());
  EXPECT_TRUE(f.parent.pgtable().get(Vpn(f.a.v + 1)).protnone());
  EXPECT_EQ(n.vm(mm::Vm::numa_pte_updates), 2);
}

// P2, P3e -------------------------------------------------------------------

TEST(NumaScan, SingleThreadedTaskSkipsPagesAlreadyOnItsNode) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  const Vpn a = n.w.map(mm, 4, kRW);
  n.touch(mm, a, 2, true, 0);                         // node 0
  n.touch(mm, Vpn(a.v + 2), 2, true, n.node1_cpu());  // node 1
  ASSERT_EQ(n.folio_at(mm, Vpn(a.v + 2)).node, NodeId(1));

  n.balancer.task_numa_work(1, mm, CpuId(0), kFirstScan);

  EXPECT_FALSE(mm.pgtable().get(a).protnone());
  EXPECT_FALSE(mm.pgtable().get(Vpn(a.v + 1)).protnone());
  EXPECT_TRUE(mm.pgtable().get(Vpn(a.v + 2)).protnone());
  EXPECT_TRUE(mm.pgtable().get(Vpn(a.v + 3)).protnone());
  EXPECT_EQ(n.vm(mm::Vm::numa_pte_updates), 2);
}

TEST(NumaScan, MultiThreadedTaskMarksPagesOnEveryNode) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  n.thread(2, mm, 1);
  const Vpn a = n.w.map(mm, 4, kRW);
  n.touch(mm, a, 2, true, 0);
  n.touch(mm, Vpn(a.v + 2), 2, true, n.node1_cpu());

  n.balancer.task_numa_work(1, mm, CpuId(0), kFirstScan);

  for (uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(mm.pgtable().get(Vpn(a.v + i)).protnone()) << i;
  EXPECT_EQ(n.vm(mm::Vm::numa_pte_updates), 4);
}

// P3c -----------------------------------------------------------------------

TEST(NumaScan, SkipsDirtyFilePages) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  mm::AddressSpace& file = n.w.mgr.create_file("data.db", 4, false);
  const Vpn a = n.w.map(mm, 4, kRW | mm::Vma::kShared, &file);
  n.touch(mm, a, 1, true);              // dirty
  n.touch(mm, Vpn(a.v + 1), 1, false);  // clean (fault-around maps the rest)
  ASSERT_TRUE(n.folio_at(mm, a).test(mm::Folio::kDirty));

  n.balancer.task_numa_work(1, mm, CpuId(n.node1_cpu()), kFirstScan);

  EXPECT_FALSE(mm.pgtable().get(a).protnone());
  EXPECT_TRUE(mm.pgtable().get(Vpn(a.v + 1)).protnone());
}

TEST(NumaScan, MarksWrittenSharedAnonymousPages) {
  // MAP_SHARED|MAP_ANONYMOUS is shmem: swap-backed, not page cache, so its
  // dirty pages are hinted like any other (page_is_file_cache is false).
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  const Vpn a = n.w.map(mm, 2, kRW | mm::Vma::kShared);
  n.touch(mm, a, 2, true);

  n.balancer.task_numa_work(1, mm, CpuId(n.node1_cpu()), kFirstScan);

  EXPECT_TRUE(mm.pgtable().get(a).protnone());
  EXPECT_TRUE(mm.pgtable().get(Vpn(a.v + 1)).protnone());
  EXPECT_EQ(n.vm(mm::Vm::numa_pte_updates), 2);
}

// S6 ------------------------------------------------------------------------

TEST(NumaScan, SkipsReadOnlyFileMappings) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  mm::AddressSpace& lib = n.w.mgr.create_file("libfoo.so", 4, false);
  const Vpn text = n.w.map(mm, 4, kR | mm::Vma::kExec, &lib);
  n.touch(mm, text, 4, false);

  n.balancer.task_numa_work(1, mm, CpuId(n.node1_cpu()), kFirstScan);

  for (uint64_t i = 0; i < 4; ++i) EXPECT_FALSE(mm.pgtable().get(Vpn(text.v + i)).protnone()) << i;
  EXPECT_EQ(n.vm(mm::Vm::numa_pte_updates), 0);
}

TEST(NumaScan, ScansWritablePrivateFileMappings) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  mm::AddressSpace& prog = n.w.mgr.create_file("prog", 4, false);
  const Vpn data = n.w.map(mm, 4, kRW, &prog);  // .data: MAP_PRIVATE, PROT_READ|PROT_WRITE
  n.touch(mm, data, 4, false);

  n.balancer.task_numa_work(1, mm, CpuId(n.node1_cpu()), kFirstScan);

  for (uint64_t i = 0; i < 4; ++i) EXPECT_TRUE(mm.pgtable().get(Vpn(data.v + i)).protnone()) << i;
  EXPECT_EQ(n.vm(mm::Vm::numa_pte_updates), 4);
}

// S3 ------------------------------------------------------------------------

TEST(NumaScan, SecondScannerInTheSameWindowDoesNothing) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  n.thread(2, mm, 1);
  const Vpn a = n.w.map(mm, 4, kRW);
  n.touch(mm, a, 2, true);
  n.balancer.task_numa_work(1, mm, CpuId(0), kFirstScan);
  ASSERT_EQ(n.vm(mm::Vm::numa_pte_updates), 2);
  const Tick next = mm.numa_next_scan;
  n.touch(mm, Vpn(a.v + 2), 2, true);  // new pages the second scan would mark

  const double cost = n.balancer.task_numa_work(2, mm, CpuId(1), kFirstScan + milliseconds(1));

  EXPECT_EQ(cost, 0);
  EXPECT_EQ(n.vm(mm::Vm::numa_pte_updates), 2);
  EXPECT_FALSE(mm.pgtable().get(Vpn(a.v + 2)).protnone());
  EXPECT_EQ(mm.numa_next_scan, next);
}

TEST(NumaScan, ScanMovesNextScanToNowPlusThePeriod) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  n.balancer.task(1).scan_period_ms = 1500;
  const Tick now = kFirstScan + milliseconds(7);

  n.balancer.task_numa_work(1, mm, CpuId(0), now);

  EXPECT_EQ(mm.numa_next_scan, now + milliseconds(1500));
}

TEST(NumaScan, ScanBeforeTheFirstWindowDoesNothing) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  const Vpn a = n.w.map(mm, 1, kRW);
  n.touch(mm, a, 1, true, n.node1_cpu());

  n.balancer.task_numa_work(1, mm, CpuId(0), kFirstScan - milliseconds(1));

  EXPECT_FALSE(mm.pgtable().get(a).protnone());
  EXPECT_EQ(mm.numa_next_scan, kFirstScan);
}

// S5, S7 --------------------------------------------------------------------

NumaConfig one_mb_scans() {
  NumaConfig cfg = enabled_config();
  cfg.numa_balancing_scan_size_mb = 1;  // 256 pages; 2048 virtual pages
  return cfg;
}

uint64_t round_up(uint64_t v, uint64_t to) { return (v + to - 1) / to * to; }

TEST(NumaScan, PassStopsAtThePageBudgetAndSavesTheOffset) {
  NumaWorld n(one_mb_scans());
  mm::Mm& mm = n.process(1, 0);
  const Vpn a = n.w.map_at(mm, kAligned, 1124, kRW);
  n.touch(mm, a, 1124, true);

  n.balancer.task_numa_work(1, mm, CpuId(n.node1_cpu()), kFirstScan);

  // S7: the chunk ends at start + 256 pages rounded up to 2 MiB (512 pages);
  // it changed PTEs, so the page budget is spent.
  const uint64_t end = round_up(a.v + 256, 512);
  EXPECT_EQ(n.vm(mm::Vm::numa_pte_updates), static_cast<int64_t>(end - a.v));
  EXPECT_TRUE(mm.pgtable().get(Vpn(end - 1)).protnone());
  EXPECT_FALSE(mm.pgtable().get(Vpn(end)).protnone());
  EXPECT_EQ(mm.numa_scan_offset, end);
  EXPECT_EQ(mm.numa_scan_seq, 0);
}

TEST(NumaScan, NextPassResumesAtTheSavedOffset) {
  NumaWorld n(one_mb_scans());
  mm::Mm& mm = n.process(1, 0);
  const Vpn a = n.w.map_at(mm, kAligned, 1124, kRW);
  n.touch(mm, a, 1124, true);
  n.balancer.task_numa_work(1, mm, CpuId(n.node1_cpu()), kFirstScan);
  const uint64_t first_end = mm.numa_scan_offset;
  // Give page 0 back its access, so a pass that restarted at 0 would mark it.
  n.w.mgr.restore_numa_pte(mm, a);

  n.balancer.task_numa_work(1, mm, CpuId(n.node1_cpu()), mm.numa_next_scan);

  EXPECT_FALSE(mm.pgtable().get(a).protnone());
  EXPECT_EQ(mm.numa_scan_offset, first_end + 512);
  EXPECT_EQ(n.vm(mm::Vm::numa_pte_updates), 1024);
}

TEST(NumaScan, PassThatReachesTheEndWrapsAndIncrementsTheSequence) {
  NumaWorld n(one_mb_scans());
  mm::Mm& mm = n.process(1, 0);
  const Vpn a = n.w.map_at(mm, kAligned, 1124, kRW);
  n.touch(mm, a, 1124, true);
  const CpuId cpu(n.node1_cpu());
  n.balancer.task_numa_work(1, mm, cpu, kFirstScan);
  n.balancer.task_numa_work(1, mm, cpu, mm.numa_next_scan);
  ASSERT_EQ(mm.numa_scan_seq, 0);

  // The last 100 pages fit in the budget: the walk runs off the last VMA.
  n.balancer.task_numa_work(1, mm, cpu, mm.numa_next_scan);

  EXPECT_EQ(n.vm(mm::Vm::numa_pte_updates), 1124);
  EXPECT_EQ(mm.numa_scan_seq, 1);
  EXPECT_EQ(mm.numa_scan_offset, 0u);
}

TEST(NumaScan, PassAfterAWrapStartsAgainAtTheFirstVma) {
  NumaWorld n(one_mb_scans());
  mm::Mm& mm = n.process(1, 0);
  const Vpn a = n.w.map_at(mm, kAligned, 1124, kRW);
  n.touch(mm, a, 1124, true);
  const CpuId cpu(n.node1_cpu());
  for (int pass = 0; pass < 3; ++pass) n.balancer.task_numa_work(1, mm, cpu, mm.numa_next_scan);
  ASSERT_EQ(mm.numa_scan_seq, 1);
  n.w.mgr.restore_numa_pte(mm, a);

  n.balancer.task_numa_work(1, mm, cpu, mm.numa_next_scan);

  EXPECT_TRUE(mm.pgtable().get(a).protnone());
  EXPECT_EQ(n.vm(mm::Vm::numa_pte_updates), 1125);
}

TEST(NumaScan, PassStartingPastTheLastVmaWrapsAndScansFromTheStart) {
  NumaWorld n(one_mb_scans());
  mm::Mm& mm = n.process(1, 0);
  const Vpn a = n.w.map(mm, 1024, kRW);
  n.touch(mm, a, 1024, true);
  const CpuId cpu(n.node1_cpu());
  // Two passes of 512 pages; the second spends its budget right at the end.
  n.balancer.task_numa_work(1, mm, cpu, mm.numa_next_scan);
  n.balancer.task_numa_work(1, mm, cpu, mm.numa_next_scan);
  ASSERT_EQ(mm.numa_scan_offset, a.v + 1024);
  ASSERT_EQ(mm.numa_scan_seq, 0);
  n.w.mgr.restore_numa_pte(mm, a);

  n.balancer.task_numa_work(1, mm, cpu, mm.numa_next_scan);

  // reset_ptenuma_scan first, then the walk from the first VMA.
  EXPECT_EQ(mm.numa_scan_seq, 1);
  EXPECT_TRUE(mm.pgtable().get(a).protnone());
  EXPECT_EQ(mm.numa_scan_offset, a.v + 512);
}

TEST(NumaScan, UnpopulatedRangeStopsAPassAtTheVirtualBudget) {
  NumaWorld n(one_mb_scans());
  mm::Mm& mm = n.process(1, 0);
  const Vpn a = n.w.map(mm, 4096, kRW);

  n.balancer.task_numa_work(1, mm, CpuId(0), kFirstScan);

  // Nothing changed, so only virtpages (8 x 256) is spent.
  EXPECT_EQ(mm.numa_scan_offset, a.v + 2048);
  EXPECT_EQ(mm.numa_scan_seq, 0);
}

// F1, F2, F5 ----------------------------------------------------------------

TEST(NumaHintFault, RestoredPteRegainsItsSavedWriteBit) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  const Vpn a = n.w.map(mm, 1, kRW);
  n.touch(mm, a, 1, true);
  n.mark(mm, a, 1);
  ASSERT_TRUE(mm.pgtable().get(a).protnone());
  ASSERT_FALSE(mm.pgtable().get(a).writable());

  const HintDecision d = n.balancer.do_numa_page(1, mm, a, CpuId(0), Tick{});

  EXPECT_FALSE(mm.pgtable().get(a).protnone());
  EXPECT_TRUE(mm.pgtable().get(a).writable());
  EXPECT_FALSE(d.flags & kTnfNoGroup);
}

TEST(NumaHintFault, AHintingPteThatForkCopiedComesBackReadOnlyInBothMms) {
  // copy_present_pte write-protects a COW page whatever its protection: the
  // saved write bit must not make the shared page writable again.
  NumaWorld n;
  mm::Mm& parent = n.process(1, 0);
  const Vpn a = n.w.map(parent, 1, kRW);
  n.touch(parent, a, 1, true);
  n.mark(parent, a, 1);
  mm::Mm& child = n.fork(parent, 2);

  n.balancer.do_numa_page(1, parent, a, CpuId(0), Tick{});
  n.balancer.do_numa_page(2, child, a, CpuId(0), Tick{});

  EXPECT_FALSE(parent.pgtable().get(a).writable());
  EXPECT_FALSE(child.pgtable().get(a).writable());
  EXPECT_EQ(n.pfn_at(parent, a), n.pfn_at(child, a));
  n.w.expect_consistent();
}

TEST(NumaHintFault, RestoredReadOnlyPteStaysReadOnlyAndIsNotGrouped) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  mm::AddressSpace& prog = n.w.mgr.create_file("prog", 1, false);
  const Vpn a = n.w.map(mm, 1, kRW, &prog);
  n.touch(mm, a, 1, false);  // a page-cache page, mapped read-only (COW)
  n.mark(mm, a, 1);

  const HintDecision d = n.balancer.do_numa_page(1, mm, a, CpuId(0), Tick{});

  EXPECT_FALSE(mm.pgtable().get(a).protnone());
  EXPECT_FALSE(mm.pgtable().get(a).writable());
  EXPECT_TRUE(d.flags & kTnfNoGroup);
}

TEST(NumaHintFault, EarlyFaultWithUnsetCpupidPicksTheFaultingNode) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, n.node1_cpu());
  const Vpn a = n.w.map(mm, 1, kRW);
  n.touch(mm, a, 1, true, 0);  // on node 0
  n.mark(mm, a, 1);
  ASSERT_EQ(n.folio_at(mm, a).last_cpupid, kCpupidUnset);

  const HintDecision d = n.balancer.do_numa_page(1, mm, a, CpuId(n.node1_cpu()), Tick{});

  ASSERT_TRUE(d.target.has_value());
  EXPECT_EQ(*d.target, NodeId(1));
  EXPECT_EQ(d.page_node, NodeId(0));
  EXPECT_EQ(d.last_cpupid, kCpupidUnset);
  EXPECT_FALSE(d.flags & kTnfFaultLocal);
}

TEST(NumaHintFault, EarlyFaultOfAGroupedTaskWithUnsetCpupidPicksTheFaultingNode) {
  NumaWorld n;
  const uint16_t cpu1 = 0, cpu2 = n.node1_cpu();
  mm::Mm& mm = n.process(1, cpu1);
  n.thread(2, mm, cpu2);
  n.numa_fault(2, mm, NodeId(0), NodeId(1), 0, seconds(1), make_cpupid(CpuId(cpu1), 1));
  n.numa_fault(1, mm, NodeId(1), NodeId(0), 0, seconds(1), make_cpupid(CpuId(cpu2), 2));
  ASSERT_NE(n.balancer.task(2).group.get(), nullptr);
  const Vpn a = n.w.map(mm, 1, kRW);
  n.touch(mm, a, 1, true, cpu1);
  n.mark(mm, a, 1);

  // Step 2 decides: the group's (empty) CPU-fault counts would say no.
  const HintDecision d = n.balancer.do_numa_page(2, mm, a, CpuId(cpu2), Tick{});

  ASSERT_TRUE(d.target.has_value());
  EXPECT_EQ(*d.target, NodeId(1));
}

// The test world's rules with do_numa_page's 5.13 order on or off.
NumaConfig kept_config(bool kept) {
  NumaConfig c = enabled_config();
  c.hint_pte_kept_for_migration = kept;
  return c;
}

// A page written from node 0 by task 1, which runs on node 1, marked: its
// hinting fault (taken here) picks node 1. Returns the page.
Vpn misplaced_hint_fault(NumaWorld& n, mm::Mm& mm) {
  const Vpn a = n.w.map(mm, 1, kRW);
  n.touch(mm, a, 1, true, 0);
  n.mark(mm, a, 1);
  const HintDecision d = n.balancer.do_numa_page(1, mm, a, CpuId(n.node1_cpu()), Tick{});
  EXPECT_TRUE(d.target.has_value());
  return a;
}

TEST(NumaHintFault, From5_13AFaultThatPicksATargetLeavesTheHintingPteForTheMigration) {
  // do_numa_page unlocks the PTE still PROT_NONE and migrates; the
  // migration's entry replaces it, and a refusal (out_map) makes it
  // accessible again.
  NumaWorld n(kept_config(true));
  mm::Mm& mm = n.process(1, n.node1_cpu());

  const Vpn a = misplaced_hint_fault(n, mm);

  EXPECT_TRUE(mm.pgtable().get(a).protnone());
  n.balancer.restore_numa_mapping(mm, a);
  EXPECT_FALSE(mm.pgtable().get(a).protnone());
  EXPECT_TRUE(mm.pgtable().get(a).writable());
}

TEST(NumaHintFault, UpTo5_12AFaultThatPicksATargetMakesThePtePresentFirst) {
  NumaWorld n(kept_config(false));
  mm::Mm& mm = n.process(1, n.node1_cpu());

  const Vpn a = misplaced_hint_fault(n, mm);

  EXPECT_FALSE(mm.pgtable().get(a).protnone());
  EXPECT_TRUE(mm.pgtable().get(a).accessible());
}

TEST(NumaHintFault, LastFaultFromAnotherNodeGivesNoTarget) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, n.node1_cpu());
  const Vpn a = n.w.map(mm, 1, kRW);
  n.touch(mm, a, 1, true, 0);
  n.mark(mm, a, 1);
  // Another task last faulted on it from CPU 0 (node 0); the destination is node 1.
  const uint32_t other = make_cpupid(CpuId(0), 7);
  n.folio_at(mm, a).last_cpupid = other;

  const HintDecision d = n.balancer.do_numa_page(1, mm, a, CpuId(n.node1_cpu()), Tick{});

  EXPECT_FALSE(d.target.has_value());
  EXPECT_EQ(d.last_cpupid, other);
}

TEST(NumaHintFault, FaultSwapsItsCpupidIntoTheFolio) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, n.node1_cpu());
  const Vpn a = n.w.map(mm, 1, kRW);
  n.touch(mm, a, 1, true, 0);
  n.mark(mm, a, 1);
  n.folio_at(mm, a).last_cpupid = make_cpupid(CpuId(0), 7);

  n.balancer.do_numa_page(1, mm, a, CpuId(n.node1_cpu()), Tick{});

  EXPECT_EQ(n.folio_at(mm, a).last_cpupid, make_cpupid(CpuId(n.node1_cpu()), 1));
}

TEST(NumaHintFault, LocalFaultIsCountedLocalAndGivesNoTarget) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  const Vpn a = n.w.map(mm, 1, kRW);
  n.touch(mm, a, 1, true, 0);
  n.mark(mm, a, 1);

  const HintDecision d = n.balancer.do_numa_page(1, mm, a, CpuId(0), Tick{});

  EXPECT_FALSE(d.target.has_value());
  EXPECT_TRUE(d.flags & kTnfFaultLocal);
  EXPECT_EQ(n.vm(mm::Vm::numa_hint_faults), 1);
  EXPECT_EQ(n.vm(mm::Vm::numa_hint_faults_local), 1);
}

// T6 ------------------------------------------------------------------------

TEST(NumaScanPeriod, FailedMigrationDoublesThePeriodAtTheNextPlacement) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  ASSERT_EQ(n.balancer.task(1).scan_period_ms, 1000);
  // A local private fault whose migration failed (without the failure the
  // period would grow by 3 slots to 1300, see below).
  n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal | kTnfMigrateFail, seconds(1));
  EXPECT_EQ(n.balancer.task(1).scan_period_ms, 1000);  // no placement within the sequence

  ++mm.numa_scan_seq;
  const Tick now = seconds(2);
  n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal, now);

  EXPECT_EQ(n.balancer.task(1).scan_period_ms, 2000);
  EXPECT_EQ(mm.numa_next_scan, now + milliseconds(2000));
}

// One failed migration at 1 s, then one local private fault in each of
// three scan sequences: the period after each (scan_max 3000 ms: RSS 0 is
// one window).
std::vector<int64_t> periods_after_one_failure(NumaConfig cfg) {
  cfg.numa_balancing_scan_period_max_ms = 3000;
  NumaWorld n(cfg);
  mm::Mm& mm = n.process(1, 0);
  n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal | kTnfMigrateFail, seconds(1));
  std::vector<int64_t> periods;
  for (int seq = 1; seq <= 3; ++seq) {
    ++mm.numa_scan_seq;
    n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal, seconds(1 + seq));
    periods.push_back(n.balancer.task(1).scan_period_ms);
  }
  return periods;
}

TEST(NumaScanPeriod, OneFailedMigrationKeepsDoublingUpToTheMax) {
  const std::vector<int64_t> periods = periods_after_one_failure(enabled_config());
  EXPECT_EQ(periods, (std::vector<int64_t>{2000, 3000, 3000}));
}

TEST(NumaScanPeriod, From612TheBackOffClearsTheFailureSoThePeriodGrowsOnlyOnce) {
  NumaConfig cfg = enabled_config();
  cfg.backoff_resets_locality = true;
  const std::vector<int64_t> periods = periods_after_one_failure(cfg);

  // The failure doubles it once; then local private faults adjust it as
  // usual (up by slots, capped at scan_max).
  EXPECT_EQ(periods[0], 2000);
  EXPECT_LE(periods[1], 3000);
  EXPECT_NE(periods, (std::vector<int64_t>{2000, 3000, 3000}));
}

TEST(NumaScanPeriod, LocalPrivateFaultsGrowThePeriodByThreeSlots) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  n.balancer.task(1).scan_period_ms = 1234;
  for (int i = 0; i < 5; ++i) n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal, seconds(1));

  ++mm.numa_scan_seq;
  n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal, seconds(2));

  // slot = ceil(1234 / 10) = 124; ps = 10 * 5 / 5 = 10 >= 7, so the period
  // grows by max(1, 10 - 7) = 3 slots.
  EXPECT_EQ(n.balancer.task(1).scan_period_ms, 1234 + 3 * 124);
}

TEST(NumaScanPeriod, PrivateShareAtTheThresholdGrowsThePeriodByOneSlot) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  // 7 private faults and 3 shared ones (another task's, not groupable); 1 of
  // the 10 is local.
  n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal, seconds(1));
  for (int i = 0; i < 6; ++i) n.numa_fault(1, mm, NodeId(1), NodeId(0), 0, seconds(1));
  for (int i = 0; i < 3; ++i) {
    n.numa_fault(1, mm, NodeId(1), NodeId(0), kTnfNoGroup, seconds(1), make_cpupid(CpuId(1), 9));
  }

  ++mm.numa_scan_seq;
  n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal, seconds(2));

  // slot 100; ps = 10 * 7 / 10 = 7 >= 7: max(1, 7 - 7) = 1 slot (lr = 1 would
  // leave it unchanged).
  EXPECT_EQ(n.balancer.task(1).scan_period_ms, 1000 + 100);
}

TEST(NumaScanPeriod, PrivateRemoteFaultsSlowTheScanFrom414) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  n.balancer.task(1).scan_period_ms = 4000;
  n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal, seconds(1));
  for (int i = 0; i < 3; ++i) n.numa_fault(1, mm, NodeId(1), NodeId(0), 0, seconds(1));

  ++mm.numa_scan_seq;
  n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal, seconds(2));

  // slot 400; lr = 10 * 1 / 4 = 2; ps = 10 >= 7: + 3 slots.
  EXPECT_EQ(n.balancer.task(1).scan_period_ms, 4000 + 3 * 400);
}

TEST(NumaScanPeriod, PrivateRemoteFaultsSpeedTheScanBefore414) {
  NumaConfig cfg = enabled_config();
  cfg.scan_period_update = ScanPeriodUpdate::k313;
  NumaWorld n(cfg);
  mm::Mm& mm = n.process(1, 0);
  n.balancer.task(1).scan_period_ms = 4000;
  n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal, seconds(1));
  for (int i = 0; i < 3; ++i) n.numa_fault(1, mm, NodeId(1), NodeId(0), 0, seconds(1));

  ++mm.numa_scan_seq;
  n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal, seconds(2));

  // lr = 2 < 7: diff = -(7 - 2) x 400 = -2000, scaled by
  // ceil(10 x 4 / (4 + 0 + 1)) / 10 = 8 / 10: -1600.
  EXPECT_EQ(n.balancer.task(1).scan_period_ms, 4000 - 1600);
}

// T3, T4 --------------------------------------------------------------------

TEST(NumaPlacement, FaultsInTheSameSequenceDoNotDecayMemFaults) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  for (int i = 0; i < 6; ++i) n.numa_fault(1, mm, NodeId(1), NodeId(0), 0, seconds(1));
  ++mm.numa_scan_seq;
  n.numa_fault(1, mm, NodeId(1), NodeId(0), 0, seconds(2));  // placement: MEM = 0/2 + 6
  ASSERT_EQ(mem_faults(n.balancer.task(1), 1, kPriv), 6);

  n.numa_fault(1, mm, NodeId(1), NodeId(0), 0, seconds(2));

  EXPECT_EQ(mem_faults(n.balancer.task(1), 1, kPriv), 6);
  EXPECT_EQ(membuf_faults(n.balancer.task(1), 1, kPriv), 2);
}

TEST(NumaPlacement, NewSequenceDecaysMemFaultsAndAddsTheBuffer) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  for (int i = 0; i < 6; ++i) n.numa_fault(1, mm, NodeId(1), NodeId(0), 0, seconds(1));
  ++mm.numa_scan_seq;
  n.numa_fault(1, mm, NodeId(1), NodeId(0), 0, seconds(2));
  n.numa_fault(1, mm, NodeId(1), NodeId(0), 0, seconds(2));

  ++mm.numa_scan_seq;
  n.numa_fault(1, mm, NodeId(1), NodeId(0), 0, seconds(3));

  EXPECT_EQ(mem_faults(n.balancer.task(1), 1, kPriv), 6 / 2 + 2);
  EXPECT_EQ(membuf_faults(n.balancer.task(1), 1, kPriv), 1);
}

TEST(NumaPlacement, PreferredNodeIsTheNodeWithMostMemFaults) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  // The task runs on node 0 (all CPU faults there), its memory is mostly on node 1.
  for (int i = 0; i < 2; ++i) n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal, seconds(1));
  for (int i = 0; i < 6; ++i) n.numa_fault(1, mm, NodeId(1), NodeId(0), 0, seconds(1));
  ASSERT_EQ(n.balancer.task(1).preferred_nid, -1);

  ++mm.numa_scan_seq;
  n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal, seconds(2));

  EXPECT_EQ(n.balancer.task(1).preferred_nid, 1);
}

// /proc/<pid>/sched -----------------------------------------------------------

TEST(NumaProcSched, APidTheBalancerNeverSawHasNoFields) {
  NumaWorld n;
  n.process(1, 0);
  EXPECT_TRUE(n.balancer.proc_sched(1).has_value());
  EXPECT_FALSE(n.balancer.proc_sched(7).has_value());
}

TEST(NumaProcSched, FieldsAreTheTasksNumaStateWithItsFaultsPerNode) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  for (int i = 0; i < 2; ++i) n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal, seconds(1));
  for (int i = 0; i < 6; ++i) n.numa_fault(1, mm, NodeId(1), NodeId(0), 0, seconds(1));
  ++mm.numa_scan_seq;
  n.numa_fault(1, mm, NodeId(0), NodeId(0), kTnfFaultLocal, seconds(2));
  const TaskNuma& t = n.balancer.task(1);
  ASSERT_EQ(t.preferred_nid, 1);

  const auto p = n.balancer.proc_sched(1);

  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->numa_scan_seq, t.scan_seq);
  EXPECT_EQ(p->numa_preferred_nid, 1);
  EXPECT_EQ(p->total_numa_faults, t.total_faults);
  EXPECT_EQ(p->numa_group_id, 0u);
  EXPECT_EQ(p->numa_scan_period_ms, t.scan_period_ms);
  ASSERT_EQ(p->numa_faults.size(), 2u);
  for (int node = 0; node < kNodes; ++node) {
    EXPECT_EQ(p->numa_faults[node][0], mem_faults(t, node, kPriv)) << node;
    EXPECT_EQ(p->numa_faults[node][1], mem_faults(t, node, kShared)) << node;
    EXPECT_EQ(p->numa_faults[node][2], 0) << node;  // no group
    EXPECT_EQ(p->numa_faults[node][3], 0) << node;
  }
  EXPECT_EQ(p->numa_faults[1][0], 6);
}

// T5 ------------------------------------------------------------------------

TEST(NumaGroup, ThreadsJoinOneGroupOnASharedFault) {
  NumaWorld n;
  const uint16_t cpu1 = 0, cpu2 = n.node1_cpu();
  mm::Mm& mm = n.process(1, cpu1);
  n.thread(2, mm, cpu2);

  // Each faults on a page the other touched last, from the CPU it runs on.
  n.numa_fault(2, mm, NodeId(0), NodeId(1), 0, seconds(1), make_cpupid(CpuId(cpu1), 1));
  n.numa_fault(1, mm, NodeId(1), NodeId(0), 0, seconds(1), make_cpupid(CpuId(cpu2), 2));

  ASSERT_NE(n.balancer.task(1).group.get(), nullptr);
  EXPECT_EQ(n.balancer.task(1).group.get(), n.balancer.task(2).group.get());
  EXPECT_EQ(n.balancer.task(1).group->nr_tasks, 2);
}

TEST(NumaGroup, ProcessesNeverGroupOnNoGroupFaults) {
  NumaWorld n;
  const uint16_t cpu1 = 0, cpu2 = n.node1_cpu();
  mm::Mm& a = n.process(1, cpu1);
  mm::Mm& b = n.process(2, cpu2);

  for (int i = 0; i < 2; ++i) {
    n.numa_fault(2, b, NodeId(0), NodeId(1), kTnfNoGroup, seconds(1), make_cpupid(CpuId(cpu1), 1));
    n.numa_fault(1, a, NodeId(1), NodeId(0), kTnfNoGroup, seconds(1), make_cpupid(CpuId(cpu2), 2));
  }

  EXPECT_EQ(n.balancer.task(1).group.get(), nullptr);
  EXPECT_EQ(n.balancer.task(2).group.get(), nullptr);
}

TEST(NumaGroup, ProcessesDoNotGroupOnPrivateMappingFaults) {
  NumaWorld n;
  const uint16_t cpu1 = 0, cpu2 = n.node1_cpu();
  mm::Mm& a = n.process(1, cpu1);
  mm::Mm& b = n.process(2, cpu2);

  for (int i = 0; i < 2; ++i) {
    n.numa_fault(2, b, NodeId(0), NodeId(1), 0, seconds(1), make_cpupid(CpuId(cpu1), 1));
    n.numa_fault(1, a, NodeId(1), NodeId(0), 0, seconds(1), make_cpupid(CpuId(cpu2), 2));
  }

  ASSERT_NE(n.balancer.task(1).group.get(), nullptr);
  EXPECT_NE(n.balancer.task(1).group.get(), n.balancer.task(2).group.get());
  // The false-sharing filter counts such faults as private.
  EXPECT_EQ(membuf_faults(n.balancer.task(1), 1, kPriv), 2);
  EXPECT_EQ(membuf_faults(n.balancer.task(1), 1, kShared), 0);
}

TEST(NumaGroup, ProcessesJoinOneGroupOnASharedMappingFault) {
  NumaWorld n;
  const uint16_t cpu1 = 0, cpu2 = n.node1_cpu();
  mm::Mm& a = n.process(1, cpu1);
  mm::Mm& b = n.process(2, cpu2);

  n.numa_fault(2, b, NodeId(0), NodeId(1), kTnfShared, seconds(1), make_cpupid(CpuId(cpu1), 1));
  n.numa_fault(1, a, NodeId(1), NodeId(0), kTnfShared, seconds(1), make_cpupid(CpuId(cpu2), 2));

  ASSERT_NE(n.balancer.task(1).group.get(), nullptr);
  EXPECT_EQ(n.balancer.task(1).group.get(), n.balancer.task(2).group.get());
  EXPECT_EQ(n.balancer.task(1).group->nr_tasks, 2);
}

// M1, M2 --------------------------------------------------------------------

// An anonymous page on node 0 that may go to node 1.
struct AnonPage {
  explicit AnonPage(NumaWorld& n) : mm(n.process(1, 0)), a(n.w.map(mm, 1, kRW)) {
    n.touch(mm, a, 1, true);
    pfn = n.pfn_at(mm, a);
    vma = mm.find_vma(a);
  }
  mm::Mm& mm;
  Vpn a;
  Pfn pfn;
  const mm::Vma* vma = nullptr;
};

TEST(NumaMigrate, RateLimitRefusesOnceTheWindowIsOverTheLimit) {
  NumaConfig cfg = enabled_config();
  cfg.migrate_rate_limit = true;
  cfg.ratelimit_pages = 2;
  NumaWorld n(cfg);
  AnonPage p(n);
  const Tick t0 = seconds(1);

  std::vector<bool> allowed;
  allowed.reserve(4);
  for (int i = 0; i < 4; ++i)
    allowed.push_back(n.balancer.migrate_allowed(p.pfn, *p.vma, NodeId(1), t0));

  // Refused only once more than 2 pages went to node 1 in this window.
  EXPECT_EQ(allowed, (std::vector<bool>{true, true, true, false}));
  EXPECT_FALSE(n.balancer.migrate_allowed(p.pfn, *p.vma, NodeId(1), t0 + milliseconds(99)));
}

TEST(NumaMigrate, RateLimitAllowsAgainAfter100Ms) {
  NumaConfig cfg = enabled_config();
  cfg.migrate_rate_limit = true;
  cfg.ratelimit_pages = 2;
  NumaWorld n(cfg);
  AnonPage p(n);
  const Tick t0 = seconds(1);
  for (int i = 0; i < 4; ++i) n.balancer.migrate_allowed(p.pfn, *p.vma, NodeId(1), t0);

  EXPECT_TRUE(n.balancer.migrate_allowed(p.pfn, *p.vma, NodeId(1), t0 + milliseconds(101)));
}

TEST(NumaMigrate, NoRateLimitFrom419) {
  NumaConfig cfg;
  apply_presets(numa_switches(), KernelVersion{4, 19}, cfg);
  cfg.enabled = true;
  cfg.ratelimit_pages = 2;
  NumaWorld n(cfg);
  AnonPage p(n);

  for (int i = 0; i < 10; ++i)
    EXPECT_TRUE(n.balancer.migrate_allowed(p.pfn, *p.vma, NodeId(1), seconds(1)));
}

TEST(NumaMigrate, SkipSharedRefusesAPageMappedByTwoMms) {
  NumaConfig cfg = enabled_config();
  cfg.skip_shared = true;
  NumaWorld n(cfg);
  AnonPage p(n);
  mm::Mm& child = n.process(2, 0);
  n.w.mgr.dup_mmap(p.mm, child, CpuId(0));
  ASSERT_EQ(n.w.mgr.folios().folio(p.pfn).mapcount, 2);

  EXPECT_FALSE(n.balancer.migrate_allowed(p.pfn, *p.vma, NodeId(1), seconds(1)));
}

TEST(NumaMigrate, WithoutSkipSharedAPageMappedByTwoMmsMayMove) {
  NumaWorld n(enabled_config());
  AnonPage p(n);
  mm::Mm& child = n.process(2, 0);
  n.w.mgr.dup_mmap(p.mm, child, CpuId(0));
  ASSERT_EQ(n.w.mgr.folios().folio(p.pfn).mapcount, 2);

  EXPECT_TRUE(n.balancer.migrate_allowed(p.pfn, *p.vma, NodeId(1), seconds(1)));
}

// A file mapped at the same offset by two processes.
struct TwoMappers {
  TwoMappers(NumaWorld& n, uint32_t vm_flags, mm::AddressSpace& file)
      : a(n.process(1, 0)), b(n.process(2, 0)) {
    va = n.w.map(a, 1, vm_flags, &file);
    vb = n.w.map(b, 1, vm_flags, &file);
    n.touch(a, va, 1, false);
    n.touch(b, vb, 1, false);
  }
  mm::Mm& a;
  mm::Mm& b;
  Vpn va, vb;
};

TEST(NumaMigrate, RefusesAFilePageMappedTwiceInAnExecMapping) {
  NumaWorld n;
  mm::AddressSpace& lib = n.w.mgr.create_file("libc.so", 1, false);
  TwoMappers m(n, kR | mm::Vma::kExec, lib);
  const Pfn pfn = n.pfn_at(m.a, m.va);
  ASSERT_EQ(n.w.mgr.folios().folio(pfn).mapcount, 2);

  EXPECT_FALSE(n.balancer.migrate_allowed(pfn, *m.a.find_vma(m.va), NodeId(1), seconds(1)));
}

TEST(NumaMigrate, AllowsAFilePageMappedOnceInAnExecMapping) {
  NumaWorld n;
  mm::AddressSpace& lib = n.w.mgr.create_file("libc.so", 1, false);
  mm::Mm& mm = n.process(1, 0);
  const Vpn a = n.w.map(mm, 1, kR | mm::Vma::kExec, &lib);
  n.touch(mm, a, 1, false);

  EXPECT_TRUE(n.balancer.migrate_allowed(n.pfn_at(mm, a), *mm.find_vma(a), NodeId(1), seconds(1)));
}

TEST(NumaMigrate, AllowsAFilePageMappedTwiceWithoutExec) {
  NumaWorld n;
  mm::AddressSpace& data = n.w.mgr.create_file("data", 1, false);
  TwoMappers m(n, kR, data);

  EXPECT_TRUE(
      n.balancer.migrate_allowed(n.pfn_at(m.a, m.va), *m.a.find_vma(m.va), NodeId(1), seconds(1)));
}

TEST(NumaMigrate, AllowsAShmemPageMappedTwiceInAnExecMapping) {
  // The refusal is for page-cache pages (page_is_file_cache); shmem is swap-backed.
  NumaWorld n;
  mm::AddressSpace& shm = n.w.mgr.create_file("memfd:jit", 1, true);
  TwoMappers m(n, kR | mm::Vma::kExec | mm::Vma::kShared, shm);
  ASSERT_EQ(n.folio_at(m.a, m.va).mapcount, 2);

  EXPECT_TRUE(
      n.balancer.migrate_allowed(n.pfn_at(m.a, m.va), *m.a.find_vma(m.va), NodeId(1), seconds(1)));
}

// S9 ------------------------------------------------------------------------

TEST(NumaScanPeriod, SmallMmScansBetweenOneAndSixtySeconds) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  ASSERT_EQ(mm.rss_anon + mm.rss_file + mm.rss_shmem, 0u);

  EXPECT_EQ(n.balancer.task_scan_min(1, mm), 1000);
  EXPECT_EQ(n.balancer.task_scan_max(1, mm), 60000);
}

TEST(NumaScanPeriod, FortyWindowMmScansBetweenTheFloorAndOneAndAHalfSeconds) {
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  mm.rss_anon = 40 * 65536;  // 10 GB: 40 windows of 256 MB

  // min = max(1000 / (2560 / 256), 1000 / 40) = 100; max = max(100, 60000 / 40).
  EXPECT_EQ(n.balancer.task_scan_min(1, mm), 100);
  EXPECT_EQ(n.balancer.task_scan_max(1, mm), 1500);
}

// M5 mechanics: migrate_unmap, migrate_remap, migrate_folio_finish ------------

// A parent that wrote page 0 (then forked twice, so 3 mms map it) and, after
// the forks, page 1 (mapped by the parent only).
struct ThreeMappers {
  explicit ThreeMappers(NumaWorld& n) : parent(n.process(1, 0)), a(n.w.map(parent, 2, kRW)) {
    n.touch(parent, a, 1, true);
    c1 = &n.fork(parent, 2);
    c2 = &n.fork(parent, 3);
    n.touch(parent, Vpn(a.v + 1), 1, true);
    shared = n.pfn_at(parent, a);
    single = n.pfn_at(parent, Vpn(a.v + 1));
  }
  std::vector<mm::Mm*> mms() { return {&parent, c1, c2}; }
  mm::Mm& parent;
  Vpn a;
  mm::Mm* c1 = nullptr;
  mm::Mm* c2 = nullptr;
  Pfn shared, single;
};

TEST(NumaMigrate, UnmapReplacesEveryMappingWithAMigrationEntry) {
  NumaWorld n;
  ThreeMappers t(n);
  ASSERT_EQ(n.w.mgr.folios().folio(t.shared).mapcount, 3);

  const auto step = n.w.mgr.migrate_unmap(t.shared, CpuId(0));

  EXPECT_EQ(step.mappings, 3u);
  EXPECT_EQ(step.unmapped.size(), 3u);
  for (mm::Mm* mm : t.mms()) {
    const mm::Pte pte = mm->pgtable().get(t.a);
    EXPECT_TRUE(pte.migration()) << mm->id();
    EXPECT_FALSE(pte.present()) << mm->id();
    EXPECT_EQ(pte.pfn, t.shared.v) << mm->id();
  }
  n.w.expect_consistent();
}

TEST(NumaMigrate, UnmappingAHintingPteSendsNoIpiButAnAccessiblePteDoes) {
  // ptep_clear_flush flushes only if pte_accessible: the scan's flush
  // already took a PROT_NONE entry out of every TLB.
  NumaWorld n;
  mm::Mm& mm = n.process(1, 0);
  n.thread(2, mm, n.node1_cpu());
  const Vpn a = n.w.map(mm, 2, kRW);
  n.touch(mm, a, 2, true);
  n.mark(mm, a, 1);
  mm.cpumask() = {CpuId(0), CpuId(n.node1_cpu())};
  const Pfn hinting = n.pfn_at(mm, a), accessible = n.pfn_at(mm, Vpn(a.v + 1));

  const auto quiet = n.w.mgr.migrate_unmap(hinting, CpuId(0));
  EXPECT_EQ(n.vm(mm::Vm::nr_tlb_remote_flush), 0);
  const auto flushed = n.w.mgr.migrate_unmap(accessible, CpuId(0));
  EXPECT_EQ(n.vm(mm::Vm::nr_tlb_remote_flush), 1);

  EXPECT_DOUBLE_EQ(quiet.cost_ns, n.w.costs.pte_clear_ns);
  EXPECT_GT(flushed.cost_ns, quiet.cost_ns);
  n.w.mgr.migrate_remap(hinting, hinting);
  n.w.mgr.migrate_remap(accessible, accessible);
  mm.cpumask().clear();
}

TEST(NumaMigrate, UnmapCostGrowsLinearlyWithMapcount) {
  NumaWorld n;
  ThreeMappers t(n);
  ASSERT_EQ(n.w.mgr.folios().folio(t.single).mapcount, 1);

  const auto one = n.w.mgr.migrate_unmap(t.single, CpuId(0));
  const auto three = n.w.mgr.migrate_unmap(t.shared, CpuId(0));

  EXPECT_EQ(one.mappings, 1u);
  EXPECT_GT(one.cost_ns, 0);
  EXPECT_DOUBLE_EQ(three.cost_ns, 3 * one.cost_ns);
  n.w.mgr.migrate_remap(t.single, t.single);
  n.w.mgr.migrate_remap(t.shared, t.shared);
}

TEST(NumaMigrate, RemapToANewFolioMovesEveryMappingAndFreesTheOld) {
  NumaWorld n;
  ThreeMappers t(n);
  n.w.mgr.lru().del(t.shared);  // isolated, as the migrator does first
  n.w.mgr.migrate_unmap(t.shared, CpuId(0));
  const auto fresh = n.w.mgr.folios().alloc_on(NodeId(1));
  ASSERT_TRUE(fresh.has_value());

  const auto step = n.w.mgr.migrate_remap(t.shared, *fresh);
  n.w.mgr.migrate_folio_finish(t.shared, *fresh, CpuId(0), true);

  EXPECT_EQ(step.mappings, 3u);
  const mm::Folio& f = n.w.mgr.folios().folio(*fresh);
  EXPECT_EQ(f.mapcount, 3);
  EXPECT_EQ(f.node, NodeId(1));
  EXPECT_TRUE(f.test(mm::Folio::kAnon));
  EXPECT_FALSE(n.w.mgr.folios().folio(t.shared).test(mm::Folio::kInUse));
  for (mm::Mm* mm : t.mms()) {
    const mm::Pte pte = mm->pgtable().get(t.a);
    EXPECT_EQ(pte.pfn, fresh->v) << mm->id();
    EXPECT_TRUE(pte.present()) << mm->id();
    EXPECT_FALSE(pte.writable()) << mm->id();  // still COW-protected
  }
  n.w.expect_consistent();
}

TEST(NumaMigrate, RemapKeepsTheWriteBitOfAWritablePte) {
  NumaWorld n;
  AnonPage p(n);
  n.w.mgr.lru().del(p.pfn);  // isolated, as the migrator does first
  n.w.mgr.migrate_unmap(p.pfn, CpuId(0));
  const auto fresh = n.w.mgr.folios().alloc_on(NodeId(1));
  ASSERT_TRUE(fresh.has_value());

  n.w.mgr.migrate_remap(p.pfn, *fresh);
  n.w.mgr.migrate_folio_finish(p.pfn, *fresh, CpuId(0), true);

  EXPECT_TRUE(p.mm.pgtable().get(p.a).writable());
  EXPECT_EQ(n.folio_at(p.mm, p.a).node, NodeId(1));
  n.w.expect_consistent();
}

TEST(NumaMigrate, FailedMigrationRemapsTheOldFolio) {
  NumaWorld n;
  ThreeMappers t(n);
  n.w.mgr.migrate_unmap(t.shared, CpuId(0));

  const auto step = n.w.mgr.migrate_remap(t.shared, t.shared);

  EXPECT_EQ(step.mappings, 3u);
  for (mm::Mm* mm : t.mms()) EXPECT_TRUE(mm->pgtable().get(t.a).present()) << mm->id();
  EXPECT_EQ(n.w.mgr.folios().folio(t.shared).mapcount, 3);
  n.w.expect_consistent();
}

// task_numa_work's per-VMA filter (6.4+) -----------------------------------

// Two threads (pids 1 and 2) of one mm with two anonymous VMAs of 4 pages,
// a and b, every page written; each thread takes a hinting fault in its own
// VMA only, after the first scan.
struct TwoVmas {
  explicit TwoVmas(VmaScanFilter f) : n(config(f)), mm(n.process(1, 0)) {
    n.thread(2, mm, 1);
    // Mapped top-down: b first, so that a lies first in address order.
    b = n.w.map(mm, 4, kRW | mm::Vma::kHugepage);  // other flags: no merge
    a = n.w.map(mm, 4, kRW);
    n.touch(mm, a, 4, true);
    n.touch(mm, b, 4, true);
  }
  static NumaConfig config(VmaScanFilter f) {
    NumaConfig c = enabled_config();
    c.vma_scan_filter = f;
    return c;
  }
  // A scan pass by `pid` at `s` seconds.
  void scan(uint32_t pid, double s) {
    n.balancer.task_numa_work(pid, mm, CpuId(0), Tick(static_cast<int64_t>(s * 1e9)));
  }
  // A scan pass by `pid` at `s` seconds, then each thread's hinting faults
  // on the marked pages of its own VMA (pid 1: a, pid 2: b).
  void pass(uint32_t pid, double s) {
    scan(pid, s);
    for (auto [who, v] : {std::pair{1u, a}, std::pair{2u, b}}) {
      for (uint64_t i = 0; i < 4; ++i) {
        const Vpn p(v.v + i);
        if (mm.pgtable().get(p).protnone()) n.balancer.do_numa_page(who, mm, p, CpuId(0), Tick{});
      }
    }
  }
  bool marked(Vpn v) const { return mm.pgtable().get(v).protnone(); }
  NumaWorld n;
  mm::Mm& mm;
  Vpn a, b;
};

TEST(NumaVmaFilter, AfterTheFirstTwoSequencesAThreadScansOnlyTheVmasItFaultedIn) {
  TwoVmas m(VmaScanFilter::kPids);
  ASSERT_EQ(m.mm.vmas().size(), 2u);
  m.pass(1, 1.0);  // sequence 0: both marked, each thread faults in its own
  m.pass(1, 2.1);  // sequence 1: both again (pages 1-3 stay marked)
  ASSERT_EQ(m.mm.numa_scan_seq, 2);

  m.scan(1, 3.2);  // sequence 2: thread 1 faulted in a only

  EXPECT_TRUE(m.marked(m.a));
  EXPECT_FALSE(m.marked(m.b));
}

TEST(NumaVmaFilter, WithoutTheFilterAThreadScansEveryVma) {
  TwoVmas m(VmaScanFilter::kNone);
  m.pass(1, 1.0);
  m.pass(1, 2.1);

  m.scan(1, 3.2);

  EXPECT_TRUE(m.marked(m.a));
  EXPECT_TRUE(m.marked(m.b));
}

TEST(NumaVmaFilter, From67AThreadThatFaultedNowhereScansOneVmaAPass) {
  // Thread 3 took no hinting fault: up to 6.6 it scans nothing; from 6.7
  // the pass is forced through the first VMA, and only that one.
  for (VmaScanFilter f : {VmaScanFilter::kPids, VmaScanFilter::kPidsSeq}) {
    TwoVmas m(f);
    m.n.thread(3, m.mm, 0);
    m.pass(1, 1.0);
    m.pass(1, 2.1);

    m.scan(3, 3.2);

    EXPECT_EQ(m.marked(m.a), f == VmaScanFilter::kPidsSeq);
    EXPECT_FALSE(m.marked(m.b));
  }
}

TEST(NumaVmaFilter, AVmaMappedLaterWaitsTheScanDelayAndFrom67GetsTwoSequencesOfItsOwn) {
  // Up to 6.6 the two free sequences are the mm's: a VMA mapped after them
  // is scanned only for a task that faulted in it, which none can have.
  for (VmaScanFilter f : {VmaScanFilter::kPids, VmaScanFilter::kPidsSeq}) {
    TwoVmas m(f);
    m.pass(1, 1.0);  // sequence 0 makes the state of a and b
    const Vpn c = m.n.w.map(m.mm, 4, kRW | mm::Vma::kNoHugepage);
    m.n.touch(m.mm, c, 4, true);

    m.pass(1, 2.1);  // c's first visit: its scan waits until 3.1 s
    EXPECT_FALSE(m.marked(c));
    m.scan(1, 3.2);
    EXPECT_EQ(m.marked(c), f == VmaScanFilter::kPidsSeq);
  }
}

}  // namespace
}  // namespace mmsim::numa
