// The reasons change_prot_numa leaves a present PTE alone when it marks an
// address range for NUMA hinting faults: one named function per rule, in the
// order the kernel tests them (mm/mprotect.c change_pte_range under
// prot_numa, gathered as prot_numa_skip() in later kernels). Each rule states
// the kernel versions where it holds; rules that changed over time are
// switches of NumaConfig, preset by kernel version.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "mm/memory_manager.h"
#include "numa/config.h"

namespace mmsim::numa {

// What a rule may look at for one PTE.
struct SkipContext {
  const mm::Vma& vma;
  const mm::Pte& pte;
  const mm::Folio* folio;                  // nullptr: no normal page (the zero page)
  std::optional<NodeId> target_node;       // set for a single-threaded task's private VMA
  bool refcount = false;                   // shared_cow tests the reference count (5.17-6.9)
  const mm::MemoryTiers* tiers = nullptr;  // top_tier: the machine's tiers
};

struct SkipRule {
  std::string_view name;
  std::string_view versions;  // where the rule holds, for the docs
  // The switch that turns the rule on, or nullptr when it always holds.
  bool NumaConfig::*enabled;
  bool (*applies)(const SkipContext&);
};

// The rules, in the order they are tested.
std::span<const SkipRule> prot_numa_skip_rules();

// The first rule of `rules` that is on under `config` and skips the PTE, or
// nullptr when the PTE gets marked.
const SkipRule* prot_numa_skip(const NumaConfig& config, const SkipContext& ctx);

// The rules as change_prot_numa's filter for one VMA of one scan. Whether a
// PTE is skipped does not depend on the order of the tests (only which rule
// prot_numa_skip names does), so the filter calls the rules the config turns
// on directly: this runs for every PTE a scan visits.
//
// In memory-tiering mode it also stamps each slow-tier folio it marks with
// the scan time (in ms, at jiffy granularity), from which the hinting fault
// measures the page's access latency.
class ProtNumaFilter final : public mm::ProtNumaSkip {
 public:
  ProtNumaFilter(const NumaConfig& config, std::optional<NodeId> target_node,
                 const mm::MemoryTiers& tiers, uint32_t now_ms)
      : config_(config), target_node_(target_node), tiers_(tiers), now_ms_(now_ms) {}
  // The filter keeps a reference: a temporary config would dangle.
  ProtNumaFilter(NumaConfig&&, std::optional<NodeId>, const mm::MemoryTiers&, uint32_t) = delete;
  bool skip(const mm::Vma& vma, const mm::Pte& pte, const mm::Folio* folio) const override;
  // change_huge_pmd tests none of change_pte_range's rules but the
  // tiering-only mode's top-tier one (read in 6.1 and 6.12; taken to have
  // come with the PTE rule in 5.18).
  bool skip_huge(const mm::Folio& folio) const override;
  // 6.10 on (numa.pte_mapped_thp_hinting): the shared-COW rule as
  // folio_likely_mapped_shared, the target node and the tiering-only mode's
  // top tier; up to 6.9 always (see change_prot_numa).
  bool skip_pte_mapped_large(const mm::Vma& vma, const mm::Folio& head,
                             bool likely_shared) const override;
  void marked(mm::Folio& folio) const override;

 private:
  const NumaConfig& config_;
  std::optional<NodeId> target_node_;
  const mm::MemoryTiers& tiers_;
  uint32_t now_ms_;
};

}  // namespace mmsim::numa
