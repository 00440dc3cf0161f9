// The rules by which change_prot_numa leaves a present PTE alone
// (numa/skip_rules.h): each rule firing and not firing, on PTEs and folios
// made by real faults, forks and file writes.
#include "numa/skip_rules.h"

#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/mm_fixture.h"

namespace mmsim::numa {
namespace {

using testing::kRW;
using testing::MmWorld;

// No switch on: only the rules that always hold.
NumaConfig no_switches() { return NumaConfig{}; }

// Every switch-gated rule of 4.17+ kernels on (skip_shared is 3.8-3.12 only,
// and would hide the others).
NumaConfig all_switches() {
  NumaConfig c;
  c.skip_shared_cow = true;
  c.skip_dirty_file = true;
  c.skip_target_node = true;
  return c;
}

// A memory manager on the 2-node test machine and the mms made on it, torn
// down at the end.
struct SkipWorld {
  ~SkipWorld() {
    for (auto& mm : mms) w.teardown(*mm);
  }
  mm::Mm& process() {
    mms.push_back(w.mgr.mm_alloc());
    return *mms.back();
  }
  mm::Mm& fork(mm::Mm& parent) {
    mm::Mm& child = process();
    w.mgr.dup_mmap(parent, child, CpuId(0));
    return child;
  }
  uint16_t node1_cpu() const { return w.topo.node(NodeId(1)).cpus.front().v; }
  void touch(mm::Mm& mm, Vpn v, bool write, uint16_t cpu = 0) {
    ASSERT_EQ(w.fault(mm, v, write, cpu), mm::FaultStatus::kOk);
  }
  const mm::Folio* folio_of(const mm::Pte& pte) const {
    return pte.pfn == mm::kZeroPfn ? nullptr : &w.mgr.folios().folio(Pfn(pte.pfn));
  }
  // The name of the rule that leaves the PTE at vpn alone under `config`, or
  // "" when change_prot_numa would mark it.
  std::string skipped_by(mm::Mm& mm, Vpn vpn, const NumaConfig& config,
                         std::optional<NodeId> target_node = std::nullopt) const {
    const mm::Vma* vma = mm.find_vma(vpn);
    EXPECT_NE(vma, nullptr);
    if (!vma) return "no vma";
    const mm::Pte pte = mm.pgtable().get(vpn);
    EXPECT_TRUE(pte.present());
    const SkipRule* rule =
        prot_numa_skip(config, SkipContext{*vma, pte, folio_of(pte), target_node});
    return rule ? std::string(rule->name) : std::string();
  }
  // change_prot_numa over [v, v + n) with the rules of `config`.
  uint64_t mark(mm::Mm& mm, Vpn v, uint64_t n, const NumaConfig& config,
                std::optional<NodeId> target_node = std::nullopt) {
    const ProtNumaFilter filter(config, target_node, w.mgr.tiers(), 0);
    return w.mgr.change_prot_numa(mm, *mm.find_vma(v), v, Vpn(v.v + n), filter, CpuId(0)).updated;
  }

  MmWorld w;
  std::vector<std::shared_ptr<mm::Mm>> mms;
};

TEST(NumaSkipRules, TheRulesAreTestedInTheKernelsOrderWithTheirSwitches) {
  const auto rules = prot_numa_skip_rules();
  std::vector<std::string> names;
  for (const auto& r : rules) names.emplace_back(r.name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"already_prot_none", "no_normal_page", "shared", "shared_cow",
                                      "dirty_file", "on_target_node", "top_tier"}));
  ASSERT_EQ(rules.size(), 7u);
  EXPECT_EQ(rules[0].enabled, nullptr);
  EXPECT_EQ(rules[1].enabled, nullptr);
  EXPECT_EQ(rules[2].enabled, &NumaConfig::skip_shared);
  EXPECT_EQ(rules[3].enabled, &NumaConfig::skip_shared_cow);
  EXPECT_EQ(rules[4].enabled, &NumaConfig::skip_dirty_file);
  EXPECT_EQ(rules[5].enabled, &NumaConfig::skip_target_node);
  EXPECT_EQ(rules[6].enabled, &NumaConfig::skip_top_tier);
}

// already_prot_none ----------------------------------------------------------

