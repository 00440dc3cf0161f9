#include "numa/skip_rules.h"

#include <array>

namespace mmsim::numa {

namespace {

// Already a hinting PTE: nothing to change.
bool already_prot_none(const SkipContext& c) { return c.pte.protnone(); }

// No normal page behind the PTE (vm_normal_page() fails): the zero page.
bool no_normal_page(const SkipContext& c) { return c.folio == nullptr; }

// Any page that more than one mm maps: the first kernels with NUMA balancing
// left shared pages alone altogether.
bool shared(const SkipContext& c) { return c.folio->mapcount != 1; }

// A copy-on-write page that more than one mm maps: hinting faults on it make
// the tasks sharing it fight over its node.
// Before 5.17 and from 6.10 that is its mapcount (folio_likely_mapped_shared
// for a small folio); in 5.17-6.9 its reference count: the mappings, plus the
// page cache's or the swap cache's own reference, and a CPU's lru_add batch's
// (pins are not modelled).
bool shared_cow(const SkipContext& c) {
  if (!c.vma.is_cow_mapping()) return false;
  const mm::Folio& f = *c.folio;
  if (!c.refcount) return f.mapcount != 1;
  const bool cached = !f.test(mm::Folio::kAnon) || f.test(mm::Folio::kSwapCache);
  const bool batched = f.test(mm::Folio::kLruBatched);
  return f.mapcount + (cached ? 1 : 0) + (batched ? 1 : 0) != 1;
}

// A dirty page of a file's page cache (page_is_file_cache: shmem pages are
// swap-backed, not file cache) cannot be migrated cheaply.
bool dirty_file(const SkipContext& c) {
  const mm::Folio& f = *c.folio;
  return !f.test(mm::Folio::kAnon) && !f.test(mm::Folio::kShmem) && f.test(mm::Folio::kDirty);
}

// A single-threaded task's private page that is already on the node it runs
// on would be hinted for nothing.
bool on_target_node(const SkipContext& c) {
  return c.target_node && c.folio->node == *c.target_node;
}

// Memory tiering without normal balancing (mode 2): only slow-tier pages
// are worth a hinting fault.
bool top_tier(const SkipContext& c) { return c.tiers && c.tiers->toptier(c.folio->node); }
const std::array kRules = {
    SkipRule{"already_prot_none", "3.8+", nullptr, already_prot_none},
    SkipRule{"no_normal_page", "3.8+", nullptr, no_normal_page},
    SkipRule{"shared", "3.8-3.12", &NumaConfig::skip_shared, shared},
    SkipRule{"shared_cow", "4.16+", &NumaConfig::skip_shared_cow, shared_cow},
    SkipRule{"dirty_file", "4.17+", &NumaConfig::skip_dirty_file, dirty_file},
    SkipRule{"on_target_node", "4.10+", &NumaConfig::skip_target_node, on_target_node},
    SkipRule{"top_tier", "5.18+ (numa_balancing = 2)", &NumaConfig::skip_top_tier, top_tier},
};

}  // namespace

std::span<const SkipRule> prot_numa_skip_rules() { return kRules; }

bool ProtNumaFilter::skip(const mm::Vma& vma, const mm::Pte& pte, const mm::Folio* folio) const {
  const SkipContext c{vma, pte, folio, target_node_, config_.shared_cow_refcount, &tiers_};
  // Every rule of kRules, each under its switch.
  return already_prot_none(c) || no_normal_page(c) || (config_.skip_shared && shared(c)) ||
         (config_.skip_shared_cow && shared_cow(c)) || (config_.skip_dirty_file && dirty_file(c)) ||
         (config_.skip_target_node && on_target_node(c)) || (config_.skip_top_tier && top_tier(c));
}

bool ProtNumaFilter::skip_huge(const mm::Folio& folio) const {
  return config_.skip_top_tier && tiers_.toptier(folio.node);
}

bool ProtNumaFilter::skip_pte_mapped_large(const mm::Vma& vma, const mm::Folio& head,
                                           bool likely_shared) const {
  if (!config_.pte_mapped_thp_hinting) return true;
  if (config_.skip_shared_cow && vma.is_cow_mapping() && likely_shared) return true;
  if (config_.skip_target_node && target_node_ && head.node == *target_node_) return true;
  return skip_huge(head);  // the tiering-only mode's top tier
}

void ProtNumaFilter::marked(mm::Folio& folio) const {
  if (config_.hot_page_selection() && !tiers_.toptier(folio.node))
    folio.last_cpupid = now_ms_ & kAccessTimeMask;
}

const SkipRule* prot_numa_skip(const NumaConfig& config, const SkipContext& ctx) {
  SkipContext c = ctx;
  c.refcount = config.shared_cow_refcount;
  for (const SkipRule& r : kRules) {
    if (r.enabled && !(config.*(r.enabled))) continue;
    if (r.applies(c)) return &r;
  }
  return nullptr;
}

}  // namespace mmsim::numa
