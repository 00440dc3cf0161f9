// Page migration as a timed operation (mm/migrate.c migrate_misplaced_page,
// migrate_pages, unmap_and_move; mm/rmap.c try_to_migrate,
// remove_migration_ptes): the folio is isolated from its LRU first (its PTEs
// stay meanwhile: a hinting fault on one finds it isolated and gives up);
// then pass by pass, each pass allocates the destination, unmaps the folio
// from every PTE through the rmap (a TLB flush per accessible entry), checks
// the reference count, copies it to the target node and maps the new folio,
// or the old one again.
// Tasks that touch the folio meanwhile wait on its migration entry in D state
// (migration_entry_wait); up to 4.20 each holds a reference that fails the
// count check. The executor is told who waits and when to release them.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cost/cost_profile.h"
#include "mm/memory_manager.h"
#include "sim/event_queue.h"
#include "topo/topology.h"

namespace mmsim::migrate {

// A task that will reach, or has reached, a folio under migration.
struct Waiter {
  uint32_t pid = 0;
  Tick since;             // when it touched (or will touch) the migration entry
  bool deferred = false;  // a task running ahead that will reach it, not yet stopped there
  uint64_t segment = 0;   // deferred: the executor's run-ahead stretch it is in
  Vpn vpn;                // the page it waits for
  double offset_ns = 0;   // when the unmap walk replaced its PTE, into the pass
};

struct Migration {
  uint32_t id = 0;
  Pfn folio;
  NodeId target;
  uint32_t pid = 0;  // the task migrating it, in the kernel meanwhile
  CpuId cpu;         // and its CPU
  NodeId cpu_node;
  Tick begin;  // start of the first pass
  Tick pass_start;
  Tick check;  // when this pass checks the reference count
  uint32_t pass = 0;
  bool success = false;
  bool nomem = false;  // no destination folio: the migration ends (ENOMEM)
  Pfn new_folio;
  std::vector<Waiter> waiters;
  std::vector<std::pair<uint32_t, double>> unmap_offset;  // (mm id, ns into the unmap walk)
  uint64_t mappings = 0;
};

// What the migrator asks of, and tells, the executor running the tasks.
class Executor {
 public:
  virtual ~Executor() = default;
  // The unmap walk of a pass that began at `at` replaced mm's PTE for vpn
  // (or its PMD for `pages` pages from vpn) `offset_ns` into the walk. Tasks
  // of mm running ahead that will reach the range before the pass ends are
  // added with Migrator::add_waiter.
  virtual void on_unmapped(Migration& m, mm::Mm& mm, Vpn vpn, uint32_t pages, double offset_ns,
                           Tick at) = 0;
  // Whether the waiter holds a reference to the folio now: asleep on its
  // migration entry, or still running ahead towards it.
  virtual bool holds_reference(const Migration& m, const Waiter& w) = 0;
  // The pass is over at `now`: the waiter may go on. `retry`: another pass
  // follows at once.
  virtual void release(const Migration& m, const Waiter& w, Tick now, bool retry) = 0;
  // The migration is over (m.success says how); its task leaves the kernel.
  virtual void finished(const Migration& m, Tick now) = 0;
};

struct MigrateConfig {
  int64_t passes = 10;            // migrate_pages' passes on EAGAIN
  bool waiter_pins_page = false;  // up to 4.20: sleepers hold a reference
  // Up to 5.12 a THP moves by migrate_misplaced_transhuge_page: one try,
  // no thp_migration_* counts, and only a failed allocation counted as
  // pgmigrate_fail here.
  bool thp_legacy = false;
};

class Migrator final : public sim::EventHandler {
 public:
  Migrator(sim::EventQueue& queue, mm::MemoryManager& mm, const topo::Topology& topo,
           const cost::CostProfile& costs, MigrateConfig config, Executor& executor);

  // migrate_misplaced_page of `folio` to `target` by task `pid` on `cpu`:
  // isolates and locks the folio at `at`; the first pass starts
  // migrate_isolate_ns + page_alloc_ns later. REQUIRES: the folio is not
  // already migrating. Returns the migration's id.
  uint32_t start(Pfn folio, NodeId target, uint32_t pid, CpuId cpu, Tick at);
  bool migrating(Pfn folio) const { return by_folio_.count(folio.v) != 0; }
  bool active(uint32_t id) const { return migrations_.count(id) != 0; }
  // Whether the task is in the kernel migrating a folio.
  bool task_migrating(uint32_t pid) const;
  // migration_entry_wait: task `pid` of mm `mm_id` touched the migration
  // entry of `folio` for `vpn` at `at`. Returns the migration it waits for,
  // or 0 if the folio is not migrating.
  uint32_t wait(uint32_t pid, uint32_t mm_id, Vpn vpn, Pfn folio, Tick at);
  void add_waiter(Migration& m, const Waiter& w) { m.waiters.push_back(w); }

  void on_event(sim::EventQueue& q, const sim::Event& e) override;

 private:
  enum EventKind : uint32_t { kUnmap = 2, kCheck = 3, kEnd = 4 };
  // The next pass (allocation, then unmap) `ns` after `at`, plus the allocation's time.
  void pass_after(Migration& m, Tick at, double ns);
  void start_pass(Migration& m, Tick at);
  void check_pass(Migration& m);
  void end_pass(Migration& m);
  // Releases the waiters; then a new pass if `retry`, else the folio that
  // stays unlocked, the migration over and the executor told.
  void finish(Migration& m, Tick now, bool retry);

  sim::EventQueue& queue_;
  mm::MemoryManager& mm_;
  const topo::Topology& topo_;
  const cost::CostProfile& costs_;
  MigrateConfig config_;
  Executor& executor_;
  std::unordered_map<uint32_t, Migration> migrations_;  // by id
  std::unordered_map<uint32_t, uint32_t> by_folio_;     // folio -> migration id
  // Vectors of finished migrations, kept for the next ones.
  struct Spare {
    std::vector<Waiter> waiters;
    std::vector<std::pair<uint32_t, double>> unmap_offset;
  };
  static constexpr size_t kSpareVectors = 64;
  std::vector<Spare> spare_;
  uint32_t next_id_ = 1;
};

}  // namespace mmsim::migrate