TEST(NumaSkipRules, AlreadyProtNoneSkipsAHintingPteWithNoSwitchOn) {
  SkipWorld s;
  mm::Mm& mm = s.process();
  const Vpn a = s.w.map(mm, 1, kRW);
  s.touch(mm, a, true);
  ASSERT_EQ(s.mark(mm, a, 1, no_switches()), 1u);
  ASSERT_TRUE(mm.pgtable().get(a).protnone());

  EXPECT_EQ(s.skipped_by(mm, a, no_switches()), "already_prot_none");
  EXPECT_EQ(s.mark(mm, a, 1, no_switches()), 0u);
}

TEST(NumaSkipRules, AlreadyProtNoneLetsAnAccessiblePteThrough) {
  SkipWorld s;
  mm::Mm& mm = s.process();
  const Vpn a = s.w.map(mm, 1, kRW);
  s.touch(mm, a, true);

  EXPECT_EQ(s.skipped_by(mm, a, no_switches()), "");
  EXPECT_EQ(s.mark(mm, a, 1, no_switches()), 1u);
}

// no_normal_page -------------------------------------------------------------

TEST(NumaSkipRules, NoNormalPageSkipsTheZeroPageWithNoSwitchOn) {
  SkipWorld s;
  mm::Mm& mm = s.process();
  const Vpn a = s.w.map(mm, 1, kRW);
  s.touch(mm, a, false);  // a read of untouched anonymous memory maps the zero page
  ASSERT_EQ(mm.pgtable().get(a).pfn, mm::kZeroPfn);

  EXPECT_EQ(s.skipped_by(mm, a, no_switches()), "no_normal_page");
  EXPECT_EQ(s.skipped_by(mm, a, all_switches(), NodeId(0)), "no_normal_page");
}

TEST(NumaSkipRules, NoNormalPageLetsAPageWithAFolioThrough) {
  SkipWorld s;
  mm::Mm& mm = s.process();
  const Vpn a = s.w.map(mm, 1, kRW);
  s.touch(mm, a, true);
  ASSERT_NE(mm.pgtable().get(a).pfn, mm::kZeroPfn);

  EXPECT_EQ(s.skipped_by(mm, a, no_switches()), "");
}

// shared_cow -----------------------------------------------------------------

// A parent wrote page 0 of a private mapping, then forked: page 0 is a COW
// page of both mms (mapcount 2).
struct SharedCow {
  explicit SharedCow(SkipWorld& s) : parent(s.process()), a(s.w.map(parent, 2, kRW)) {
    s.touch(parent, a, true);
    child = &s.fork(parent);
  }
  mm::Mm& parent;
  Vpn a;
  mm::Mm* child = nullptr;
};

TEST(NumaSkipRules, SharedCowSkipsACowPageOfTwoMmsWhenItsSwitchIsOn) {
  SkipWorld s;
  SharedCow c(s);
  NumaConfig cfg = no_switches();
  cfg.skip_shared_cow = true;
  ASSERT_EQ(s.w.folio_at(c.parent, c.a).mapcount, 2);

  EXPECT_EQ(s.skipped_by(c.parent, c.a, cfg), "shared_cow");
  EXPECT_EQ(s.mark(c.parent, c.a, 1, cfg), 0u);
}

// shared (3.8-3.12) ---------------------------------------------------------

TEST(NumaSkipRules, SharedSkipsAPageOfASharedMappingOfTwoMmsWhenItsSwitchIsOn) {
  // Unlike shared_cow, it holds whatever the mapping: here MAP_SHARED.
  SkipWorld s;
  mm::AddressSpace& shm = s.w.mgr.create_file("memfd:shared", 1, true);
  mm::Mm& one = s.process();
  mm::Mm& two = s.process();
  const Vpn a = s.w.map(one, 1, kRW | mm::Vma::kShared, &shm);
  const Vpn b = s.w.map(two, 1, kRW | mm::Vma::kShared, &shm);
  s.touch(one, a, true);
  s.touch(two, b, true);
  NumaConfig cfg = no_switches();
  cfg.skip_shared = true;
  ASSERT_EQ(s.w.folio_at(one, a).mapcount, 2);

  EXPECT_EQ(s.skipped_by(one, a, cfg), "shared");
  EXPECT_EQ(s.mark(one, a, 1, cfg), 0u);
}

