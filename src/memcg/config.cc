#include "memcg/config.h"

#include <vector>

namespace mmsim::memcg {

const char* protocol_name(StatProtocol p) {
  switch (p) {
    case StatProtocol::kNone:
      return "none";
    case StatProtocol::kPcgFlags:
      return "pcg-flags";
    case StatProtocol::kBeginEnd:
      return "begin-end";
    case StatProtocol::kBeginEndNoGlobal:
      return "begin-end-no-global";
  }
  return "?";
}

uint32_t page_cgroup_bytes(StatProtocol p, KernelVersion v) {
  if (p == StatProtocol::kNone) return 0;   // cgroup_disable=memory: no page_cgroup
  if (v >= KernelVersion{3, 19}) return 8;  // page->mem_cgroup in struct page's padding
  if (v >= KernelVersion{3, 3}) return 16;  // {flags, mem_cgroup}: the LRU list_head went in 3.3
  if (v >= KernelVersion{3, 0}) return 32;  // the page back-pointer went in 2.6.39
  return 40;                                // {flags, mem_cgroup, page, lru}
}

std::span<const Switch<MemcgConfig>> memcg_switches() {
  using C = MemcgConfig;
  auto word = [](StatProtocol p) { return SwitchWord{protocol_name(p), static_cast<int64_t>(p)}; };
  static const std::vector<Switch<C>> table = {
      {{.section = "memcg",
        .key = "stat_protocol",
        .kind = SwitchKind::kChoice,
        .doc = "how FILE_MAPPED is updated around file rmap changes: per-page flags (3.3), "
               "begin/end brackets with a global flag (3.4, the page cgroup diet), the diet "
               "without that flag, or no memcg (mm/memcontrol.c, mm/rmap.c)",
        .default_value = static_cast<int64_t>(StatProtocol::kBeginEnd),
        .presets = {{.until = {3, 3}, .value = static_cast<int64_t>(StatProtocol::kPcgFlags)}},
        .words = {word(StatProtocol::kNone), word(StatProtocol::kPcgFlags),
                  word(StatProtocol::kBeginEnd), word(StatProtocol::kBeginEndNoGlobal)}},
       [](const C& c) { return static_cast<int64_t>(c.stat_protocol); },
       [](C& c, int64_t v) { c.stat_protocol = static_cast<StatProtocol>(v); }},
      {{.section = "memcg",
        .key = "hierarchy",
        .kind = SwitchKind::kChoice,
        .doc = "cgroup v1 or v2: the interface's file names and semantics (v2 never moves "
               "charges)",
        .default_value = static_cast<int64_t>(Hierarchy::kV1),
        .words = {{"v1", static_cast<int64_t>(Hierarchy::kV1)},
                  {"v2", static_cast<int64_t>(Hierarchy::kV2)}}},
       [](const C& c) { return static_cast<int64_t>(c.hierarchy); },
       [](C& c, int64_t v) { c.hierarchy = static_cast<Hierarchy>(v); }},
      {{.section = "memcg",
        .key = "charge_batch",
        .kind = SwitchKind::kInt,
        .doc = "CHARGE_BATCH: pages charged at once into a per-CPU stock (mm/memcontrol.c "
               "MEMCG_CHARGE_BATCH)",
        .default_value = kChargeBatch,
        .presets = {{.from = {6, 1}, .value = 64}},
        .lo = 1,
        .hi = 1024,
        .unit = "pages"},
       [](const C& c) { return c.charge_batch; },
       [](C& c, int64_t v) { c.charge_batch = v; }},
      {{.section = "memcg",
        .key = "migrate_charge",
        .kind = SwitchKind::kChoice,
        .doc = "page migration's charge: transfer it to the new folio, or recharge (the new "
               "folio force-charged with a pgpgin, the old one uncharged when freed with a "
               "pgpgout) (mm/memcontrol.c mem_cgroup_migrate)",
        .default_value = static_cast<int64_t>(MigrateCharge::kTransfer),
        .presets = {{.until = {3, 16}, .value = static_cast<int64_t>(MigrateCharge::kRecharge)},
                    {.from = {4, 5},
                     .until = {6, 6},
                     .value = static_cast<int64_t>(MigrateCharge::kRecharge)}},
        .words = {{"transfer", static_cast<int64_t>(MigrateCharge::kTransfer)},
                  {"recharge", static_cast<int64_t>(MigrateCharge::kRecharge)}}},
       [](const C& c) { return static_cast<int64_t>(c.migrate_charge); },
       [](C& c, int64_t v) { c.migrate_charge = static_cast<MigrateCharge>(v); }},
      {{.section = "memcg",
        .key = "wb_stats_ratelimited",
        .kind = SwitchKind::kBool,
        .doc = "a cgroup v2 memcg's dirty domain reads its file, dirty and writeback pages as "
               "the periodic rstat flush (every 2 s) left them: mem_cgroup_wb_stats flushes "
               "only if that flush is a full cycle late (mem_cgroup_flush_stats_ratelimited "
               "@6.12); before, it flushed whenever enough updates were pending "
               "(mem_cgroup_flush_stats @6.1), a fresh view here. From 6.8, from memory "
               "(absent from 6.1.192, present in 6.12.118)",
        .default_value = 1,
        .presets = {{.until = {6, 7}, .value = 0}}},
       [](const C& c) { return static_cast<int64_t>(c.wb_stats_ratelimited); },
       [](C& c, int64_t v) { c.wb_stats_ratelimited = v != 0; }},
      {{.section = "memcg",
        .key = "kmem_pagetables",
        .kind = SwitchKind::kBool,
        .doc = "page-table pages are charged to the allocating task's memcg as kernel memory "
               "(__GFP_ACCOUNT in GFP_PGTABLE_USER: \"mm: memcontrol: account page tables\", "
               "V. Davydov, 4.6, from memory; asm-generic/pgalloc.h @6.1, @6.12): in its usage "
               "and its limit, and in v2's memory.stat pagetables. The root's are not charged",
        .default_value = 1,
        .presets = {{.until = {4, 5}, .value = 0}}},
       [](const C& c) { return static_cast<int64_t>(c.kmem_pagetables); },
       [](C& c, int64_t v) { c.kmem_pagetables = v != 0; }},
  };
  return table;
}

}  // namespace mmsim::memcg
