// Hot paths: the event queue, the memory-bandwidth bookkeeping of a priced
// stretch, the page-table scan for the next blocked page, the file fault
// / zap cycle of seed B, and a guest vCPU's work priced by its host's round
// robin.
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <vector>

#include "cost/bandwidth.h"
#include "cost/cost_profile.h"
#include "mm/memory_manager.h"
#include "sim/event_queue.h"
#include "sim/host_cpus.h"
#include "topo/topology.h"

namespace mmsim {
namespace {

struct Nop : sim::EventHandler {
  void on_event(sim::EventQueue&, const sim::Event&) override {}
};

void BM_EventQueueScheduleRun(benchmark::State& state) {
  const int64_t n = state.range(0);
  Nop nop;
  for (auto _ : state) {
    sim::EventQueue q;
    for (int64_t i = 0; i < n; ++i) q.schedule(Tick((i * 7919) % n), &nop, 0);
    q.run();
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_EventQueueScheduleRun)->Arg(288)->Arg(100000);

// A fault's kernel work (3 us) priced by the host's round robin, 8 vCPUs
// busy on 2 host CPUs with slices of 5 ms, the faults following each other
// on every vCPU and a vCPU halting and waking every 1,000 (what a guest
// run of numa01_THREAD_ALLOC asks of sim::HostCpus).
void BM_HostRoundRobinPricing(benchmark::State& state) {
  sim::HostCpus host(2, 8, 5e6, 0.5, sim::Rng(1));
  for (int v = 0; v < 8; ++v) host.set_busy(v, true, 0);
  std::vector<double> clock(8, 0);
  uint64_t n = 0;
  for (auto _ : state) {
    const int v = static_cast<int>(n % 8);
    clock[v] = host.done_at(v, clock[v], 3000);
    if (++n % 1000 == 0) {
      host.set_busy(v, false, clock[v]);
      host.set_busy(v, true, clock[v]);
    }
    benchmark::DoNotOptimize(clock[v]);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_HostRoundRobinPricing);

// What a stretch's pricing adds for memory bandwidth: one task's demand
// replaced and the factors settled, on the 8-socket preset with 288 tasks
// streaming (a factor comes into force only now and then).
void BM_BandwidthDemandAndSettle(benchmark::State& state) {
  const topo::Topology topo(*topo::preset("xeon-8s-144c"));
  const cost::CostProfile costs = cost::default_costs("xeon-8s-144c");
  cost::Bandwidth bw(topo, costs);
  std::vector<double> rates(topo.nr_nodes(), 0.0);
  for (uint32_t pid = 1; pid <= 288; ++pid) {
    rates.assign(topo.nr_nodes(), 0.0);
    rates[pid % topo.nr_nodes()] = 7.6;
    bw.set_demand(pid, NodeId(static_cast<uint16_t>((pid / 36) % 8)), rates);
  }
  bw.settle();
  uint32_t pid = 1;
  for (auto _ : state) {
    rates.assign(topo.nr_nodes(), 0.0);
    rates[pid % topo.nr_nodes()] = 7.0 + 0.001 * (pid % 7);
    bw.set_demand(pid, NodeId(static_cast<uint16_t>((pid / 36) % 8)), rates);
    benchmark::DoNotOptimize(bw.settle());
    pid = pid % 288 + 1;
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_BandwidthDemandAndSettle);

void BM_NextBlockedOverPresentRange(benchmark::State& state) {
  mm::PageTable pt;
  const uint64_t pages = static_cast<uint64_t>(state.range(0));
  for (uint64_t v = 0; v < pages; ++v) {
    mm::Pte pte;
    pte.flags = mm::Pte::kPresent;
    pt.table_build(Vpn(v)).set(v & 511, pte);
  }
  for (auto _ : state) benchmark::DoNotOptimize(pt.next_blocked(Vpn(0), Vpn(pages), false));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(pages));
}
BENCHMARK(BM_NextBlockedOverPresentRange)->Arg(1024)->Arg(262144);

// One file fault per page, then MADV_DONTNEED over the range (seed B's loop).
void BM_FileFaultAndZap(benchmark::State& state) {
  topo::MachineSpec spec = *topo::preset("2s-16c");
  const topo::Topology topo(spec);
  const cost::CostProfile costs = cost::default_costs();
  mm::MmConfig cfg;
  cfg.fault_around_kb = 0;
  mm::MemoryManager mgr(topo, costs, cfg);
  const uint64_t pages = 65536;
  mm::AddressSpace& file = mgr.create_file("data", pages, false);
  mgr.preload_file(file, NodeId(0));
  auto mm = mgr.mm_alloc();
  mm::MmapArgs a;
  a.pages = pages;
  a.vm_flags = mm::Vma::kRead | mm::Vma::kShared;
  a.file = &file;
  const Vpn start = mgr.mmap(*mm, a, CpuId(0)).addr;
  mm::FaultCtx ctx{CpuId(0), NodeId(0), nullptr, nullptr};
  for (auto _ : state) {
    for (uint64_t i = 0; i < pages; ++i) mgr.handle_mm_fault(*mm, Vpn(start.v + i), false, ctx);
    mgr.madvise_dontneed(*mm, start, pages, CpuId(0));
  }
  mgr.munmap(*mm, start, pages, CpuId(0));
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(pages));
}
BENCHMARK(BM_FileFaultAndZap)->Unit(benchmark::kMillisecond);

// Resident bytes of this process (/proc/self/statm), for the per-page cost
// of the model's state.
uint64_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

// Bytes of host memory per touched anonymous page: the folio, the PTE (and
// its page table's share), the rmap and the memcg charge, as the process's
// resident set grows when 1 Mi pages (4 GiB) are first touched. Issue [11]'s
// target: at most 40.
void BM_AnonBytesPerTouchedPage(benchmark::State& state) {
  const uint64_t pages = static_cast<uint64_t>(state.range(0));
  double bytes_per_page = 0;
  for (auto _ : state) {
    state.PauseTiming();
    topo::MachineSpec spec = *topo::preset("2s-16c");
    const topo::Topology topo(spec);
    const cost::CostProfile costs = cost::default_costs();
    mm::MmConfig cfg;
    cfg.thp_enabled = mm::ThpEnabled::kNever;
    auto mgr = std::make_unique<mm::MemoryManager>(topo, costs, cfg);
    auto mm = mgr->mm_alloc();
    mm::MmapArgs a;
    a.pages = pages;
    a.vm_flags = mm::Vma::kRead | mm::Vma::kWrite;
    const Vpn start = mgr->mmap(*mm, a, CpuId(0)).addr;
    mm::FaultCtx ctx{CpuId(0), NodeId(0), nullptr, nullptr};
    const uint64_t before = resident_bytes();
    state.ResumeTiming();
    for (uint64_t i = 0; i < pages; ++i) mgr->handle_mm_fault(*mm, Vpn(start.v + i), true, ctx);
    state.PauseTiming();
    bytes_per_page = static_cast<double>(resident_bytes() - before) / static_cast<double>(pages);
    mgr->munmap(*mm, start, pages, CpuId(0));
    mm.reset();
    mgr.reset();
    state.ResumeTiming();
  }
  state.counters["bytes_per_page"] = bytes_per_page;
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(pages));
}
BENCHMARK(BM_AnonBytesPerTouchedPage)->Arg(1 << 20)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
}  // namespace mmsim