TEST(NumaSkipRules, SharedIsOffWhenItsSwitchIsOff) {
  SkipWorld s;
  mm::AddressSpace& shm = s.w.mgr.create_file("memfd:shared", 1, true);
  mm::Mm& one = s.process();
  mm::Mm& two = s.process();
  const Vpn a = s.w.map(one, 1, kRW | mm::Vma::kShared, &shm);
  const Vpn b = s.w.map(two, 1, kRW | mm::Vma::kShared, &shm);
  s.touch(one, a, true);
  s.touch(two, b, true);
  NumaConfig cfg = all_switches();
  cfg.skip_shared = false;

  EXPECT_EQ(s.skipped_by(one, a, cfg), "");
  EXPECT_EQ(s.mark(one, a, 1, cfg), 1u);
}

TEST(NumaSkipRules, SharedCowIsOffWhenItsSwitchIsOff) {
  SkipWorld s;
  SharedCow c(s);
  NumaConfig cfg = all_switches();
  cfg.skip_shared_cow = false;

  EXPECT_EQ(s.skipped_by(c.parent, c.a, cfg), "");
  EXPECT_EQ(s.mark(c.parent, c.a, 1, cfg), 1u);
}

TEST(NumaSkipRules, SharedCowLetsACowPageOfOneMmThrough) {
  SkipWorld s;
  SharedCow c(s);
  s.touch(c.parent, c.a, true);  // the parent's own copy
  NumaConfig cfg = no_switches();
  cfg.skip_shared_cow = true;
  ASSERT_EQ(s.w.folio_at(c.parent, c.a).mapcount, 1);

  EXPECT_EQ(s.skipped_by(c.parent, c.a, cfg), "");
}

TEST(NumaSkipRules, From5_17To6_9APageCachePageMappedOnceInACowMappingIsSkipped) {
  // page_count: the page cache's reference and the one mapping make 2.
  SkipWorld s;
  mm::AddressSpace& f = s.w.mgr.create_file("lib.so", 1, false);
  mm::Mm& mm = s.process();
  const Vpn a = s.w.map(mm, 1, kRW, &f);  // MAP_PRIVATE, writable: a COW mapping
  s.touch(mm, a, false);
  ASSERT_EQ(s.w.folio_at(mm, a).mapcount, 1);
  NumaConfig cfg = no_switches();
  cfg.skip_shared_cow = true;
  EXPECT_EQ(s.skipped_by(mm, a, cfg), "");  // mapcount form (4.16-5.16, 6.10+)
  cfg.shared_cow_refcount = true;
  EXPECT_EQ(s.skipped_by(mm, a, cfg), "shared_cow");
}

TEST(NumaSkipRules, TheRefcountFormLetsAnAnonymousPageOfOneMmThrough) {
  SkipWorld s;
  mm::Mm& mm = s.process();
  const Vpn a = s.w.map(mm, 1, kRW);
  s.touch(mm, a, true);
  NumaConfig cfg = no_switches();
  cfg.skip_shared_cow = true;
  cfg.shared_cow_refcount = true;
  EXPECT_EQ(s.skipped_by(mm, a, cfg), "");
}

TEST(NumaSkipRules, SharedCowLetsASharedMappingPageOfTwoMmsThrough) {
  // MAP_SHARED is not a COW mapping, however many mms map the page.
  SkipWorld s;
  mm::AddressSpace& shm = s.w.mgr.create_file("memfd:shared", 1, true);
  mm::Mm& one = s.process();
  mm::Mm& two = s.process();
  const Vpn a = s.w.map(one, 1, kRW | mm::Vma::kShared, &shm);
  const Vpn b = s.w.map(two, 1, kRW | mm::Vma::kShared, &shm);
  s.touch(one, a, true);
  s.touch(two, b, true);
  NumaConfig cfg = no_switches();
  cfg.skip_shared_cow = true;
  ASSERT_EQ(s.w.folio_at(one, a).mapcount, 2);

  EXPECT_EQ(s.skipped_by(one, a, cfg), "");
}

// dirty_file -----------------------------------------------------------------

// A 2-page file mapped shared: page 0 written (dirty), page 1 only read.
struct FileMapping {
  explicit FileMapping(SkipWorld& s, bool shmem)
      : mm(s.process()),
        file(s.w.mgr.create_file(shmem ? "memfd:x" : "data.db", 2, shmem)),
        a(s.w.map(mm, 2, kRW | mm::Vma::kShared, &file)) {
    s.touch(mm, a, true);
    s.touch(mm, Vpn(a.v + 1), false);
  }
  mm::Mm& mm;
  mm::AddressSpace& file;
  Vpn a;
};

TEST(NumaSkipRules, DirtyFileSkipsADirtyPageCachePageWhenItsSwitchIsOn) {
  SkipWorld s;
  FileMapping f(s, false);
  NumaConfig cfg = no_switches();
  cfg.skip_dirty_file = true;
  ASSERT_TRUE(s.w.folio_at(f.mm, f.a).test(mm::Folio::kDirty));

  EXPECT_EQ(s.skipped_by(f.mm, f.a, cfg), "dirty_file");
  EXPECT_EQ(s.mark(f.mm, f.a, 1, cfg), 0u);
}

TEST(NumaSkipRules, DirtyFileIsOffWhenItsSwitchIsOff) {
  SkipWorld s;
  FileMapping f(s, false);
  NumaConfig cfg = all_switches();
  cfg.skip_dirty_file = false;

  EXPECT_EQ(s.skipped_by(f.mm, f.a, cfg), "");
  EXPECT_EQ(s.mark(f.mm, f.a, 1, cfg), 1u);
}

TEST(NumaSkipRules, DirtyFileLetsACleanPageCachePageThrough) {
  SkipWorld s;
  FileMapping f(s, false);
  NumaConfig cfg = no_switches();
  cfg.skip_dirty_file = true;
  ASSERT_FALSE(s.w.folio_at(f.mm, Vpn(f.a.v + 1)).test(mm::Folio::kDirty));

  EXPECT_EQ(s.skipped_by(f.mm, Vpn(f.a.v + 1), cfg), "");
}

TEST(NumaSkipRules, DirtyFileLetsADirtyShmemPageThrough) {
  // Shmem is swap-backed, not file cache (page_is_file_cache).
  SkipWorld s;
  FileMapping f(s, true);
  NumaConfig cfg = no_switches();
  cfg.skip_dirty_file = true;
  ASSERT_TRUE(s.w.folio_at(f.mm, f.a).test(mm::Folio::kShmem));

  EXPECT_EQ(s.skipped_by(f.mm, f.a, cfg), "");
}

// on_target_node -------------------------------------------------------------

// A private page written from a CPU of node 1, so it lives there.
struct PageOnNode1 {
  explicit PageOnNode1(SkipWorld& s) : mm(s.process()), a(s.w.map(mm, 1, kRW)) {
    s.touch(mm, a, true, s.node1_cpu());
  }
  mm::Mm& mm;
  Vpn a;
};

TEST(NumaSkipRules, OnTargetNodeSkipsAPageAlreadyOnTheTargetNodeWhenItsSwitchIsOn) {
  SkipWorld s;
  PageOnNode1 p(s);
  NumaConfig cfg = no_switches();
  cfg.skip_target_node = true;
  ASSERT_EQ(s.w.folio_at(p.mm, p.a).node, NodeId(1));

  EXPECT_EQ(s.skipped_by(p.mm, p.a, cfg, NodeId(1)), "on_target_node");
  EXPECT_EQ(s.mark(p.mm, p.a, 1, cfg, NodeId(1)), 0u);
}

TEST(NumaSkipRules, OnTargetNodeIsOffWhenItsSwitchIsOff) {
  SkipWorld s;
  PageOnNode1 p(s);
  NumaConfig cfg = all_switches();
  cfg.skip_target_node = false;

  EXPECT_EQ(s.skipped_by(p.mm, p.a, cfg, NodeId(1)), "");
  EXPECT_EQ(s.mark(p.mm, p.a, 1, cfg, NodeId(1)), 1u);
}

TEST(NumaSkipRules, OnTargetNodeLetsAPageOnAnotherNodeThrough) {
  SkipWorld s;
  PageOnNode1 p(s);
  NumaConfig cfg = no_switches();
  cfg.skip_target_node = true;

  EXPECT_EQ(s.skipped_by(p.mm, p.a, cfg, NodeId(0)), "");
}

TEST(NumaSkipRules, OnTargetNodeLetsEveryPageThroughWithoutATargetNode) {
  // Shared VMAs and multi-threaded mms have no target node.
  SkipWorld s;
  PageOnNode1 p(s);
  NumaConfig cfg = no_switches();
  cfg.skip_target_node = true;

  EXPECT_EQ(s.skipped_by(p.mm, p.a, cfg, std::nullopt), "");
}

}  // namespace
}  // namespace mmsim::numa
